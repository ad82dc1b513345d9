package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boxoffice/boxoffice/deploy"
	"github.com/boxoffice/boxoffice/store"
	"github.com/jackc/pgx/v5"
)

// Server is the boxoffice binary under test: its own database and Redis key
// prefix, on a free loopback port, with the profiler on a second one.
type Server struct {
	URL         string // http://127.0.0.1:<port>
	PprofURL    string // http://127.0.0.1:<port>, "" when profiling is off
	DatabaseURL string
	RedisPrefix string
	cmd         *exec.Cmd
	exited      chan error
}

// newDatabase creates a database of its own on the server of baseURL (a
// postgres:// URL) and returns its URL.
func newDatabase(ctx context.Context, baseURL string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", fmt.Errorf("DATABASE_URL: %w", err)
	}
	u.Path = "/boxoffice_bench_" + randomHex(6)
	if err := store.CreateDatabase(ctx, u.String()); err != nil {
		return "", err
	}
	return u.String(), nil
}

// dropDatabase drops the bench's database (FORCE: the server may linger).
func dropDatabase(ctx context.Context, dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// startServer runs the binary with env added to the bench's environment,
// logging its output to logPath, and waits until /readyz answers 200.
func startServer(ctx context.Context, binary, dsn, redisURL, prefix string, profile bool, logPath string, env ...string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), DatabaseURL: dsn, RedisPrefix: prefix, exited: make(chan error, 1)}
	s.cmd = exec.Command(binary, "serve")
	s.cmd.Env = append(os.Environ(),
		fmt.Sprintf("ADDR=127.0.0.1:%d", port), "BASE_URL="+s.URL, "DATABASE_URL="+dsn, "REDIS_URL="+redisURL,
		"REDIS_PREFIX="+prefix, "LOG_LEVEL=warn", "RATE_LIMITS=off")
	if profile {
		pport, err := freePort()
		if err != nil {
			return nil, err
		}
		s.PprofURL = fmt.Sprintf("http://127.0.0.1:%d", pport)
		s.cmd.Env = append(s.cmd.Env, fmt.Sprintf("PPROF_ADDR=127.0.0.1:%d", pport))
	}
	s.cmd.Env = append(s.cmd.Env, env...)
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	go func() { s.exited <- s.cmd.Wait(); log.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case err := <-s.exited:
			return nil, fmt.Errorf("boxoffice exited at start-up (%v); see %s", err, logPath)
		default:
		}
		resp, err := http.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Stop()
	return nil, fmt.Errorf("boxoffice did not become ready at %s; see %s", s.URL, logPath)
}

// Pid returns the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop asks the server to shut down (SIGINT) and kills it after 20 s.
func (s *Server) Stop() error {
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-s.exited:
		return err
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("boxoffice did not stop within 20 s of SIGINT")
	}
}

// memory returns a process's resident set (VmRSS) and its peak since the
// last resetPeak (VmHWM), in bytes, from /proc/<pid>/status.
func memory(pid int) (rss, peak int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != "VmRSS" && name != "VmHWM" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status %s: %w", pid, name, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak, sc.Err()
}

// resetPeak resets VmHWM to the current resident set (proc(5): writing 5 to
// clear_refs), so that each phase reports its own peak.
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// cpuProfile takes a CPU profile of the server for d through its profiler
// and writes it to path; it blocks for d.
func (s *Server) cpuProfile(ctx context.Context, d time.Duration, path string) error {
	secs := max(int(d.Round(time.Second)/time.Second), 1)
	return s.profile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), path)
}

// heapProfile writes a profile of the server's heap in use, after a
// garbage collection, to path.
func (s *Server) heapProfile(ctx context.Context, path string) error {
	return s.profile(ctx, "/debug/pprof/heap?gc=1", path)
}

func (s *Server) profile(ctx context.Context, query, path string) error {
	if s.PprofURL == "" {
		return fmt.Errorf("profiling is off")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.PprofURL+query, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pprofTop returns `go tool pprof -top` of a profile of binary: the
// functions where the CPU time (or, for a heap profile, the memory in use)
// went, flat and cumulative.
func pprofTop(binary, profile string, n int) (string, error) {
	args := []string{"tool", "pprof", "-top", "-nodecount=" + strconv.Itoa(n)}
	if strings.Contains(filepath.Base(profile), "heap") {
		args = append(args, "-sample_index=inuse_space")
	}
	out, err := exec.Command("go", append(args, binary, profile)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool pprof: %w: %s", err, out)
	}
	return string(out), nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// raiseOpenFiles raises this process's open-file limit to its hard limit;
// the server, started later, inherits it (setting it explicitly keeps Go
// from restoring the original limit in children).
func raiseOpenFiles() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}

// absPath resolves p against the working directory.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Nginx is the nginx in front of the instances (-instances).
type Nginx struct {
	cmd    *exec.Cmd
	exited chan error
}

// startNginx runs nginx (NGINX_PATH, or nginx on PATH or in /usr/sbin) with
// deploy/nginx.conf listening on addr in front of upstreams, its files in
// dir, and waits until addr answers.
func startNginx(ctx context.Context, addr string, upstreams []string, dir string) (*Nginx, error) {
	bin := ""
	for _, p := range []string{os.Getenv("NGINX_PATH"), "nginx", "/usr/sbin/nginx"} {
		if found, err := exec.LookPath(p); p != "" && err == nil {
			bin = found
			break
		}
	}
	if bin == "" {
		return nil, fmt.Errorf("-instances needs nginx: run scripts/nginx-deps.sh (make bench does)")
	}
	// nginx reads relative paths from its own prefix (-p), not from ours
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	conf, err := deploy.NginxConf(addr, upstreams, dir, os.Geteuid() == 0)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	n := &Nginx{cmd: exec.Command(bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;"), exited: make(chan error, 1)}
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	go func() { n.exited <- n.cmd.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-n.exited:
			return nil, fmt.Errorf("nginx exited at start-up (%v); see %s", err, filepath.Join(dir, "error.log"))
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return n, nil
		}
	}
	n.Stop()
	return nil, fmt.Errorf("nginx does not answer at %s; see %s", addr, filepath.Join(dir, "error.log"))
}

// Stop asks nginx to finish (SIGQUIT) and kills it after 10 s.
func (n *Nginx) Stop() error {
	n.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-n.exited:
		return nil
	case <-time.After(10 * time.Second):
		n.cmd.Process.Kill()
		<-n.exited
		return fmt.Errorf("nginx did not stop within 10 s of SIGQUIT")
	}
}
