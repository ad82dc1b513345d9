package store

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// RegisterPoolMetrics exports the pools of db on reg (/metrics), read from
// pgxpool's Stat() on each scrape and labelled pool="primary" (DB.Pool) or
// pool="read" (DB.Read, when there is one):
//
//   - boxoffice_pg_pool_acquires_total: connections acquired from the pool;
//   - boxoffice_pg_pool_empty_acquires_total: of those, acquisitions that
//     found no idle connection and waited for one to be released or opened;
//   - boxoffice_pg_pool_canceled_acquires_total: waits given up (the
//     request's context ended first);
//   - boxoffice_pg_pool_acquire_seconds_total: the time spent acquiring,
//     in all;
//   - boxoffice_pg_pool_empty_wait_seconds_total: of that, the time spent
//     waiting while no connection was idle;
//   - boxoffice_pg_pool_connections{state="acquired"|"idle"|"constructing"}:
//     the pool's connections now, and boxoffice_pg_pool_max_connections the
//     most it opens.
//
// A pool too small for the load shows as empty acquires and wait seconds
// growing with the load; a database too slow as acquired connections near
// the maximum with few waits. Errors: reg's, when registered already.
func RegisterPoolMetrics(reg prometheus.Registerer, db *DB) error {
	pools := map[string]*pgxpool.Pool{"primary": db.Pool}
	if db.Read != nil {
		pools["read"] = db.Read
	}
	for name, pool := range pools {
		if err := reg.Register(newPoolCollector(name, pool)); err != nil {
			return fmt.Errorf("register the %s pool's metrics: %w", name, err)
		}
	}
	return nil
}

// poolCollector is a prometheus.Collector of one pool's Stat().
type poolCollector struct {
	pool                                                           *pgxpool.Pool
	acquires, emptyAcquires, canceled, acquireSeconds, waitSeconds *prometheus.Desc
	connections, maxConnections                                    *prometheus.Desc
}

func newPoolCollector(name string, pool *pgxpool.Pool) *poolCollector {
	desc := func(metric, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("boxoffice_pg_pool_"+metric, help, labels, prometheus.Labels{"pool": name})
	}
	return &poolCollector{
		pool:           pool,
		acquires:       desc("acquires_total", "Connections acquired from the PostgreSQL pool."),
		emptyAcquires:  desc("empty_acquires_total", "Acquisitions that found no idle connection and waited for one."),
		canceled:       desc("canceled_acquires_total", "Acquisitions given up because the request's context ended."),
		acquireSeconds: desc("acquire_seconds_total", "Seconds spent acquiring connections, in all."),
		waitSeconds:    desc("empty_wait_seconds_total", "Seconds spent waiting for a connection while none was idle, in all."),
		connections:    desc("connections", "The pool's connections now, by state.", "state"),
		maxConnections: desc("max_connections", "The most connections the pool opens."),
	}
}

// Describe implements prometheus.Collector.
func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquires, c.emptyAcquires, c.canceled, c.acquireSeconds, c.waitSeconds, c.connections, c.maxConnections} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	counter(c.acquires, float64(s.AcquireCount()))
	counter(c.emptyAcquires, float64(s.EmptyAcquireCount()))
	counter(c.canceled, float64(s.CanceledAcquireCount()))
	counter(c.acquireSeconds, s.AcquireDuration().Seconds())
	counter(c.waitSeconds, s.EmptyAcquireWaitTime().Seconds())
	for state, n := range map[string]int32{"acquired": s.AcquiredConns(), "idle": s.IdleConns(), "constructing": s.ConstructingConns()} {
		ch <- prometheus.MustNewConstMetric(c.connections, prometheus.GaugeValue, float64(n), state)
	}
	ch <- prometheus.MustNewConstMetric(c.maxConnections, prometheus.GaugeValue, float64(s.MaxConns()))
}
