package boxoffice_test

import (
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

func TestTickIndex(t *testing.T) {
	now := time.UnixMilli(1_760_000_000_999)
	if got := boxoffice.TickIndex(now, time.Second); got != 1_760_000_000 {
		t.Errorf("TickIndex(1 s) = %d, want 1760000000", got)
	}
	if got := boxoffice.TickIndex(now, 250*time.Millisecond); got != 7_040_000_003 {
		t.Errorf("TickIndex(250 ms) = %d, want 7040000003", got)
	}
}

func TestAdmissionBatch(t *testing.T) {
	tests := []struct {
		name  string
		rate  int
		tick  time.Duration
		ticks int   // ticks summed, from first
		first int64 // first tick index
		want  int   // fans admitted over those ticks
	}{
		{"OneSecondTick", 50, time.Second, 1, 1_760_000_000, 50},
		{"SixtyTicks", 50, time.Second, 60, 1_760_000_000, 3000},
		{"HalfSecondTick", 50, 500 * time.Millisecond, 2, 3_520_000_001, 50},
		{"OddRateHalfTicks", 5, 500 * time.Millisecond, 10, 7, 25},
		{"SlowerThanOnePerTick", 1, 300 * time.Millisecond, 10, 5_866_666_666, 3},
		{"OnePerSecondTenMsTicks", 1, 10 * time.Millisecond, 100, 176_000_000_000, 1},
		{"ZeroRate", 0, time.Second, 5, 1, 0},
		{"NegativeRate", -5, time.Second, 5, 1, 0},
		{"SubMillisecondTick", 50, time.Microsecond, 5, 1, 0},
		{"HighRate", 100_000, time.Second, 3, 1_760_000_000, 300_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := 0
			for i := range tt.ticks {
				n := boxoffice.AdmissionBatch(tt.rate, tt.tick, tt.first+int64(i))
				if n < 0 {
					t.Fatalf("AdmissionBatch(%d, %v, %d) = %d, want >= 0", tt.rate, tt.tick, tt.first+int64(i), n)
				}
				sum += n
			}
			if sum != tt.want {
				t.Errorf("sum of %d batches = %d, want %d", tt.ticks, sum, tt.want)
			}
		})
	}
}

func TestAdmissionPace(t *testing.T) {
	tick := time.Second
	now := time.UnixMilli(1_000_500) // in tick 1000
	rec := func(tick int64, n int, backlog bool) boxoffice.AdmissionRecord {
		return boxoffice.AdmissionRecord{Tick: tick, Admitted: n, Backlog: backlog}
	}
	full := make([]boxoffice.AdmissionRecord, 0, boxoffice.RateWindow)
	for i := range boxoffice.RateWindow {
		full = append(full, rec(1000-int64(i), 40, true))
	}
	tests := []struct {
		name     string
		pace     boxoffice.AdmissionPace
		achieved float64
		wait     float64
		eta      map[int]time.Duration // position -> ETA
	}{
		{
			name:     "NoRecordsUsesConfiguredRate",
			pace:     boxoffice.AdmissionPace{Tick: tick, Rate: 50},
			achieved: 0, wait: 50,
			eta: map[int]time.Duration{1: time.Second, 50: time.Second, 51: 2 * time.Second, 1000: 20 * time.Second},
		},
		{
			name:     "MeasuredBacklogTicks",
			pace:     boxoffice.AdmissionPace{Tick: tick, Rate: 50, Records: full},
			achieved: 40, wait: 40,
			eta: map[int]time.Duration{1: time.Second, 40: time.Second, 41: 2 * time.Second, 400: 10 * time.Second},
		},
		{
			name: "TicksThatEmptiedTheLineDoNotCount",
			pace: boxoffice.AdmissionPace{Tick: tick, Rate: 50, Records: []boxoffice.AdmissionRecord{
				rec(1000, 3, false), rec(999, 50, true), rec(998, 30, true),
			}},
			achieved: 8.3, wait: 40,
			eta: map[int]time.Duration{80: 2 * time.Second, 81: 3 * time.Second},
		},
		{
			name: "OldRecordsFallOutOfTheWindow",
			pace: boxoffice.AdmissionPace{Tick: tick, Rate: 20, Records: []boxoffice.AdmissionRecord{
				rec(1000-boxoffice.RateWindow, 500, true), rec(1001, 500, true),
			}},
			achieved: 0, wait: 20,
			eta: map[int]time.Duration{20: time.Second, 21: 2 * time.Second},
		},
		{
			name: "CapHoldsEveryoneBack",
			pace: boxoffice.AdmissionPace{Tick: tick, Rate: 50, Records: []boxoffice.AdmissionRecord{
				rec(1000, 0, true), rec(999, 0, true),
			}},
			achieved: 0, wait: 0,
			eta: map[int]time.Duration{1: 0, 100: 0},
		},
		{
			name:     "PausedHasNoEstimate",
			pace:     boxoffice.AdmissionPace{Tick: tick, Rate: 50, Paused: true, Records: full},
			achieved: 40, wait: 0,
			eta: map[int]time.Duration{1: 0},
		},
		{
			name: "ShortTicks",
			pace: boxoffice.AdmissionPace{Tick: 100 * time.Millisecond, Rate: 10, Records: []boxoffice.AdmissionRecord{
				rec(10_005, 2, true), rec(10_004, 2, true), rec(10_003, 0, true), rec(9_995, 9, true),
			}},
			achieved: 4, wait: 13.333333333333334,
			eta: map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 300 * time.Millisecond, 0: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pace.AchievedRate(now); !near(got, tt.achieved) {
				t.Errorf("AchievedRate = %v, want %v", got, tt.achieved)
			}
			if got := tt.pace.WaitRate(now); !near(got, tt.wait) {
				t.Errorf("WaitRate = %v, want %v", got, tt.wait)
			}
			for pos, want := range tt.eta {
				if got := tt.pace.EstimateWait(pos, now); got != want {
					t.Errorf("EstimateWait(%d) = %v, want %v", pos, got, want)
				}
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 0.01 && b-a < 0.01 }

func TestQueuePosition_Progress(t *testing.T) {
	tests := []struct {
		name  string
		p     boxoffice.QueuePosition
		start int
		want  float64
	}{
		{"AtJoining", boxoffice.QueuePosition{Status: boxoffice.QueueWaiting, Position: 400}, 400, 0},
		{"Halfway", boxoffice.QueuePosition{Status: boxoffice.QueueWaiting, Position: 200}, 400, 0.5},
		{"Next", boxoffice.QueuePosition{Status: boxoffice.QueueWaiting, Position: 1}, 4, 0.75},
		{"Admitted", boxoffice.QueuePosition{Status: boxoffice.QueueAdmitted}, 400, 1},
		{"UnknownStart", boxoffice.QueuePosition{Status: boxoffice.QueueWaiting, Position: 10}, 0, 0},
		{"BehindStart", boxoffice.QueuePosition{Status: boxoffice.QueueWaiting, Position: 500}, 400, 0},
		{"Reset", boxoffice.QueuePosition{Status: boxoffice.QueueReset}, 400, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Progress(tt.start); got != tt.want {
				t.Errorf("Progress(%d) = %v, want %v", tt.start, got, tt.want)
			}
		})
	}
}

func TestNoEntryReason(t *testing.T) {
	err := &boxoffice.Error{Code: boxoffice.ENOENTRYTOKEN, Details: map[string]any{"reason": boxoffice.ReasonExpired}}
	if got := boxoffice.NoEntryReason(err); got != boxoffice.ReasonExpired {
		t.Errorf("NoEntryReason = %q, want %q", got, boxoffice.ReasonExpired)
	}
	other := &boxoffice.Error{Code: boxoffice.ECONFLICT, Details: map[string]any{"reason": "x"}}
	if got := boxoffice.NoEntryReason(other); got != "" {
		t.Errorf("NoEntryReason(conflict) = %q, want \"\"", got)
	}
}

func TestValidQueueEpoch(t *testing.T) {
	for _, tt := range []struct {
		epoch string
		want  bool
	}{
		{"AbCdEfGhIjKlMnOpQr-_09", true},
		{"", false},
		{"AbCdEfGhIjKlMnOpQr-_0", false},   // 21 characters
		{"AbCdEfGhIjKlMnOpQr-_09x", false}, // 23
		{"AbCdEfGhIjKlMnOpQr+/09", false},  // standard base64, not base64url
		{"AbCdEfGhIjKlMnOpQr-_0=", false},
		{"AbCdEfGhIjKlMnOpQr-_é", false}, // 22 bytes, the last two a letter not ASCII
		{"AbCdEfGhIjKlMnOp;r-_09", false},
	} {
		if got := boxoffice.ValidQueueEpoch(tt.epoch); got != tt.want {
			t.Errorf("ValidQueueEpoch(%q) = %v, want %v", tt.epoch, got, tt.want)
		}
	}
}
