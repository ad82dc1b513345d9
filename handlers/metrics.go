package handlers

import (
	"maps"
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
// the histogram is looked up by its labels each time). A lookup reads a map
// that is never changed once published (a new label set publishes a copy),
// with no lock and no allocation (a sync.Map would box each key). Safe for
// concurrent use.
type requestObservers struct {
	vec   *prometheus.HistogramVec
	mu    sync.Mutex // held while a copy is made and published
	known atomic.Pointer[map[requestLabels]prometheus.Observer]
}

const maxRequestObservers = 1024

func (o *requestObservers) of(l requestLabels) prometheus.Observer {
	if known := o.known.Load(); known != nil {
		if obs, ok := (*known)[l]; ok {
			return obs
		}
	}
	obs := o.vec.WithLabelValues(l.route, l.method, strconv.Itoa(l.status))
	o.mu.Lock()
	defer o.mu.Unlock()
	old := o.known.Load()
	if old == nil {
		old = &map[requestLabels]prometheus.Observer{}
	}
	if len(*old) < maxRequestObservers {
		m := maps.Clone(*old)
		m[l] = obs
		o.known.Store(&m)
	}
	return obs
}

// metricsHandler returns the handler of GET /metrics: s.Metrics in the
// Prometheus text format, or the format and compression that the scraper's
// Accept and Accept-Encoding ask for (promhttp negotiates them). The answer
// is the same in every language and for every session, so it carries
// neither the language's Content-Language nor its Vary (s.language adds
// them to every answer), and the Vary lines that promhttp adds, one per
// header, are merged into one line (addVary) before the header goes out.
func (s *Server) metricsHandler() echo.HandlerFunc {
	h := promhttp.HandlerFor(s.Metrics, promhttp.HandlerOpts{Registry: s.Metrics})
	return func(c echo.Context) error {
		res := c.Response()
		header := res.Header()
		delete(header, "Vary")
		delete(header, "Content-Language")
		res.Before(func() { addVary(header) })
		h.ServeHTTP(res, c.Request())
		return nil
	}
}
