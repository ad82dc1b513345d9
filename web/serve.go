package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/demo"
	"github.com/boxoffice/boxoffice/handlers"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/views"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
)

// shutdownGrace is how long in-flight requests get to finish after SIGTERM.
const shutdownGrace = 15 * time.Second

// newLogger returns the JSON logger at level, and routes go-redis's own log
// lines (dial failures while Redis is down) into it as warnings.
func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	logger := slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
	redis.SetLogger(redisLogger{logger})
	return logger
}

// redisLogger adapts slog to go-redis's logging interface.
type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.l.WarnContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}

// openStores opens PostgreSQL (creating and migrating the database, waiting
// up to 30 s for the server to answer) and Redis (which may still be down:
// /readyz reports it, and requests that need it answer 503; but every seed
// of a cluster URL must answer within 5 s, so that a wrong seed is found at
// once).
func openStores(ctx context.Context, cfg Config, logger *slog.Logger) (*store.DB, *store.Redis, error) {
	var db *store.DB
	var err error
	for wait := time.Now().Add(30 * time.Second); ; {
		if db, err = store.OpenDB(ctx, cfg.DatabaseURL); err == nil || time.Now().After(wait) || ctx.Err() != nil {
			break
		}
		logger.Warn("PostgreSQL does not answer yet; retrying", "err", err)
		time.Sleep(time.Second)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("PostgreSQL at %s: %w", redact(cfg.DatabaseURL), err)
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, nil, err
	}
	if cfg.DatabaseReadURL != "" {
		if err := db.OpenReadPool(ctx, cfg.DatabaseReadURL); err != nil {
			db.Close()
			return nil, nil, err
		}
	}
	rdb, err := store.NewRedis(cfg.RedisURL, cfg.RedisPrefix)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	seeds, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := store.CheckSeeds(seeds, cfg.RedisURL); err != nil {
		db.Close()
		rdb.Close()
		return nil, nil, err
	}
	if err := rdb.Ping(ctx); err != nil {
		logger.Warn("Redis does not answer yet; serving 503 where it is needed", "err", err)
	}
	return db, rdb, nil
}

// serve runs the site until ctx is cancelled, then shuts down gracefully:
// stop accepting, end SSE streams, drain in-flight requests, close pools.
func serve(ctx context.Context, cfg Config, logger *slog.Logger, stdout io.Writer) error {
	logger.Info("starting", cfg.LogAttrs()...)
	db, rdb, err := openStores(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer db.Close()
	defer rdb.Close()

	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := store.RegisterPoolMetrics(registry, db); err != nil {
		return err
	}

	sessionStore, err := store.NewSessions(rdb.Client, cfg.RedisPrefix, 0, registry)
	if err != nil {
		return err
	}
	sessions := handlers.NewSessions(sessionStore, strings.HasPrefix(cfg.BaseURL, "https://"))

	queueMetrics, err := store.NewQueueMetrics(registry)
	if err != nil {
		return err
	}
	holds, err := store.NewHolds(db, rdb, registry)
	if err != nil {
		return err
	}
	events := &store.Events{DB: db}
	pipe, err := rdb.AutoPipeline()
	if err != nil {
		return err
	}
	queue := &store.Queue{Redis: rdb, Metrics: queueMetrics, Pipe: pipe}
	holds.Pipe = pipe
	checkout, err := newPayments(ctx, cfg, db, rdb, holds, logger)
	if err != nil {
		return err
	}
	defer checkout.close(logger) // after the workers ended (the defer below runs first)

	// Background workers run until stopping ends, and serve waits for them.
	stopping, stop := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	defer func() { stop(); workers.Wait() }()
	admitter := &store.Admitter{Queue: queue, Source: events, Tick: cfg.AdmissionTick, Instance: instanceName(), Logger: logger}
	workers.Go(func() {
		if err := admitter.Run(stopping); err != nil {
			logger.Error("admitter stopped", "err", err)
		}
	})
	// The session copies stop with the workers: requests still draining
	// then read their sessions from Redis.
	workers.Go(func() { sessionStore.Run(stopping) })
	checkout.start(stopping, &workers)
	// One cache of the events serves the hot paths and the event pages, so
	// that an instance counts an event's seats (Holds.EventWithHolds) at
	// most once a second, not once for each.
	liveEvents := &store.EventCache{Events: events, Holds: holds}
	srv := &handlers.Server{
		Logger:         logger,
		Sessions:       sessions,
		Accounts:       &store.Accounts{DB: db},
		Events:         events,
		LiveEvents:     liveEvents,
		EventPages:     liveEvents,
		Queue:          queue,
		Holds:          holds,
		Ready:          map[string]handlers.Pinger{"postgres": db, "redis": rdb},
		TrustedProxies: cfg.TrustedProxies,
		Unreachable:    store.Unreachable,
		Metrics:        registry,
		Stopping:       stopping,
		Venues:         &store.Venues{DB: db},
		Audit:          &store.AuditLog{DB: db},
		Broadcasts:     &store.Broadcasts{DB: db, Redis: rdb},

		AdmissionTick:     cfg.AdmissionTick,
		Draws:             &store.Draws{DB: db},
		ChallengeKey:      challengeKey(cfg.SessionSecret),
		StreamsPerSession: cfg.StreamsPerSession,
		StreamsPerAddress: cfg.StreamsPerAddress,
		DefaultLang:       cfg.DefaultLang,

		Orders:            checkout.orders,
		Desk:              checkout.orders,
		Checkout:          checkout.checkout,
		Refunds:           checkout.checkout,
		Blocks:            &store.Blocks{DB: db, Holds: holds},
		SandboxPG:         checkout.sandboxHandler(),
		PGClientKey:       cfg.PGClientKey,
		CustomerKeySecret: []byte(cfg.SessionSecret),
		PGCurrencies:      checkout.pg.Currencies(),
	}
	if cfg.RateLimits {
		srv.Limiter = store.NewRateLimiter(rdb)
	}
	// No ReadTimeout: it would also cut the waiting room's SSE streams
	// (net/http cancels a request whose connection read times out). Bodies
	// get a read deadline per request instead (handlers.DefaultBodyTimeout).
	httpServer := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	fmt.Fprintf(stdout, "boxoffice is listening on %s (open %s)\n", ln.Addr(), cfg.BaseURL)

	if cfg.PprofAddr != "" {
		pln, err := net.Listen("tcp", cfg.PprofAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("profiler: listen on %s: %w", cfg.PprofAddr, err)
		}
		defer serveProfiler(pln, logger).Close()
	}

	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining requests")
	stop()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := httpServer.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// instanceName names this process, host:pid, in the admitter's tick locks.
func instanceName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// serveProfiler serves net/http/pprof's handlers (/debug/pprof/...) on ln,
// a loopback listener of its own (PPROF_ADDR, checked by LoadConfig), never
// on the site's listener: the load test (e2e/loadtest) takes CPU profiles of
// the server through it. Blocking (on channels, selects, mutexes: a request
// waiting for a pool connection among them, never for the network) and
// mutex contention are sampled only while a request for their profile runs
// (/debug/pprof/block?seconds=N and /debug/pprof/mutex?seconds=N, see
// windowedProfile): sampled all the time, they cost the server 2 to 7% of
// its CPU under load, which a run of the load test would count as the
// product's. Close the returned server to stop it.
func serveProfiler(ln net.Listener, logger *slog.Logger) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/debug/pprof/block", &windowedProfile{name: "block", sample: func(on bool) {
		runtime.SetBlockProfileRate(cond(on, int((10 * time.Microsecond).Nanoseconds()), 0))
	}})
	mux.Handle("/debug/pprof/mutex", &windowedProfile{name: "mutex", sample: func(on bool) {
		runtime.SetMutexProfileFraction(cond(on, 100, 0))
	}})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	go srv.Serve(ln)
	logger.Warn("the profiler is on: serving /debug/pprof/ on a loopback listener", "addr", ln.Addr().String())
	return srv
}

// cond is a if ok, else b.
func cond(ok bool, a, b int) int {
	if ok {
		return a
	}
	return b
}

// windowedProfile serves the runtime profile name ("block" or "mutex") over
// a window the request names, ?seconds=N (net/http/pprof's delta profile):
// sampling is turned on (sample(true)) when the first such request starts
// and off when the last one ends, so that the server pays for it only
// then. Blocking is sampled about once per 10 µs blocked, mutex contention
// once in 100 events. A request without seconds, which would read what was
// sampled outside any window, is answered 400 with a sentence that says so.
type windowedProfile struct {
	name   string
	sample func(on bool)

	mu   sync.Mutex
	open int // requests in their window
}

func (p *windowedProfile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.FormValue("seconds") == "" {
		http.Error(w, p.name+" events are sampled only while a request for them runs: ask for a window, /debug/pprof/"+p.name+"?seconds=N", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	if p.open++; p.open == 1 {
		p.sample(true)
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if p.open--; p.open == 0 {
			p.sample(false)
		}
		p.mu.Unlock()
	}()
	pprof.Handler(p.name).ServeHTTP(w, r)
}

// migrate applies the migrations and exits.
func migrate(ctx context.Context, cfg Config, stdout io.Writer) error {
	db, err := openMigrated(ctx, cfg)
	if err != nil {
		return err
	}
	db.Close()
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}

// openMigrated opens the database (creating it if missing) and applies the
// migrations, for the operator's commands.
func openMigrated(ctx context.Context, cfg Config) (*store.DB, error) {
	db, err := store.OpenDB(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// seedDemo creates the demo accounts, venues and events on an empty
// database and prints the log-ins; on a database with venues it does nothing.
// --password sets every demo account's password (random when empty).
func seedDemo(ctx context.Context, cfg Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("seed-demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	password := fs.String("password", "", "the demo accounts' password, 8 characters or more")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("seed-demo: %w (want [--password P])", err)
	}
	db, err := openMigrated(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := demo.Seed(ctx, db, demo.Options{Password: *password})
	if err != nil {
		return fmt.Errorf("seed-demo: %w", err)
	}
	return res.Print(stdout, cfg.DefaultLang)
}

// createAdmin makes an admin account from --email, --password and --name.
func createAdmin(ctx context.Context, cfg Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("create-admin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	email := fs.String("email", "", "the admin's e-mail address")
	password := fs.String("password", "", "the admin's password, 8 characters or more")
	name := fs.String("name", "Admin", "the admin's name")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("create-admin: %w (want --email E --password P [--name N])", err)
	}
	db, err := openMigrated(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	a, err := (&store.Accounts{DB: db}).CreateAccount(ctx, boxoffice.Signup{Email: *email, Password: *password, Name: *name, Role: boxoffice.RoleAdmin})
	var e *boxoffice.Error
	if errors.As(err, &e) && len(e.Fields) > 0 {
		var reasons []string
		for field, reason := range e.Fields {
			reasons = append(reasons, field+": "+views.In(cfg.DefaultLang, reason))
		}
		return fmt.Errorf("create-admin: %s", strings.Join(reasons, "; "))
	} else if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "admin %s created (account %d)\n", a.Email, a.ID)
	return nil
}

// challengeKey is the key that signs the proof-of-work challenges of joins:
// HMAC-SHA-256 of a fixed label under SESSION_SECRET, so that a challenge's
// signature can never stand for a ticket code or a customer key signed with
// the secret itself.
func challengeKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("boxoffice join challenge"))
	return m.Sum(nil)
}
