package main

import (
	"fmt"
	"os"
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

// Owner names of a CPU profile's samples.
const (
	ownerProduct = "boxoffice's own code"
	ownerKernel  = "the kernel (system calls)"
	ownerRuntime = "Go's runtime alone (garbage collection, scheduler)"
	ownerOther   = "other libraries"
)

// components are the code bases a sample can be charged to, by package
// path prefix (a function's package as pprof names it). Go's general
// packages (runtime, sync, strings, strconv, bufio, net, encoding/json,
// time, ...) are no component: their time is charged to the nearest
// caller that is one, as an allocation is charged to the code that asked
// for it. The binary's package main is the product's too.
var components = []struct{ prefix, name string }{
	{"github.com/boxoffice/boxoffice", ownerProduct},
	{"net/http", "net/http"},
	{"net/textproto", "net/http"},
	{"vendor/golang.org/x/net/http", "net/http"},
	{"mime", "net/http"},
	{"github.com/labstack/", "echo"},
	{"github.com/redis/go-redis", "go-redis"},
	{"github.com/jackc/", "pgx"},
	{"github.com/alexedwards/scs", "scs"},
	{"github.com/a-h/templ", "templ"},
	{"compress/", "compression (gzip, brotli)"},
	{"github.com/andybalholm/brotli", "compression (gzip, brotli)"},
	{"github.com/klauspost/compress", "compression (gzip, brotli)"},
	{"github.com/prometheus/", "prometheus"},
	{"github.com/nicksnyder/go-i18n", "go-i18n and x/text"},
	{"golang.org/x/text", "go-i18n and x/text"},
}

// syscallEntries are the functions through which Go enters the kernel: a
// sample whose innermost frame is one of them was taken in a system call.
var syscallEntries = []string{
	"internal/runtime/syscall", "syscall.Syscall", "syscall.RawSyscall", "runtime.futex", "runtime.epollwait",
	"runtime.usleep", "runtime.madvise", "runtime.mmap", "runtime.munmap",
	"runtime.write1", "runtime.read", "runtime.osyield", "runtime.tgkill",
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
	for _, e := range syscallEntries {
		if strings.HasPrefix(stack[0], e) {
			return ownerKernel
		}
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

// Share is one owner's part of a CPU profile: a fraction of its samples'
// CPU time (0 to 1).
type Share struct {
	Owner string  `json:"owner"`
	Share float64 `json:"share"`
}

// profileOwners reads a CPU profile (the pprof format of
// /debug/pprof/profile) and returns its CPU time split by owner (ownerOf),
// largest first, its number of samples (one per 10 ms of CPU at Go's
// default rate) and the seconds it covers. Errors: the file cannot be read
// or parsed, or holds no CPU samples.
func profileOwners(path string) (shares []Share, samples int, seconds float64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", path, err)
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
		return nil, 0, 0, fmt.Errorf("%s: not a CPU profile", path)
	}
	by := map[string]int64{}
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
		by[ownerOf(stack)] += v
		total += v
		if count >= 0 {
			n += s.Value[count]
		}
	}
	if total == 0 {
		return nil, 0, 0, fmt.Errorf("%s: no CPU samples", path)
	}
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
	return out, int(n), float64(p.DurationNanos) / 1e9, nil
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
	// Shares is the server's CPU profile by owner, from Samples samples
	// over ProfileSeconds (the profile may outlast its step).
	Shares         []Share `json:"server_profile_shares"`
	Samples        int     `json:"server_profile_samples"`
	ProfileSeconds float64 `json:"server_profile_s"`
	// Bound is the step's rate, in requests a second, with the product's
	// own code taking no time and every core of the machine busy:
	// cores / (Busy - Product).
	Bound float64 `json:"bound_per_s"`
	// Need is the rate the target asks for in this run, requests a second.
	Need float64 `json:"need_per_s"`
}

// attribute computes a step's Attribution from its CPU split and the
// server's CPU profile shares (of samples samples over seconds); need is the target's
// rate (requests a second). ok is false when the split has no figure a
// request (no requests, an error, or other requests beside), or when the
// figures cannot be (the busy time no more than the product's, as /proc's
// 10 ms ticks can make it in a short step).
func attribute(c CPUSplit, shares []Share, samples int, seconds, need float64) (Attribution, bool) {
	if c.Requests == 0 || c.Err != "" || c.Beside != "" || c.Seconds <= 0 || c.Cores == 0 {
		return Attribution{}, false
	}
	per := c.Seconds / float64(c.Requests) * 1e6
	a := Attribution{
		Busy:           (float64(c.Cores) - c.Idle - c.Steal) * per,
		Server:         c.Server.Total() * per,
		Shares:         shares,
		Samples:        samples,
		ProfileSeconds: seconds,
		Need:           need,
	}
	for _, s := range shares {
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
// against the target, and what it says.
func (a Attribution) Lines(c CPUSplit) []string {
	per := c.Seconds / float64(c.Requests) * 1e6
	us := func(u CPUUse) float64 { return u.Total() * per }
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
			a.Busy, a.Server, others, c.Softirq*per),
		fmt.Sprintf("The server's CPU profile (%d samples over %.0f s; the step lasted %.1f s) by who spent it (each sample charged to the innermost frame of the product or a library, allocation and garbage collection assists included; system calls to the kernel): ", a.Samples, a.ProfileSeconds, c.Seconds) + strings.Join(owners, ", "),
	}
	bound := fmt.Sprintf("With the product's own Go code in the server taking no time (%.0f µs a request less) and every core busy, this step could reach at most %.0f requests a second, against %.0f that the target asks for", a.Product, a.Bound, a.Need)
	if a.Bound < a.Need {
		bound += ": the remaining time is outside the product's Go code, in the load generator, the kernel, Go's runtime and libraries, and Redis and PostgreSQL (which run the product's scripts and statements)"
	} else {
		bound += ": the product's own Go code is enough of the time that the target is within its reach"
	}
	return append(lines, bound)
}
