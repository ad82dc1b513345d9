package store

import (
	"encoding/base64"
	"strings"
	"testing"
)

// The join's epoch and entry token, drawn together, are each a token as
// randomToken makes it, and never equal to each other or to any other
// draw's: the epoch is shown to the fan, the token is a secret.
func TestQueue_TwoRandomTokens(t *testing.T) {
	seen := map[string]bool{}
	for range 10_000 {
		a, b := twoRandomTokens()
		for _, tok := range []string{a, b} {
			raw, err := base64.RawURLEncoding.DecodeString(tok)
			if err != nil || len(raw) != tokenBytes || strings.Contains(tok, "|") {
				t.Fatalf("token %q: %d bytes, %v", tok, len(raw), err)
			}
			if seen[tok] {
				t.Fatalf("token %q drawn twice", tok)
			}
			seen[tok] = true
		}
	}
}
