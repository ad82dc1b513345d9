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

// ParseLocalTime is ParseLocalTimeAt without an offset: a time that a
// daylight-saving change repeats is refused, asking which one.
func ParseLocalTime(value, zone string) (time.Time, error) {
	return ParseLocalTimeAt(value, zone, "")
}

// ParseLocalTimeAt reads value, a wall-clock time as an HTML datetime-local
// input posts it ("2006-01-02T15:04", optionally with seconds and a
// fraction), in the IANA time zone zone, and returns that instant. The
// server's and the browser's own zones play no part.
//
// A daylight-saving change is never guessed at:
//   - a wall clock that does not exist (clocks go forward over it) is
//     refused with EINVALID "val_time_gap", naming the nearest valid times:
//     the last minute before the gap ("Before", a boxoffice.At, with
//     "BeforeOffset") and the first after it ("After", "AfterOffset");
//   - a wall clock that happens twice (clocks go back) is the instant whose
//     UTC offset is offset (UTCOffset's form, such as "-04:00"); without
//     one of its two offsets it is refused with EINVALID "val_time_twice"
//     ("First" and "Second" the offsets, earlier first; LocalTimeChoices
//     has the two instants for a form to offer).
//
// offset plays no part for any other time. Errors: EINVALID for a
// malformed value or an unknown zone (see LoadTimeZone), and as above.
func ParseLocalTimeAt(value, zone, offset string) (time.Time, error) {
	loc, err := LoadTimeZone(zone)
	if err != nil {
		return time.Time{}, err
	}
	wall, err := parseWall(value)
	if err != nil {
		return time.Time{}, err
	}
	shown := wall.Format("2006-01-02 15:04")
	switch at := inZone(wall, loc); len(at) {
	case 0:
		first, _ := wall.Add(-offsetAt(wall.Add(-24*time.Hour), loc)).In(loc).ZoneBounds()
		last := first.Add(-time.Minute)
		return time.Time{}, NewError(EINVALID, "val_time_gap", "Value", shown, "Zone", zone,
			"Before", At{Time: last, Zone: zone}, "BeforeOffset", UTCOffset(last),
			"After", At{Time: first, Zone: zone}, "AfterOffset", UTCOffset(first))
	case 1:
		return at[0], nil
	default:
		for _, t := range at {
			if offset != "" && UTCOffset(t) == offset {
				return t, nil
			}
		}
		return time.Time{}, NewError(EINVALID, "val_time_twice", "Value", shown, "Zone", zone,
			"First", UTCOffset(at[0]), "Second", UTCOffset(at[1]))
	}
}

// LocalTimeChoices returns the two instants, earlier first, of a wall
// clock value that happens twice in zone (clocks go back over it), and nil
// for any other value, valid or not: the choice a form offers for
// ParseLocalTimeAt's "val_time_twice".
func LocalTimeChoices(value, zone string) []time.Time {
	loc, err := LoadTimeZone(zone)
	if err != nil {
		return nil
	}
	wall, err := parseWall(value)
	if err != nil {
		return nil
	}
	if at := inZone(wall, loc); len(at) == 2 {
		return at
	}
	return nil
}

// UTCOffset is t's offset from UTC in its location as "+09:00" or
// "-04:30" (RFC 3339's time-numoffset).
func UTCOffset(t time.Time) string {
	return t.Format("-07:00")
}

// parseWall reads a datetime-local value as a wall clock (in UTC's
// location, standing for no zone). Errors: EINVALID.
func parseWall(value string) (time.Time, error) {
	value = strings.TrimSpace(value)
	wall, err := time.Parse(LocalTimeLayout, value)
	if err != nil {
		wall, err = time.Parse("2006-01-02T15:04:05", value)
	}
	if err != nil {
		return time.Time{}, NewError(EINVALID, "val_local_time")
	}
	return wall, nil
}

// ReparseLocalTime is ParseLocalTimeAt for an edit form: when value is
// exactly what FormatLocalTime(prev, zone) shows and offset is "" or prev's,
// it returns prev itself, so that a form saved again without changes never
// moves a time, not by its seconds nor (at a daylight-saving overlap) by an
// hour. Errors: as ParseLocalTimeAt.
func ReparseLocalTime(value, zone, offset string, prev time.Time) (time.Time, error) {
	if !prev.IsZero() && strings.TrimSpace(value) == FormatLocalTime(prev, zone) {
		loc, err := LoadTimeZone(zone)
		if err != nil {
			return time.Time{}, err
		}
		if offset == "" || offset == UTCOffset(prev.In(loc)) {
			return prev, nil
		}
	}
	return ParseLocalTimeAt(value, zone, offset)
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

// inZone returns the instants whose wall clock in loc reads as wall's does
// in UTC: one, two at an overlap (earlier first), none in a gap. It
// compares the zone's offsets a day before and a day after: zones change
// offset at most once in 48 hours.
func inZone(wall time.Time, loc *time.Location) []time.Time {
	var at []time.Time
	for _, off := range []time.Duration{offsetAt(wall.Add(-24*time.Hour), loc), offsetAt(wall.Add(24*time.Hour), loc)} {
		t := wall.Add(-off)
		if t.Add(offsetAt(t, loc)).Equal(wall) && (len(at) == 0 || !at[0].Equal(t)) {
			at = append(at, t.In(loc))
		}
	}
	if len(at) == 2 && at[1].Before(at[0]) {
		at[0], at[1] = at[1], at[0]
	}
	return at
}

// offsetAt is loc's offset from UTC at the instant t.
func offsetAt(t time.Time, loc *time.Location) time.Duration {
	_, off := t.In(loc).Zone()
	return time.Duration(off) * time.Second
}
