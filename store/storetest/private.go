package storetest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/store"
)

// PrivateRedis is a Redis server of one test's own, on a free loopback port,
// without persistence: stopping and starting it again is a Redis restart that
// lost everything. It is stopped when the test ends.
type PrivateRedis struct {
	tb   testing.TB
	Port int
	URL  string // redis://127.0.0.1:<port>/0
	cmd  *exec.Cmd
}

// StartRedis starts a private Redis for tb (redis-server must be installed).
func StartRedis(tb testing.TB) *PrivateRedis {
	tb.Helper()
	r := &PrivateRedis{tb: tb, Port: freePort(tb)}
	r.URL = fmt.Sprintf("redis://127.0.0.1:%d/0", r.Port)
	r.Start()
	tb.Cleanup(r.Stop)
	return r
}

// Start starts the server (again), empty, and waits until it accepts
// connections.
func (r *PrivateRedis) Start() {
	r.tb.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.tb.TempDir())
	if err := r.cmd.Start(); err != nil {
		r.tb.Fatalf("start redis-server: %v", err)
	}
	waitForPort(r.tb, r.Port)
}

// Stop stops the server at once (SIGKILL: nothing is saved); stopping a
// stopped server does nothing.
func (r *PrivateRedis) Stop() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}

// PrivateCluster is a Redis Cluster of one test's own: three masters without
// replicas or persistence, on free loopback ports (and free cluster bus
// ports), with a node timeout of one second. It is stopped when the test
// ends.
type PrivateCluster struct {
	tb    testing.TB
	Ports []int
	URL   string // redis://127.0.0.1:<port>?addr=127.0.0.1:<port>&addr=...
	cmds  []*exec.Cmd
}

// StartCluster starts a private 3-master Redis Cluster for tb (redis-server
// and redis-cli must be installed) and waits until every node says
// cluster_state:ok.
func StartCluster(tb testing.TB) *PrivateCluster {
	tb.Helper()
	c := &PrivateCluster{tb: tb}
	tb.Cleanup(c.stop)
	var addrs []string
	for range 3 {
		port, bus := freePort(tb), freePort(tb)
		cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", tb.TempDir(), "--cluster-enabled", "yes",
			"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "1000")
		if err := cmd.Start(); err != nil {
			tb.Fatalf("start redis-server: %v", err)
		}
		c.cmds = append(c.cmds, cmd)
		c.Ports = append(c.Ports, port)
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
		waitForPort(tb, port)
	}
	out, err := exec.Command("redis-cli", append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.URL = fmt.Sprintf("redis://%s?addr=%s&addr=%s", addrs[0], addrs[1], addrs[2])
	for _, port := range c.Ports {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			info, _ := exec.Command("redis-cli", "-p", strconv.Itoa(port), "cluster", "info").Output()
			if bytes.Contains(info, []byte("cluster_state:ok")) {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("the private cluster's node %d is not ok within 30 s:\n%s", port, info)
			}
		}
	}
	return c
}

// StopNode stops node i (0 to 2) at once (SIGKILL).
func (c *PrivateCluster) StopNode(i int) {
	if cmd := c.cmds[i]; cmd != nil {
		cmd.Process.Kill()
		cmd.Wait()
		c.cmds[i] = nil
	}
}

func (c *PrivateCluster) stop() {
	for i := range c.cmds {
		c.StopNode(i)
	}
}

// PrivatePostgres is a PostgreSQL server of one test's own, on a free
// loopback port, with fsync off: only a crash of the machine could lose what
// it committed, never Stop, which crashes the server alone. It is stopped
// when the test ends.
type PrivatePostgres struct {
	tb      testing.TB
	Port    int
	URL     string // postgres://postgres@127.0.0.1:<port>/boxoffice
	dataDir string
	run     []string // the command prefix that runs as the postgres user
	bin     string
	running bool
}

// StartPostgres initialises and starts a private PostgreSQL for tb. initdb
// refuses to run as root, so as root it runs the server programs as the
// postgres user (runuser), in a folder that user owns.
func StartPostgres(tb testing.TB) *PrivatePostgres {
	tb.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		tb.Fatal("StartPostgres: no /usr/lib/postgresql/*/bin/initdb: install the postgresql package")
	}
	sort.Strings(bins)
	p := &PrivatePostgres{tb: tb, Port: freePort(tb), bin: filepath.Dir(bins[len(bins)-1])}
	p.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/boxoffice?sslmode=disable&pool_max_conns=4", p.Port)
	dir, err := os.MkdirTemp("", "boxoffice-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	p.dataDir = filepath.Join(dir, "data")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			tb.Fatalf("StartPostgres as root needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			tb.Fatal(err)
		}
		p.run = []string{"runuser", "-u", "postgres", "--"}
	}
	p.exec(filepath.Join(p.bin, "initdb"), "-D", p.dataDir, "-U", "postgres", "-A", "trust", "--no-sync")
	p.Start()
	tb.Cleanup(p.Stop)
	return p
}

// StartReplica starts a streaming replica of the server (pg_basebackup -R
// of everything the server holds now, then the standby streams the rest)
// on a free port, stopped when the test ends; its URL names the same
// database.
func (p *PrivatePostgres) StartReplica() *PrivatePostgres {
	p.tb.Helper()
	r := &PrivatePostgres{tb: p.tb, Port: freePort(p.tb), bin: p.bin, run: p.run}
	r.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/boxoffice?sslmode=disable&pool_max_conns=4", r.Port)
	dir, err := os.MkdirTemp("", "boxoffice-pg-replica-")
	if err != nil {
		p.tb.Fatal(err)
	}
	p.tb.Cleanup(func() { os.RemoveAll(dir) })
	if len(p.run) > 0 {
		if err := exec.Command("chown", "postgres", dir).Run(); err != nil {
			p.tb.Fatalf("chown the replica's folder: %v", err)
		}
	}
	r.dataDir = filepath.Join(dir, "data")
	r.exec(filepath.Join(p.bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres",
		"-D", r.dataDir, "-R", "-X", "stream", "--no-sync", "--checkpoint=fast")
	r.Start()
	p.tb.Cleanup(r.Stop)
	return r
}

// MustOpenDB opens the server's database and migrates it; it is closed when
// the test ends. The pool caps its connections at 4, as MustOpenDB's do.
func (p *PrivatePostgres) MustOpenDB() *store.DB {
	p.tb.Helper()
	ctx := context.Background()
	db, err := store.OpenDB(ctx, p.URL)
	if err != nil {
		p.tb.Fatal(err)
	}
	p.tb.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		p.tb.Fatal(err)
	}
	return db
}

// Start starts the server (again) and waits until it accepts connections.
func (p *PrivatePostgres) Start() {
	p.tb.Helper()
	// Not synchronous_commit=off: commits in WAL buffers not yet written out
	// would die with the server, which a real server's crash never loses.
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off -c full_page_writes=off",
		p.Port, filepath.Dir(p.dataDir))
	p.exec(filepath.Join(p.bin, "pg_ctl"), "-D", p.dataDir, "-l", filepath.Join(filepath.Dir(p.dataDir), "log"), "-w", "-o", opts, "start")
	p.running = true
}

// Stop stops the server immediately (pg_ctl -m immediate), as a crash or an
// outage would; stopping a stopped server does nothing.
func (p *PrivatePostgres) Stop() {
	if !p.running {
		return
	}
	p.exec(filepath.Join(p.bin, "pg_ctl"), "-D", p.dataDir, "-m", "immediate", "-w", "stop")
	p.running = false
}

func (p *PrivatePostgres) exec(name string, args ...string) {
	p.tb.Helper()
	argv := append(append(append([]string{}, p.run...), name), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		p.tb.Fatalf("%s: %v\n%s", filepath.Base(name), err, out.String())
	}
}

func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitForPort(tb testing.TB, port int) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return
		}
	}
	tb.Fatalf("nothing answers on port %d", port)
}
