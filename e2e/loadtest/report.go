package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/e2e/invariant"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Phase is one phase's part of the report.
type Phase struct {
	Name    string   `json:"name"`
	Status  string   `json:"status"` // "ran", "not available (404): ...", "failed: ..."
	Seconds float64  `json:"seconds"`
	Steps   []Stats  `json:"steps,omitempty"`
	Figures []Figure `json:"figures,omitempty"`
	Delays  []Delay  `json:"delays,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	// Admissions are the fans admitted in each second of the waiting phase.
	Admissions []int  `json:"admissions_per_second,omitempty"`
	PeakRSS    int64  `json:"server_peak_rss_bytes"`
	Plot       string `json:"plot,omitempty"`

	start time.Time
}

// Figure is a named result, in words and as a number for tools.
type Figure struct {
	Name  string  `json:"name"`
	Text  string  `json:"text"`
	Value float64 `json:"value"`
}

// Delay is a named distribution of delays.
type Delay struct {
	Name string `json:"name"`
	DelayStats
}

func newPhase(name string) *Phase { return &Phase{Name: name, start: time.Now()} }

func (p *Phase) figure(name, text string, v float64) {
	p.Figures = append(p.Figures, Figure{Name: name, Text: text, Value: v})
}
func (p *Phase) note(s string) { p.Notes = append(p.Notes, s) }
func (p *Phase) delay(name string, d DelayStats) {
	p.Delays = append(p.Delays, Delay{Name: name, DelayStats: d})
}

// figureValue returns the value of the phase's figure named name.
func (p *Phase) figureValue(name string) (float64, bool) {
	for _, f := range p.Figures {
		if f.Name == name {
			return f.Value, true
		}
	}
	return 0, false
}

// step returns the phase's step whose name starts with prefix.
func (p *Phase) step(prefix string) (Stats, bool) {
	for _, s := range p.Steps {
		if strings.HasPrefix(s.Name, prefix) {
			return s, true
		}
	}
	return Stats{}, false
}

// Report is the whole run, as report.json has it.
type Report struct {
	StartedAt  time.Time          `json:"started_at"`
	Seconds    float64            `json:"seconds"`
	Machine    Machine            `json:"machine"`
	Config     Config             `json:"config"`
	Targets    []Target           `json:"targets"`
	Baselines  []Stats            `json:"baselines,omitempty"`
	Ratios     []Ratio            `json:"ratios,omitempty"`
	Phases     []*Phase           `json:"phases"`
	Invariants []invariant.Result `json:"invariants,omitempty"`
	// PeakRSS is the server's largest resident set over the run (VmHWM).
	PeakRSS  int64             `json:"server_peak_rss_bytes"`
	Profiles map[string]string `json:"profiles,omitempty"`
	// SessionCopies is the server's session-copy metrics at the end.
	SessionCopies string `json:"session_copies,omitempty"`
	// CPUNotes say how the CPU of the steps was counted where it was not
	// by the bench's own processes (cpu.go).
	CPUNotes []string `json:"cpu_notes,omitempty"`
}

// Machine describes where the numbers were measured.
type Machine struct {
	CPU    string `json:"cpu"`
	Cores  int    `json:"cores"`
	Memory string `json:"memory"`
	Kernel string `json:"kernel"`
	Go     string `json:"go"`
}

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	scan := func(path string, fn func(k, v string)) {
		f, err := os.Open(path)
		if err != nil {
			return
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok {
				fn(strings.TrimSpace(k), strings.TrimSpace(v))
			}
		}
	}
	scan("/proc/cpuinfo", func(k, v string) {
		if k == "model name" && m.CPU == "" {
			m.CPU = v
		}
	})
	scan("/proc/meminfo", func(k, v string) {
		if k == "MemTotal" {
			var kb float64
			fmt.Sscanf(v, "%f", &kb)
			m.Memory = fmt.Sprintf("%.1f GiB", kb/(1<<20))
		}
	})
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// Target is one of the load test's targets and what this run reached.
type Target struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	// Met is nil when the run could not measure it.
	Met *bool `json:"met"`
	// Profile is the CPU profile of the server taken while the target was
	// measured (for SSE memory, a heap profile), and Top its `go tool pprof
	// -top` (for missed targets).
	Profile string `json:"profile,omitempty"`
	Top     string `json:"pprof_top,omitempty"`
	// CPU is where the machine's CPU went while the target was measured,
	// and Notes what else places its time (PostgreSQL's activity).
	CPU   *CPUSplit `json:"cpu,omitempty"`
	Notes []string  `json:"notes,omitempty"`
	// Need is the rate the target asks for in this run, requests a second
	// (0: not a rate), and Attribution where a missed rate's time went.
	// Behind is true when the target is an open loop's latency and its
	// step fell behind the offered rate (served less than fellBehind of
	// it): Need is then the offered rate, so that the attribution judges
	// whether the machine could carry it at all.
	Need        float64      `json:"need_per_s,omitempty"`
	Behind      bool         `json:"fell_behind,omitempty"`
	Attribution *Attribution `json:"attribution,omitempty"`
}

// Ratio is a figure of boxoffice over a baseline of the same run.
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Text  string  `json:"text"`
}

func ptr[T any](v T) *T { return &v }

// writeReport writes report.json, report.md and the plots into dir and
// returns the Markdown.
func writeReport(dir string, r *Report) (string, error) {
	for i, p := range r.Phases {
		if len(p.Steps) == 0 {
			continue
		}
		name := fmt.Sprintf("phase-%d.png", i+1)
		if err := plotPhase(filepath.Join(dir, name), p); err != nil {
			return "", fmt.Errorf("plot %s: %w", p.Name, err)
		}
		p.Plot = name
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), js, 0o644); err != nil {
		return "", err
	}
	md := markdown(r)
	return md, os.WriteFile(filepath.Join(dir, "report.md"), []byte(md), 0o644)
}

func markdown(r *Report) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	c := r.Config
	w("# boxoffice load test, %s", r.StartedAt.Format("2006-01-02 15:04 MST"))
	w("")
	w("Machine: %s, %d cores, %s memory, Linux %s, %s. The server, PostgreSQL, Redis and the load generator share it.", r.Machine.CPU, r.Machine.Cores, r.Machine.Memory, r.Machine.Kernel, r.Machine.Go)
	if c.Mode == "sse" {
		w("Mode sse: %d SSE streams over %d source addresses, %d fans.", c.SSEConns, c.SSEIPs, c.Fans)
	} else {
		w("Run: %d fans, %d connections, open loops at %s for %v each, admission at %d fans/s on %v ticks, %.0f s in all.",
			c.Fans, c.Conns, joinInts(c.Rates, "/"), c.OpenDuration, c.AdmitRate, c.AdmissionTick, r.Seconds)
	}
	w("")
	w("## Targets")
	w("")
	w("| target | wanted | this run | met |")
	w("| --- | --- | --- | --- |")
	for _, t := range r.Targets {
		met := "not measured"
		if t.Met != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*t.Met]
		}
		w("| %s | %s | %s | %s |", t.Name, t.Want, t.Got, met)
	}
	w("")
	if len(r.Baselines) > 0 {
		w("## Baselines (same run, same generator)")
		w("")
		statsTable(w, r.Baselines)
		w("")
	}
	if len(r.Ratios) > 0 {
		w("## Ratios to the baselines")
		w("")
		w("| ratio | value | |")
		w("| --- | --- | --- |")
		for _, x := range r.Ratios {
			w("| %s | %.3f | %s |", x.Name, x.Value, x.Text)
		}
		w("")
	}
	cpuTables(w, r)
	for _, p := range r.Phases {
		w("## %s", p.Name)
		w("")
		w("Status: %s. %.1f s; the server's peak RSS in this phase %.1f MiB.", p.Status, p.Seconds, mib(p.PeakRSS))
		w("")
		if len(p.Steps) > 0 {
			statsTable(w, p.Steps)
			w("")
		}
		for _, f := range p.Figures {
			w("- %s: %s", f.Name, f.Text)
		}
		for _, d := range p.Delays {
			w("- delay, %s: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms (%d fans)", d.Name, d.P50, d.P95, d.P99, d.Max, d.N)
		}
		if len(p.Admissions) > 0 {
			w("- admissions in each second: %s", joinInts(p.Admissions, ", "))
		}
		for _, n := range p.Notes {
			w("- %s", n)
		}
		if p.Plot != "" {
			w("")
			w("![latency over time](%s)", p.Plot)
		}
		w("")
	}
	if len(r.Invariants) > 0 {
		w("## Invariants")
		w("")
		w("| invariant | holds | found |")
		w("| --- | --- | --- |")
		for _, inv := range r.Invariants {
			w("| %s | %s | %s |", inv.Name, map[bool]string{true: "yes", false: "**NO**"}[inv.OK], inv.Detail)
		}
		w("")
	}
	w("## Server memory")
	w("")
	w("Peak resident set of the server over the run (VmHWM): %.1f MiB.", mib(r.PeakRSS))
	w("")
	if r.SessionCopies != "" {
		w("Sessions from the in-process copy over the run (the server's metrics): %s.", r.SessionCopies)
		w("")
	}
	missed := false
	for _, t := range r.Targets {
		if t.Top != "" || t.Met != nil && !*t.Met && t.CPU != nil {
			if !missed {
				w("## Where the time goes (missed targets)")
				w("")
				missed = true
			}
			w("### %s", t.Name)
			w("")
			if c := t.CPU; c != nil {
				w("The machine's CPU during the step (%.1f s, cores, from /proc): %s.", c.Seconds, c.Line())
				if pr := c.PerRequest(); pr != "" {
					w("CPU time a request: %s.", pr)
				}
				if cl := c.CommandsLine(4); cl != "" {
					w("Redis: %s.", cl)
				}
				for _, n := range t.Notes {
					w("%s.", n)
				}
				w("")
			}
			if a := t.Attribution; a != nil {
				w("**Whose time it is, and what the product could gain.**")
				w("")
				for _, l := range a.Lines(*t.CPU) {
					w("- %s.", l)
				}
				w("")
			}
			if t.Top == "" {
				continue
			}
			what := "CPU profile of the server during the step"
			if strings.Contains(t.Profile, "heap") {
				what = "Heap profile of the server with the streams open (memory in use)"
			}
			w("%s (%s), `go tool pprof -top`:", what, t.Profile)
			w("")
			w("```")
			w("%s", strings.TrimSpace(t.Top))
			w("```")
			w("")
		}
	}
	return b.String()
}

// cpuTables writes where the machine's CPU went in each measured step
// (baselines and phases), what each request cost, and Redis's commands.
func cpuTables(w func(string, ...any), r *Report) {
	var splits []*CPUSplit
	for _, s := range r.Baselines {
		if s.CPU != nil {
			splits = append(splits, s.CPU)
		}
	}
	for _, p := range r.Phases {
		for _, s := range p.Steps {
			if s.CPU != nil {
				splits = append(splits, s.CPU)
			}
		}
	}
	if len(splits) == 0 {
		return
	}
	nginx := slices.ContainsFunc(splits, func(s *CPUSplit) bool { return s.Nginx != nil })
	cell := func(u CPUUse) string { return fmt.Sprintf("%.2f (%.2f/%.2f)", u.Total(), u.User, u.System) }
	w("## CPU during each step (cores)")
	w("")
	w("CPU seconds over the step's wall seconds, from /proc at the step's start and end: each cell is user and system time together (user/system). "+
		"Server: the binary under test (the echo server in its baseline); Redis and PostgreSQL: their servers' processes; generator: this load test; "+
		"other: the machine's busy time (/proc/stat) less theirs, so other processes, kernel threads and processes that ended unseen; "+
		"idle: idle and I/O wait; softirq: the machine's softirq time (loopback networking), which this kernel may also count in the system time of the processes it interrupted. "+
		"Machine: %d cores.", r.Machine.Cores)
	for _, n := range r.CPUNotes {
		w("%s.", n)
	}
	w("")
	head, rule := "| step | s | requests/s | server | Redis | PostgreSQL | generator |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
	if nginx {
		head, rule = head+" nginx |", rule+" ---: |"
	}
	w("%s other | idle | softirq |", head)
	w("%s ---: | ---: | ---: |", rule)
	for _, s := range splits {
		if s.Err != "" {
			w("| %s | not measured: %s |", s.Step, s.Err)
			continue
		}
		row := fmt.Sprintf("| %s | %.2f | %.0f | %s | %s | %s | %s |", s.Step, s.Seconds, float64(s.Requests)/math0(s.Seconds),
			cell(s.Server), cell(s.Redis), cell(s.Postgres), cell(s.Generator))
		if nginx {
			n := "–"
			if s.Nginx != nil {
				n = cell(*s.Nginx)
			}
			row += " " + n + " |"
		}
		w("%s %s | %.2f | %.2f |", row, cell(s.Other), s.Idle, s.Softirq)
	}
	w("")
	w("CPU time a request (in the loops of fans holding and paying, a fan's whole path), and Redis's commands (INFO commandstats over the step, every client of the Redis counted):")
	w("")
	w("| step | CPU a request | Redis commands |")
	w("| --- | --- | --- |")
	for _, s := range splits {
		switch {
		case s.Beside != "":
			w("| %s | not per request: the %s ran in the same window | |", s.Step, s.Beside)
		case s.Err == "" && s.Requests > 0:
			w("| %s | %s | %s |", s.Step, s.PerRequest(), s.CommandsLine(3))
		}
	}
	w("")
}

func statsTable(w func(string, ...any), steps []Stats) {
	w("| step | requests | s | offered/s | achieved/s | p50 ms | p95 ms | p99 ms | max ms | errors |")
	w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, s := range steps {
		offered := ""
		if s.Offered > 0 {
			offered = fmt.Sprintf("%.0f", s.Offered)
		}
		w("| %s | %d | %.2f | %s | %.0f | %.2f | %.2f | %.2f | %.2f | %s |", s.Name, s.Requests, s.Seconds, offered, s.Rate, s.P50, s.P95, s.P99, s.Max, errorsText(s.Errors))
	}
}

func errorsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s: %d", k, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

func joinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, sep)
}

// plotPhase draws the phase's latency over time: p50 (dashed) and p99
// (solid) of each step, in ms on a log scale, against seconds from the
// phase's start.
func plotPhase(path string, p *Phase) error {
	pl := plot.New()
	pl.Title.Text = p.Name + ": latency over time"
	pl.X.Label.Text = "seconds from the phase's start"
	pl.Y.Label.Text = "latency, ms (log scale)"
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	pl.Legend.Top = true
	pl.Legend.Left = true
	pl.Add(plotter.NewGrid())
	for i, s := range p.Steps {
		if len(s.Series) == 0 {
			continue
		}
		p50, p99 := make(plotter.XYs, len(s.Series)), make(plotter.XYs, len(s.Series))
		for j, pt := range s.Series {
			t := s.Offset + pt.T
			p50[j] = plotter.XY{X: t, Y: math.Max(pt.P50, 0.01)}
			p99[j] = plotter.XY{X: t, Y: math.Max(pt.P99, 0.01)}
		}
		col := palette[i%len(palette)]
		l99, err := plotter.NewLine(p99)
		if err != nil {
			return err
		}
		l99.Color, l99.Width = col, vg.Points(1.2)
		l50, err := plotter.NewLine(p50)
		if err != nil {
			return err
		}
		l50.Color, l50.Width, l50.Dashes = col, vg.Points(1), []vg.Length{vg.Points(3), vg.Points(2)}
		pl.Add(l99, l50)
		name := s.Name
		if len(name) > 48 {
			name = name[:47] + "…"
		}
		pl.Legend.Add(name+" p99", l99)
		pl.Legend.Add("p50", l50)
	}
	pl.Legend.TextStyle.Font.Size = vg.Points(7)
	return pl.Save(11*vg.Inch, 5*vg.Inch, path)
}

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff},
}
