package boxoffice_test

import (
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// withLocal runs the test with the process's zone set to zone, so that a
// test shows the parsing does not depend on where the server (or the
// browser that typed the value) is.
func withLocal(t *testing.T, zone string) {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Local
	time.Local = loc
	t.Cleanup(func() { time.Local = old })
}

func mustUTC(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParseLocalTime(t *testing.T) {
	withLocal(t, "America/Los_Angeles")
	tests := []struct {
		name, value, zone, want string
	}{
		{"Seoul", "2026-12-01T20:00", "Asia/Seoul", "2026-12-01T11:00:00Z"},
		{"Seconds", "2026-12-01T20:00:30", "Asia/Seoul", "2026-12-01T11:00:30Z"},
		{"UTC", "2026-12-01T20:00", "UTC", "2026-12-01T20:00:00Z"},
		// Europe/Berlin springs forward at 02:00 CET (01:00 UTC) on 2026-03-29.
		{"BerlinBeforeSpring", "2026-03-29T01:30", "Europe/Berlin", "2026-03-29T00:30:00Z"},
		{"BerlinBeforeGap", "2026-03-29T01:59", "Europe/Berlin", "2026-03-29T00:59:00Z"},
		{"BerlinSpringAfter", "2026-03-29T03:00", "Europe/Berlin", "2026-03-29T01:00:00Z"},
		{"BerlinSpringDay", "2026-03-29T10:00", "Europe/Berlin", "2026-03-29T08:00:00Z"},
		// It falls back at 03:00 CEST (01:00 UTC) on 2026-10-25: 02:00-03:00 happens twice.
		{"BerlinBeforeFall", "2026-10-25T01:30", "Europe/Berlin", "2026-10-24T23:30:00Z"},
		{"BerlinFallAfter", "2026-10-25T03:00", "Europe/Berlin", "2026-10-25T02:00:00Z"},
		{"BerlinFallDay", "2026-10-25T10:00", "Europe/Berlin", "2026-10-25T09:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := boxoffice.ParseLocalTime(tt.value, tt.zone)
			if err != nil {
				t.Fatalf("ParseLocalTime(%q, %q): %v", tt.value, tt.zone, err)
			}
			if want := mustUTC(t, tt.want); !got.Equal(want) {
				t.Fatalf("ParseLocalTime(%q, %q) = %s, want %s", tt.value, tt.zone, got.UTC().Format(time.RFC3339), tt.want)
			}
		})
	}
	for _, bad := range []struct{ value, zone string }{
		{"2026-13-01T10:00", "Asia/Seoul"}, {"", "Asia/Seoul"}, {"tomorrow", "Asia/Seoul"},
		{"2026-12-01 20:00:00+09:00", "Asia/Seoul"}, {"2026-12-01T20:00", "Mars/Olympus"},
		{"2026-12-01T20:00", ""}, {"2026-12-01T20:00", "Local"},
	} {
		if _, err := boxoffice.ParseLocalTime(bad.value, bad.zone); boxoffice.ErrorCode(err) != boxoffice.EINVALID {
			t.Errorf("ParseLocalTime(%q, %q) error = %v, want %s", bad.value, bad.zone, err, boxoffice.EINVALID)
		}
	}
}

// An event in Asia/Seoul edited three times from a browser in another zone:
// the form shows the local strings and posts them back unchanged, and the
// instants stay put.
func TestLocalTime_SeoulRoundTrip(t *testing.T) {
	withLocal(t, "America/New_York")
	const zone = "Asia/Seoul"
	opens, err := boxoffice.ParseLocalTime("2026-12-01T20:00", zone)
	if err != nil {
		t.Fatal(err)
	}
	want := mustUTC(t, "2026-12-01T11:00:00Z")
	got := opens
	for save := 1; save <= 3; save++ {
		shown := boxoffice.FormatLocalTime(got, zone)
		if shown != "2026-12-01T20:00" {
			t.Fatalf("save %d: form shows %q, want 2026-12-01T20:00", save, shown)
		}
		if got, err = boxoffice.ParseLocalTime(shown, zone); err != nil {
			t.Fatal(err)
		}
		if !got.Equal(want) {
			t.Fatalf("save %d: instant %s, want %s", save, got.UTC(), want)
		}
	}
}

// A sale that opens at 10:00 Berlin time on either daylight-saving change
// day of 2026 opens at the right instant.
func TestLocalTime_BerlinSaleOpening(t *testing.T) {
	withLocal(t, "Asia/Seoul")
	for _, tt := range []struct{ local, utc string }{
		{"2026-03-29T10:00", "2026-03-29T08:00:00Z"},
		{"2026-10-25T10:00", "2026-10-25T09:00:00Z"},
	} {
		opens, err := boxoffice.ParseLocalTime(tt.local, "Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		e := boxoffice.Event{Status: boxoffice.EventOnSale, TimeZone: "Europe/Berlin", QueueOpensAt: opens, SaleEndsAt: opens.Add(24 * time.Hour)}
		at := mustUTC(t, tt.utc)
		if e.QueueOpen(at.Add(-time.Second)) || !e.QueueOpen(at) {
			t.Errorf("sale at %s Berlin: open a second before %s = %v, at it = %v; want false, true",
				tt.local, tt.utc, e.QueueOpen(at.Add(-time.Second)), e.QueueOpen(at))
		}
		if got := boxoffice.FormatLocalTime(opens, e.TimeZone); got != tt.local {
			t.Errorf("FormatLocalTime = %q, want %q", got, tt.local)
		}
	}
}

func TestReparseLocalTime(t *testing.T) {
	// The second 02:30 of the Berlin fall-back night, and an instant with seconds.
	for _, prev := range []time.Time{mustUTC(t, "2026-10-25T01:30:00Z"), mustUTC(t, "2026-12-01T11:00:42Z")} {
		shown := boxoffice.FormatLocalTime(prev, "Europe/Berlin")
		got, err := boxoffice.ReparseLocalTime(shown, "Europe/Berlin", "", prev)
		if err != nil || !got.Equal(prev) {
			t.Errorf("ReparseLocalTime(%q, prev %s) = %s, %v; want prev", shown, prev, got, err)
		}
		if plain, _ := boxoffice.ParseLocalTime(shown, "Europe/Berlin"); plain.Equal(prev) {
			t.Errorf("ParseLocalTime(%q) = prev %s: the test case does not need ReparseLocalTime", shown, prev)
		}
	}
	prev := mustUTC(t, "2026-12-01T11:00:42Z")
	got, err := boxoffice.ReparseLocalTime("2026-12-01T13:00", "Europe/Berlin", "", prev)
	if want := mustUTC(t, "2026-12-01T12:00:00Z"); err != nil || !got.Equal(want) {
		t.Errorf("ReparseLocalTime(changed) = %s, %v; want %s", got, err, want)
	}
	if _, err := boxoffice.ReparseLocalTime("2026-12-01T20:00", "Mars/Olympus", "", prev); boxoffice.ErrorCode(err) != boxoffice.EINVALID {
		t.Errorf("ReparseLocalTime(unknown zone) error = %v, want %s", err, boxoffice.EINVALID)
	}
	// The saved first 02:30 of the Berlin fall-back night, the second
	// chosen on the form: the time moves by the hour.
	first := mustUTC(t, "2026-10-25T00:30:00Z")
	got, err = boxoffice.ReparseLocalTime("2026-10-25T02:30", "Europe/Berlin", "+01:00", first)
	if want := mustUTC(t, "2026-10-25T01:30:00Z"); err != nil || !got.Equal(want) {
		t.Errorf("ReparseLocalTime(the other offset) = %s, %v; want %s", got, err, want)
	}
}

// A wall clock that a spring-forward skips is refused, naming the last
// minute before the gap and the first after it, with their offsets.
func TestParseLocalTime_Gap(t *testing.T) {
	withLocal(t, "Asia/Seoul")
	for _, tt := range []struct {
		name, value, zone                  string
		before, beforeOff, after, afterOff string
	}{
		{"NewYork", "2026-03-08T02:30", "America/New_York", "2026-03-08T06:59:00Z", "-05:00", "2026-03-08T07:00:00Z", "-04:00"},
		{"NewYorkFirstMinute", "2026-03-08T02:00", "America/New_York", "2026-03-08T06:59:00Z", "-05:00", "2026-03-08T07:00:00Z", "-04:00"},
		{"Berlin", "2026-03-29T02:59", "Europe/Berlin", "2026-03-29T00:59:00Z", "+01:00", "2026-03-29T01:00:00Z", "+02:00"},
		{"LordHoweHalfHour", "2026-10-04T02:15", "Australia/Lord_Howe", "2026-10-03T15:29:00Z", "+10:30", "2026-10-03T15:30:00Z", "+11:00"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := boxoffice.ParseLocalTimeAt(tt.value, tt.zone, "-04:00")
			msg := boxoffice.ErrorMsg(err)
			if boxoffice.ErrorCode(err) != boxoffice.EINVALID || msg.ID != "val_time_gap" {
				t.Fatalf("ParseLocalTimeAt(%q, %q) error %v, want val_time_gap", tt.value, tt.zone, err)
			}
			before, _ := msg.Args["Before"].(boxoffice.At)
			after, _ := msg.Args["After"].(boxoffice.At)
			if !before.Time.Equal(mustUTC(t, tt.before)) || msg.Args["BeforeOffset"] != tt.beforeOff ||
				!after.Time.Equal(mustUTC(t, tt.after)) || msg.Args["AfterOffset"] != tt.afterOff || before.Zone != tt.zone {
				t.Errorf("nearest times %v (%v) and %v (%v); want %s (%s) and %s (%s) in %s",
					before, msg.Args["BeforeOffset"], after, msg.Args["AfterOffset"], tt.before, tt.beforeOff, tt.after, tt.afterOff, tt.zone)
			}
		})
	}
}

// A wall clock that a fall-back repeats is asked which one: refused
// without one of its two offsets, each instant with its own.
func TestParseLocalTime_Twice(t *testing.T) {
	withLocal(t, "Asia/Seoul")
	for _, tt := range []struct {
		name, value, zone, first, firstOff, second, secondOff string
	}{
		{"NewYork", "2026-11-01T01:30", "America/New_York", "2026-11-01T05:30:00Z", "-04:00", "2026-11-01T06:30:00Z", "-05:00"},
		{"Berlin", "2026-10-25T02:00", "Europe/Berlin", "2026-10-25T00:00:00Z", "+02:00", "2026-10-25T01:00:00Z", "+01:00"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, offset := range []string{"", "+09:00", "garbage"} {
				_, err := boxoffice.ParseLocalTimeAt(tt.value, tt.zone, offset)
				msg := boxoffice.ErrorMsg(err)
				if msg.ID != "val_time_twice" || msg.Args["First"] != tt.firstOff || msg.Args["Second"] != tt.secondOff {
					t.Errorf("offset %q: error %v, want val_time_twice offering %s and %s", offset, err, tt.firstOff, tt.secondOff)
				}
			}
			for _, c := range []struct{ offset, want string }{{tt.firstOff, tt.first}, {tt.secondOff, tt.second}} {
				got, err := boxoffice.ParseLocalTimeAt(tt.value, tt.zone, c.offset)
				if err != nil || !got.Equal(mustUTC(t, c.want)) {
					t.Errorf("offset %s: %s, %v; want %s", c.offset, got, err, c.want)
				}
			}
			choices := boxoffice.LocalTimeChoices(tt.value, tt.zone)
			if len(choices) != 2 || !choices[0].Equal(mustUTC(t, tt.first)) || boxoffice.UTCOffset(choices[1]) != tt.secondOff {
				t.Errorf("choices %v, want %s then %s (%s)", choices, tt.first, tt.second, tt.secondOff)
			}
		})
	}
	if c := boxoffice.LocalTimeChoices("2026-11-01T03:30", "America/New_York"); c != nil {
		t.Errorf("choices of a time that happens once: %v, want none", c)
	}
}

func TestFormatLocalTime(t *testing.T) {
	if got := boxoffice.FormatLocalTime(time.Time{}, "Asia/Seoul"); got != "" {
		t.Errorf("FormatLocalTime(zero) = %q, want \"\"", got)
	}
	at := mustUTC(t, "2026-12-01T11:00:42Z")
	if got := boxoffice.FormatLocalTime(at, "Asia/Seoul"); got != "2026-12-01T20:00" {
		t.Errorf("FormatLocalTime = %q, want 2026-12-01T20:00", got)
	}
	if got := boxoffice.FormatLocalTime(at, "Mars/Olympus"); got != "2026-12-01T11:00" {
		t.Errorf("FormatLocalTime(unknown zone) = %q, want UTC 2026-12-01T11:00", got)
	}
}
