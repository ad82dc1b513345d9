package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/prometheus/client_golang/prometheus"
)

// QueueMetrics are the waiting room's Prometheus metrics, labelled by event
// id except Ticks. The gauges are set by the instance that admitted the
// event's last tick (take their max across instances); the counters add up
// across instances.
type QueueMetrics struct {
	Waiting    *prometheus.GaugeVec   // boxoffice_queue_waiting: fans in line
	LiveTokens *prometheus.GaugeVec   // boxoffice_queue_live_tokens: entry tokens not expired
	Joins      *prometheus.CounterVec // boxoffice_queue_joins_total: new places (rejoins not counted)
	Admissions *prometheus.CounterVec // boxoffice_queue_admissions_total: fans admitted
	// Ticks is boxoffice_admission_ticks_total: the ticks whose lock this
	// instance took (Admitter.AdmitTick). Summed over the instances it is at
	// most the number of ticks that passed: one admitter per tick.
	Ticks prometheus.Counter
}

// NewQueueMetrics creates the metrics and registers them on reg (not the
// global registry, so that tests run in parallel).
func NewQueueMetrics(reg prometheus.Registerer) (*QueueMetrics, error) {
	labels := []string{"event"}
	m := &QueueMetrics{
		Waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "boxoffice_queue_waiting", Help: "Fans waiting in the event's queue, as of the last admission tick.",
		}, labels),
		LiveTokens: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "boxoffice_queue_live_tokens", Help: "Live entry tokens of the event, as of the last admission tick.",
		}, labels),
		Joins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_queue_joins_total", Help: "Fans who took a new place in the event's queue.",
		}, labels),
		Admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_queue_admissions_total", Help: "Fans admitted from the event's queue with an entry token.",
		}, labels),
		Ticks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_admission_ticks_total", Help: "Admission ticks this instance took the lock for (one instance per tick admits).",
		}),
	}
	for _, c := range []prometheus.Collector{m.Waiting, m.LiveTokens, m.Joins, m.Admissions, m.Ticks} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register queue metrics: %w", err)
		}
	}
	return m, nil
}

// Admitter is the background worker that admits each tick's batch of every
// event with an open queue. Any number of instances may run one: per tick,
// the first to take the tick's lock (SET NX PX on admit:lock:<tick>, whose
// value is Instance) reads the open queues and admits; and each event's
// admission script refuses a tick already admitted, so no fan is admitted
// twice even if a lock expires. Ticks are numbered from Redis's clock
// (boxoffice.TickIndex, Redis.Time: one clock on a cluster too), so
// instances agree on them. Queue.Metrics, if not
// nil, counts the ticks this admitter took.
type Admitter struct {
	Queue  *Queue
	Source boxoffice.AdmissionSource
	// Instance names this admitter in the locks of the ticks it takes
	// ("1" when empty), so that an operator can tell which instance
	// admitted a tick; the binary uses host:pid.
	Instance string
	// Tick is the length of a tick (boxoffice.DefaultAdmissionTick when 0),
	// whole milliseconds, at least 1 ms.
	Tick time.Duration
	// Ticks, when not nil, replaces Redis's clock: Run admits once for each
	// tick number received and returns when the channel closes. Tests use it.
	Ticks <-chan int64
	// Logger receives admission failures (slog.Default when nil).
	Logger *slog.Logger
}

// TickResult is what one AdmitTick did.
type TickResult struct {
	// Locked is false when another admitter holds this tick: nothing was done.
	Locked bool
	Events map[int64]AdmitResult // by event id
}

func (a *Admitter) tick() time.Duration {
	if a.Tick == 0 {
		return boxoffice.DefaultAdmissionTick
	}
	return a.Tick.Truncate(time.Millisecond)
}

func (a *Admitter) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}

// AdmitTick admits tick number tick for every open queue if this admitter
// takes the tick's lock: it lists the open queues from Source (with now =
// the tick's start) and runs Queue.Admit for each. Failing events do not
// stop the others; their errors are joined.
func (a *Admitter) AdmitTick(ctx context.Context, tick int64) (TickResult, error) {
	every := a.tick()
	if every < time.Millisecond {
		return TickResult{}, fmt.Errorf("admitter tick %v: must be at least 1ms", a.Tick)
	}
	r := a.Queue.Redis
	ok, err := r.Client.SetNX(ctx, r.Key("admit:lock:%d", tick), cmp.Or(a.Instance, "1"), max(10*every, time.Minute)).Result()
	if err != nil {
		return TickResult{}, fmt.Errorf("admitter lock for tick %d: %w", tick, err)
	}
	if !ok {
		return TickResult{}, nil
	}
	if m := a.Queue.Metrics; m != nil {
		m.Ticks.Inc()
	}
	events, err := a.Source.OpenQueues(ctx, time.UnixMilli(tick*every.Milliseconds()))
	if err != nil {
		return TickResult{Locked: true}, fmt.Errorf("admitter tick %d: open queues: %w", tick, err)
	}
	res := TickResult{Locked: true, Events: make(map[int64]AdmitResult, len(events))}
	var errs []error
	for _, s := range events {
		ar, err := a.Queue.Admit(ctx, s, tick, every)
		if err != nil {
			errs = append(errs, err)
		}
		if err == nil || ar.Done { // a failed part may follow parts that admitted
			res.Events[s.EventID] = ar
		}
	}
	return res, errors.Join(errs...)
}

// Run admits until ctx ends (then it returns nil) or, with Ticks set, until
// Ticks closes. Without Ticks it wakes at each tick boundary of Redis's
// clock (TIME), so that instances wake together and one takes the lock.
// Failures are logged and the next tick tries again.
func (a *Admitter) Run(ctx context.Context) error {
	if a.Ticks != nil {
		for {
			select {
			case <-ctx.Done():
				return nil
			case tick, ok := <-a.Ticks:
				if !ok {
					return nil
				}
				a.admit(ctx, tick)
			}
		}
	}
	every := a.tick()
	if every < time.Millisecond {
		return fmt.Errorf("admitter tick %v: must be at least 1ms", a.Tick)
	}
	last := int64(-1)
	for {
		wait := every
		asked := time.Now()
		now, err := a.Queue.Redis.Time(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			a.logger().Error("admitter: read Redis time", "err", err)
		default:
			if tick := boxoffice.TickIndex(now, every); tick != last {
				last = tick
				a.admit(ctx, tick)
			}
			next := time.UnixMilli((boxoffice.TickIndex(now, every) + 1) * every.Milliseconds())
			wait = next.Sub(now) - time.Since(asked) + time.Millisecond
		}
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

func (a *Admitter) admit(ctx context.Context, tick int64) {
	if _, err := a.AdmitTick(ctx, tick); err != nil && ctx.Err() == nil {
		a.logger().Error("admitter: admission failed", "tick", strconv.FormatInt(tick, 10), "err", err)
	}
}
