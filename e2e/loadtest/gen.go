package main

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Op performs one request (or one short exchange) and returns its outcome's
// kind: kindOK, or an error's kind such as "409 seat_taken" or "timeout".
type Op func(ctx context.Context, i int) string

// kindOK is the kind of a request that got the answer it wanted;
// kindNotSent of one the open loop could not send (see OpenLoop).
// kindSkip of work that sent no request, which is not recorded.
const (
	kindOK      = "ok"
	kindNotSent = "not sent: generator at max in flight"
	kindSkip    = ""
)

// sample is one request's outcome. at is when the request was due (open
// loop: by the schedule, so that a request the generator could not send on
// time counts its wait) or sent (closed loop), from the step's start.
type sample struct {
	at      time.Duration
	latency time.Duration
	kind    string
}

// Recorder collects the samples of one step of a phase. It is safe for
// concurrent use.
type Recorder struct {
	Name    string
	Offered float64 // requests per second the open loop offered; 0 for a closed loop

	start time.Time
	mu    sync.Mutex
	s     []sample
	last  time.Time // when the last request ended
	bar   *progressbar.ProgressBar
	cpu   *cpuWindow // nil: the step's CPU is not measured
	split *CPUSplit  // the step's CPU, once Stats measured it
}

// newRecorder starts a step named name now; bar (nil for none) advances by
// one per request.
func newRecorder(name string, bar *progressbar.ProgressBar) *Recorder {
	return &Recorder{Name: name, start: time.Now(), bar: bar}
}

// measureCPU measures where the machine's CPU goes from now to the first
// Stats, under label in the report (the step's name when ""); with a nil
// meter it does nothing. Call it before the step's first request: the
// step's clock starts again after the snapshot.
func (r *Recorder) measureCPU(ctx context.Context, m *CPUMeter, label string) *Recorder {
	if m == nil {
		return r
	}
	if label == "" {
		label = r.Name
	}
	r.cpu = m.start(ctx, label)
	r.start = time.Now()
	return r
}

// beside says that other requests (what) run in the step's window, so
// that its CPU is theirs too and the report gives no figure a request.
func (r *Recorder) beside(what string) *Recorder {
	if r.cpu != nil {
		r.cpu.beside = what
	}
	return r
}

// add records a request that was due or sent at t and ended now (nothing
// for kindSkip).
func (r *Recorder) add(t time.Time, kind string) {
	if r.bar != nil {
		defer r.bar.Add(1)
	}
	if kind == kindSkip {
		return
	}
	now := time.Now()
	r.mu.Lock()
	r.s = append(r.s, sample{at: t.Sub(r.start), latency: now.Sub(t), kind: kind})
	if now.After(r.last) {
		r.last = now
	}
	r.mu.Unlock()
}

// Time runs op now and records it; it returns op's kind.
func (r *Recorder) Time(op func() string) string {
	t := time.Now()
	kind := op()
	r.add(t, kind)
	return kind
}

// Count returns the number of requests recorded so far.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.s)
}

// ClosedLoop runs op with conc workers, each sending its next request as soon
// as its last one is answered, while next hands out work (next returns false
// when there is none left or ctx ends). It measures the peak rate: the
// server's answers pace the load.
func ClosedLoop(ctx context.Context, conc int, next func() (int, bool), rec *Recorder, op Op) {
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for ctx.Err() == nil {
				i, ok := next()
				if !ok {
					return
				}
				t := time.Now()
				rec.add(t, op(ctx, i))
			}
		})
	}
	wg.Wait()
}

// Counter hands out 0, 1, ... n-1 (n < 0: without end) to ClosedLoop, until
// deadline if it is not zero.
func Counter(n int, deadline time.Time) func() (int, bool) {
	var c atomic.Int64
	return func() (int, bool) {
		if !deadline.IsZero() && time.Now().After(deadline) {
			return 0, false
		}
		i := int(c.Add(1) - 1)
		return i, n < 0 || i < n
	}
}

// OpenLoop offers rate requests per second for d, scheduled by the clock,
// not by the answers: request i is due at start + i/rate whatever happened
// to the ones before it, and its latency counts from when it was due. At
// most maxInFlight requests run at once; one due while that many are
// unanswered is not sent and counts as the error kind "not sent: generator
// at max in flight", so that an overloaded server shows as errors and
// latency, never as a quietly lower rate.
func OpenLoop(ctx context.Context, rate float64, d time.Duration, maxInFlight int, rec *Recorder, op Op) {
	rec.Offered = rate
	total := int(rate * d.Seconds())
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	start := rec.start
	for i := 0; i < total && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if wait := time.Until(due); wait > 50*time.Microsecond {
			time.Sleep(wait)
		}
		select {
		case sem <- struct{}{}:
		default:
			rec.add(due, kindNotSent)
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			rec.add(due, op(ctx, i))
		})
	}
	wg.Wait()
}

// Stats are a step's figures, as the report shows them. Latencies are in
// milliseconds, rates in requests per second.
type Stats struct {
	Name     string         `json:"name"`
	Requests int            `json:"requests"`
	OK       int            `json:"ok"`
	Seconds  float64        `json:"seconds"`
	Offered  float64        `json:"offered_rps,omitempty"`
	Rate     float64        `json:"achieved_rps"`
	P50      float64        `json:"p50_ms"`
	P95      float64        `json:"p95_ms"`
	P99      float64        `json:"p99_ms"`
	Max      float64        `json:"max_ms"`
	Errors   map[string]int `json:"errors,omitempty"`
	// Series is latency over time, one point per bucket of the step.
	Series []Point `json:"series,omitempty"`
	// Offset is when the step began, in seconds from its phase's start.
	Offset float64 `json:"offset_s"`
	// CPU is where the machine's CPU went during the step, when measured.
	CPU *CPUSplit `json:"cpu,omitempty"`
}

// Point is one bucket of a latency-over-time series: its start in seconds
// from the step's start, its request count and latency percentiles in ms.
type Point struct {
	T     float64 `json:"t_s"`
	N     int     `json:"n"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
	Rate  float64 `json:"rps"`
	Error int     `json:"errors"`
}

// Stats computes the step's figures; the first call ends the step's CPU
// measurement (measureCPU). The achieved rate is the requests
// sent and answered (well or not) over the time from the step's start to
// the last answer; requests not sent count as errors but have no latency.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := Stats{Name: r.Name, Requests: len(r.s), Offered: r.Offered, Errors: map[string]int{}}
	if r.cpu != nil && r.split == nil {
		sent := 0
		for _, s := range r.s {
			if s.kind != kindNotSent {
				sent++
			}
		}
		r.split = r.cpu.end(sent)
	}
	st.CPU = r.split
	lat := make([]time.Duration, 0, len(r.s))
	for _, s := range r.s {
		if s.kind == kindOK {
			st.OK++
		} else {
			st.Errors[s.kind]++
		}
		if s.kind != kindNotSent {
			lat = append(lat, s.latency)
		}
	}
	if len(lat) == 0 {
		return st
	}
	st.Seconds = r.last.Sub(r.start).Seconds()
	if st.Seconds > 0 {
		st.Rate = float64(len(lat)) / st.Seconds
	}
	slices.Sort(lat)
	st.P50, st.P95, st.P99, st.Max = ms(pct(lat, 50)), ms(pct(lat, 95)), ms(pct(lat, 99)), ms(lat[len(lat)-1])
	st.Series = series(r.s, st.Seconds)
	return st
}

// series buckets samples by when they were due or sent: about 100 buckets
// over the step, none shorter than 100 ms.
func series(ss []sample, seconds float64) []Point {
	width := max(seconds/100, 0.1)
	n := int(math.Ceil(seconds/width)) + 1
	buckets := make([][]time.Duration, n)
	errs := make([]int, n)
	for _, s := range ss {
		if s.kind == kindNotSent {
			continue
		}
		b := min(max(int(s.at.Seconds()/width), 0), n-1)
		buckets[b] = append(buckets[b], s.latency)
		if s.kind != kindOK {
			errs[b]++
		}
	}
	var out []Point
	for i, b := range buckets {
		if len(b) == 0 {
			continue
		}
		slices.Sort(b)
		out = append(out, Point{T: float64(i) * width, N: len(b), P50: ms(pct(b, 50)), P99: ms(pct(b, 99)),
			Max: ms(b[len(b)-1]), Rate: float64(len(b)) / width, Error: errs[i]})
	}
	return out
}

// pct returns the p-th percentile of sorted (nearest rank).
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }

// DelayStats summarise delays (not requests), such as the delays from an
// admission to the fragment that shows it, in milliseconds.
type DelayStats struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

func delayStats(ds []time.Duration) DelayStats {
	if len(ds) == 0 {
		return DelayStats{}
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return DelayStats{N: len(ds), P50: ms(pct(ds, 50)), P95: ms(pct(ds, 95)), P99: ms(pct(ds, 99)), Max: ms(ds[len(ds)-1])}
}
