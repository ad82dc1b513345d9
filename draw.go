package boxoffice

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"
)

// The pre-queue's draw (DESIGN.md rule 6). Before the queue opens, each fan
// who joins gets a draw ticket: DrawTicketBytes random bytes, written as
// lower-case hex. The event keeps a secret seed of DrawSeedBytes random
// bytes and publishes its commitment, the lower-case hex SHA-256 of the
// seed bytes. At the opening the entrants are placed in line in ascending
// byte order of HMAC-SHA256(key = the seed bytes, message = the ASCII hex of
// the ticket); then the seed and the tickets are published, and anyone can
// recompute the order (DrawOrder, VerifyDraw, `boxoffice verify-draw`).
const (
	DrawTicketBytes = 16
	DrawSeedBytes   = 32
)

// DrawCommitment returns the commitment to seed: the lower-case hex SHA-256
// of its bytes.
func DrawCommitment(seed []byte) string {
	sum := sha256.Sum256(seed)
	return hex.EncodeToString(sum[:])
}

// DrawRank returns the lower-case hex HMAC-SHA256 of ticket (its hex form,
// as ASCII) keyed by seed: entrants are placed in ascending order of these
// bytes, which is also the order of their hex strings.
func DrawRank(seed []byte, ticket string) string {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(ticket))
	return hex.EncodeToString(m.Sum(nil))
}

// DrawOrder returns tickets in drawn order under seed.
func DrawOrder(seed []byte, tickets []string) []string {
	type ranked struct {
		rank   []byte
		ticket string
	}
	rs := make([]ranked, len(tickets))
	for i, t := range tickets {
		m := hmac.New(sha256.New, seed)
		m.Write([]byte(t))
		rs[i] = ranked{m.Sum(nil), t}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int { return bytes.Compare(a.rank, b.rank) })
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ticket
	}
	return out
}

// ValidDrawTicket reports whether t is a draw ticket as issued: 32
// lower-case hex characters.
func ValidDrawTicket(t string) bool {
	if len(t) != 2*DrawTicketBytes {
		return false
	}
	for _, c := range t {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// VerifyDraw checks a published draw: seedHex is DrawSeedBytes bytes whose
// commitment is commitment, every ticket is well formed and appears once,
// and tickets are in the order DrawOrder gives. It returns nil or the
// first thing that does not hold.
func VerifyDraw(commitment, seedHex string, tickets []string) error {
	seed, err := hex.DecodeString(seedHex)
	if err != nil || len(seed) != DrawSeedBytes {
		return fmt.Errorf("the seed is not %d bytes of hex", DrawSeedBytes)
	}
	if got := DrawCommitment(seed); got != commitment {
		return fmt.Errorf("the seed's SHA-256 is %s, not the commitment %s", got, commitment)
	}
	seen := make(map[string]bool, len(tickets))
	for _, t := range tickets {
		if !ValidDrawTicket(t) {
			return fmt.Errorf("ticket %q is not %d lower-case hex characters", t, 2*DrawTicketBytes)
		}
		if seen[t] {
			return fmt.Errorf("ticket %s appears twice", t)
		}
		seen[t] = true
	}
	want := DrawOrder(seed, tickets)
	for i := range tickets {
		if tickets[i] != want[i] {
			return fmt.Errorf("place %d holds ticket %s, but the seed puts %s there", i+1, tickets[i], want[i])
		}
	}
	return nil
}

// Draw is an event's draw as published: before it, the commitment, the
// times and the number of entrants; after it, the seed too and the tickets
// in drawn order.
type Draw struct {
	Commitment      string
	PrequeueOpensAt time.Time
	DrawAt          time.Time // the queue's opening
	Entrants        int
	Drawn           bool
	Seed            string   // hex, once drawn
	Tickets         []string // in drawn order, once drawn
}
