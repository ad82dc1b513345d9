package main

import (
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOwnerOf(t *testing.T) {
	cases := []struct {
		stack []string
		want  string
	}{
		{[]string{"internal/runtime/syscall/linux.Syscall6", "syscall.RawSyscall6", "net/http.(*conn).serve"}, ownerKernel},
		{[]string{"runtime.futex", "runtime.notesleep"}, ownerKernel},
		{[]string{"runtime.mallocgc", "strconv.AppendInt", "github.com/boxoffice/boxoffice/handlers.positionAnswer.appendJSON", "net/http.(*conn).serve"}, ownerProduct},
		{[]string{"runtime.mallocgc", "bufio.(*Reader).fill", "github.com/redis/go-redis/v9/internal/proto.(*Reader).ReadReply", "github.com/boxoffice/boxoffice/store.(*Queue).Join"}, "go-redis"},
		{[]string{"net/textproto.readMIMEHeader", "net/http.readRequest", "net/http.(*conn).serve"}, "net/http"},
		{[]string{"github.com/jackc/pgx/v5.(*ExtendedQueryBuilder).Build", "github.com/boxoffice/boxoffice/store.(*Orders).Confirm"}, "pgx"},
		{[]string{"compress/flate.(*compressor).findMatch", "github.com/labstack/echo/v4/middleware.GzipWithConfig.func1.1"}, "compression (gzip, brotli)"},
		{[]string{"main.serve", "runtime.main"}, ownerProduct},
		{[]string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}, ownerRuntime},
		{[]string{"github.com/some/lib.F", "github.com/boxoffice/boxoffice/store.G"}, ownerOther},
		{nil, ownerRuntime},
	}
	for _, c := range cases {
		if got := ownerOf(c.stack); got != c.want {
			t.Errorf("ownerOf(%q) = %q, want %q", c.stack, got, c.want)
		}
	}
}

// TestOwnerOf_SyscallEntriesExactly checks that a sample is charged to the
// kernel only when its innermost frame is a system call's own stub, not a
// runtime function whose name merely begins like one (runtime.ready,
// which wakes a goroutine, is no runtime.read; runtime.futexsleep's own
// time is Go code around the runtime.futex it calls).
func TestOwnerOf_SyscallEntriesExactly(t *testing.T) {
	for _, stack := range [][]string{
		{"runtime.ready", "runtime.goready.func1", "runtime.systemstack"},
		{"runtime.readgstatus", "runtime.casgstatus", "runtime.execute"},
		{"runtime.readvarint", "runtime.step", "runtime.pcvalue"},
		{"runtime.readUnaligned64", "runtime.memhashFallback"},
		{"runtime.futexsleep", "runtime.notesleep"},
	} {
		if got := ownerOf(stack); got != ownerRuntime {
			t.Errorf("ownerOf(%q) = %q, want %q", stack, got, ownerRuntime)
		}
	}
	for _, stack := range [][]string{
		{"runtime.read", "runtime.netpollBreak"},
		{"runtime.sysMmap", "runtime.mmap", "runtime.sysAllocOS"},
		{"syscall.rawSyscallNoError", "syscall.Getpid"},
		{"internal/runtime/syscall/linux.Syscall6", "internal/runtime/syscall/linux.EpollWait", "runtime.netpoll"},
	} {
		if got := ownerOf(stack); got != ownerKernel {
			t.Errorf("ownerOf(%q) = %q, want %q", stack, got, ownerKernel)
		}
	}
}

func TestPackageOf(t *testing.T) {
	for fn, want := range map[string]string{
		"net/http.(*conn).serve":                               "net/http",
		"github.com/boxoffice/boxoffice/store.(*Holds).Hold":   "github.com/boxoffice/boxoffice/store",
		"github.com/labstack/echo/v4.(*Echo).ServeHTTP.func1":  "github.com/labstack/echo/v4",
		"runtime.mallocgc":                                     "runtime",
		"internal/runtime/syscall/linux.Syscall6":              "internal/runtime/syscall/linux",
		"github.com/jackc/pgx/v5/pgconn.(*PgConn).ExecParams":  "github.com/jackc/pgx/v5/pgconn",
		"github.com/redis/go-redis/v9.(*baseClient).process":   "github.com/redis/go-redis/v9",
		"gopkg.in/yaml%2ev3.(*parser).parse":                   "gopkg.in/yaml%2ev3",
		"github.com/a-h/templ.(*Buffer).Write":                 "github.com/a-h/templ",
		"github.com/andybalholm/brotli.(*h5).FindLongestMatch": "github.com/andybalholm/brotli",
	} {
		if got := packageOf(fn); got != want {
			t.Errorf("packageOf(%q) = %q, want %q", fn, got, want)
		}
	}
}

// spin burns CPU in this package (main, which ownerOf charges to the
// product) until the process has used d more of it, so that a profile of
// it holds about d/10 ms samples however busy the machine is.
func spin(t *testing.T, d time.Duration) float64 {
	t.Helper()
	cpu := func() time.Duration {
		var u syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
			t.Fatal(err)
		}
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	x := 0.0
	for end := cpu() + d; cpu() < end; {
		for i := range 10000 {
			x += math.Sqrt(float64(i))
		}
	}
	return x
}

// spinProfile writes a CPU profile of this process spinning for d and
// returns its path.
func spinProfile(t *testing.T, d time.Duration) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cpu.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	spin(t, d)
	pprof.StopCPUProfile()
	return path
}

// TestProfileOwners takes a real CPU profile of this process while it
// spins in package main and reads it back: the shares add up to one and
// the spinning, charged to the product, is most of them.
func TestProfileOwners(t *testing.T) {
	split, err := profileOwners(spinProfile(t, 500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	shares := split.Owners
	if split.Samples < 25 || split.Seconds < 0.4 {
		t.Errorf("a profile of 500 ms of CPU holds %d samples over %v s, want about 50 over at least 0.5 s", split.Samples, split.Seconds)
	}
	sum, product := 0.0, 0.0
	for i, s := range shares {
		sum += s.Share
		if s.Owner == ownerProduct {
			product = s.Share
		}
		if i > 0 && s.Share > shares[i-1].Share {
			t.Errorf("shares not largest first: %v", shares)
		}
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("shares add up to %v, want 1: %v", sum, shares)
	}
	if product < 0.5 {
		t.Errorf("the product's share of a profile spent spinning in package main = %v, want most of it: %v", product, shares)
	}
	fns := 0.0
	for _, f := range split.Functions {
		fns += f.Share
	}
	if len(split.Functions) == 0 || !strings.HasSuffix(split.Functions[0].Owner, ".spin") || math.Abs(fns-product) > 1e-9 {
		t.Errorf("the product's functions %v (adding up to %v), want spin first and the product's share %v in all", split.Functions, fns, product)
	}

	if _, err := profileOwners(filepath.Join(t.TempDir(), "missing.pb.gz")); err == nil {
		t.Error("a missing profile: no error")
	}
	heap := filepath.Join(t.TempDir(), "heap.pb.gz")
	hf, err := os.Create(heap)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.WriteHeapProfile(hf); err != nil {
		t.Fatal(err)
	}
	hf.Close()
	if _, err := profileOwners(heap); err == nil || !strings.Contains(err.Error(), "not a CPU profile") {
		t.Errorf("a heap profile: error %v, want not a CPU profile", err)
	}
}

func TestAttribute(t *testing.T) {
	// 10,000 requests in 2 s on 2 cores, 0.2 cores idle: 360 µs of busy
	// CPU a request, of which the server's 0.8 cores are 160 µs.
	c := CPUSplit{Seconds: 2, Cores: 2, Requests: 10000, Idle: 0.2,
		Server: CPUUse{User: 0.6, System: 0.2}, Redis: CPUUse{User: 0.3}, Generator: CPUUse{User: 0.7}}
	split := ProfileSplit{Owners: []Share{{"net/http", 0.5}, {ownerProduct, 0.25}, {ownerKernel, 0.25}},
		Functions: []Share{{"main.serve", 0.15}, {"main.parse", 0.1}}, Samples: 500, Seconds: 10}
	a, ok := attribute(c, split, 6000)
	if !ok {
		t.Fatal("no attribution")
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-6 }
	if !near(a.Busy, 360) || !near(a.Server, 160) || !near(a.Product, 40) {
		t.Errorf("busy %v, server %v, product %v µs; want 360, 160, 40", a.Busy, a.Server, a.Product)
	}
	// 2 cores over 320 µs a request.
	if !near(a.Bound, 6250) {
		t.Errorf("bound %v/s, want 6250", a.Bound)
	}
	lines := strings.Join(a.Lines(c), "\n")
	if !strings.Contains(lines, "within its reach") {
		t.Errorf("a bound over the need must say the target is within the product's reach:\n%s", lines)
	}
	// Within reach, the next step is the product's code by function: 0.15
	// and 0.1 of the server's 160 µs.
	if want := "Next step: the product's own Go code, 40 µs a request, where it spends most (the innermost function of the product in each sample): main.serve 24 µs, main.parse 16 µs"; !strings.Contains(lines, want) {
		t.Errorf("within reach, the lines lack %q:\n%s", want, lines)
	}
	// Out of reach, the two largest takers outside the product's code: the
	// generator's 0.7 cores (140 µs) and net/http's half of the server's
	// 160 µs (80 µs), before Redis's 60 µs and the kernel's 40 µs.
	out, _ := attribute(c, split, 7000)
	lines = strings.Join(out.Lines(c), "\n")
	if !strings.Contains(lines, "outside the product's Go code") {
		t.Errorf("a bound under the need must place the time outside the product's code:\n%s", lines)
	}
	if want := "Next step, where most of the time outside the product's Go code goes: the load generator, 140 µs a request: " + nextSteps[whoGenerator] + "; net/http, 80 µs a request: " + nextSteps["net/http"]; !strings.Contains(lines, want) {
		t.Errorf("out of reach, the lines lack %q:\n%s", want, lines)
	}
	// A latency target (no need): no verdict, and the product's code is
	// among the takers: the generator's 140 µs, then net/http's 80 µs,
	// before the product's 40 µs. Without the generator's and Redis's
	// time, the product comes second, after net/http (and before the
	// kernel's 40 µs, which follows it in the profile's order).
	lat, _ := attribute(c, split, 0)
	lines = strings.Join(lat.Lines(c), "\n")
	if strings.Contains(lines, "within its reach") || strings.Contains(lines, "outside the product's Go code") || !strings.Contains(lines, "the bound gives no verdict") {
		t.Errorf("a latency target's lines must give the bound without a verdict:\n%s", lines)
	}
	idle := c
	idle.Generator, idle.Redis = CPUUse{}, CPUUse{}
	lat, _ = attribute(idle, split, 0)
	want := "Next step, where most of the step's time goes: net/http, 80 µs a request: " + nextSteps["net/http"] + "; the product's own Go code, 40 µs a request, where it spends most"
	if got := lat.NextStep(idle); !strings.HasPrefix(got, want) {
		t.Errorf("a latency target's next step:\n%s\nwant it to start with\n%s", got, want)
	}
	for _, bad := range []CPUSplit{{}, {Seconds: 2, Cores: 2, Requests: 10, Beside: "position polls"}, {Seconds: 2, Cores: 2, Requests: 10, Err: "no /proc"}} {
		if _, ok := attribute(bad, split, 1); ok {
			t.Errorf("attribute(%+v) made an attribution", bad)
		}
	}
	// Idle read above the cores (/proc's ticks in a short step): the busy
	// time is no more than the product's, and no bound can be made.
	short := c
	short.Idle = 2.5
	if a, ok := attribute(short, split, 6000); ok {
		t.Errorf("busy time below zero: attribution %+v, want none", a)
	}
}

// TestFinish_AttributesMissedRates checks that the report's missed rate
// targets get their attribution from their profile, and met ones none.
func TestFinish_AttributesMissedRates(t *testing.T) {
	path := spinProfile(t, 600*time.Millisecond)
	short := spinProfile(t, 100*time.Millisecond)
	split := &CPUSplit{Seconds: 1, Cores: 2, Requests: 1000, Server: CPUUse{User: 1}, Generator: CPUUse{User: 1}}
	rep := &Report{Targets: []Target{
		{Name: "missed", Met: ptr(false), Profile: path, CPU: split, Need: 5000},
		{Name: "met", Met: ptr(true), Profile: path, CPU: split, Need: 500},
		{Name: "missed, short profile", Met: ptr(false), Profile: short, CPU: split, Need: 5000},
		{Name: "missed, requests beside", Met: ptr(false), Profile: path, CPU: &CPUSplit{Seconds: 1, Cores: 2, Requests: 1000, Beside: "position polls"}, Need: 5000},
	}}
	b := &Bench{cfg: Config{Binary: os.Args[0]}, ui: newUI(false)}
	b.explainMissed(rep)
	if a := rep.Targets[0].Attribution; a == nil || a.Bound <= 0 || a.Samples < minSamples {
		t.Errorf("missed target: attribution %+v", a)
	}
	if rep.Targets[1].Attribution != nil {
		t.Errorf("met target got an attribution: %+v", rep.Targets[1].Attribution)
	}
	if got := rep.Targets[2]; got.Attribution != nil || len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "fewer than 30") {
		t.Errorf("a profile of about 10 samples: attribution %+v, notes %q; want none and a note", got.Attribution, got.Notes)
	}
	if got := rep.Targets[3]; got.Attribution != nil || len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "no next step") {
		t.Errorf("a step with requests beside: attribution %+v, notes %q; want none and a note saying why", got.Attribution, got.Notes)
	}
}

func TestBesideNotes(t *testing.T) {
	r := &Report{Phases: []*Phase{{Steps: []Stats{
		{Name: "position polls, closed loop", Requests: 1000, Rate: 100, CPU: &CPUSplit{Step: "position polls"}},
		{Name: "GET /events/{id}/seats", Requests: 50, Rate: 5, CPU: &CPUSplit{Step: "seat map page, cold", Beside: "position polls"}},
	}}}}
	notes := besideNotes(r, "position polls")
	if len(notes) != 1 || !strings.Contains(notes[0], "GET /events/{id}/seats, 50 requests at 5/s") {
		t.Errorf("beside the polls: %q, want the seat map step", notes)
	}
	if notes := besideNotes(r, "seat map page, cold"); len(notes) != 0 {
		t.Errorf("beside the seat map: %q, want none", notes)
	}
}

// TestNextStep_IdleCores checks a missed rate whose cores were partly idle:
// with every core busy the step would pass the target even with the
// product's code as it is, so the next step is what left the cores idle,
// not the product's code (which cutting would not bring the rate there).
func TestNextStep_IdleCores(t *testing.T) {
	// 10,000 requests in 2 s on 2 cores, 1.0 idle: 200 µs of busy CPU a
	// request, 10,000/s with every core busy, over the 8,000 asked.
	c := CPUSplit{Seconds: 2, Cores: 2, Requests: 10000, Idle: 1,
		Server: CPUUse{User: 0.4}, Redis: CPUUse{User: 0.3}, Generator: CPUUse{User: 0.3}}
	split := ProfileSplit{Owners: []Share{{"net/http", 0.75}, {ownerProduct, 0.25}},
		Functions: []Share{{"main.serve", 0.25}}, Samples: 500, Seconds: 2}
	a, ok := attribute(c, split, 8000)
	if !ok {
		t.Fatal("no attribution")
	}
	lines := strings.Join(a.Lines(c), "\n")
	if strings.Contains(lines, "within its reach") || strings.Contains(lines, "Next step: the product's own Go code") {
		t.Errorf("idle cores, not the product's code, kept the rate under the target; the lines say otherwise:\n%s", lines)
	}
	if want := "the step left 1.00 of its 2 cores idle"; !strings.Contains(a.NextStep(c), want) {
		t.Errorf("next step %q, want it to say %q", a.NextStep(c), want)
	}
	// Half a core idle: 300 µs busy, 6,667/s with every core busy, under
	// the 7,000 asked; without the product's 20 µs (a quarter of the
	// server's 80), 7,143/s: the product's code is what closes the gap.
	busier := c
	busier.Idle = 0.5
	if b, _ := attribute(busier, split, 7000); !strings.HasPrefix(b.NextStep(busier), "Next step: the product's own Go code") {
		t.Errorf("the product's code closes the gap, next step %q", b.NextStep(busier))
	}
}

// TestNextStep_OtherProcesses checks that time taken by processes that are
// not the step's (another program on the machine) is named when it is
// among the largest takers, rather than passed over for smaller ones.
func TestNextStep_OtherProcesses(t *testing.T) {
	// 1,000 requests in 1 s on 2 cores, none idle: other processes 1.2
	// cores (1,200 µs a request), the generator 0.3, the server 0.5.
	c := CPUSplit{Seconds: 1, Cores: 2, Requests: 1000,
		Server: CPUUse{User: 0.5}, Generator: CPUUse{User: 0.3}, Other: CPUUse{User: 1.2}}
	split := ProfileSplit{Owners: []Share{{"net/http", 0.8}, {ownerProduct, 0.2}}, Samples: 100, Seconds: 1}
	for _, need := range []float64{5000, 0} {
		a, ok := attribute(c, split, need)
		if !ok {
			t.Fatal("no attribution")
		}
		if want := "other processes, 1200 µs a request: " + nextSteps[whoOther]; !strings.Contains(a.NextStep(c), want) {
			t.Errorf("need %v: next step %q, want it to name %q", need, a.NextStep(c), want)
		}
	}
}

// TestAttribute_EmptyProfile checks that a profile split without owners
// (no samples) makes no attribution, whose lines would split nothing.
func TestAttribute_EmptyProfile(t *testing.T) {
	c := CPUSplit{Seconds: 1, Cores: 2, Requests: 1000, Server: CPUUse{User: 1}}
	if a, ok := attribute(c, ProfileSplit{}, 5000); ok {
		t.Errorf("an empty profile: attribution %+v, want none", a)
	}
}

// TestTargets_FellBehind checks that an open loop's latency target whose
// step fell behind its offered rate asks for that rate (so that a missed
// p99 gets a verdict), and one whose step kept up asks for none.
func TestTargets_FellBehind(t *testing.T) {
	r := &Report{Config: Config{Mode: "bench"},
		Baselines: []Stats{{Name: "echo closed loop", Rate: 20000}, {Name: "echo open loop, 10000/s", Rate: 9990, Offered: 10000}},
		Phases: []*Phase{{Name: "2. joins", Status: "ran", Steps: []Stats{
			{Name: "open loop, 5000/s", Requests: 50000, OK: 50000, Rate: 4940, Offered: 5000, P99: 60},
			{Name: "open loop, 10000/s", Requests: 88000, OK: 88000, Rate: 8800, Offered: 10000, P99: 459},
		}}}}
	b := &Bench{}
	got := map[string]Target{}
	for _, tg := range b.targets(r) {
		got[tg.Name] = tg
	}
	if kept := got["Joins at 5,000/s offered"]; kept.Need != 0 || kept.Behind {
		t.Errorf("a step that served 4,940 of 5,000 a second kept up: need %v, behind %v; want 0, false", kept.Need, kept.Behind)
	}
	if behind := got["Joins at 10,000/s offered"]; behind.Need != 10000 || !behind.Behind {
		t.Errorf("a step that served 8,800 of 10,000 a second fell behind: need %v, behind %v; want 10000, true", behind.Need, behind.Behind)
	}
}

// TestAttribute_FellBehind checks the verdict on a latency whose open
// loop fell behind its offered rate: outside the product's Go code when
// even without it the machine could not carry the rate, within its reach
// when it could.
func TestAttribute_FellBehind(t *testing.T) {
	// 17,600 requests in 2 s (8,800/s) on 2 cores, none idle: 227 µs a
	// request, of which the server's 1.4 cores are 159 µs and the
	// product's code a tenth of those, 16 µs: 2 cores over 211 µs is
	// 9,479/s.
	c := CPUSplit{Seconds: 2, Cores: 2, Requests: 17600,
		Server: CPUUse{User: 1.4}, Redis: CPUUse{User: 0.3}, Generator: CPUUse{User: 0.3}}
	split := ProfileSplit{Owners: []Share{{"net/http", 0.9}, {ownerProduct, 0.1}},
		Functions: []Share{{"main.serve", 0.1}}, Samples: 500, Seconds: 2}
	out, ok := attribute(c, split, 10000)
	if !ok {
		t.Fatal("no attribution")
	}
	out.Behind = true
	lines := strings.Join(out.Lines(c), "\n")
	for _, want := range []string{"against the 10000 a second offered, which the step fell behind (it achieved 8800 a second)", "outside the product's Go code"} {
		if !strings.Contains(lines, want) {
			t.Errorf("fell behind 10,000/s, out of reach: the lines lack %q:\n%s", want, lines)
		}
	}
	within, _ := attribute(c, split, 9000)
	within.Behind = true
	lines = strings.Join(within.Lines(c), "\n")
	if !strings.Contains(lines, "within its reach") || strings.Contains(lines, "outside the product's Go code") {
		t.Errorf("fell behind 9,000/s, which 9,479 without the product's code would carry: the lines say otherwise:\n%s", lines)
	}
}
