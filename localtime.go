package boxoffice

import (
	"strings"
	"time"
)

// LocalTimeLayout is the layout of an HTML datetime-local value (WHATWG HTML,
// "valid normalized local date and time string" with minutes): the wall
// clock in the event's time zone, without an offset.
const LocalTimeLayout = "2006-01-02T15:04"

// LoadTimeZone returns the IANA time zone named zone (such as "Asia/Seoul").
// Errors: EINVALID for an empty, unknown or process-dependent ("Local") name.
func LoadTimeZone(zone string) (*time.Location, error) {
	if zone == "" || zone == "Local" {
		return nil, NewError(EINVALID, "val_time_zone_empty")
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, NewError(EINVALID, "val_time_zone_unknown", "Zone", ClipInput(zone, MaxQuoted))
	}
	return loc, nil
}

// ParseLocalTime reads value, a wall-clock time as an HTML datetime-local
// input posts it ("2006-01-02T15:04", optionally with seconds and a fraction),
// in the IANA time zone zone, and returns that instant. The server's and the
// browser's own zones play no part.
//
// Where the wall clock is ambiguous or missing because of a daylight-saving
// change, the rule is the "compatible" disambiguation of TC39 Temporal (also
// RFC 5545 §3.3.5 for times in a gap): a time that occurs twice (clocks go
// back) is the earlier instant; a time that does not exist (clocks go forward)
// is moved forward by the length of the gap, so 02:30 on a night that skips
// from 02:00 to 03:00 is 03:30 of the new offset.
//
// Errors: EINVALID for a malformed value or an unknown zone (see
// LoadTimeZone).
func ParseLocalTime(value, zone string) (time.Time, error) {
	loc, err := LoadTimeZone(zone)
	if err != nil {
		return time.Time{}, err
	}
	value = strings.TrimSpace(value)
	wall, err := time.Parse(LocalTimeLayout, value)
	if err != nil {
		wall, err = time.Parse("2006-01-02T15:04:05", value)
	}
	if err != nil {
		return time.Time{}, NewError(EINVALID, "val_local_time")
	}
	return inZone(wall, loc), nil
}

// ReparseLocalTime is ParseLocalTime for an edit form: when value is exactly
// what FormatLocalTime(prev, zone) shows, it returns prev itself, so that a
// form saved again without changes never moves a time, not by its seconds nor
// (at a daylight-saving overlap) by an hour. Errors: as ParseLocalTime.
func ReparseLocalTime(value, zone string, prev time.Time) (time.Time, error) {
	if !prev.IsZero() && strings.TrimSpace(value) == FormatLocalTime(prev, zone) {
		if _, err := LoadTimeZone(zone); err != nil {
			return time.Time{}, err
		}
		return prev, nil
	}
	return ParseLocalTime(value, zone)
}

// FormatLocalTime returns t's wall clock in the IANA zone zone as an HTML
// datetime-local value ("2006-01-02T15:04", minutes: seconds are dropped so
// that the default step of the input accepts it), "" for the zero time. An
// unknown zone shows UTC.
func FormatLocalTime(t time.Time, zone string) string {
	if t.IsZero() {
		return ""
	}
	loc, err := LoadTimeZone(zone)
	if err != nil {
		loc = time.UTC
	}
	return t.In(loc).Format(LocalTimeLayout)
}

// inZone returns the instant whose wall clock in loc reads as wall's does in
// UTC, disambiguated as ParseLocalTime documents. It compares the zone's
// offsets a day before and a day after: zones change offset at most once in
// 48 hours.
func inZone(wall time.Time, loc *time.Location) time.Time {
	offsetAt := func(t time.Time) time.Duration {
		_, off := t.In(loc).Zone()
		return time.Duration(off) * time.Second
	}
	before := wall.Add(-offsetAt(wall.Add(-24 * time.Hour)))
	after := wall.Add(-offsetAt(wall.Add(24 * time.Hour)))
	valid := func(t time.Time) bool { return t.Add(offsetAt(t)).Equal(wall) }
	var t time.Time
	switch {
	case valid(before):
		t = before // the only instant, or the earlier of two at an overlap
	case valid(after):
		t = after
	default:
		t = before // a gap: read with the offset before it, which lands after it
	}
	return t.In(loc)
}
