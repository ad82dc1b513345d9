package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/redis/go-redis/v9"
)

// Bench is one run against one server: the stores, the sale, the fans.
type Bench struct {
	cfg Config
	ui  *UI
	srv *Server
	// others are the instances after the first (-instances), and front
	// the nginx in front of them all; base is where the load goes: nginx's
	// URL, or the one instance's.
	others []*Server
	front  *Nginx
	base   string
	db     *store.DB
	rdb    redis.UniversalClient
	sale   Sale
	fans   []*Fan
	client *http.Client
	// observer is an extra fan who joins first and, once admitted, reloads
	// the seat map for the fans' shared copy; admin steers admission.
	observer, admin *Fan

	joined bool // the join storm ran: fans are in line
	// firstAdmission is when the sale's first fan was admitted (Redis's
	// clock), from which the sell-out is timed.
	firstAdmission time.Time
	admitted       bool // the waiting phase admitted fans
	// entered are the fans the waiting phase saw admitted (they hold a
	// live entry token), in the fans' order.
	entered []*Fan
	paid    bool // the buying phase had checkout and payment
	soldOut bool // every seat was sold
	// routes are the buying routes the binary has (the buying phase asks).
	routes routes
	// sellout is the sell-out phase's fresh event of the same arena, and
	// selloutSoldOut says whether its every seat was sold.
	sellout        Sale
	selloutSoldOut bool
	// streamsOpen counts the streams bench-sse opened.
	streamsOpen int
	// payActivity says how busy PostgreSQL was while the fans paid.
	payActivity string
	// sellOutSplit says how the sell-out's time splits into the steps.
	sellOutSplit string
	// cpu measures where the machine's CPU goes in the measured steps.
	cpu      *CPUMeter
	profiles map[string]string
	profMu   sync.Mutex
}

// notAvailable is a phase's status when the binary lacks its endpoint.
func notAvailable(route string) string {
	return "not available (404): " + route + " is not on this binary"
}

// url returns the server's URL of the formatted path.
func (b *Bench) url(format string, args ...any) string {
	return b.base + fmt.Sprintf(format, args...)
}

// setUp is phase 1: a fresh database seeded with the demo, the fans'
// accounts (COPY) and the server started, then the fans' sessions written
// into its Redis (the bench-only path, setup.go). meter measures the CPU
// of the measured steps, with the instances as the server.
func setUp(ctx context.Context, cfg Config, ui *UI, rdb redis.UniversalClient, meter *CPUMeter) (*Bench, *Phase, error) {
	p := newPhase("1. Set-up")
	b := &Bench{cfg: cfg, ui: ui, rdb: rdb, client: newClient(cfg.Conns), profiles: map[string]string{}, cpu: meter}
	dsn, err := newDatabase(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, nil, err
	}
	if b.db, err = store.OpenDB(ctx, dsn); err != nil {
		return nil, nil, err
	}
	t := time.Now()
	if b.sale, b.sellout, err = seed(ctx, b.db); err != nil {
		return b, nil, err
	}
	p.figure("database", fmt.Sprintf("migrated and seeded with the demo in %.1f s; event %d at the Inspire Arena, %d seats, limit %d per account; for the sell-out, event %d of the same arena, %d seats, limit %d",
		time.Since(t).Seconds(), b.sale.EventID, b.sale.Seats, b.sale.Limit, b.sellout.EventID, b.sellout.Seats, b.sellout.Limit), 0)
	t = time.Now()
	all, err := createFans(ctx, b.db, cfg.Fans+1)
	if err != nil {
		return b, nil, err
	}
	b.fans, b.observer = all[:cfg.Fans], all[cfg.Fans]
	d := time.Since(t)
	p.figure("accounts", fmt.Sprintf("%d accounts in %.2f s with one COPY (%.0f/s), one shared bcrypt hash", len(all), d.Seconds(), float64(len(all))/d.Seconds()), float64(len(all))/d.Seconds())

	prefix := "bench:" + randomHex(4) + ":"
	env := []string{"ADMISSION_TICK=" + cfg.AdmissionTick.String()}
	var frontAddr string
	if cfg.Instances > 1 {
		port, err := freePort()
		if err != nil {
			return b, nil, err
		}
		// Every instance answers to nginx's address and believes its
		// X-Forwarded-For, as behind a real balancer.
		frontAddr = fmt.Sprintf("127.0.0.1:%d", port)
		env = append(env, "BASE_URL=http://"+frontAddr, "TRUSTED_PROXIES=127.0.0.1/32")
	}
	if b.srv, err = startServer(ctx, absPath(cfg.Binary), dsn, cfg.RedisURL, prefix, cfg.Profile, filepath.Join(cfg.Out, "server.log"), env...); err != nil {
		return b, nil, err
	}
	b.base = b.srv.URL
	if cfg.Instances > 1 {
		upstreams := []string{strings.TrimPrefix(b.srv.URL, "http://")}
		for i := 2; i <= cfg.Instances; i++ {
			s, err := startServer(ctx, absPath(cfg.Binary), dsn, cfg.RedisURL, prefix, false, filepath.Join(cfg.Out, fmt.Sprintf("server-%d.log", i)), env...)
			if err != nil {
				return b, nil, err
			}
			b.others = append(b.others, s)
			upstreams = append(upstreams, strings.TrimPrefix(s.URL, "http://"))
		}
		if b.front, err = startNginx(ctx, frontAddr, upstreams, filepath.Join(cfg.Out, "nginx")); err != nil {
			return b, nil, err
		}
		meter.setNginx(b.front.cmd.Process.Pid)
		b.base = "http://" + frontAddr
		p.figure("instances", fmt.Sprintf("%d instances behind nginx at %s", cfg.Instances, b.base), float64(cfg.Instances))
	}
	pids := []int{b.srv.Pid()}
	for _, s := range b.others {
		pids = append(pids, s.Pid())
	}
	meter.setServers(pids...)
	t = time.Now()
	if err := writeSessions(ctx, rdb, prefix, all, boxoffice.RoleFan); err != nil {
		return b, nil, err
	}
	d = time.Since(t)
	p.figure("sessions", fmt.Sprintf("%d logged-in sessions written into Redis in %.2f s (%.0f/s), in scs's format", len(all), d.Seconds(), float64(len(all))/d.Seconds()), float64(len(all))/d.Seconds())
	b.admin = &Fan{ID: b.sale.AdminID, Email: "admin"}
	if err := writeSessions(ctx, rdb, prefix, []*Fan{b.admin}, boxoffice.RoleAdmin); err != nil {
		return b, nil, err
	}
	// The sessions must work: the home page as a fan names the fan's e-mail.
	a, err := call(ctx, b.client, http.MethodGet, b.url("/"), b.fans[0], nil)
	if err != nil || a.Status != http.StatusOK {
		return b, nil, fmt.Errorf("a bench session does not work: GET / answered %v %v", a.Status, err)
	}
	rss, _, _ := memory(b.srv.Pid())
	p.figure("server", fmt.Sprintf("pid %d at %s, RSS %.1f MiB after start-up", b.srv.Pid(), b.srv.URL, mib(rss)), float64(rss))
	b.endPhase(p)
	return b, p, nil
}

// close stops the server and, unless -keep, drops the database and the
// server's Redis keys.
func (b *Bench) close(ctx context.Context) error {
	var errs []error
	if b.front != nil {
		if err := b.front.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("nginx: %w", err))
		}
	}
	for i, s := range b.others {
		if err := s.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("server %d: %w", i+2, err))
		}
	}
	if b.srv != nil {
		if err := b.srv.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("server: %w", err))
		}
	}
	if b.db != nil {
		dsn := b.db.Pool.Config().ConnString()
		b.db.Close()
		if !b.cfg.Keep {
			if err := dropDatabase(ctx, dsn); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if b.srv != nil && !b.cfg.Keep {
		r := &store.Redis{Client: b.rdb}
		// Every master's keys, one UNLINK each, pipelined: on a cluster
		// they live in many slots.
		r.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			iter := node.Scan(ctx, 0, b.srv.RedisPrefix+"*", 5000).Iterator()
			p := b.rdb.Pipeline()
			for iter.Next(ctx) {
				if p.Unlink(ctx, iter.Val()); p.Len() == 5000 {
					p.Exec(ctx)
				}
			}
			p.Exec(ctx)
			return iter.Err()
		})
	}
	if len(errs) > 0 {
		return fmt.Errorf("clean-up: %v", errs)
	}
	return nil
}

// phase starts a phase: the server's peak memory is measured from here.
func (b *Bench) phase(name string) *Phase {
	if b.srv != nil {
		resetPeak(b.srv.Pid())
	}
	b.ui.Logf("%s", name)
	return newPhase(name)
}

// endPhase records the phase's length and the server's peak memory in it.
func (b *Bench) endPhase(p *Phase) {
	p.Seconds = time.Since(p.start).Seconds()
	if b.srv != nil {
		_, p.PeakRSS, _ = memory(b.srv.Pid())
	}
	if p.Status == "" {
		p.Status = "ran"
	}
	b.ui.Logf("  %s (%.1f s)", p.Status, p.Seconds)
}

// addStep adds a finished step's figures to p.
func (b *Bench) addStep(p *Phase, rec *Recorder) Stats {
	b.ui.Done()
	st := rec.Stats()
	st.Offset = rec.start.Sub(p.start).Seconds()
	p.Steps = append(p.Steps, st)
	b.ui.Logf("  %-60s %8d req %9.0f/s  p50 %7.2f ms  p99 %7.2f ms  errors %d", st.Name, st.Requests, st.Rate, st.P50, st.P99, st.Requests-st.OK)
	return st
}

// startProfile takes a CPU profile of the server named name for d in the
// background, and with -generator-profile one of the load test itself
// until the returned function is called; that function waits for the
// server's profile and returns its file ("" when profiling is off or
// failed).
func (b *Bench) startProfile(ctx context.Context, name string, d time.Duration) func() string {
	stopGen := b.startGeneratorProfile(name)
	if !b.cfg.Profile || b.srv.PprofURL == "" {
		return func() string { stopGen(); return "" }
	}
	path := filepath.Join(b.cfg.Out, "profiles", name+".pb.gz")
	os.MkdirAll(filepath.Dir(path), 0o755)
	done := make(chan string, 1)
	go func() {
		if err := b.srv.cpuProfile(ctx, d, path); err != nil {
			b.ui.Logf("  profile %s: %v", name, err)
			done <- ""
			return
		}
		done <- path
	}()
	return func() string {
		stopGen()
		p := <-done
		b.profMu.Lock()
		b.profiles[name] = p
		b.profMu.Unlock()
		return p
	}
}

// startGeneratorProfile starts a CPU profile of this process into
// profiles/<name>-generator.pb.gz when -generator-profile is set; the
// returned function stops it.
func (b *Bench) startGeneratorProfile(name string) func() {
	if !b.cfg.GeneratorProfile {
		return func() {}
	}
	path := filepath.Join(b.cfg.Out, "profiles", name+"-generator.pb.gz")
	os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		b.ui.Logf("  generator profile %s: %v", name, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// measured is a stretch of a phase whose server-side figures are taken
// over the same window as its steps' CPU (measureCPU, opened just before
// measure): a CPU profile of the server, PostgreSQL's activity
// (sampleActivity) and the store's pool counters (poolCounters).
type measured struct {
	prof     func() string
	activity func() string
	pool0    map[string]float64
	poolErr  error
}

// measure starts a measured stretch now: the server's profile named
// profile, d long (keep d within the stretch, or the profile covers what
// follows it), the activity samples and the pool's counters.
func (b *Bench) measure(ctx context.Context, profile string, d time.Duration) *measured {
	m := &measured{prof: b.startProfile(ctx, profile, d)}
	m.pool0, m.poolErr = b.poolCounters(ctx)
	m.activity = b.sampleActivity(ctx)
	return m
}

// endMeasure ends m as soon as its stretch's last request is answered:
// it stops the activity samples, adds steps to p (closing their CPU
// windows and Redis commandstats; a step without a request is left out),
// notes "PostgreSQL while <what> ..." and the pool's figure for paid
// orders (poolFigure), and only then waits for the profile, so that no
// figure runs past the stretch. It returns the activity note.
func (b *Bench) endMeasure(ctx context.Context, p *Phase, m *measured, what string, paid func() int64, steps ...*Recorder) string {
	activity := "PostgreSQL while " + what + " (pg_stat_activity every " + pgActivityEvery.String() + "): " + m.activity()
	for _, rec := range steps {
		if rec.Count() > 0 {
			b.addStep(p, rec)
		}
	}
	p.note(activity)
	b.poolFigure(ctx, p, m.pool0, m.poolErr, paid())
	m.prof()
	return activity
}

// joinStorm is phase 2: every fan joins at once, closed loop (the peak
// rate), then open loops at the fixed offered rates, in which fans join
// again (joining again keeps the place, CONTRACT.md).
func (b *Bench) joinStorm(ctx context.Context) *Phase {
	p := b.phase("2. Join storm")
	defer b.endPhase(p)
	u := b.url("/events/%d/queue", b.sale.EventID)
	// The observer joins first, so that it is admitted in the first batch.
	a, err := call(ctx, b.client, http.MethodPost, u, b.observer, url.Values{})
	switch {
	case err != nil:
		p.Status = "failed: the first join: " + errKind(err)
		return p
	case missing(a):
		p.Status = notAvailable("POST /events/{id}/queue")
		return p
	case a.Status != http.StatusOK:
		p.Status = "failed: the first join answered " + kind(a, nil, http.StatusOK)
		return p
	}
	b.joined = true
	n := len(b.fans)
	join := func(ctx context.Context, i int) string {
		a, err := call(ctx, b.client, http.MethodPost, u, b.fans[i%n], url.Values{})
		return kind(a, err, http.StatusOK)
	}
	// As a browser does, each fan opens the event page before joining: the
	// page is the fan's first request to the instance, which reads the
	// session from Redis and keeps a copy; the joins then find the session
	// in the copy (the steady state).
	pageURL := b.url("/events/%d", b.sale.EventID)
	pages := newRecorder(fmt.Sprintf("GET /events/{id}, closed loop, %d connections: each fan's first request (the session read from Redis)", b.cfg.Conns), b.ui.Bar("join storm: event pages", int64(n))).
		measureCPU(ctx, b.cpu, "event pages (each fan's first request)")
	ClosedLoop(ctx, b.cfg.Conns, Counter(n, time.Time{}), pages, func(ctx context.Context, i int) string {
		a, err := browse(ctx, b.client, http.MethodGet, pageURL, b.fans[i], nil)
		return kind(a, err, http.StatusOK)
	})
	b.addStep(p, pages)
	est := min(max(time.Duration(float64(n)/5000*float64(time.Second)), time.Second), 10*time.Second)
	prof := b.startProfile(ctx, "joins-closed-loop", est)
	rec := newRecorder(fmt.Sprintf("closed loop, %d connections: each fan joins once, after its event page", b.cfg.Conns), b.ui.Bar("join storm: closed loop", int64(n))).
		measureCPU(ctx, b.cpu, "joins, closed loop")
	ClosedLoop(ctx, b.cfg.Conns, Counter(n, time.Time{}), rec, join)
	st := b.addStep(p, rec)
	prof()
	p.figure("joined", fmt.Sprintf("%d of %d fans have a place", st.OK, n), float64(st.OK))
	for _, rate := range b.cfg.Rates {
		prof := b.startProfile(ctx, fmt.Sprintf("joins-open-loop-%d", rate), b.cfg.OpenDuration)
		rec := newRecorder(fmt.Sprintf("open loop, %d/s offered: fans join again", rate),
			b.ui.Bar(fmt.Sprintf("join storm: open loop at %d/s", rate), int64(float64(rate)*b.cfg.OpenDuration.Seconds()))).
			measureCPU(ctx, b.cpu, fmt.Sprintf("joins, open loop at %d/s", rate))
		OpenLoop(ctx, float64(rate), b.cfg.OpenDuration, b.cfg.MaxInFlight, rec, join)
		b.addStep(p, rec)
		prof()
	}
	return p
}

// setAdmission sets event's admission through the admin's POST
// /admin/events/{id}/admission, or, on a binary without that route,
// directly in the database (the admitter reads the event each tick). It
// returns which way it took.
func (b *Bench) setAdmission(ctx context.Context, event int64, paused bool, rate int) (string, error) {
	form := url.Values{"paused": {strconv.FormatBool(paused)}, "rate": {strconv.Itoa(rate)}}
	a, err := call(ctx, b.client, http.MethodPost, b.url("/admin/events/%d/admission", event), b.admin, form)
	if err != nil {
		return "", fmt.Errorf("POST /admin/events/%d/admission: %w", event, err)
	}
	if a.Status < 300 {
		return "through POST /admin/events/{id}/admission", nil
	}
	if !missing(a) {
		return "", fmt.Errorf("POST /admin/events/%d/admission answered %s", event, kind(a, nil, http.StatusOK))
	}
	_, err = b.db.Pool.Exec(ctx, `UPDATE event SET admission_paused = $2, admission_rate = $3, updated_at = now() WHERE id = $1`, event, paused, rate)
	if err != nil {
		return "", fmt.Errorf("set admission in the database: %w", err)
	}
	return "directly in the database (POST /admin/events/{id}/admission is not on this binary)", nil
}

// admissionTimes reads when each fan was admitted to sale, from its live
// entry tokens in Redis (store.Queue: entry:live:{e}, account -> the token's
// expiry in Unix ms on Redis's clock, set to the admission time plus the
// token TTL). A fan who has left (bought: the score is then 1) has no
// admission time any more and is left out.
func (b *Bench) admissionTimes(ctx context.Context, sale Sale) (map[int64]time.Time, error) {
	out := map[int64]time.Time{}
	_, err := b.readAdmissions(ctx, sale, 1, out)
	return out, err
}

// readAdmissions adds to out the admission times of sale's live entry
// tokens whose expiry (Unix ms) is above after, as admissionTimes reads
// them, and returns the highest expiry read (after when none).
func (b *Bench) readAdmissions(ctx context.Context, sale Sale, after float64, out map[int64]time.Time) (float64, error) {
	zs, err := b.rdb.ZRangeByScoreWithScores(ctx, fmt.Sprintf("%sentry:live:{%d}", b.srv.RedisPrefix, sale.EventID),
		&redis.ZRangeBy{Min: "(" + strconv.FormatFloat(after, 'f', -1, 64), Max: "+inf"}).Result()
	if err != nil {
		return after, fmt.Errorf("read admissions: %w", err)
	}
	for _, z := range zs {
		after = max(after, z.Score)
		id, err := strconv.ParseInt(fmt.Sprint(z.Member), 10, 64)
		if err != nil {
			continue
		}
		if _, ok := out[id]; !ok {
			out[id] = time.UnixMilli(int64(z.Score)).Add(-sale.TokenTTL)
		}
	}
	return after, nil
}

// position is the part of the join and status answers the bench reads.
type position struct {
	Status   string `json:"status"`
	Position int    `json:"position"`
}

// admittedIn says whether a position answer (GET /events/{id}/queue/status,
// JSON) shows the fan admitted.
func admittedIn(a answer) bool {
	var pos position
	return json.Unmarshal(a.Body, &pos) == nil && pos.Status == "admitted"
}

// waiting is phase 3: admission is let go at the set rate while fans poll
// their position as fast as C connections allow (each fan in turn, until
// the poll shows them admitted) and a sample of fans follows the SSE stream
// instead. Measured: the polls, admissions per second against the set
// rate, and the delay from each fan's admission to the first poll or
// fragment that shows it.
func (b *Bench) waiting(ctx context.Context) *Phase {
	p := b.phase("3. Waiting")
	defer b.endPhase(p)
	if !b.joined {
		p.Status = "not available: nobody is in line (the join storm did not run)"
		return p
	}
	id, n := b.sale.EventID, len(b.fans)
	statusURL, streamURL := b.url("/events/%d/queue/status", id), b.url("/events/%d/queue/stream", id)
	a, err := call(ctx, b.client, http.MethodGet, statusURL, b.fans[0], nil)
	if err != nil {
		p.Status = "failed: GET /events/{id}/queue/status: " + errKind(err)
		return p
	}
	polls := !missing(a)
	if !polls {
		p.note(notAvailable("GET /events/{id}/queue/status"))
	}

	// The stream sample, spread over the line, connected before admission.
	sample := min(b.cfg.StreamSample, n/2)
	streamed := make([]bool, n)
	streams := make([]*Stream, 0, sample)
	sctx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	var open, following sync.WaitGroup
	sc := streamClient(1)
	for k := range sample {
		i := k * n / sample
		streamed[i] = true
		s := &Stream{Fan: i}
		streams = append(streams, s)
		open.Add(1)
		following.Go(func() { follow(sctx, sc, streamURL, b.fans[i], s, open.Done) })
	}
	open.Wait()
	streamOK := 0
	for _, s := range streams {
		if s.Err == "" {
			streamOK++
		}
	}
	if sample > 0 && streamOK == 0 {
		p.note(fmt.Sprintf("SSE: no stream opened (first: %s); GET /events/{id}/queue/stream is not available", streams[0].Err))
	}
	if !polls && streamOK == 0 {
		p.Status = notAvailable("GET /events/{id}/queue/status and /queue/stream")
		return p
	}

	how, err := b.setAdmission(ctx, b.sale.EventID, false, b.cfg.AdmitRate)
	if err != nil {
		p.Status = "failed: " + err.Error()
		return p
	}
	t0 := time.Now()
	p.note(fmt.Sprintf("admission let go at %d fans/s on %v ticks, %s", b.cfg.AdmitRate, b.cfg.AdmissionTick, how))
	deadline := t0.Add(b.cfg.WaitTimeout)

	seen := make([]atomic.Int64, n) // Unix ns when a poll first showed the fan admitted
	var remaining atomic.Int64
	remaining.Store(int64(n - sample))
	var turn atomic.Int64
	// next hands out the next fan in turn that still waits. Near the end
	// most fans have been seen and it skips many (20,000 for each poll of
	// the last one waiting), so the checks of the end (the clock, the
	// context, the shared count) are made once a round of n, not for each
	// fan skipped.
	next := func() (int, bool) {
		for {
			if remaining.Load() <= 0 || time.Now().After(deadline) || ctx.Err() != nil {
				return 0, false
			}
			for range n {
				i := int((turn.Add(1) - 1) % int64(n))
				if !streamed[i] && seen[i].Load() == 0 {
					return i, true
				}
			}
		}
	}
	maps := b.startSeatMaps(ctx)
	poll := func(ctx context.Context, i int) string {
		a, err := call(ctx, b.client, http.MethodGet, statusURL, b.fans[i], nil)
		k := kind(a, err, http.StatusOK)
		if k == kindOK && admittedIn(a) && seen[i].CompareAndSwap(0, time.Now().UnixNano()) {
			remaining.Add(-1)
			if rand.Float64() < b.cfg.AdmittedMapShare {
				maps.load(i)
			}
		}
		return k
	}
	if polls {
		est := min(max(time.Duration(float64(n)/float64(b.cfg.AdmitRate)*float64(time.Second)), time.Second), 10*time.Second)
		prof := b.startProfile(ctx, "polls", est)
		rec := newRecorder(fmt.Sprintf("position polls, closed loop, %d connections", b.cfg.Conns), b.ui.Bar("waiting: position polls", -1)).
			measureCPU(ctx, b.cpu, "position polls")
		ClosedLoop(ctx, b.cfg.Conns, next, rec, poll)
		b.addStep(p, rec)
		prof()
	}
	maps.finish(ctx, p)
	// The streams end at admission; wait for the last ones.
	streamsDone := make(chan struct{})
	go func() { following.Wait(); close(streamsDone) }()
	select {
	case <-streamsDone:
	case <-time.After(time.Until(deadline.Add(5 * time.Second))):
	case <-ctx.Done():
	}
	stopStreams()
	<-streamsDone

	adm, err := b.admissionTimes(ctx, b.sale)
	if err != nil {
		p.Status = "failed: " + err.Error()
		return p
	}
	b.reportAdmissions(p, adm, t0)
	for _, at := range adm {
		if b.firstAdmission.IsZero() || at.Before(b.firstAdmission) {
			b.firstAdmission = at
		}
	}
	var pollDelays, streamDelays []time.Duration
	streamErrs := map[string]int{}
	positions := 0
	for i, f := range b.fans {
		at, ok := adm[f.ID]
		if s := seen[i].Load(); ok && s != 0 {
			pollDelays = append(pollDelays, max(time.Unix(0, s).Sub(at), 0))
		}
	}
	for _, s := range streams {
		positions += s.Positions
		if s.Err != "" {
			streamErrs[s.Err]++
			continue
		}
		if at, ok := adm[b.fans[s.Fan].ID]; ok && !s.Admitted.IsZero() {
			streamDelays = append(streamDelays, max(s.Admitted.Sub(at), 0))
		}
	}
	if polls {
		d := delayStats(pollDelays)
		p.delay("admission to the poll that shows it", d)
		p.note(fmt.Sprintf("position polls: %d of %d polling fans saw their admission; each fan is polled in turn, so this delay is about one round of all waiting fans", d.N, n-sample))
	}
	if sample > 0 {
		d := delayStats(streamDelays)
		p.delay("admission to the SSE \"admitted\" fragment", d)
		p.note(fmt.Sprintf("SSE: %d streams, %d opened, %d saw their admission, %d position fragments in all; errors: %s", sample, streamOK, d.N, positions, errorsText(streamErrs)))
	}
	for _, f := range b.fans {
		if _, ok := adm[f.ID]; ok {
			b.entered = append(b.entered, f)
		}
	}
	b.admitted = len(b.entered) > 0
	return p
}

// seatMaps is the waiting phase's seat-map step: each polling fan (a share
// of them: -admitted-map-share) loads the seat map page as a browser does
// the moment its poll shows it admitted, so at the admission rate: cold (no copy of the page), then warm (If-None-Match
// with the page's ETag, when it has one), both with Chromium's
// Accept-Encoding (pageEncodings; the body is read as sent, not decoded,
// and the encodings the answers came in are counted). The loads run on
// workers of their own beside the polls, as fans' browsers do.
type seatMaps struct {
	b          *Bench
	url        string
	queue      chan int
	cold, warm *Recorder
	etags      atomic.Int64 // cold answers with an ETag
	coldBytes  atomic.Int64 // bodies of cold answers, as sent
	workers    sync.WaitGroup

	mu     sync.Mutex
	copies []pageCopy // the fans whose browser has the page, with its ETag
	// encodings counts the 200 answers, cold and warm, by Content-Encoding
	// ("identity" when none).
	encodings map[string]int
}

// countEncoding counts a 200 answer's Content-Encoding.
func (m *seatMaps) countEncoding(a answer) {
	if a.Status != http.StatusOK {
		return
	}
	enc := a.Header.Get("Content-Encoding")
	if enc == "" {
		enc = "identity"
	}
	m.mu.Lock()
	m.encodings[enc]++
	m.mu.Unlock()
}

// pageCopy is a fan's copy of the seat map page: its ETag.
type pageCopy struct {
	fan  *Fan
	etag string
}

// startSeatMaps starts the seat-map step's workers (a quarter of the
// connections, at least one).
func (b *Bench) startSeatMaps(ctx context.Context) *seatMaps {
	m := &seatMaps{
		b: b, url: b.url("/events/%d/seats", b.sale.EventID), queue: make(chan int, len(b.fans)), encodings: map[string]int{},
		cold: newRecorder("GET /events/{id}/seats (the arena's seat map page, cold), each fan as its admission shows", nil).
			measureCPU(ctx, b.cpu, "seat map page, cold (beside the position polls)").beside("position polls"),
		warm: newRecorder("GET /events/{id}/seats again, If-None-Match (warm)", nil),
	}
	for range max(b.cfg.Conns/4, 1) {
		m.workers.Go(func() {
			for i := range m.queue {
				if ctx.Err() == nil {
					m.fetch(ctx, b.fans[i])
				}
			}
		})
	}
	return m
}

// loadPage gets the seat map page at rawURL as fan f's browser does
// (HTML, Chromium's Accept-Encoding; the body as sent).
func loadPage(ctx context.Context, c *http.Client, rawURL string, f *Fan) (answer, error) {
	return send(ctx, c, http.MethodGet, rawURL, f, nil, "text/html,application/xhtml+xml", "Accept-Encoding: "+pageEncodings)
}

// load queues fan i's seat map.
func (m *seatMaps) load(i int) { m.queue <- i }

// fetch loads one fan's seat map cold, then warm if it had an ETag.
func (m *seatMaps) fetch(ctx context.Context, f *Fan) {
	var etag string
	m.cold.Time(func() string {
		a, err := loadPage(ctx, m.b.client, m.url, f)
		if err == nil && a.Status == http.StatusOK {
			etag = a.Header.Get("ETag")
			m.coldBytes.Add(int64(len(a.Body)))
			m.countEncoding(a)
		}
		return kind(a, err, http.StatusOK)
	})
	if etag == "" {
		return
	}
	m.etags.Add(1)
	m.mu.Lock()
	m.copies = append(m.copies, pageCopy{f, etag})
	m.mu.Unlock()
	m.warm.Time(func() string {
		a, err := revalidate(ctx, m.b.client, m.url, f, etag)
		m.countEncoding(a)
		return kind(a, err, http.StatusNotModified)
	})
}

// seatMapWarmRounds is how many times each fan with a copy of the seat map
// page loads it again in the closed loop of finish.
const seatMapWarmRounds = 5

// finish waits for the queued loads and adds the step's figures to p; then,
// since loads at the admission rate say how fast an answer is but not how
// many the server can give, the fans with a copy of the page load it again
// in a closed loop on C connections (each seatMapWarmRounds times, as
// browsers reloading it): the warm page's capacity, which issue 12's
// target compares with the echo ceiling.
func (m *seatMaps) finish(ctx context.Context, p *Phase) {
	close(m.queue)
	m.workers.Wait()
	if m.cold.Count() == 0 {
		p.note("seat map: no fan loaded it (no poll saw an admission)")
		return
	}
	m.b.addStep(p, m.cold)
	if n := m.cold.Count(); n > 0 {
		p.note(fmt.Sprintf("seat map, cold: %.0f KB a page as sent on average, %d of %d answers with an ETag",
			float64(m.coldBytes.Load())/1024/float64(n), m.etags.Load(), n))
	}
	defer func() { p.note(m.encodingNote()) }()
	if m.warm.Count() == 0 {
		p.note("seat map, warm: not measured: the seat map page has no ETag to revalidate")
		return
	}
	m.b.addStep(p, m.warm)
	b, n := m.b, len(m.copies)*seatMapWarmRounds
	prof := b.startProfile(ctx, "seatmap", min(max(time.Duration(n/2000)*time.Second, time.Second), 10*time.Second))
	rec := newRecorder(fmt.Sprintf("GET /events/{id}/seats warm, If-None-Match, closed loop, %d connections: each fan with the page %d times", b.cfg.Conns, seatMapWarmRounds),
		b.ui.Bar("waiting: seat map, warm, closed loop", int64(n))).
		measureCPU(ctx, b.cpu, "seat map page, warm, closed loop")
	ClosedLoop(ctx, b.cfg.Conns, Counter(n, time.Time{}), rec, func(ctx context.Context, i int) string {
		c := m.copies[i%len(m.copies)]
		a, err := revalidate(ctx, b.client, m.url, c.fan, c.etag)
		m.countEncoding(a)
		return kind(a, err, http.StatusNotModified)
	})
	b.addStep(p, rec)
	prof()
}

// encodingNote says what the seat map pages asked for and in which
// encodings the 200 answers came.
func (m *seatMaps) encodingNote() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []string
	for enc, n := range m.encodings {
		parts = append(parts, fmt.Sprintf("%s %d", enc, n))
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	return fmt.Sprintf("seat map pages asked with Accept-Encoding: %s (Chromium's); the 200 answers, cold and warm, came as: %s",
		pageEncodings, strings.Join(parts, ", "))
}

// reportAdmissions adds the admissions per second to p: the achieved rate
// over the admitting ticks against the set rate.
func (b *Bench) reportAdmissions(p *Phase, adm map[int64]time.Time, t0 time.Time) {
	fans := 0
	for _, f := range b.fans {
		if _, ok := adm[f.ID]; ok {
			fans++
		}
	}
	if fans == 0 {
		p.figure("admitted", fmt.Sprintf("nobody of %d fans was admitted within %v", len(b.fans), b.cfg.WaitTimeout), 0)
		return
	}
	// The rate counts every admission (the observer's too): a tick's batch
	// is the same whoever is in it.
	ts := make([]time.Time, 0, len(adm))
	for _, at := range adm {
		ts = append(ts, at)
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	first, last := ts[0], ts[len(ts)-1]
	span := last.Sub(first) + b.cfg.AdmissionTick
	rate := float64(len(ts)) / span.Seconds()
	p.figure("admitted", fmt.Sprintf("%d of %d fans, the first admission %.2f s after admission was let go, the last %.2f s after",
		fans, len(b.fans), first.Sub(t0).Seconds(), last.Sub(t0).Seconds()), float64(fans))
	p.figure("admission rate", fmt.Sprintf("%.0f fans/s achieved against %d/s set (%.0f%%), over the ticks from the first admission to the last",
		rate, b.cfg.AdmitRate, 100*rate/float64(b.cfg.AdmitRate)), rate)
	perSecond := map[int]int{}
	for _, t := range ts {
		perSecond[int(t.Sub(first).Seconds())]++
	}
	for s := 0; s <= int(last.Sub(first).Seconds()); s++ {
		p.Admissions = append(p.Admissions, perSecond[s])
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
