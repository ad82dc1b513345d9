package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Where the machine's CPU went during a step, from /proc (proc(5)): each
// process's user and system time (/proc/<pid>/stat) at the step's start and
// end, summed by whose the process is (the server under test, Redis,
// PostgreSQL, the load generator, nginx), and the machine's own totals
// (/proc/stat) for idle, softirq and everything else. A process that
// starts during the step counts from zero; one that ends during it counts
// through its parent's time of waited-for children (a PostgreSQL backend's
// through the postmaster's, a Redis fork's through redis-server's), and
// otherwise lands in "other", which is the machine's busy time less the
// named processes'.

// procTimes is one process's line of /proc/<pid>/stat: its parent, its
// name, and its CPU time in clock ticks, its own (utime, stime) and that of
// its children it has waited for (cutime, cstime).
type procTimes struct {
	pid, ppid                    int
	comm                         string
	utime, stime, cutime, cstime uint64
}

// parseProcStat parses the text of /proc/<pid>/stat. The name (comm) is
// in parentheses and may hold spaces and parentheses itself, so the fields
// are counted from the last ')'.
func parseProcStat(b []byte) (procTimes, error) {
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 1 || close < open {
		return procTimes{}, fmt.Errorf("/proc/<pid>/stat: no (comm) in %q", b)
	}
	var p procTimes
	var err error
	if p.pid, err = strconv.Atoi(string(bytes.TrimSpace(b[:open]))); err != nil {
		return procTimes{}, fmt.Errorf("/proc/<pid>/stat: pid: %w", err)
	}
	p.comm = string(b[open+1 : close])
	// After ") ": state (field 3), ppid (4), ... utime (14), stime (15),
	// cutime (16), cstime (17).
	f := strings.Fields(string(b[close+1:]))
	if len(f) < 15 {
		return procTimes{}, fmt.Errorf("/proc/%d/stat: %d fields after the name, want at least 15", p.pid, len(f))
	}
	if p.ppid, err = strconv.Atoi(f[1]); err != nil {
		return procTimes{}, fmt.Errorf("/proc/%d/stat: ppid: %w", p.pid, err)
	}
	for i, dst := range []*uint64{&p.utime, &p.stime, &p.cutime, &p.cstime} {
		// cutime and cstime are signed in the kernel's format (long).
		v, err := strconv.ParseInt(f[11+i], 10, 64)
		if err != nil {
			return procTimes{}, fmt.Errorf("/proc/%d/stat: field %d: %w", p.pid, 14+i, err)
		}
		*dst = uint64(max(v, 0))
	}
	return p, nil
}

// machineTimes is the first line of /proc/stat: the time of all CPUs
// together in clock ticks, by what they did, and how many CPUs there are
// (its cpuN lines).
type machineTimes struct {
	user, nice, system, idle, iowait, irq, softirq, steal uint64
	cpus                                                  int
}

// busyUser is the machine's time in user mode (guest time is inside it).
func (m machineTimes) busyUser() uint64 { return m.user + m.nice }

// busySystem is the machine's time in the kernel: system calls,
// interrupts and softirqs.
func (m machineTimes) busySystem() uint64 { return m.system + m.irq + m.softirq }

// parseMachineStat parses the text of /proc/stat.
func parseMachineStat(b []byte) (machineTimes, error) {
	var m machineTimes
	found := false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "cpu":
			if len(f) < 9 {
				return m, fmt.Errorf("/proc/stat: %d fields on the cpu line, want at least 9", len(f))
			}
			for i, dst := range []*uint64{&m.user, &m.nice, &m.system, &m.idle, &m.iowait, &m.irq, &m.softirq, &m.steal} {
				v, err := strconv.ParseUint(f[1+i], 10, 64)
				if err != nil {
					return m, fmt.Errorf("/proc/stat: cpu field %d: %w", 1+i, err)
				}
				*dst = v
			}
			found = true
		case len(f) > 0 && strings.HasPrefix(f[0], "cpu"):
			m.cpus++
		}
	}
	if !found {
		return m, fmt.Errorf("/proc/stat: no cpu line")
	}
	return m, nil
}

// cpuSnapshot is the machine's and every process's CPU time at one moment.
type cpuSnapshot struct {
	at      time.Time
	machine machineTimes
	procs   map[int]procTimes
}

// readSnapshot reads /proc/stat and every /proc/<pid>/stat under root (a
// process that ends while it reads is skipped).
func readSnapshot(root string) (cpuSnapshot, error) {
	s := cpuSnapshot{procs: map[int]procTimes{}}
	ents, err := os.ReadDir(root)
	if err != nil {
		return s, err
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, e.Name(), "stat"))
		if err != nil {
			continue
		}
		if p, err := parseProcStat(b); err == nil {
			s.procs[p.pid] = p
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "stat"))
	if err != nil {
		return s, err
	}
	s.machine, err = parseMachineStat(b)
	s.at = time.Now()
	return s, err
}

// Groups of processes, as the report names them.
const (
	groupServer    = "server"
	groupRedis     = "Redis"
	groupPostgres  = "PostgreSQL"
	groupGenerator = "generator"
	groupNginx     = "nginx"
)

// cpuRoles says whose each process is. Redis's and PostgreSQL's processes
// are the ones the bench talks to (the servers' process ids and their
// children) when those ids were found on this machine, otherwise every
// process named redis-server or postgres.
type cpuRoles struct {
	generator  int   // this process
	servers    []int // the server(s) under test: boxoffice, or the echo baseline's
	nginx      int   // nginx's master (its workers are its children); 0: none
	redis      []int // redis-server process ids; nil: by name
	postmaster int   // PostgreSQL's postmaster (its backends are its children); 0: by name
}

// group returns the group of process p ("" for other).
func (r cpuRoles) group(p procTimes) string {
	in := func(ids []int) bool { return slices.Contains(ids, p.pid) || slices.Contains(ids, p.ppid) }
	switch {
	case slices.Contains(r.servers, p.pid):
		return groupServer
	case p.pid == r.generator:
		return groupGenerator
	case r.nginx != 0 && in([]int{r.nginx}):
		return groupNginx
	case r.redis != nil && in(r.redis), r.redis == nil && strings.HasPrefix(p.comm, "redis-"):
		return groupRedis
	case r.postmaster != 0 && in([]int{r.postmaster}), r.postmaster == 0 && (p.comm == "postgres" || p.comm == "postmaster"):
		return groupPostgres
	}
	return ""
}

// CPUUse is a group's CPU over a step, in cores (CPU seconds per second of
// the step).
type CPUUse struct {
	User   float64 `json:"user"`
	System float64 `json:"system"`
}

// Total is user and system time together, in cores.
func (u CPUUse) Total() float64 { return u.User + u.System }

// CPUSplit is where the machine's CPU went during one step, in cores.
type CPUSplit struct {
	Step      string  `json:"step"`
	Seconds   float64 `json:"wall_s"`
	Cores     int     `json:"cores"`
	Requests  int     `json:"requests"`
	Server    CPUUse  `json:"server"`
	Redis     CPUUse  `json:"redis"`
	Postgres  CPUUse  `json:"postgres"`
	Generator CPUUse  `json:"generator"`
	Nginx     *CPUUse `json:"nginx,omitempty"`
	// Other is the machine's busy time less the groups': other processes,
	// kernel threads, processes that ended unseen.
	Other CPUUse `json:"other"`
	// Idle is the machine's idle and I/O-wait time; Softirq its time in
	// softirqs (loopback networking), which, without the kernel's IRQ time
	// accounting, is also in the system time of the processes it
	// interrupted; Steal the time a hypervisor took.
	Idle    float64 `json:"idle"`
	Softirq float64 `json:"softirq"`
	Steal   float64 `json:"steal"`
	// Beside names other requests sent in the step's window, whose CPU is
	// in the split too; then there is no figure a request.
	Beside string `json:"beside,omitempty"`
	// Redis's commands in the step (INFO commandstats), when read.
	Commands *RedisCommands `json:"redis_commands,omitempty"`
	Err      string         `json:"error,omitempty"`
}

// cpuSplit computes the split between two snapshots, with hz clock ticks a
// second. Each group's time is its processes' own and waited-for
// children's time at the end less at the start (the generator's own time
// only: its children are the servers under test), never below zero.
func cpuSplit(a, b cpuSnapshot, roles cpuRoles, hz float64) CPUSplit {
	wall := b.at.Sub(a.at).Seconds()
	s := CPUSplit{Seconds: wall, Cores: b.machine.cpus}
	if wall <= 0 || hz <= 0 {
		return s
	}
	cores := func(ticks float64) float64 { return max(ticks, 0) / hz / wall }
	type ticks struct{ user, system float64 }
	sum := func(snap cpuSnapshot) map[string]ticks {
		out := map[string]ticks{}
		for _, p := range snap.procs {
			g := roles.group(p)
			if g == "" {
				continue
			}
			t := out[g]
			t.user += float64(p.utime)
			t.system += float64(p.stime)
			if g != groupGenerator {
				t.user += float64(p.cutime)
				t.system += float64(p.cstime)
			}
			out[g] = t
		}
		return out
	}
	before, after := sum(a), sum(b)
	use := func(g string) CPUUse {
		return CPUUse{User: cores(after[g].user - before[g].user), System: cores(after[g].system - before[g].system)}
	}
	s.Server, s.Redis, s.Postgres, s.Generator = use(groupServer), use(groupRedis), use(groupPostgres), use(groupGenerator)
	named := CPUUse{User: s.Server.User + s.Redis.User + s.Postgres.User + s.Generator.User,
		System: s.Server.System + s.Redis.System + s.Postgres.System + s.Generator.System}
	if roles.nginx != 0 {
		n := use(groupNginx)
		s.Nginx = &n
		named.User += n.User
		named.System += n.System
	}
	d := func(f func(machineTimes) uint64) float64 { return float64(f(b.machine)) - float64(f(a.machine)) }
	s.Other = CPUUse{
		User:   max(cores(d(machineTimes.busyUser))-named.User, 0),
		System: max(cores(d(machineTimes.busySystem))-named.System, 0),
	}
	s.Idle = cores(d(func(m machineTimes) uint64 { return m.idle + m.iowait }))
	s.Softirq = cores(d(func(m machineTimes) uint64 { return m.softirq }))
	s.Steal = cores(d(func(m machineTimes) uint64 { return m.steal }))
	return s
}

// RedisCommands are Redis's commands during a step, from the difference of
// INFO commandstats at its start and end, summed over the masters.
type RedisCommands struct {
	// Commands are the commands the step sent, most time first.
	Commands []RedisCommand `json:"commands"`
	// Masters is the time each master spent in commands, in cores, by
	// address (one entry on a single Redis).
	Masters map[string]float64 `json:"masters_cores"`
}

// RedisCommand is one command's calls and time in it, in microseconds
// (Redis's own count: the command's execution, not reading the request or
// writing the answer).
type RedisCommand struct {
	Name  string `json:"name"`
	Calls int64  `json:"calls"`
	Usec  int64  `json:"usec"`
}

// Calls is the commands' calls in all.
func (c RedisCommands) Calls() int64 {
	var n int64
	for _, x := range c.Commands {
		n += x.Calls
	}
	return n
}

// Usec is the commands' time in all, in microseconds.
func (c RedisCommands) Usec() int64 {
	var n int64
	for _, x := range c.Commands {
		n += x.Usec
	}
	return n
}

// parseCommandStats parses INFO commandstats: name -> calls and usec.
func parseCommandStats(info string) map[string]RedisCommand {
	out := map[string]RedisCommand{}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found {
			continue
		}
		c := RedisCommand{Name: name}
		for kv := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				c.Calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				c.Usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		out[name] = c
	}
	return out
}

// commandsDelta returns the commands called between two INFO
// commandstats of each master (by address), most time first, and each
// master's command time in cores over seconds.
func commandsDelta(before, after map[string]map[string]RedisCommand, seconds float64) *RedisCommands {
	byName := map[string]RedisCommand{}
	out := &RedisCommands{Masters: map[string]float64{}}
	for addr, stats := range after {
		var usec int64
		for name, c := range stats {
			b := before[addr][name]
			if c.Calls <= b.Calls {
				continue
			}
			x := byName[name]
			x.Name = name
			x.Calls += c.Calls - b.Calls
			x.Usec += c.Usec - b.Usec
			byName[name] = x
			usec += c.Usec - b.Usec
		}
		if seconds > 0 {
			out.Masters[addr] = float64(usec) / 1e6 / seconds
		}
	}
	for _, c := range byName {
		out.Commands = append(out.Commands, c)
	}
	slices.SortFunc(out.Commands, func(a, b RedisCommand) int {
		if a.Usec != b.Usec {
			return int(b.Usec - a.Usec)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// CPUMeter measures where the CPU goes during steps (measureCPU); a nil
// meter measures nothing.
type CPUMeter struct {
	root string // "/proc"
	hz   float64
	rdb  redis.UniversalClient // nil: no INFO commandstats

	mu    sync.Mutex
	roles cpuRoles
}

// newCPUMeter returns a meter of this machine's /proc, with the bench's
// Redis and PostgreSQL found by their process ids: INFO server's
// process_id on each Redis node, and the parent of a PostgreSQL backend of
// databaseURL (pg_backend_pid()). What it cannot find it counts by process
// name, and says so in the returned notes.
func newCPUMeter(ctx context.Context, rdb redis.UniversalClient, databaseURL string) (*CPUMeter, []string) {
	m := &CPUMeter{root: "/proc", hz: clockTicks("/proc/self/auxv"), rdb: rdb, roles: cpuRoles{generator: os.Getpid()}}
	var notes []string
	pids, err := redisPids(ctx, rdb)
	for _, pid := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			pids = nil // another machine or namespace
			break
		}
	}
	if len(pids) > 0 {
		m.roles.redis = pids
	} else {
		notes = append(notes, fmt.Sprintf("Redis's processes not found by id (%v): every redis-server on the machine counts as Redis", err))
	}
	if pm, err := postmaster(ctx, databaseURL); err == nil {
		m.roles.postmaster = pm
	} else {
		notes = append(notes, fmt.Sprintf("PostgreSQL's postmaster not found (%v): every postgres process on the machine counts as PostgreSQL", err))
	}
	return m, notes
}

// redisPids returns the process ids of the Redis server or of every node of
// the cluster (masters and replicas), from INFO server.
func redisPids(ctx context.Context, rdb redis.UniversalClient) ([]int, error) {
	var mu sync.Mutex
	var pids []int
	add := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
				pid, err := strconv.Atoi(v)
				if err != nil {
					return fmt.Errorf("INFO server process_id %q: %w", v, err)
				}
				mu.Lock()
				pids = append(pids, pid)
				mu.Unlock()
				return nil
			}
		}
		return fmt.Errorf("INFO server has no process_id")
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachShard(ctx, add)
	case *redis.Client:
		err = add(ctx, c)
	default:
		err = fmt.Errorf("redis client %T", rdb)
	}
	return pids, err
}

// postmaster returns the process id of the PostgreSQL server of
// databaseURL: the parent of one of its backends (on its postgres
// database, which is there before the bench's own), read from /proc.
func postmaster(ctx context.Context, databaseURL string) (int, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return 0, err
	}
	u.Path = "/postgres"
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var backend int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0, err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", backend))
	if err != nil {
		return 0, fmt.Errorf("backend %d is not on this machine: %w", backend, err)
	}
	p, err := parseProcStat(b)
	if err != nil {
		return 0, err
	}
	return p.ppid, nil
}

// clockTicks returns the clock ticks a second of /proc's times (USER_HZ),
// from the auxiliary vector's AT_CLKTCK (as sysconf(_SC_CLK_TCK) does),
// or 100, Linux's value on every common architecture, when it cannot be read.
func clockTicks(auxv string) float64 {
	const atClkTck = 17
	b, err := os.ReadFile(auxv)
	if err != nil {
		return 100
	}
	for i := 0; i+16 <= len(b); i += 16 {
		k, v := binary.NativeEndian.Uint64(b[i:]), binary.NativeEndian.Uint64(b[i+8:])
		if k == atClkTck && v > 0 {
			return float64(v)
		}
	}
	return 100
}

// setServers sets the process ids of the servers under test (none: the
// step has no HTTP server, as the Redis baselines).
func (m *CPUMeter) setServers(pids ...int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.roles.servers = pids
	m.mu.Unlock()
}

// setNginx sets nginx's master process id.
func (m *CPUMeter) setNginx(pid int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.roles.nginx = pid
	m.mu.Unlock()
}

// cpuWindow is a step being measured: the snapshots at its start.
type cpuWindow struct {
	m        *CPUMeter
	ctx      context.Context
	label    string
	beside   string // other requests in the window (CPUSplit.Beside)
	roles    cpuRoles
	start    cpuSnapshot
	commands map[string]map[string]RedisCommand
	err      error
}

// start takes the snapshots at a step's start (/proc and INFO
// commandstats).
func (m *CPUMeter) start(ctx context.Context, label string) *cpuWindow {
	m.mu.Lock()
	roles := m.roles
	roles.servers = slices.Clone(roles.servers)
	m.mu.Unlock()
	w := &cpuWindow{m: m, ctx: context.WithoutCancel(ctx), label: label, roles: roles}
	w.commands, _ = m.commandStats(w.ctx)
	w.start, w.err = readSnapshot(m.root)
	return w
}

// end takes the snapshots at the step's end and returns the split over
// the step, which sent requests requests.
func (w *cpuWindow) end(requests int) *CPUSplit {
	if w.err != nil {
		return &CPUSplit{Step: w.label, Err: w.err.Error()}
	}
	snap, err := readSnapshot(w.m.root)
	if err != nil {
		return &CPUSplit{Step: w.label, Err: err.Error()}
	}
	s := cpuSplit(w.start, snap, w.roles, w.m.hz)
	s.Step, s.Requests, s.Beside = w.label, requests, w.beside
	if w.commands != nil {
		if after, err := w.m.commandStats(w.ctx); err == nil {
			s.Commands = commandsDelta(w.commands, after, s.Seconds)
		}
	}
	return &s
}

// commandStats reads INFO commandstats of every master, by address.
func (m *CPUMeter) commandStats(ctx context.Context) (map[string]map[string]RedisCommand, error) {
	if m.rdb == nil {
		return nil, fmt.Errorf("no Redis")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var mu sync.Mutex
	out := map[string]map[string]RedisCommand{}
	read := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		out[c.Options().Addr] = parseCommandStats(info)
		mu.Unlock()
		return nil
	}
	var err error
	switch c := m.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, read)
	case *redis.Client:
		err = read(ctx, c)
	default:
		err = fmt.Errorf("redis client %T", m.rdb)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Line is the split in one line, as the report's "Where the time goes"
// has it: "server 0.67 (user 0.45, system 0.22), Redis 0.41, ..., idle 0.15
// of 2 cores; softirq 0.10".
func (s CPUSplit) Line() string {
	if s.Err != "" {
		return "not measured: " + s.Err
	}
	parts := []string{
		fmt.Sprintf("server %.2f (user %.2f, system %.2f)", s.Server.Total(), s.Server.User, s.Server.System),
		fmt.Sprintf("Redis %.2f", s.Redis.Total()),
		fmt.Sprintf("PostgreSQL %.2f", s.Postgres.Total()),
		fmt.Sprintf("generator %.2f", s.Generator.Total()),
	}
	if s.Nginx != nil {
		parts = append(parts, fmt.Sprintf("nginx %.2f", s.Nginx.Total()))
	}
	parts = append(parts, fmt.Sprintf("other %.2f", s.Other.Total()), fmt.Sprintf("idle %.2f of %d cores", s.Idle, s.Cores))
	line := strings.Join(parts, ", ") + fmt.Sprintf("; softirq %.2f", s.Softirq)
	if s.Steal >= 0.01 {
		line += fmt.Sprintf(", steal %.2f", s.Steal)
	}
	return line
}

// perRequest turns cores (CPU seconds a second over the step) into CPU
// microseconds a request of the step; the step must have requests.
func (s CPUSplit) perRequest(cores float64) float64 {
	return cores * s.Seconds / float64(s.Requests) * 1e6
}

// PerRequest is each group's CPU time a request of the step, in
// microseconds: "server 180 µs, Redis 60 µs, ..."; "" without requests
// or when other requests shared the window (Beside).
func (s CPUSplit) PerRequest() string {
	if s.Requests == 0 || s.Err != "" || s.Beside != "" {
		return ""
	}
	us := func(u CPUUse) string { return fmt.Sprintf("%.0f µs", s.perRequest(u.Total())) }
	parts := []string{"server " + us(s.Server), "Redis " + us(s.Redis), "PostgreSQL " + us(s.Postgres), "generator " + us(s.Generator)}
	if s.Nginx != nil {
		parts = append(parts, "nginx "+us(*s.Nginx))
	}
	return strings.Join(parts, ", ")
}

// CommandsLine says what Redis did for the step's requests: commands and
// their time a request (INFO commandstats), the commands by time, and the
// masters' command time in cores; "" when not read or when other
// requests shared the window (Beside).
func (s CPUSplit) CommandsLine(top int) string {
	c := s.Commands
	if c == nil || s.Requests == 0 || s.Beside != "" {
		return ""
	}
	n := float64(s.Requests)
	line := fmt.Sprintf("%.2f commands and %.1f µs of command time a request (Redis's process: %.1f µs a request)",
		float64(c.Calls())/n, float64(c.Usec())/n, s.perRequest(s.Redis.Total()))
	var parts []string
	for i, x := range c.Commands {
		if i == top {
			parts = append(parts, fmt.Sprintf("%d more", len(c.Commands)-top))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f a request, %.1f µs a call", x.Name, float64(x.Calls)/n, float64(x.Usec)/float64(x.Calls)))
	}
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, "; ")
	}
	if len(c.Masters) > 1 {
		var ms []string
		for addr, cores := range c.Masters {
			ms = append(ms, fmt.Sprintf("%s %.2f", addr, cores))
		}
		slices.Sort(ms)
		line += "; command time by master, in cores: " + strings.Join(ms, ", ")
	}
	return line
}
