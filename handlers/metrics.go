package handlers

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsMiddleware counts requests and their durations (seconds) by route
// pattern, method and status on s.Metrics. Each combination's histogram is
// looked up once (requestObservers), not hashed from its labels again on
// every request.
func (s *Server) metricsMiddleware() echo.MiddlewareFunc {
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "boxoffice_http_request_duration_seconds",
		Help:    "HTTP request durations in seconds, by route pattern, method and status.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"route", "method", "status"})
	s.Metrics.MustRegister(duration)
	observers := &requestObservers{vec: duration}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil {
				status = s.statusOf(err)
			}
			observers.of(requestLabels{c.Path(), c.Request().Method, status}).Observe(time.Since(start).Seconds())
			return err
		}
	}
}

// requestLabels are the labels of a request's duration.
type requestLabels struct {
	route, method string
	status        int
}

// requestObservers keeps the histogram of each requestLabels, up to
// maxRequestObservers of them (a client can send any method: past the cap
// the histogram is looked up by its labels each time). Safe for concurrent
// use.
type requestObservers struct {
	vec   *prometheus.HistogramVec
	known sync.Map // requestLabels -> prometheus.Observer
	n     atomic.Int32
}

const maxRequestObservers = 1024

func (o *requestObservers) of(l requestLabels) prometheus.Observer {
	if obs, ok := o.known.Load(l); ok {
		return obs.(prometheus.Observer)
	}
	obs := o.vec.WithLabelValues(l.route, l.method, strconv.Itoa(l.status))
	if o.n.Load() < maxRequestObservers {
		if _, loaded := o.known.LoadOrStore(l, obs); !loaded {
			o.n.Add(1)
		}
	}
	return obs
}

// metricsHandler serves s.Metrics in the Prometheus text format.
func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.Metrics, promhttp.HandlerOpts{Registry: s.Metrics})
}
