package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/views"
)

// Config is the binary's configuration, read once from the environment
// (CONTRACT.md "The binary"). Every field has a default that works on a
// developer machine.
type Config struct {
	Addr          string        // ADDR: listen address, host:port
	BaseURL       string        // BASE_URL: the site's public URL; cookies are Secure when https
	DatabaseURL   string        // DATABASE_URL: postgres://...
	RedisURL      string        // REDIS_URL: redis://host:port/db, or a cluster: redis://host:port?addr=host2:port2
	RedisPrefix   string        // REDIS_PREFIX: prepended to every Redis key
	PGProvider    string        // PG_PROVIDER: "sandbox" (built in) or "toss"
	PGBaseURL     string        // PG_BASE_URL: the PG API's base URL
	PGSecretKey   string        // PG_SECRET_KEY: the PG API's secret key
	PGClientKey   string        // PG_CLIENT_KEY: the client key of Toss's payment window (PG_PROVIDER=toss)
	SessionSecret string        // SESSION_SECRET: signs ticket codes; 32+ characters
	LogLevel      string        // LOG_LEVEL: debug, info, warn or error
	AdmissionTick time.Duration // ADMISSION_TICK: how often the admitter admits a batch
	RateLimits    bool          // RATE_LIMITS: "on", or "off" for load tests from one address
	PaymentWindow time.Duration // PAYMENT_WINDOW: how long an order waits for its payment
	PprofAddr     string        // PPROF_ADDR: loopback host:port of the CPU/heap profiler, "" (off) by default
	DefaultLang   string        // DEFAULT_LANG: the language of visitors who state none, and of the CLI's output
	// STREAMS_PER_SESSION, STREAMS_PER_ADDRESS: the waiting-room streams
	// one session, and one client address, may have open at once on an
	// instance (0: no cap)
	StreamsPerSession, StreamsPerAddress int

	// DATABASE_READ_URL: postgres://... of a streaming replica of
	// DATABASE_URL for the lists that may be a moment late (store.DB.Read);
	// "" (the default) reads everything from DATABASE_URL.
	DatabaseReadURL string

	// TRUSTED_PROXIES: comma-separated CIDRs of the load balancers whose
	// X-Forwarded-For and X-Forwarded-Proto are believed
	// (handlers.Server.TrustedProxies); none
	// by default. A bare address counts as its /32 or /128.
	TrustedProxies []*net.IPNet

	// RECONCILE_INTERVAL: how often the reconciler settles the payments
	// that the PG's redirect and webhook left undone; it paces the
	// reconciler's look-ups at the PG too (newCheckout).
	ReconcileInterval time.Duration
}

// Dev defaults of the secrets, refused when BASE_URL is https (a real site).
const (
	devSandboxKey    = "test_sk_boxoffice_sandbox"
	devSessionSecret = "dev-only-session-secret-change-me-please"
)

// LoadConfig reads the configuration through getenv and validates it,
// returning one error that names every bad variable at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	c := Config{
		Addr:          get("ADDR", ":8080"),
		DatabaseURL:   get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/boxoffice"),
		RedisURL:      get("REDIS_URL", "redis://127.0.0.1:6379/0"),
		RedisPrefix:   get("REDIS_PREFIX", "bo:"),
		PGProvider:    get("PG_PROVIDER", "sandbox"),
		SessionSecret: get("SESSION_SECRET", devSessionSecret),
		LogLevel:      get("LOG_LEVEL", "info"),
		DefaultLang:   get("DEFAULT_LANG", views.Korean),
	}
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}

	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil || port == "" {
		bad("ADDR", "want host:port such as :8080, got %q", c.Addr)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	c.BaseURL = strings.TrimSuffix(get("BASE_URL", "http://"+net.JoinHostPort(host, port)), "/")
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("BASE_URL", "want an absolute http(s) URL such as http://localhost:8080, got %q", c.BaseURL)
	}
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || strings.Trim(u.Path, "/") == "" {
		bad("DATABASE_URL", "want postgres://user@host:port/database, got %q", redact(c.DatabaseURL))
	} else {
		c.DatabaseURL = localSSLMode(u, c.DatabaseURL)
	}
	if c.DatabaseReadURL = get("DATABASE_READ_URL", ""); c.DatabaseReadURL != "" {
		if u, err := url.Parse(c.DatabaseReadURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || strings.Trim(u.Path, "/") == "" {
			bad("DATABASE_READ_URL", "want postgres://user@replica-host:port/database (a streaming replica of DATABASE_URL), got %q", redact(c.DatabaseReadURL))
		} else {
			c.DatabaseReadURL = localSSLMode(u, c.DatabaseReadURL)
		}
	}
	if _, _, err := store.ParseRedisURL(c.RedisURL); err != nil {
		errs = append(errs, fmt.Errorf("%w, got %q", err, redact(c.RedisURL)))
	}
	if err := store.CheckRedisPrefix(c.RedisPrefix); err != nil {
		errs = append(errs, err)
	}
	switch c.PGProvider {
	case "sandbox":
		c.PGBaseURL = get("PG_BASE_URL", c.BaseURL+"/sandbox-pg")
		c.PGSecretKey = get("PG_SECRET_KEY", devSandboxKey)
	case "toss":
		c.PGBaseURL = get("PG_BASE_URL", "https://api.tosspayments.com")
		c.PGSecretKey = get("PG_SECRET_KEY", "")
		if c.PGSecretKey == "" {
			bad("PG_SECRET_KEY", "required when PG_PROVIDER is toss")
		}
		c.PGClientKey = get("PG_CLIENT_KEY", "")
		if c.PGClientKey == "" {
			bad("PG_CLIENT_KEY", "required when PG_PROVIDER is toss (the client key of the payment window, test_ck_… or live_ck_…)")
		}
	default:
		bad("PG_PROVIDER", "want sandbox or toss, got %q", c.PGProvider)
	}
	if u, err := url.Parse(c.PGBaseURL); c.PGBaseURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		bad("PG_BASE_URL", "want an absolute http(s) URL, got %q", c.PGBaseURL)
	}
	if len(c.SessionSecret) < 32 {
		bad("SESSION_SECRET", "want at least 32 characters, got %d", len(c.SessionSecret))
	}
	if strings.HasPrefix(c.BaseURL, "https://") && c.SessionSecret == devSessionSecret {
		bad("SESSION_SECRET", "set a secret of your own: the development default is public")
	}
	if !views.ValidLang(c.DefaultLang) {
		bad("DEFAULT_LANG", "want one of %s, got %q", strings.Join(views.Langs, ", "), c.DefaultLang)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("LOG_LEVEL", "want debug, info, warn or error, got %q", c.LogLevel)
	}
	switch v := get("RATE_LIMITS", "on"); v {
	case "on", "off":
		c.RateLimits = v == "on"
	default:
		bad("RATE_LIMITS", "want on or off, got %q", v)
	}
	if c.PprofAddr = get("PPROF_ADDR", ""); c.PprofAddr != "" && !loopback(c.PprofAddr) {
		bad("PPROF_ADDR", "want a loopback host:port such as 127.0.0.1:6060 (the profiler must not be reachable from outside), got %q", c.PprofAddr)
	}
	for _, v := range []struct {
		name, def string
		to        *int
	}{{"STREAMS_PER_SESSION", "4", &c.StreamsPerSession}, {"STREAMS_PER_ADDRESS", "1000", &c.StreamsPerAddress}} {
		n, err := strconv.Atoi(get(v.name, v.def))
		if err != nil || n < 0 || n > 1_000_000 {
			bad(v.name, "want a number from 0 (no cap) to 1000000, got %q", get(v.name, v.def))
		}
		*v.to = n
	}
	tick := get("ADMISSION_TICK", "1s")
	if c.AdmissionTick, err = time.ParseDuration(tick); err != nil || c.AdmissionTick < 100*time.Millisecond || c.AdmissionTick > time.Minute {
		bad("ADMISSION_TICK", "want a duration from 100ms to 1m such as 1s, got %q", tick)
	}
	window := get("PAYMENT_WINDOW", "10m")
	if c.PaymentWindow, err = time.ParseDuration(window); err != nil || c.PaymentWindow < 5*time.Second || c.PaymentWindow > 30*time.Minute {
		bad("PAYMENT_WINDOW", "want a duration from 5s to 30m such as 10m, got %q", window)
	}
	reconcile := get("RECONCILE_INTERVAL", "30s")
	if c.ReconcileInterval, err = time.ParseDuration(reconcile); err != nil || c.ReconcileInterval < time.Second || c.ReconcileInterval > 5*time.Minute {
		bad("RECONCILE_INTERVAL", "want a duration from 1s to 5m such as 30s, got %q", reconcile)
	}
	if proxies := strings.TrimSpace(get("TRUSTED_PROXIES", "")); proxies != "" {
		for i, v := range strings.Split(proxies, ",") {
			if v = strings.TrimSpace(v); v == "" {
				bad("TRUSTED_PROXIES", "entry %d is empty (two commas in a row, or one at the start or end): want comma-separated CIDRs of the load balancers such as 10.0.0.0/24,192.168.1.7, got %q", i+1, proxies)
				continue
			}
			if !strings.Contains(v, "/") {
				if ip := net.ParseIP(v); ip != nil && ip.To4() != nil {
					v += "/32"
				} else {
					v += "/128"
				}
			}
			if _, n, err := net.ParseCIDR(v); err != nil {
				bad("TRUSTED_PROXIES", "want comma-separated CIDRs of the load balancers such as 10.0.0.0/24,192.168.1.7, got %q", strings.TrimSuffix(strings.TrimSuffix(v, "/32"), "/128"))
			} else {
				c.TrustedProxies = append(c.TrustedProxies, n)
			}
		}
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("bad configuration:\n  %w", joinLines(errs))
	}
	return c, nil
}

// LogAttrs lists the configuration for the log, secrets left out.
func (c Config) LogAttrs() []any {
	return []any{
		"addr", c.Addr, "base_url", c.BaseURL, "database_url", redact(c.DatabaseURL), "database_read_url", redact(c.DatabaseReadURL),
		"redis_url", redact(c.RedisURL), "redis_prefix", c.RedisPrefix, "pg_provider", c.PGProvider,
		"pg_base_url", c.PGBaseURL, "log_level", c.LogLevel, "admission_tick", c.AdmissionTick.String(), "rate_limits", c.RateLimits,
		"streams_per_session", c.StreamsPerSession, "streams_per_address", c.StreamsPerAddress,
		"payment_window", c.PaymentWindow.String(), "reconcile_interval", c.ReconcileInterval.String(),
		"pprof_addr", c.PprofAddr, "default_lang", c.DefaultLang, "trusted_proxies", fmt.Sprint(c.TrustedProxies),
	}
}

// loopback reports whether addr is host:port with a loopback host
// (127.0.0.0/8, ::1 or localhost) and a port.
func loopback(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redact hides the password of a URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

func joinLines(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "\n  "))
}

// localSSLMode returns raw (parsed as u) with sslmode=disable added when it
// names no sslmode and its host is this machine (localhost or a loopback
// address): pgx's default, prefer, would try TLS first on every new
// connection, which buys nothing there. A URL with sslmode, or a server
// on another machine, is returned as given (such a server wants
// sslmode=verify-full; TLS is never turned off for it here).
func localSSLMode(u *url.URL, raw string) string {
	if u.Query().Has("sslmode") {
		return raw
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return raw
	}
	if u.RawQuery == "" {
		return raw + "?sslmode=disable"
	}
	return raw + "&sslmode=disable"
}
