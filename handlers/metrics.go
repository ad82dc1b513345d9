package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsMiddleware counts requests and their durations (seconds) by route
// pattern, method and status on s.Metrics.
func (s *Server) metricsMiddleware() echo.MiddlewareFunc {
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "boxoffice_http_request_duration_seconds",
		Help:    "HTTP request durations in seconds, by route pattern, method and status.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"route", "method", "status"})
	s.Metrics.MustRegister(duration)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil {
				status = s.statusOf(err)
			}
			duration.WithLabelValues(c.Path(), c.Request().Method, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
			return err
		}
	}
}

// metricsHandler serves s.Metrics in the Prometheus text format.
func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.Metrics, promhttp.HandlerOpts{Registry: s.Metrics})
}
