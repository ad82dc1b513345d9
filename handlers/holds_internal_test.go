package handlers

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// answerHold's hand-appended answer must be the bytes encoding/json's
// Encoder writes for the same hold, for any labels plainLabel lets through,
// expiries and remaining times; labels that it escapes are not plain.
func TestHoldAppendJSON(t *testing.T) {
	helds := [][]string{nil, {}, {"A-1-1"}, {"A-1-1", "B-12-3"}, {"Floor 1 (left)-2-10", "VIP's-1-1", "x-9999-9999"}}
	expiries := []time.Time{
		time.UnixMilli(0), time.UnixMilli(1764755000000), time.UnixMilli(1764755000120), time.UnixMilli(1764755000100),
		time.Date(2026, 12, 3, 9, 0, 0, 0, time.FixedZone("KST", 9*3600)), time.Date(2026, 12, 3, 9, 0, 0, 123456789, time.UTC),
	}
	ttls := []time.Duration{0, time.Millisecond, 999 * time.Microsecond, 10 * time.Minute, -time.Second, math.MaxInt64}
	n := 0
	for _, held := range helds {
		for _, l := range held {
			if !plainLabel(l) {
				t.Fatalf("plainLabel(%q) = false", l)
			}
		}
		for _, exp := range expiries {
			for _, ttl := range ttls {
				res := boxoffice.HoldResult{Held: held, ExpiresAt: exp, TTL: ttl}
				var want bytes.Buffer
				a := holdAnswer{Held: res.Held, TTLMs: res.TTL.Milliseconds(), ExpiresAt: res.ExpiresAt.UTC().Format(time.RFC3339Nano)}
				if err := json.NewEncoder(&want).Encode(a); err != nil {
					t.Fatal(err)
				}
				if got := appendHoldJSON(nil, res); !bytes.Equal(got, want.Bytes()) {
					t.Errorf("appendHoldJSON(%+v) = %s, want %s", res, got, want.Bytes())
				}
				n++
			}
		}
	}
	for _, l := range []string{`A"-1-1`, `A\-1-1`, "A<-1-1", "A>-1-1", "A&B-1-1", "가-1-1", "A\x7f-1-1", "A\t-1-1"} {
		if plainLabel(l) {
			t.Errorf("plainLabel(%q) = true", l)
		}
	}
	t.Logf("%d holds compared", n)
}
