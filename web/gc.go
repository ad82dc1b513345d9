package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// defaultGCPercent is the garbage collector's goal (GOGC) when the environment
// sets none: the heap may grow to 5 times what is live before a collection,
// instead of Go's 2 times (GOGC=100). In BenchmarkHot (see docs/performance.md,
// "The middleware composed once") GOGC=400 took a fifth to a third less CPU per
// /healthz and per position poll as JSON than 100 (joins and htmx polls could
// not be told apart on the loaded machine); a hot request allocates a few KB and
// keeps none of it, and the live heap (the session copies, at most about 100 MB)
// is small beside a server's memory.
const defaultGCPercent = 400

// gcSettings returns the collector's goal and soft memory limit (bytes) to
// set, -1 for each that the environment sets itself (GOGC, GOMEMLIMIT):
// defaultGCPercent, and three quarters of memory (the bytes this process
// may use, 0 if unknown: no limit), so that the larger goal never takes a
// server near its memory; past the limit the collector runs as often as it
// must.
func gcSettings(getenv func(string) string, memory uint64) (percent int, limit int64) {
	percent, limit = -1, -1
	if getenv("GOGC") == "" {
		percent = defaultGCPercent
	}
	if getenv("GOMEMLIMIT") == "" && memory > 0 {
		limit = int64(min(memory/4*3, uint64(1<<62)))
	}
	return percent, limit
}

// setGCDefaults applies gcSettings for this process.
func setGCDefaults() {
	percent, limit := gcSettings(os.Getenv, processMemory())
	if percent >= 0 {
		debug.SetGCPercent(percent)
	}
	if limit >= 0 {
		debug.SetMemoryLimit(limit)
	}
}

// processMemory returns the memory this process may use, in bytes: its
// cgroup's limit (cgroup v2's memory.max) when it has one, else the
// machine's memory; 0 when neither can be read.
func processMemory() uint64 {
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return n
		}
	}
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return si.Totalram * uint64(si.Unit)
}
