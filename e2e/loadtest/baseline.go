package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
)

// serveEcho is the HTTP baseline's server: echo answering GET /ping with
// "pong", nothing else. The bench runs it as a process of its own (this
// program with -serve-echo), as the server under test is one.
func serveEcho(addr string) error {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/ping", func(c echo.Context) error { return c.String(http.StatusOK, "pong") })
	return e.Start(addr)
}

// echoBaseline starts the echo server process and measures it
// (httpBaseline), with meter's server set to it. The process ends with the
// measurement.
func echoBaseline(ctx context.Context, cfg Config, ui *UI, meter *CPUMeter) ([]Stats, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve-echo", addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	meter.setServers(cmd.Process.Pid)
	defer meter.setServers()
	url := "http://" + addr + "/ping"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the echo baseline server did not start")
		}
	}
	return httpBaseline(ctx, cfg, ui, meter, "echo", url), nil
}

// httpBaseline measures GET url, which answers 200, with the generator and
// connection count of the phases: a closed loop for the peak rate, then the
// open loop's rates; its steps are named after name, and meter measures
// the CPU of each.
func httpBaseline(ctx context.Context, cfg Config, ui *UI, meter *CPUMeter, name, url string) []Stats {
	client := newClient(cfg.Conns)
	defer client.CloseIdleConnections()
	ping := func(ctx context.Context, _ int) string {
		a, err := call(ctx, client, http.MethodGet, url, nil, nil)
		return kind(a, err, http.StatusOK)
	}
	var out []Stats
	rec := newRecorder(fmt.Sprintf("%s closed loop, %d connections", name, cfg.Conns), ui.Bar("baseline: "+name+", closed loop", -1)).measureCPU(ctx, meter, "")
	ClosedLoop(ctx, cfg.Conns, Counter(-1, time.Now().Add(cfg.BaselineDuration)), rec, ping)
	ui.Done()
	out = append(out, rec.Stats())
	for _, rate := range cfg.Rates {
		rec := newRecorder(fmt.Sprintf("%s open loop, %d/s offered", name, rate), ui.Bar(fmt.Sprintf("baseline: %s at %d/s", name, rate), int64(float64(rate)*cfg.OpenDuration.Seconds()))).measureCPU(ctx, meter, "")
		OpenLoop(ctx, float64(rate), cfg.OpenDuration, cfg.MaxInFlight, rec, ping)
		ui.Done()
		out = append(out, rec.Stats())
	}
	return out
}

// baselineScript is the Redis baseline's EVAL: a join's shape (INCR a
// sequence, ZADD NX the member with it, read its score back).
const baselineScript = `local seq = redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[2], 'NX', seq, ARGV[1])
return redis.call('ZSCORE', KEYS[2], ARGV[1])`

// redisBaseline measures the Redis ceiling with go-redis, conc clients in a
// closed loop for d each: SET, ZADD and EVAL of a join-shaped script. Its
// keys live under prefix and are deleted at the end; meter measures the
// CPU of each.
func redisBaseline(ctx context.Context, cfg Config, rdb redis.UniversalClient, prefix string, ui *UI, meter *CPUMeter) ([]Stats, error) {
	script := redis.NewScript(baselineScript)
	if err := script.Load(ctx, rdb).Err(); err != nil {
		return nil, fmt.Errorf("redis baseline: %w", err)
	}
	// One hash tag, so that the script's keys share a Redis Cluster slot.
	seq, zset := prefix+"baseline:{b}:seq", prefix+"baseline:{b}:zset"
	defer rdb.Del(context.WithoutCancel(ctx), seq, zset, prefix+"baseline:{b}:set")
	ops := []struct {
		name string
		op   func(ctx context.Context, i int) error
	}{
		{"SET", func(ctx context.Context, i int) error {
			return rdb.Set(ctx, prefix+"baseline:{b}:set", i, 0).Err()
		}},
		{"ZADD", func(ctx context.Context, i int) error {
			return rdb.ZAdd(ctx, zset, redis.Z{Score: float64(i), Member: strconv.Itoa(i)}).Err()
		}},
		{"EVAL (INCR, ZADD NX, ZSCORE)", func(ctx context.Context, i int) error {
			return script.Run(ctx, rdb, []string{seq, zset}, "m"+strconv.Itoa(i)).Err()
		}},
	}
	var out []Stats
	for _, o := range ops {
		rec := newRecorder("Redis "+o.name, ui.Bar("baseline: Redis "+o.name, -1)).measureCPU(ctx, meter, "")
		ClosedLoop(ctx, cfg.Conns, Counter(-1, time.Now().Add(cfg.BaselineDuration)), rec, func(ctx context.Context, i int) string {
			if err := o.op(ctx, i); err != nil {
				return errKind(err)
			}
			return kindOK
		})
		ui.Done()
		out = append(out, rec.Stats())
	}
	return out, nil
}
