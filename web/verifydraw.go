package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/boxoffice/boxoffice"
)

// verifyDraw checks a published draw: it fetches URL (an event's
// /events/{id}/draw) as JSON, checks that the seed's SHA-256 is the
// commitment and that the tickets are in the order HMAC-SHA256(seed,
// ticket) gives (boxoffice.VerifyDraw), and says so. Errors: the fetch's,
// a draw not yet made, or what does not hold.
func verifyDraw(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("verify-draw: want one URL, such as https://tickets.example/events/42/draw")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		return fmt.Errorf("verify-draw: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("verify-draw: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("verify-draw: %s answered %s", args[0], resp.Status)
	}
	var d struct {
		Commitment string    `json:"commitment"`
		DrawAt     time.Time `json:"draw_at"`
		Entrants   int       `json:"entrants"`
		Seed       *string   `json:"seed"`
		Tickets    []string  `json:"tickets"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&d); err != nil {
		return fmt.Errorf("verify-draw: read the draw: %w", err)
	}
	if d.Seed == nil {
		return fmt.Errorf("verify-draw: not drawn yet (the draw is at %s; commitment %s)", d.DrawAt.Format(time.RFC3339), d.Commitment)
	}
	if len(d.Tickets) != d.Entrants {
		return fmt.Errorf("verify-draw: %d tickets published for %d entrants", len(d.Tickets), d.Entrants)
	}
	if err := boxoffice.VerifyDraw(d.Commitment, *d.Seed, d.Tickets); err != nil {
		return fmt.Errorf("verify-draw: the draw does not hold: %w", err)
	}
	fmt.Fprintf(stdout, "OK: the seed matches the commitment %s and the %d tickets are in the order it gives.\n", d.Commitment, len(d.Tickets))
	return nil
}
