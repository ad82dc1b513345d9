package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// verify-draw accepts a draw that holds, and names what is wrong with one
// that does not: a seed that is not the commitment's, tickets out of order,
// a draw not made yet.
func TestRun_VerifyDraw(t *testing.T) {
	seed := make([]byte, boxoffice.DrawSeedBytes)
	rand.Read(seed)
	var tickets []string
	for range 50 {
		b := make([]byte, boxoffice.DrawTicketBytes)
		rand.Read(b)
		tickets = append(tickets, hex.EncodeToString(b))
	}
	drawn := boxoffice.DrawOrder(seed, tickets)
	swapped := slices.Clone(drawn)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	other := make([]byte, boxoffice.DrawSeedBytes)
	rand.Read(other)
	for _, tt := range []struct {
		name string
		body map[string]any
		want string // "" for OK
	}{
		{"OK", map[string]any{"commitment": boxoffice.DrawCommitment(seed), "entrants": 50, "seed": hex.EncodeToString(seed), "tickets": drawn}, ""},
		{"ErrOrder", map[string]any{"commitment": boxoffice.DrawCommitment(seed), "entrants": 50, "seed": hex.EncodeToString(seed), "tickets": swapped}, "place 1 holds"},
		{"ErrSeed", map[string]any{"commitment": boxoffice.DrawCommitment(seed), "entrants": 50, "seed": hex.EncodeToString(other), "tickets": drawn}, "not the commitment"},
		{"ErrNotDrawn", map[string]any{"commitment": boxoffice.DrawCommitment(seed), "entrants": 50, "draw_at": "2030-03-01T11:00:00Z"}, "not drawn yet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Accept") != "application/json" {
					http.Error(w, "want JSON", http.StatusNotAcceptable)
					return
				}
				json.NewEncoder(w).Encode(tt.body)
			}))
			defer srv.Close()
			var out bytes.Buffer
			err := run(context.Background(), []string{"verify-draw", srv.URL + "/events/1/draw"}, func(string) string { return "" }, &out, &out)
			switch {
			case tt.want == "" && (err != nil || !strings.HasPrefix(out.String(), "OK")):
				t.Fatalf("verify-draw = %v, printed %q; want OK", err, out.String())
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("verify-draw = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
