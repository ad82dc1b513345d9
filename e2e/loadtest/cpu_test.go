package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/redis/go-redis/v9"
)

func TestParseProcStat(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		b, err := os.ReadFile("testdata/proc/end/20/stat")
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseProcStat(b)
		if err != nil {
			t.Fatal(err)
		}
		want := procTimes{pid: 20, ppid: 1, comm: "postgres", utime: 10, stime: 10, cutime: 50, cstime: 30}
		if got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})
	t.Run("NameWithSpacesAndParentheses", func(t *testing.T) {
		b, err := os.ReadFile("testdata/proc/start/60/stat")
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseProcStat(b)
		if err != nil {
			t.Fatal(err)
		}
		want := procTimes{pid: 60, ppid: 1, comm: "tmux: (client) x", utime: 7, stime: 3}
		if got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})
	t.Run("Errors", func(t *testing.T) {
		for _, in := range []string{"", "12 no name S 1 2 3", "12 (short) S 1 2 3 4", "x (name) S 1 1 1 0 -1 0 0 0 0 0 1 2 3 4 20"} {
			if p, err := parseProcStat([]byte(in)); err == nil {
				t.Errorf("parseProcStat(%q) = %+v, want an error", in, p)
			}
		}
	})
}

func TestParseMachineStat(t *testing.T) {
	b, err := os.ReadFile("testdata/proc/end/stat")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseMachineStat(b)
	if err != nil {
		t.Fatal(err)
	}
	want := machineTimes{user: 1230, system: 570, idle: 2080, softirq: 120, cpus: 2}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := parseMachineStat([]byte("intr 1 2 3\n")); err == nil {
		t.Error("parseMachineStat without a cpu line: no error, want one")
	}
}

// fixtureSplit reads the fixture snapshots (testdata/proc/start and end,
// 2 s apart on 2 cores at 100 ticks a second) and splits them with roles.
func fixtureSplit(t *testing.T, roles cpuRoles) CPUSplit {
	t.Helper()
	a, err := readSnapshot("testdata/proc/start")
	if err != nil {
		t.Fatal(err)
	}
	b, err := readSnapshot("testdata/proc/end")
	if err != nil {
		t.Fatal(err)
	}
	a.at = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b.at = a.at.Add(2 * time.Second)
	return cpuSplit(a, b, roles, 100)
}

// near reports whether two splits' figures agree to 1e-9 cores.
func near(got, want CPUUse) bool {
	return math.Abs(got.User-want.User) < 1e-9 && math.Abs(got.System-want.System) < 1e-9
}

// In the fixtures, over 2 s: the server used 60 ticks of user and 30 of
// system time; the generator 60 and 10 (its children's time, which grew by
// thousands, not counted); PostgreSQL's postmaster 20 has backend 21 (+20,
// +4), backend 22 that ended after 5 and 5 more ticks (reaped: the
// postmaster's cutime and cstime grew by its 45 and 25) and backend 23 that
// started (8, 2); Redis 30 used 40 and 20 and its fork 31 4 and 2; a second
// PostgreSQL (40) and a tmux (60) are someone else's. The machine was busy
// 230 ticks in user mode and 90 in the kernel (20 of them softirq), and
// idle 80.
func TestCPUSplit(t *testing.T) {
	t.Run("ByProcessID", func(t *testing.T) {
		s := fixtureSplit(t, cpuRoles{generator: 11, servers: []int{10}, redis: []int{30}, postmaster: 20})
		if s.Seconds != 2 || s.Cores != 2 {
			t.Errorf("%v s on %d cores, want 2 s on 2", s.Seconds, s.Cores)
		}
		for _, c := range []struct {
			name      string
			got, want CPUUse
		}{
			{"server", s.Server, CPUUse{0.30, 0.15}},
			{"generator", s.Generator, CPUUse{0.30, 0.05}},
			{"PostgreSQL", s.Postgres, CPUUse{0.165, 0.055}},
			{"Redis", s.Redis, CPUUse{0.22, 0.11}},
			// (230 - 197) / 200 and (90 - 73) / 200
			{"other", s.Other, CPUUse{0.165, 0.085}},
		} {
			if !near(c.got, c.want) {
				t.Errorf("%s: got %+v cores, want %+v", c.name, c.got, c.want)
			}
		}
		if s.Idle != 0.4 || s.Softirq != 0.1 || s.Steal != 0 {
			t.Errorf("idle %v, softirq %v, steal %v; want 0.4, 0.1, 0", s.Idle, s.Softirq, s.Steal)
		}
		if s.Nginx != nil {
			t.Errorf("nginx %+v without nginx, want none", *s.Nginx)
		}
		total := s.Server.Total() + s.Generator.Total() + s.Postgres.Total() + s.Redis.Total() + s.Other.Total() + s.Idle
		if math.Abs(total-2) > 1e-9 {
			t.Errorf("the groups, other and idle add up to %v cores, want the machine's 2", total)
		}
	})
	t.Run("ByName", func(t *testing.T) {
		// Without ids every postgres counts: the second server's 20 and 10
		// ticks too.
		s := fixtureSplit(t, cpuRoles{generator: 11, servers: []int{10}})
		if want := (CPUUse{0.265, 0.105}); !near(s.Postgres, want) {
			t.Errorf("PostgreSQL: got %+v cores, want %+v", s.Postgres, want)
		}
		if want := (CPUUse{0.22, 0.11}); !near(s.Redis, want) {
			t.Errorf("Redis: got %+v cores, want %+v", s.Redis, want)
		}
		if want := (CPUUse{0.065, 0.035}); !near(s.Other, want) {
			t.Errorf("other: got %+v cores, want %+v", s.Other, want)
		}
	})
	t.Run("Nginx", func(t *testing.T) {
		// Taking tmux (60) as nginx's master: a group of its own, out of other.
		s := fixtureSplit(t, cpuRoles{generator: 11, servers: []int{10}, redis: []int{30}, postmaster: 20, nginx: 60})
		if s.Nginx == nil || !near(*s.Nginx, CPUUse{0.01, 0.005}) {
			t.Errorf("nginx: got %+v, want 0.01 user and 0.005 system", s.Nginx)
		}
		if want := (CPUUse{0.155, 0.08}); !near(s.Other, want) {
			t.Errorf("other: got %+v cores, want %+v", s.Other, want)
		}
	})
	t.Run("OtherNeverNegative", func(t *testing.T) {
		// The machine's counters said less than the processes' (their
		// times are scaled to the scheduler's, the machine's are ticks).
		a, b := cpuSnapshot{procs: map[int]procTimes{}}, cpuSnapshot{procs: map[int]procTimes{}}
		a.at, b.at = time.Unix(0, 0), time.Unix(1, 0)
		a.procs[10] = procTimes{pid: 10, utime: 0, stime: 0}
		b.procs[10] = procTimes{pid: 10, utime: 50, stime: 50}
		b.machine = machineTimes{user: 40, system: 40, idle: 120, cpus: 2}
		s := cpuSplit(a, b, cpuRoles{servers: []int{10}}, 100)
		if s.Other != (CPUUse{}) {
			t.Errorf("other: got %+v, want 0", s.Other)
		}
		if want := (CPUUse{0.5, 0.5}); s.Server != want {
			t.Errorf("server: got %+v, want %+v", s.Server, want)
		}
	})
}

func TestCPUSplit_Line(t *testing.T) {
	s := fixtureSplit(t, cpuRoles{generator: 11, servers: []int{10}, redis: []int{30}, postmaster: 20})
	s.Requests = 1000
	want := "server 0.45 (user 0.30, system 0.15), Redis 0.33, PostgreSQL 0.22, generator 0.35, other 0.25, idle 0.40 of 2 cores; softirq 0.10"
	if got := s.Line(); got != want {
		t.Errorf("Line:\ngot  %s\nwant %s", got, want)
	}
	// 0.45 cores for 2 s is 0.9 s, over 1,000 requests 900 µs.
	want = "server 900 µs, Redis 660 µs, PostgreSQL 440 µs, generator 700 µs"
	if got := s.PerRequest(); got != want {
		t.Errorf("PerRequest:\ngot  %s\nwant %s", got, want)
	}
}

// readCommandStats reads the fixture INFO commandstats of the masters
// 7000 and 7001 at when (start or end).
func readCommandStats(t *testing.T, when string) map[string]map[string]RedisCommand {
	t.Helper()
	out := map[string]map[string]RedisCommand{}
	for _, port := range []string{"7000", "7001"} {
		b, err := os.ReadFile(filepath.Join("testdata/redis", "commandstats-"+when+"-"+port+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		out["127.0.0.1:"+port] = parseCommandStats(string(b))
	}
	return out
}

func TestParseCommandStats(t *testing.T) {
	got := readCommandStats(t, "start")["127.0.0.1:7000"]
	want := map[string]RedisCommand{
		"get":     {Name: "get", Calls: 100, Usec: 70},
		"evalsha": {Name: "evalsha", Calls: 1000, Usec: 20000},
		"info":    {Name: "info", Calls: 5, Usec: 500},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// Over 2 s the cluster's masters ran: 7000 evalsha 2,000 times (40,000
// µs), info once (100), publish 10 times (50, a command new since the
// start), get not at all; 7001 evalsha 1,000 times (20,000) and hgetall
// 2,000 times (2,000, new).
func TestCommandsDelta(t *testing.T) {
	c := commandsDelta(readCommandStats(t, "start"), readCommandStats(t, "end"), 2)
	want := []RedisCommand{
		{Name: "evalsha", Calls: 3000, Usec: 60000},
		{Name: "hgetall", Calls: 2000, Usec: 2000},
		{Name: "info", Calls: 1, Usec: 100},
		{Name: "publish", Calls: 10, Usec: 50},
	}
	if !reflect.DeepEqual(c.Commands, want) {
		t.Errorf("commands: got %+v, want %+v", c.Commands, want)
	}
	if c.Calls() != 5011 || c.Usec() != 62150 {
		t.Errorf("%d calls, %d µs in all; want 5011 and 62150", c.Calls(), c.Usec())
	}
	wantMasters := map[string]float64{"127.0.0.1:7000": 0.020075, "127.0.0.1:7001": 0.011}
	for addr, cores := range wantMasters {
		if math.Abs(c.Masters[addr]-cores) > 1e-12 {
			t.Errorf("master %s: %v cores of command time, want %v", addr, c.Masters[addr], cores)
		}
	}
	s := CPUSplit{Seconds: 2, Requests: 1000, Redis: CPUUse{User: 0.05, System: 0.05}, Commands: c}
	line := "5.01 commands and 62.1 µs of command time a request (Redis's process: 200.0 µs a request): " +
		"evalsha 3.00 a request, 20.0 µs a call; hgetall 2.00 a request, 1.0 µs a call; 2 more; " +
		"command time by master, in cores: 127.0.0.1:7000 0.02, 127.0.0.1:7001 0.01"
	if got := s.CommandsLine(2); got != line {
		t.Errorf("CommandsLine:\ngot  %s\nwant %s", got, line)
	}
}

func TestClockTicks(t *testing.T) {
	dir := t.TempDir()
	auxv := func(pairs ...uint64) string {
		b := make([]byte, 8*len(pairs))
		for i, v := range pairs {
			binary.NativeEndian.PutUint64(b[8*i:], v)
		}
		path := filepath.Join(dir, "auxv")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// AT_PAGESZ (6), AT_CLKTCK (17), AT_NULL (0).
	if got := clockTicks(auxv(6, 4096, 17, 250, 0, 0)); got != 250 {
		t.Errorf("AT_CLKTCK 250: got %v", got)
	}
	if got := clockTicks(auxv(6, 4096, 0, 0)); got != 100 {
		t.Errorf("no AT_CLKTCK: got %v, want the default 100", got)
	}
	if got := clockTicks(filepath.Join(dir, "missing")); got != 100 {
		t.Errorf("no auxv: got %v, want the default 100", got)
	}
}

// The live /proc: this test's process is in it with its name, and the
// machine has CPUs and time.
func TestReadSnapshot_Proc(t *testing.T) {
	s, err := readSnapshot("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me, ok := s.procs[os.Getpid()]
	if !ok || me.ppid != os.Getppid() {
		t.Errorf("this process %d: %+v (found %v), want it with parent %d", os.Getpid(), me, ok, os.Getppid())
	}
	if s.machine.cpus < 1 || s.machine.busyUser()+s.machine.busySystem()+s.machine.idle == 0 {
		t.Errorf("machine %+v, want CPUs and time", s.machine)
	}
}

// The bench's PostgreSQL and Redis are found by process id on this
// machine: the postmaster and the redis-server(s) of the test's URLs.
func TestCPUMeter_FindsStores(t *testing.T) {
	ctx := context.Background()
	pm, err := postmaster(ctx, storetest.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	comm := func(pid int) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		p, err := parseProcStat(b)
		if err != nil {
			t.Fatal(err)
		}
		return p.comm
	}
	if c := comm(pm); c != "postgres" && c != "postmaster" {
		t.Errorf("postmaster %d is named %q, want postgres", pm, c)
	}
	opt, err := redis.ParseURL(storetest.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	pids, err := redisPids(ctx, rdb)
	if err != nil || len(pids) != 1 {
		t.Fatalf("redisPids: %v, %v; want one process", pids, err)
	}
	if c := comm(pids[0]); !strings.HasPrefix(c, "redis-") {
		t.Errorf("Redis's process %d is named %q, want redis-server", pids[0], c)
	}
}

// Over 4 samples: 6 backends running, 3 waiting on a row's transaction, 2
// on WAL writes, 1 on a buffer's lock, 1 on the client.
func TestActivityText(t *testing.T) {
	counts := map[string]int{"running": 6, "Lock: transactionid": 3, "IO: WalWrite": 2, "LWLock: BufferContent": 1, "Client: ClientRead": 1}
	want := "3.2 backends running statements on average over 4 samples: running 1.5, Lock: transactionid 0.8, IO: WalWrite 0.5, others 0.5"
	if got := activityText(counts, 4); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := activityText(map[string]int{}, 0); got != "no sample taken" {
		t.Errorf("no samples: got %q", got)
	}
	if got, want := activityText(map[string]int{}, 3), "0.0 backends running statements on average over 3 samples"; got != want {
		t.Errorf("idle: got %q, want %q", got, want)
	}
}
