package chaos

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/deploy"
	"github.com/boxoffice/boxoffice/e2e/invariant"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// nginx in front of two instances, with the shipped configuration
// (deploy/nginx.conf, its listen port and upstream servers replaced by free
// ports), serves a whole sale with the rate limits on and TRUSTED_PROXIES
// naming nginx: every fan sends its own X-Forwarded-For, as a client behind
// a proxy does, so that the 40 sign-ups from one machine pass the limit of
// 20 a minute per address; a fan's waiting-room stream (SSE) passes through
// nginx while the sale runs; afterwards every invariant holds, no request
// met a 5xx, no instance logged an error, both instances served, and 40
// sign-ups at once from one forwarded address meet that address's limit.
func TestChaos_Nginx(t *testing.T) {
	bin := nginxPath(t)
	s := newSale(t, 3, 10, 20, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	front := "127.0.0.1:" + strconv.Itoa(freePort(t))
	env := append(s.env(), "PAYMENT_WINDOW=10s", "RATE_LIMITS=on", "TRUSTED_PROXIES=127.0.0.1/32", "BASE_URL=http://"+front)
	a := startInstance(t, "A", env...)
	b := startInstance(t, "B", env...)
	lb := startNginx(t, bin, front, a, b)

	c := newCrowd(t, s, []*instance{lb}, 1)
	c.forwardedFor = func(n int) string { return fmt.Sprintf("198.51.100.%d", n+1) }
	streamed := make(chan error, 1)
	go func() { streamed <- watchStream(ctx, c) }()
	c.run(ctx, 40)
	if err := <-streamed; err != nil {
		t.Errorf("the waiting room's stream through nginx: %v", err)
	}

	for _, r := range invariant.Check(ctx, s.DB, s.Redis, s.Event.ID) {
		if !r.OK {
			t.Errorf("invariant broken: %s: %s", r.Name, r.Detail)
		}
	}
	if len(c.confirmed) == 0 {
		t.Error("no order was confirmed through nginx")
	}
	for _, in := range []*instance{a, b} {
		if n := in.served(t); n == 0 {
			t.Errorf("instance %s served no request: nginx must spread them", in.Name)
		}
		if n := in.errorLogs.Load(); n != 0 {
			t.Errorf("instance %s logged %d errors, want none", in.Name, n)
		}
	}

	// One forwarded address meets its own limit of 20 sign-ups a minute:
	// 40 sign-ups at once, so that the limiter counts them within moments.
	var limited, passed atomic.Int64
	began := time.Now()
	var bots sync.WaitGroup
	for i := range 40 {
		bots.Go(func() {
			bot := &fan{c: c, n: 1000 + i, forwardedFor: "203.0.113.7", client: &http.Client{
				Transport: c.transport, Timeout: time.Minute,
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			}}
			form := url.Values{"email": {fmt.Sprintf("bot%d@chaos.boxoffice.test", i)}, "password": {fanPassword}, "name": {"Bot"}}
			ans, err := bot.do(ctx, lb, http.MethodPost, "/signup", form, true)
			switch {
			case err != nil:
				t.Error(err)
			case ans.status == http.StatusTooManyRequests:
				limited.Add(1)
			case ans.status == http.StatusSeeOther:
				passed.Add(1)
			default:
				t.Errorf("sign-up %d from one address: %v, want 303 or 429", i, ans)
			}
		})
	}
	bots.Wait()
	refill := int64(time.Since(began).Minutes()*20) + 1
	if limited.Load() == 0 || passed.Load() < 1 || passed.Load() > 20+refill {
		t.Errorf("40 sign-ups at once from one forwarded address: %d passed, %d refused; want 1 to %d to pass and the rest refused",
			passed.Load(), limited.Load(), 20+refill)
	}
}

// watchStream signs a fan up through the crowd's balancer, joins the queue
// and reads its waiting-room stream until the first event's data arrives,
// which nginx must pass on while the stream is open.
func watchStream(ctx context.Context, c *crowd) error {
	jar, _ := cookiejar.New(nil)
	f := &fan{c: c, n: 999, forwardedFor: "198.51.100.250", taken: map[string]bool{}, client: &http.Client{
		Jar: jar, Transport: c.transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	if err := f.signUp(ctx); err != nil {
		return err
	}
	path := fmt.Sprintf("/events/%d/queue", c.sale.Event.ID)
	if _, err := f.expect(ctx, nil, http.MethodPost, path, url.Values{}, false, http.StatusOK, nil); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.instances[0].URL+path+"/stream", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Forwarded-For", f.forwardedFor)
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return fmt.Errorf("GET %s/stream: %s %q, want 200 text/event-stream", path, resp.Status, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "data:") {
			return nil
		}
	}
	return fmt.Errorf("the stream ended without an event: %v", lines.Err())
}

// nginxPath returns the nginx binary: NGINX_PATH (scripts/nginx-deps.sh
// prints it, and `make test` sets it), or nginx on PATH or in /usr/sbin.
func nginxPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("NGINX_PATH"), "nginx", "/usr/sbin/nginx"} {
		if p == "" {
			continue
		}
		if found, err := exec.LookPath(p); err == nil {
			return found
		}
	}
	t.Fatal("nginx is not installed: run scripts/nginx-deps.sh (make test does), or install Debian's nginx package")
	return ""
}

// startNginx runs nginx with deploy/nginx.conf (deploy.NginxConf) listening
// on addr in front of the instances, in the foreground with its pid, logs and temporary files
// in a folder of its own; it waits until addr answers and stops nginx
// (SIGQUIT, then SIGKILL after 10 s) when t ends. The returned instance
// stands for the balancer.
func startNginx(t *testing.T, bin, addr string, instances ...*instance) *instance {
	t.Helper()
	dir := t.TempDir()
	var upstreams []string
	for _, in := range instances {
		upstreams = append(upstreams, strings.TrimPrefix(in.URL, "http://"))
	}
	// As root, the workers run as root to write the temporary files in dir.
	text, err := deploy.NginxConf(addr, upstreams, dir, os.Geteuid() == 0)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;")
	out, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if log, err := os.ReadFile(filepath.Join(dir, "error.log")); err == nil && len(log) > 0 {
			t.Logf("nginx error.log:\n%s", log)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		select {
		case err := <-done:
			b, _ := os.ReadFile(filepath.Join(dir, "output"))
			t.Fatalf("nginx exited at start: %v\n%s", err, b)
		default:
		}
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return &instance{Name: "nginx", URL: "http://" + addr}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nginx does not answer at %s within 30 s", addr)
	return nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// served returns how many requests the instance answered, from its
// request-duration histogram (/metrics).
func (in *instance) served(t *testing.T) uint64 {
	t.Helper()
	resp, err := http.Get(in.URL + "/metrics")
	if err != nil {
		t.Fatalf("instance %s: /metrics: %v", in.Name, err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("instance %s: /metrics: %v", in.Name, err)
	}
	var n uint64
	for _, m := range families["boxoffice_http_request_duration_seconds"].GetMetric() {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}
