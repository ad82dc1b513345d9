package boxoffice

import (
	"net/url"
	"strings"
)

// ParseQuery reads a URL's raw query (without its "?") as url.ParseQuery
// does, and names what url.ParseQuery would leave out without a word.
// faults holds, by parameter name, a reason for each pair whose name or
// value is not valid percent-encoding or that holds a semicolon
// (val_filter_unreadable), and for each of names given more than once
// (val_filter_repeated); those parameters are not in q. A name that cannot
// be decoded is keyed as written, clipped to MaxQuoted runes. faults is
// empty, never nil, when the whole query reads.
func ParseQuery(raw string, names ...string) (q url.Values, faults map[string]Msg) {
	q, faults = url.Values{}, map[string]Msg{}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, nerr := url.QueryUnescape(rawName)
		value, verr := url.QueryUnescape(rawValue)
		switch {
		case nerr != nil || strings.Contains(pair, ";"):
			name = ClipInput(rawName, MaxQuoted)
			faults[name] = M("val_filter_unreadable", "Name", name)
		case verr != nil:
			faults[name] = M("val_filter_unreadable", "Name", ClipInput(name, MaxQuoted))
		default:
			q.Add(name, value)
		}
	}
	for _, name := range names {
		if len(q[name]) > 1 {
			faults[name] = M("val_filter_repeated", "Name", name)
		}
	}
	for name := range faults {
		q.Del(name)
	}
	return q, faults
}
