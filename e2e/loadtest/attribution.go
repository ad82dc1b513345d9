package main

import (
	"cmp"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// Where a missed target's time goes, and whether the product's own code
// could close the gap: the server's CPU profile of the step is split by
// who spent each sample (profileOwners), those shares are turned into
// microseconds a request with the step's measured CPU (CPUSplit), and the
// step's rate is bounded from above as if the product's own code in the
// server took no time and every idle core were used (Attribution.Bound).
// When even that bound is below the target, the remaining time is outside
// the product's Go code: in the load generator, the kernel, Go's runtime
// and libraries, and Redis and PostgreSQL (which run the product's scripts
// and statements: their share is the product's design too, which the
// bound does not credit).

// productPrefix is the product's package path prefix.
const productPrefix = "github.com/boxoffice/boxoffice"

// Owner names of a CPU profile's samples.
const (
	ownerProduct     = "boxoffice's own code"
	ownerKernel      = "the kernel (system calls)"
	ownerRuntime     = "Go's runtime alone (garbage collection, scheduler)"
	ownerOther       = "other libraries"
	ownerCompression = "compression (gzip, brotli)"
)

// components are the code bases a sample can be charged to, by package
// path prefix (a function's package as pprof names it). Go's general
// packages (runtime, sync, strings, strconv, bufio, net, encoding/json,
// time, ...) are no component: their time is charged to the nearest
// caller that is one, as an allocation is charged to the code that asked
// for it. The binary's package main is the product's too.
var components = []struct{ prefix, name string }{
	{productPrefix, ownerProduct},
	{"net/http", "net/http"},
	{"net/textproto", "net/http"},
	{"vendor/golang.org/x/net/http", "net/http"},
	{"mime", "net/http"},
	{"github.com/labstack/", "echo"},
	{"github.com/redis/go-redis", "go-redis"},
	{"github.com/jackc/", "pgx"},
	{"github.com/alexedwards/scs", "scs"},
	{"github.com/a-h/templ", "templ"},
	{"compress/", ownerCompression},
	{"github.com/andybalholm/brotli", ownerCompression},
	{"github.com/klauspost/compress", ownerCompression},
	{"github.com/prometheus/", "prometheus"},
	{"github.com/nicksnyder/go-i18n", "go-i18n and x/text"},
	{"golang.org/x/text", "go-i18n and x/text"},
}

// syscallPackage holds Go's system call stubs (Syscall6 and the wrappers
// such as EpollWait that it ends in).
const syscallPackage = "internal/runtime/syscall/"

// syscallEntries are the other functions through which Go enters the
// kernel (the runtime's and package syscall's assembly stubs on linux), by
// their whole names: a sample whose innermost frame is one of them, or in
// syscallPackage, was taken in a system call. Whole names, since runtime
// functions of Go code begin like them (runtime.ready, runtime.readgstatus
// and runtime.readvarint like runtime.read; runtime.futexsleep like
// runtime.futex).
var syscallEntries = map[string]bool{
	"syscall.Syscall": true, "syscall.Syscall6": true, "syscall.RawSyscall": true, "syscall.RawSyscall6": true,
	"syscall.rawSyscallNoError": true, "syscall.rawVforkSyscall": true,
	"runtime.futex": true, "runtime.epollwait": true, "runtime.usleep": true, "runtime.madvise": true,
	"runtime.mmap": true, "runtime.sysMmap": true, "runtime.munmap": true, "runtime.sysMunmap": true,
	"runtime.write1": true, "runtime.read": true, "runtime.osyield": true, "runtime.tgkill": true,
}

// packageOf returns the package path of a function name as pprof writes
// it ("net/http.(*conn).serve" -> "net/http",
// "github.com/a/b/c.F.func1" -> "github.com/a/b/c"; a dot in the last
// element of a path is written %2e, "gopkg.in/yaml%2ev3.F").
func packageOf(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}

// ownerOf charges one sample to an owner: the kernel when its innermost
// frame enters a system call; otherwise the innermost frame that belongs
// to a component; otherwise (a stack of Go's runtime and general packages
// only: the garbage collector's workers, the scheduler) Go's runtime.
// stack holds the function names from the innermost frame out.
func ownerOf(stack []string) string {
	if len(stack) == 0 {
		return ownerRuntime
	}
	if syscallEntries[stack[0]] || strings.HasPrefix(stack[0], syscallPackage) {
		return ownerKernel
	}
	for _, fn := range stack {
		pkg := packageOf(fn)
		if pkg == "main" {
			return ownerProduct
		}
		for _, c := range components {
			if strings.HasPrefix(pkg, c.prefix) {
				return c.name
			}
		}
		if first, _, _ := strings.Cut(pkg, "/"); strings.Contains(first, ".") {
			return ownerOther
		}
	}
	return ownerRuntime
}

// Share is one owner's part of a CPU profile (or, in ProfileSplit's
// Functions, one function's): a fraction of its samples' CPU time (0 to 1).
type Share struct {
	Owner string  `json:"owner"`
	Share float64 `json:"share"`
}

// ProfileSplit is a CPU profile's time split by owner.
type ProfileSplit struct {
	// Owners is the split by owner (ownerOf), largest first, adding up to
	// one.
	Owners []Share
	// Functions is the product's part split by the innermost function of
	// the product in each of its samples, largest first, as fractions of
	// the whole profile (they add up to the product's share in Owners).
	Functions []Share
	// Samples is the number of samples (one per 10 ms of CPU at Go's
	// default rate), Seconds the wall time the profile covers.
	Samples int
	Seconds float64
}

// profileOwners reads a CPU profile (the pprof format of
// /debug/pprof/profile) and returns its CPU time split by owner and the
// product's part by function. Errors: the file cannot be read or parsed,
// or holds no CPU samples.
func profileOwners(path string) (ProfileSplit, error) {
	f, err := os.Open(path)
	if err != nil {
		return ProfileSplit{}, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return ProfileSplit{}, fmt.Errorf("%s: %w", path, err)
	}
	col, count := -1, -1
	for i, st := range p.SampleType {
		switch st.Type {
		case "cpu":
			col = i
		case "samples":
			count = i
		}
	}
	if col < 0 {
		return ProfileSplit{}, fmt.Errorf("%s: not a CPU profile", path)
	}
	by, fns := map[string]int64{}, map[string]int64{}
	var total, n int64
	var stack []string
	for _, s := range p.Sample {
		stack = stack[:0]
		for _, loc := range s.Location {
			// Inlined calls come first in a location's lines.
			for _, l := range loc.Line {
				if l.Function != nil {
					stack = append(stack, l.Function.Name)
				}
			}
		}
		v := s.Value[col]
		owner := ownerOf(stack)
		by[owner] += v
		if owner == ownerProduct {
			fns[productFrame(stack)] += v
		}
		total += v
		if count >= 0 {
			n += s.Value[count]
		}
	}
	if total == 0 {
		return ProfileSplit{}, fmt.Errorf("%s: no CPU samples", path)
	}
	return ProfileSplit{Owners: sharesOf(by, total), Functions: sharesOf(fns, total), Samples: int(n), Seconds: float64(p.DurationNanos) / 1e9}, nil
}

// productFrame returns the innermost function of stack (innermost first)
// that is the product's: its package is the product's or the binary's
// main.
func productFrame(stack []string) string {
	for _, fn := range stack {
		if pkg := packageOf(fn); pkg == "main" || strings.HasPrefix(pkg, productPrefix) {
			return fn
		}
	}
	return ""
}

// sharesOf turns CPU times by name into fractions of total, largest first
// (ties by name).
func sharesOf(by map[string]int64, total int64) []Share {
	out := make([]Share, 0, len(by))
	for o, v := range by {
		out = append(out, Share{Owner: o, Share: float64(v) / float64(total)})
	}
	slices.SortFunc(out, func(a, b Share) int {
		if a.Share != b.Share {
			if a.Share > b.Share {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Owner, b.Owner)
	})
	return out
}

// minSamples is the fewest samples of a step's profile that attribute
// splits: below it, a share of a few percent is one sample (a quick run's
// steps give 10 to 20).
const minSamples = 30

// Attribution is where a missed target's step spent the machine, a
// request at a time, and the most the step could reach without the
// product's own server code.
type Attribution struct {
	// Busy is the machine's busy CPU time a request (every core less idle
	// and steal), Server the server's, Product the part of it charged to
	// the product's own code (Shares), all in microseconds.
	Busy    float64 `json:"busy_us"`
	Server  float64 `json:"server_us"`
	Product float64 `json:"product_us"`
	// Shares is the server's CPU profile by owner and Functions the
	// product's part of it by function (ProfileSplit), from Samples
	// samples over ProfileSeconds (the profile may outlast its step).
	Shares         []Share `json:"server_profile_shares"`
	Functions      []Share `json:"server_profile_product_functions"`
	Samples        int     `json:"server_profile_samples"`
	ProfileSeconds float64 `json:"server_profile_s"`
	// Bound is the step's rate, in requests a second, with the product's
	// own code taking no time and every core of the machine busy:
	// cores / (Busy - Product).
	Bound float64 `json:"bound_per_s"`
	// Need is the rate the target asks for in this run, requests a second.
	Need float64 `json:"need_per_s"`
	// Behind is true when Need is the rate an open loop offered to a
	// latency target and its step fell behind that rate (Target.Offered):
	// requests it could not serve queued for as long as it ran, and the
	// bound judges whether the machine could have carried the rate.
	Behind bool `json:"fell_behind,omitempty"`
}

// attribute computes a step's Attribution from its CPU split and the
// server's CPU profile split; need is the target's rate (requests a
// second). ok is false when the split has no figure a request (no
// requests, an error, or other requests beside), when the profile split
// has no owner (no samples), or when the figures cannot be (the busy time
// no more than the product's, as /proc's 10 ms ticks can make it in a
// short step).
func attribute(c CPUSplit, p ProfileSplit, need float64) (Attribution, bool) {
	if c.Requests == 0 || c.Err != "" || c.Beside != "" || c.Seconds <= 0 || c.Cores == 0 || len(p.Owners) == 0 {
		return Attribution{}, false
	}
	a := Attribution{
		Busy:           c.perRequest(float64(c.Cores) - c.Idle - c.Steal),
		Server:         c.perRequest(c.Server.Total()),
		Shares:         p.Owners,
		Functions:      p.Functions,
		Samples:        p.Samples,
		ProfileSeconds: p.Seconds,
		Need:           need,
	}
	for _, s := range p.Owners {
		if s.Owner == ownerProduct {
			a.Product = s.Share * a.Server
		}
	}
	if a.Busy <= 0 || a.Busy <= a.Product {
		return Attribution{}, false
	}
	a.Bound = float64(c.Cores) / (a.Busy - a.Product) * 1e6
	return a, true
}

// Lines is the attribution in sentences for the report: the machine's
// time a request by process and the server's by owner, then the bound
// against the target, what it says, and the next step (NextStep).
func (a Attribution) Lines(c CPUSplit) []string {
	us := func(u CPUUse) float64 { return c.perRequest(u.Total()) }
	others := fmt.Sprintf("generator %.0f µs, Redis %.0f µs (its commands, the product's scripts among them), PostgreSQL %.0f µs (the product's statements and their commits)",
		us(c.Generator), us(c.Redis), us(c.Postgres))
	if c.Nginx != nil {
		others += fmt.Sprintf(", nginx %.0f µs", us(*c.Nginx))
	}
	others += fmt.Sprintf(", other processes %.0f µs", us(c.Other))
	var owners []string
	for _, s := range a.Shares {
		if s.Share < 0.005 {
			continue
		}
		owners = append(owners, fmt.Sprintf("%s %.0f µs (%.0f%%)", s.Owner, s.Share*a.Server, s.Share*100))
	}
	lines := []string{
		fmt.Sprintf("The machine's busy time a request: %.0f µs of CPU: the server %.0f µs, %s; softirq (loopback networking, also inside the processes' system time) %.0f µs",
			a.Busy, a.Server, others, c.perRequest(c.Softirq)),
		fmt.Sprintf("The server's CPU profile (%d samples over %.0f s; the step lasted %.1f s) by who spent it (each sample charged to the innermost frame of the product or a library, allocation and garbage collection assists included; system calls to the kernel): ", a.Samples, a.ProfileSeconds, c.Seconds) + strings.Join(owners, ", "),
	}
	bound := fmt.Sprintf("With the product's own Go code in the server taking no time (%.0f µs a request less) and every core busy, this step could reach at most %.0f requests a second", a.Product, a.Bound)
	asked := fmt.Sprintf(", against %.0f that the target asks for", a.Need)
	if a.Behind {
		asked = fmt.Sprintf(", against the %.0f a second offered, which the step fell behind (it achieved %.0f a second): an open loop that cannot serve its offered rate queues the rest, and its latency grows for as long as it runs", a.Need, float64(c.Requests)/c.Seconds)
	}
	switch {
	case a.Need <= 0:
		bound += " (the target is a latency at an offered rate that the step kept up with, which the bound of a saturated step does not judge: the bound gives no verdict on it)"
	case a.idleBound() >= a.Need:
		bound += asked + fmt.Sprintf("; with the product's code as it is, every core busy would reach %.0f, over it too: the rate was lost to idle cores, not to any code's CPU time", a.idleBound())
	case a.Bound < a.Need:
		bound += asked + ": the remaining time is outside the product's Go code, in the load generator, the kernel, Go's runtime and libraries, and Redis and PostgreSQL (which run the product's scripts and statements)"
	default:
		bound += asked + ": the product's own Go code is enough of the time that the target is within its reach"
	}
	return append(lines, bound, a.NextStep(c))
}

// Names of the processes beside the server in NextStep.
const (
	whoGenerator = "the load generator"
	whoRedis     = "Redis"
	whoPostgres  = "PostgreSQL"
	whoNginx     = "nginx"
	whoOther     = "other processes"
)

// nextSteps says, for each taker of a step's time outside the product's Go
// code, what would give the time back; a taker without one (another
// library) is named alone.
var nextSteps = map[string]string{
	whoGenerator:     "its time stands for the fans' browsers, which a sale does not run on the server's machine; measured from a machine of its own (the targets are set for one shared machine), the step would have these cores",
	whoRedis:         "fewer commands in the step's scripts (the Redis line above names them by calls and time)",
	whoPostgres:      "fewer statements and commits a request (pg_stat_statements names the heaviest: README, Performance); where its backends wait on WALWrite or WALSync (the wait events above), a faster disk for the WAL",
	whoNginx:         "one instance without the proxy, or more cores for it",
	whoOther:         "a quiet machine: they are neither the server nor Redis, PostgreSQL or the generator (another program, kernel threads), and the bound above counts their time as the step's",
	ownerKernel:      "fewer system calls a request: fewer round trips to Redis and PostgreSQL, and more requests in each of their batches",
	"net/http":       "fewer and smaller headers a request; the rest is net/http's own work for each HTTP/1.1 request, which the stack (echo v4 on net/http) fixes",
	ownerRuntime:     "fewer allocations a request (allocs/op in `go test -bench`), which the garbage collector then has less to do for",
	"go-redis":       "fewer commands a request through the Redis client",
	"pgx":            "fewer statements a request, and more of them in each batch",
	"scs":            "fewer session reads and writes a request",
	ownerCompression: "fewer bytes to compress a request, or bodies compressed once and kept",
}

// NextStep is the report's next step for a missed target. For a rate that
// every core busy would reach with the product's code as it is: the idle
// cores (the step waited rather than computed). For a rate whose bound is
// at or above the need: the product's own code, by its heaviest functions
// in the profile. For a rate whose bound is below it: the two
// largest takers of the step's time a request outside the product's Go
// code (the processes beside the server, and the server's time by owner
// other than the product) and what would give it back (nextSteps). For a
// latency (no need): the two largest takers, the product's code among
// them.
func (a Attribution) NextStep(c CPUSplit) string {
	if a.Need > 0 && a.idleBound() >= a.Need {
		steal := ""
		if c.Steal >= 0.01 {
			steal = fmt.Sprintf(" (and the hypervisor took %.2f)", c.Steal)
		}
		return fmt.Sprintf("Next step: what the requests wait for, not the CPU of any code: the step left %.2f of its %d cores idle%s, and with every core busy it would reach %.0f a second with the product's code as it is; look at what each request waits for: its round trips to Redis (which runs one command at a time) and PostgreSQL, and how many requests are in flight at once", c.Idle, c.Cores, steal, a.idleBound())
	}
	if a.Need > 0 && a.Bound >= a.Need {
		return "Next step: " + a.productStep()
	}
	takers := []Share{
		{whoGenerator, c.perRequest(c.Generator.Total())},
		{whoRedis, c.perRequest(c.Redis.Total())},
		{whoPostgres, c.perRequest(c.Postgres.Total())},
		{whoOther, c.perRequest(c.Other.Total())},
	}
	if c.Nginx != nil {
		takers = append(takers, Share{whoNginx, c.perRequest(c.Nginx.Total())})
	}
	for _, s := range a.Shares {
		if s.Owner != ownerProduct || a.Need <= 0 {
			takers = append(takers, Share{s.Owner, s.Share * a.Server})
		}
	}
	slices.SortStableFunc(takers, func(x, y Share) int { return cmp.Compare(y.Share, x.Share) })
	var parts []string
	for _, t := range takers[:2] {
		switch s, ok := nextSteps[t.Owner]; {
		case t.Owner == ownerProduct:
			parts = append(parts, a.productStep())
		case ok:
			parts = append(parts, fmt.Sprintf("%s, %.0f µs a request: %s", t.Owner, t.Share, s))
		default:
			parts = append(parts, fmt.Sprintf("%s, %.0f µs a request", t.Owner, t.Share))
		}
	}
	if a.Need <= 0 {
		return "Next step, where most of the step's time goes: " + strings.Join(parts, "; ")
	}
	return "Next step, where most of the time outside the product's Go code goes: " + strings.Join(parts, "; ")
}

// idleBound is the step's rate, in requests a second, with every core of
// the machine busy and the product's code as it is: cores / Busy.
func (a Attribution) idleBound() float64 {
	return a.Bound * (a.Busy - a.Product) / a.Busy
}

// productStep names the product's own Go code's time a request and the
// functions that take most of it (the innermost function of the product in
// each sample), up to three of at least half a microsecond.
func (a Attribution) productStep() string {
	var fns []string
	for _, f := range a.Functions {
		if len(fns) == 3 || f.Share*a.Server < 0.5 {
			break
		}
		fns = append(fns, fmt.Sprintf("%s %.0f µs", strings.TrimPrefix(f.Owner, path.Dir(productPrefix)+"/"), f.Share*a.Server))
	}
	step := fmt.Sprintf("the product's own Go code, %.0f µs a request", a.Product)
	if len(fns) > 0 {
		step += ", where it spends most (the innermost function of the product in each sample): " + strings.Join(fns, ", ")
	}
	return step
}
