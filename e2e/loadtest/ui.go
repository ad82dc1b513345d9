package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// UI shows progress on Out (stderr): a progress bar per step when Bars is
// on (a terminal), and a line per step and message in any case. The final
// report is printed on Report (stdout).
type UI struct {
	Bars   bool
	Out    io.Writer
	Report io.Writer

	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

func newUI(bars bool) *UI { return &UI{Bars: bars, Out: os.Stderr, Report: os.Stdout} }

// Bar starts a step's bar of max requests (-1: unknown, a spinner) and
// returns it, or nil when bars are off.
func (u *UI) Bar(desc string, max int64) *progressbar.ProgressBar {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.bar != nil {
		u.bar.Finish()
		u.bar = nil
	}
	if !u.Bars {
		fmt.Fprintf(u.Out, "  %s ...\n", desc)
		return nil
	}
	u.bar = progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(u.Out),
		progressbar.OptionSetDescription(fmt.Sprintf("%-44s", desc)),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("req"),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionClearOnFinish(),
	)
	return u.bar
}

// Done ends the current bar.
func (u *UI) Done() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.bar != nil {
		u.bar.Finish()
		u.bar.Clear()
		u.bar = nil
	}
}

// Logf prints a line, above the bar if one is showing.
func (u *UI) Logf(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.bar != nil {
		u.bar.Clear()
	}
	fmt.Fprintf(u.Out, format+"\n", args...)
	if u.bar != nil {
		u.bar.RenderBlank()
	}
}
