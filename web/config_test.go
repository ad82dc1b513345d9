package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadConfig_Defaults(t *testing.T) {
	c, err := LoadConfig(env(nil))
	if err != nil {
		t.Fatalf("LoadConfig(empty) = %v, want the developer defaults", err)
	}
	if c.Addr != ":8080" || c.BaseURL != "http://localhost:8080" || c.PGProvider != "sandbox" ||
		c.PGBaseURL != "http://localhost:8080/sandbox-pg" || c.AdmissionTick != time.Second || !c.RateLimits ||
		c.PaymentWindow != 10*time.Minute || c.PprofAddr != "" || c.ReconcileInterval != 30*time.Second || c.DefaultLang != "ko" {
		t.Errorf("defaults = %+v", c)
	}
}

func TestLoadConfig_RedisCluster(t *testing.T) {
	c, err := LoadConfig(env(map[string]string{"REDIS_URL": "redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002"}))
	if err != nil {
		t.Fatalf("LoadConfig(cluster URL) = %v, want it accepted", err)
	}
	_, cluster, err := store.ParseRedisURL(c.RedisURL)
	if err != nil || cluster == nil || !slices.Equal(cluster.Addrs, []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}) {
		t.Fatalf("ParseRedisURL(%q) = %+v, %v; want three seeds", c.RedisURL, cluster, err)
	}
}

func TestLoadConfig_TrustedProxies(t *testing.T) {
	c, err := LoadConfig(env(map[string]string{"TRUSTED_PROXIES": "10.0.0.0/24, 127.0.0.1,::1"}))
	if err != nil {
		t.Fatalf("LoadConfig = %v", err)
	}
	if got := fmt.Sprint(c.TrustedProxies); got != "[10.0.0.0/24 127.0.0.1/32 ::1/128]" {
		t.Fatalf("TrustedProxies = %s, want [10.0.0.0/24 127.0.0.1/32 ::1/128]", got)
	}
	if c, err := LoadConfig(env(nil)); err != nil || len(c.TrustedProxies) != 0 {
		t.Fatalf("default TrustedProxies = %v, %v; want none", c.TrustedProxies, err)
	}
}

func TestLoadConfig_Bad(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want []string // every variable the error must name
	}{
		{map[string]string{"ADDR": "8080"}, []string{"ADDR"}},
		{map[string]string{"DATABASE_URL": "mysql://x/y", "REDIS_URL": "localhost:6379"}, []string{"DATABASE_URL", "REDIS_URL"}},
		{map[string]string{"PG_PROVIDER": "paypal"}, []string{"PG_PROVIDER"}},
		{map[string]string{"PG_PROVIDER": "toss"}, []string{"PG_SECRET_KEY", "PG_CLIENT_KEY"}},
		{map[string]string{"PG_PROVIDER": "toss", "PG_SECRET_KEY": "test_sk_x"}, []string{"PG_CLIENT_KEY"}},
		{map[string]string{"BASE_URL": "https://tickets.example"}, []string{"SESSION_SECRET"}},
		{map[string]string{"PPROF_ADDR": "0.0.0.0:6060"}, []string{"PPROF_ADDR"}},
		{map[string]string{"PPROF_ADDR": ":6060"}, []string{"PPROF_ADDR"}},
		{map[string]string{"PPROF_ADDR": "10.0.0.1:6060"}, []string{"PPROF_ADDR"}},
		{map[string]string{"SESSION_SECRET": "short", "LOG_LEVEL": "loud", "ADMISSION_TICK": "fast", "RATE_LIMITS": "maybe"}, []string{"SESSION_SECRET", "LOG_LEVEL", "ADMISSION_TICK", "RATE_LIMITS"}},
		{map[string]string{"PAYMENT_WINDOW": "1s"}, []string{"PAYMENT_WINDOW"}},
		{map[string]string{"PAYMENT_WINDOW": "1h"}, []string{"PAYMENT_WINDOW"}},
		{map[string]string{"RECONCILE_INTERVAL": "500ms"}, []string{"RECONCILE_INTERVAL"}},
		{map[string]string{"RECONCILE_INTERVAL": "10m"}, []string{"RECONCILE_INTERVAL"}},
		{map[string]string{"RECONCILE_INTERVAL": "often"}, []string{"RECONCILE_INTERVAL"}},
		{map[string]string{"DEFAULT_LANG": "fr"}, []string{"DEFAULT_LANG"}},
		{map[string]string{"DEFAULT_LANG": "ko-KR"}, []string{"DEFAULT_LANG"}},
		{map[string]string{"REDIS_URL": "redis://127.0.0.1:7000/0?addr=127.0.0.1:7001"}, []string{"REDIS_URL"}},
		{map[string]string{"REDIS_URL": "redis://127.0.0.1:7000?addr=127.0.0.1:7001&db=2"}, []string{"REDIS_URL"}},
		{map[string]string{"REDIS_PREFIX": "bo:{x}:"}, []string{"REDIS_PREFIX"}},
		{map[string]string{"REDIS_PREFIX": "bo}"}, []string{"REDIS_PREFIX"}},
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.0/33"}, []string{"TRUSTED_PROXIES"}},
		{map[string]string{"DATABASE_READ_URL": "mysql://replica/boxoffice"}, []string{"DATABASE_READ_URL"}},
		{map[string]string{"DATABASE_READ_URL": "postgres://replica:5432"}, []string{"DATABASE_READ_URL"}},
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.1, nginx"}, []string{"TRUSTED_PROXIES"}},
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.1,,"}, []string{"TRUSTED_PROXIES"}},
		{map[string]string{"TRUSTED_PROXIES": ",10.0.0.1"}, []string{"TRUSTED_PROXIES"}},
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.1, ,10.0.0.2"}, []string{"TRUSTED_PROXIES"}},
	}
	for _, tt := range tests {
		_, err := LoadConfig(env(tt.env))
		if err == nil {
			t.Errorf("LoadConfig(%v) = nil, want an error naming %v", tt.env, tt.want)
			continue
		}
		for _, name := range tt.want {
			if !strings.Contains(err.Error(), name+":") {
				t.Errorf("LoadConfig(%v) = %q, want it to name %s", tt.env, err, name)
			}
		}
	}
}

func TestLoadConfig_DefaultLang(t *testing.T) {
	if c, err := LoadConfig(env(map[string]string{"DEFAULT_LANG": "en"})); err != nil || c.DefaultLang != "en" {
		t.Errorf("LoadConfig(DEFAULT_LANG=en) = %q, %v; want en", c.DefaultLang, err)
	}
}

func TestLoadConfig_PprofAddr(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:6060", "localhost:6060", "[::1]:6060", "127.0.0.9:0"} {
		c, err := LoadConfig(env(map[string]string{"PPROF_ADDR": addr}))
		if err != nil || c.PprofAddr != addr {
			t.Errorf("LoadConfig(PPROF_ADDR=%s) = %q, %v; want it accepted", addr, c.PprofAddr, err)
		}
	}
}

// RECONCILE_INTERVAL paces the whole reconciler, and its default keeps the
// store's defaults: every 30 s, an order first asked about after a minute and
// again every two.
func TestNewPayments_ReconcilerPace(t *testing.T) {
	tests := []struct {
		interval              string
		every, grace, recheck time.Duration
	}{
		{"", store.DefaultReconcileInterval, store.DefaultReconcileGrace, store.DefaultReconcileRecheck},
		{"1s", time.Second, 2 * time.Second, 4 * time.Second},
	}
	for _, tt := range tests {
		cfg, err := LoadConfig(env(map[string]string{"PG_PROVIDER": "toss", "PG_SECRET_KEY": "test_sk_x", "PG_CLIENT_KEY": "test_ck_x", "RECONCILE_INTERVAL": tt.interval}))
		if err != nil {
			t.Fatal(err)
		}
		c, err := newPayments(context.Background(), cfg, nil, nil, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if c.pg.CheckoutPage != cfg.BaseURL+"/payments/checkout" || c.sandbox != nil {
			t.Errorf("PG_PROVIDER=toss: checkout page %q, sandbox %v; want BASE_URL/payments/checkout and none", c.pg.CheckoutPage, c.sandbox)
		}
		if c.reconcile != tt.every || c.orders.ReconcileGrace != tt.grace || c.orders.ReconcileRecheck != tt.recheck {
			t.Errorf("RECONCILE_INTERVAL=%q: every %v, grace %v, recheck %v; want %v, %v, %v", tt.interval,
				c.reconcile, c.orders.ReconcileGrace, c.orders.ReconcileRecheck, tt.every, tt.grace, tt.recheck)
		}
	}
}

// The binary refuses a bad configuration with a message naming the variable,
// before it touches any service.
func TestRun_BadConfig(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"serve"}, env(map[string]string{"REDIS_URL": "nonsense"}), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL: want redis://host:port/db") {
		t.Fatalf("run with a bad REDIS_URL = %v, want an error naming REDIS_URL", err)
	}
	if err := run(context.Background(), []string{"fly"}, env(nil), &stdout, &stderr); err == nil || !strings.Contains(err.Error(), `unknown command "fly"`) {
		t.Fatalf("run fly = %v, want unknown command", err)
	}
}

// With Redis unreachable the binary still starts, and /readyz says 503 until
// Redis answers; /healthz stays 200.
func TestRun_ReadyzWithoutRedis(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close() // nothing listens there now
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, env(map[string]string{
			"ADDR":         fmt.Sprintf("127.0.0.1:%d", port),
			"DATABASE_URL": storetest.NewDatabaseURL(t),
			"REDIS_URL":    "redis://" + deadAddr + "/0",
			"LOG_LEVEL":    "error",
		}), io.Discard, io.Discard)
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	status := func(path string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.AddCookie(&http.Cookie{Name: "boxoffice_session", Value: "a-session-in-redis"})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for deadline := time.Now().Add(30 * time.Second); status("/healthz") != http.StatusOK; {
		if time.Now().After(deadline) {
			t.Fatal("the binary did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz with Redis down = %d, want 503", got)
	}
	if got := status("/login"); got != http.StatusServiceUnavailable {
		t.Errorf("a page that needs the session store with Redis down = %d, want 503", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run after cancel = %v, want a clean shutdown", err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// REDIS_URL's protocol= takes only the RESP versions go-redis speaks; any
// other value stops the binary with a sentence naming the allowed ones.
func TestLoadConfig_RedisProtocol(t *testing.T) {
	for _, u := range []string{"redis://127.0.0.1:6379/0?protocol=2", "redis://127.0.0.1:6379/0?protocol=3", "redis://127.0.0.1:7000?addr=127.0.0.1:7001&protocol=2"} {
		if _, err := LoadConfig(env(map[string]string{"REDIS_URL": u})); err != nil {
			t.Errorf("LoadConfig(REDIS_URL=%s) = %v, want it accepted", u, err)
		}
	}
	for _, u := range []string{"redis://127.0.0.1:6379/0?protocol=4", "redis://127.0.0.1:6379/0?protocol=", "redis://127.0.0.1:6379/0?protocol=resp3", "redis://127.0.0.1:7000?addr=127.0.0.1:7001&protocol=1"} {
		_, err := LoadConfig(env(map[string]string{"REDIS_URL": u}))
		if err == nil || !strings.Contains(err.Error(), "is not supported: want 2 (RESP2, the default) or 3 (RESP3)") || strings.Count(err.Error(), "got ") != 1 {
			t.Errorf("LoadConfig(REDIS_URL=%s) = %v, want one refusal naming protocol 2 and 3 and the URL once", u, err)
		}
	}
}

// A database on this machine named without sslmode is reached without TLS
// (pgx's own default, prefer, tries TLS first on every new connection); a
// URL that names sslmode, or a server on another machine, is left as given.
func TestLoadConfig_LocalSSLMode(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "postgres://postgres@127.0.0.1:5432/boxoffice?sslmode=disable"},
		{"postgres://u@localhost/db?pool_max_conns=4", "postgres://u@localhost/db?pool_max_conns=4&sslmode=disable"},
		{"postgres://u@[::1]:5433/db", "postgres://u@[::1]:5433/db?sslmode=disable"},
		{"postgres://u@127.0.0.1/db?sslmode=require", "postgres://u@127.0.0.1/db?sslmode=require"},
		{"postgres://u@db.example.com/db", "postgres://u@db.example.com/db"},
		{"postgres://u@10.0.0.5:5432/db", "postgres://u@10.0.0.5:5432/db"},
	} {
		vars := map[string]string{}
		if tt.in != "" {
			vars["DATABASE_URL"], vars["DATABASE_READ_URL"] = tt.in, tt.in
		}
		c, err := LoadConfig(env(vars))
		if err != nil {
			t.Fatalf("LoadConfig(%v): %v", vars, err)
		}
		if c.DatabaseURL != tt.want {
			t.Errorf("DATABASE_URL %q: got %q, want %q", tt.in, c.DatabaseURL, tt.want)
		}
		if tt.in != "" && c.DatabaseReadURL != tt.want {
			t.Errorf("DATABASE_READ_URL %q: got %q, want %q", tt.in, c.DatabaseReadURL, tt.want)
		}
	}
}
