package boxoffice

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Text is a text for people in several languages, keyed by base language
// tag ("ko", "en"): an event's title and description, a grade's name. A
// language may be missing; In falls back to another one.
type Text map[string]string

// In returns the text in lang, or when it has none, in the first other
// language (by tag) that has one, so that a missing translation shows the
// other language's text, never an empty string; "" only when no language
// has any.
func (t Text) In(lang string) string {
	if s := t[lang]; s != "" {
		return s
	}
	for _, l := range slices.Sorted(maps.Keys(t)) {
		if s := t[l]; s != "" {
			return s
		}
	}
	return ""
}

// MarshalJSON writes t as a JSON object, {} when t is nil, so that an
// absent text is stored as no language rather than as null.
func (t Text) MarshalJSON() ([]byte, error) {
	if t == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]string(t))
}

// Empty reports whether no language has any text.
func (t Text) Empty() bool { return t.In("") == "" }

// Trim returns a copy of t with each text trimmed and the empty ones left
// out (an empty Text, never nil, when none is left).
func (t Text) Trim() Text {
	out := Text{}
	for l, s := range t {
		if s = strings.TrimSpace(s); s != "" {
			out[l] = s
		}
	}
	return out
}

// longer returns the languages, sorted, whose text is over n characters.
func (t Text) longer(n int) []string {
	var langs []string
	for l, s := range t {
		if utf8.RuneCountInString(s) > n {
			langs = append(langs, l)
		}
	}
	slices.Sort(langs)
	return langs
}
