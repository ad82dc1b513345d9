// Command loadtest replays the opening of a sell-out against the real
// boxoffice binary on loopback, with real PostgreSQL and Redis, and reports
// throughput, latency, the server's memory and the invariants (issue 7;
// `make bench`, `make bench-sse`).
//
// It starts the binary (bin/boxoffice) on a free port with a database and a
// Redis key prefix of its own, seeded with the demo (the 15,000-seat Inspire
// Arena's event is the one sold), and drives it only through the URLs of
// CONTRACT.md. The fans' accounts and logged-in sessions are the one
// exception: they are written straight into PostgreSQL and Redis before the
// opening (setup.go), since log-in is not part of a sale's first minute.
// The bench also reads the stores to measure (admission times) and to check
// the invariants at the end.
//
// Phases (-mode bench):
//
//  1. set-up: N fans' accounts (COPY) and sessions (Redis);
//  2. join storm: every fan joins, closed loop with C connections (the peak
//     rate), then open loops at fixed offered rates (latency at a load);
//  3. waiting: admission is let go at a high rate; fans poll their
//     position (closed loop) and a sample follows the SSE stream;
//     measured: admissions per second against the rate, the delay from a
//     fan's admission to the poll or fragment that shows it;
//  4. holding and buying: first the hold step, a closed loop of the hold
//     request alone (each admitted fan holds 1 to 4 seats picked by hand,
//     no two fans the same) and one of the releases; then admitted fans
//     hold 1 to 4 seats, mostly in the best sections, retry other seats when they lose a race (409), and pay
//     through the sandbox PG, until the event sells out (its sell-out
//     time runs through the measurement steps);
//  5. sell-out: a fresh event of the same arena sold as fans meet it: every
//     fan joins its line, admission is let go at the same rate, and each
//     fan, as its position poll (every 2 s) shows it admitted, loads the
//     seat map page, holds and pays as in phase 4, while others still
//     wait; timed from the first admission to the last seat sold;
//  6. invariants, from PostgreSQL and Redis, for both events.
//
// Baselines in the same run: an echo server that answers "pong" under the
// same generator and connection count, and go-redis loops of SET, ZADD and
// EVAL. With -mode sse it holds K streams on one instance instead, and
// reports memory per connection and admission-to-fragment delays.
//
// The report goes to -out (bench-report/): report.md, report.json, a
// latency-over-time plot per phase, where the machine's CPU went in each
// measured step (server, Redis, PostgreSQL, the generator, nginx, other,
// idle; cpu.go) with Redis's commands a request, and CPU profiles of the
// server for the targets it missed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
)

// Config is the bench's configuration, from its flags.
type Config struct {
	Mode             string        `json:"mode"`
	Binary           string        `json:"binary"`
	Out              string        `json:"-"`
	Fans             int           `json:"fans"`
	Conns            int           `json:"connections"`
	Rates            []int         `json:"open_loop_rates"`
	OpenDuration     time.Duration `json:"open_loop_duration"`
	BaselineDuration time.Duration `json:"baseline_duration"`
	MaxInFlight      int           `json:"max_in_flight"`
	AdmitRate        int           `json:"admission_rate"`
	AdmissionTick    time.Duration `json:"admission_tick"`
	WaitTimeout      time.Duration `json:"wait_timeout"`
	StreamSample     int           `json:"sse_sample"`
	SeatMapShare     float64       `json:"seat_map_share"`
	AdmittedMapShare float64       `json:"admitted_map_share"`
	SeatMapRefresh   time.Duration `json:"seat_map_refresh"`
	HoldRetries      int           `json:"hold_retries"`
	BestShare        float64       `json:"best_share"`
	BuyTimeout       time.Duration `json:"buy_timeout"`
	SellOutPoll      time.Duration `json:"sellout_poll"`
	SSEConns         int           `json:"sse_connections"`
	SSEIPs           int           `json:"sse_source_addresses"`
	Profile          bool          `json:"profile"`
	GeneratorProfile bool          `json:"generator_profile,omitempty"`
	Baselines        bool          `json:"baselines"`
	Keep             bool          `json:"keep"`
	Quick            bool          `json:"quick"`
	RedisCluster     bool          `json:"redis_cluster"`
	Instances        int           `json:"instances"`
	DatabaseURL      string        `json:"-"`
	RedisURL         string        `json:"-"`
}

func main() {
	var serveEchoAddr string
	cfg := Config{}
	fs := flag.NewFlagSet("loadtest", flag.ExitOnError)
	fs.StringVar(&serveEchoAddr, "serve-echo", "", "internal: run the HTTP baseline's echo server on this address")
	fs.StringVar(&cfg.Mode, "mode", "bench", "bench (the sale's phases) or sse (K concurrent SSE streams)")
	fs.StringVar(&cfg.Binary, "binary", "bin/boxoffice", "the boxoffice binary to test")
	fs.StringVar(&cfg.Out, "out", "bench-report", "folder for the report")
	fs.IntVar(&cfg.Fans, "fans", 20000, "fans (accounts with logged-in sessions)")
	fs.IntVar(&cfg.Conns, "conns", 256, "concurrent connections of the closed loops (and the most the open loops use)")
	rates := fs.String("rates", "5000,10000,20000", "offered rates of the join storm's open loops, requests per second")
	fs.DurationVar(&cfg.OpenDuration, "open-duration", 3*time.Second, "length of each open-loop step")
	fs.DurationVar(&cfg.BaselineDuration, "baseline-duration", 3*time.Second, "length of each closed-loop baseline step")
	fs.IntVar(&cfg.MaxInFlight, "max-in-flight", 8192, "open loop: requests unanswered at once before the generator counts them as not sent")
	fs.IntVar(&cfg.AdmitRate, "admit-rate", 0, "admission rate set for the waiting phase, fans per second (0: a tenth of the fans, at least 100)")
	fs.DurationVar(&cfg.AdmissionTick, "admission-tick", time.Second, "the server's ADMISSION_TICK")
	fs.DurationVar(&cfg.WaitTimeout, "wait-timeout", 2*time.Minute, "longest waiting phase")
	fs.IntVar(&cfg.StreamSample, "sse-sample", 500, "fans that follow the SSE stream in the waiting phase (the others poll)")
	fs.Float64Var(&cfg.SeatMapShare, "seat-map-share", 0.01, "share of fans that load the whole seat map before holding (the others choose from a shared, refreshed copy)")
	fs.Float64Var(&cfg.AdmittedMapShare, "admitted-map-share", 1, "waiting phase: share of the polling fans that load the seat map page the moment they see their admission (1: all, as browsers do)")
	fs.DurationVar(&cfg.SeatMapRefresh, "seat-map-refresh", time.Second, "how often the shared copy of the seat map is reloaded")
	fs.IntVar(&cfg.HoldRetries, "hold-retries", 8, "how often a fan who lost a race tries other seats")
	fs.Float64Var(&cfg.BestShare, "best-share", 0.5, "share of fans that ask for the best available (grade and quantity) instead of choosing seats from the map")
	fs.DurationVar(&cfg.BuyTimeout, "buy-timeout", 6*time.Minute, "longest holding-and-buying phase (fans hold first, then pay: keep it near the event's 5-minute hold TTL)")
	fs.DurationVar(&cfg.SellOutPoll, "sellout-poll", 2*time.Second, "sell-out phase: how often each waiting fan polls its position (the waiting page polls every 2 s when its stream fails)")
	fs.IntVar(&cfg.SSEConns, "sse-conns", 10000, "-mode sse: concurrent SSE streams")
	fs.IntVar(&cfg.SSEIPs, "sse-ips", 16, "-mode sse: loopback source addresses (127.0.0.2 ...) the streams are spread over; the server takes STREAMS_PER_ADDRESS (1,000 by default) from each, so 10,000 streams need at least 10")
	fs.BoolVar(&cfg.Profile, "profile", true, "take CPU profiles of the server (PPROF_ADDR) during the measured steps")
	fs.BoolVar(&cfg.GeneratorProfile, "generator-profile", false, "also take CPU profiles of the load test itself over the same steps (profiles/<step>-generator.pb.gz); off by default, since profiling adds to the generator's CPU a request")
	fs.BoolVar(&cfg.Baselines, "baselines", true, "measure the echo and Redis baselines")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the bench's database and Redis keys")
	fs.BoolVar(&cfg.Quick, "quick", false, "short steps for a run under a minute: 1 s open loops and baselines, admission at fans/4 per second on 200 ms ticks, 100 SSE streams (1,000 with -mode sse), 20 s waiting and buying limits")
	fs.BoolVar(&cfg.RedisCluster, "redis-cluster", false, "run on the Redis Cluster of REDIS_CLUSTER_URL (scripts/services.sh cluster, which make bench runs) instead of REDIS_URL")
	fs.IntVar(&cfg.Instances, "instances", 1, "instances of the binary; more than 1 run behind nginx (deploy/nginx.conf, NGINX_PATH or nginx on PATH), which the load goes through; profiles and memory are the first instance's")
	bars := fs.Bool("progress", term.IsTerminal(int(os.Stderr.Fd())), "show progress bars")
	fs.Parse(os.Args[1:])

	if serveEchoAddr != "" {
		if err := serveEcho(serveEchoAddr); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest: echo server:", err)
			os.Exit(1)
		}
		return
	}
	for _, r := range strings.Split(*rates, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "loadtest: -rates: want positive integers separated by commas, got %q\n", *rates)
			os.Exit(2)
		}
		cfg.Rates = append(cfg.Rates, n)
	}
	if cfg.Quick {
		quick(&cfg, fs)
	}
	if cfg.AdmitRate == 0 {
		cfg.AdmitRate = max(fans(cfg)/10, 100)
	}
	cfg.DatabaseURL = env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/boxoffice?sslmode=disable")
	cfg.RedisURL = env("REDIS_URL", "redis://127.0.0.1:6379/0")
	if cfg.RedisCluster {
		if cfg.RedisURL = os.Getenv("REDIS_CLUSTER_URL"); cfg.RedisURL == "" {
			fmt.Fprintln(os.Stderr, "loadtest: -redis-cluster needs REDIS_CLUSTER_URL: run it through make bench, or eval \"$(scripts/services.sh cluster)\" first")
			os.Exit(2)
		}
	}
	if cfg.Instances < 1 || cfg.Instances > 16 {
		fmt.Fprintln(os.Stderr, "loadtest: want -instances from 1 to 16")
		os.Exit(2)
	}
	if cfg.Fans < 1 || cfg.Conns < 1 || cfg.AdmitRate > 100000 || cfg.Mode != "bench" && cfg.Mode != "sse" {
		fmt.Fprintln(os.Stderr, "loadtest: want -fans and -conns of at least 1, -admit-rate up to 100000 and -mode bench or sse")
		os.Exit(2)
	}

	if os.Getenv("GOGC") == "" {
		// The generator's live heap is small (fans, samples) and it
		// allocates for every request: collecting at 5 times the live
		// heap instead of twice spends less of the cores it shares with
		// the server on its own garbage.
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ui := newUI(*bars)
	run := runBench
	if cfg.Mode == "sse" {
		run = runSSE
	}
	_, err := run(ctx, cfg, ui)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

// quick shortens the steps whose flags were not set.
func quick(cfg *Config, fs *flag.FlagSet) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	def := func(name string, apply func()) {
		if !set[name] {
			apply()
		}
	}
	def("open-duration", func() { cfg.OpenDuration = time.Second })
	def("baseline-duration", func() { cfg.BaselineDuration = time.Second })
	def("sse-sample", func() { cfg.StreamSample = min(cfg.StreamSample, 100) })
	def("wait-timeout", func() { cfg.WaitTimeout = 20 * time.Second })
	def("buy-timeout", func() { cfg.BuyTimeout = 20 * time.Second })
	def("sse-conns", func() { cfg.SSEConns = min(cfg.SSEConns, 1000) })
	def("admission-tick", func() { cfg.AdmissionTick = 200 * time.Millisecond })
	def("admit-rate", func() { cfg.AdmitRate = max(fans(*cfg)/4, 100) })
}

// fans returns how many fans the mode sets up: -fans, or one per stream.
func fans(cfg Config) int {
	if cfg.Mode == "sse" {
		return cfg.SSEConns
	}
	return cfg.Fans
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
