package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/altcha"
)

// testChallengeKey signs the test servers' proof-of-work challenges.
var testChallengeKey = []byte("the test servers' challenge key, 32+ bytes")

// askProof sets the event's proof-of-work difficulty (low, so that tests
// solve fast) and waits until the server's event cache has it.
func (a *testApp) askProof(t *testing.T, eventID int64, difficulty int) {
	t.Helper()
	if _, err := a.DB.Pool.Exec(context.Background(), `UPDATE event SET pow_difficulty = $2 WHERE id = $1`, eventID, difficulty); err != nil {
		t.Fatalf("set pow_difficulty: %v", err)
	}
	waitFor(t, "the event cache to see the difficulty", func() bool {
		e, err := a.Srv.LiveEvents.Event(context.Background(), eventID)
		return err == nil && e.PowDifficulty == difficulty
	})
}

// challenge asks the client's fan's join of the event without a proof and
// returns the challenge of the 428 challenge_required answer.
func challenge(t *testing.T, c *client, eventID int64) altcha.Challenge {
	t.Helper()
	resp := c.do("POST", fmt.Sprintf("/events/%d/queue", eventID), url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusPreconditionRequired)
	var body struct {
		Error     string           `json:"error"`
		Message   string           `json:"message"`
		Challenge altcha.Challenge `json:"challenge"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Error != boxoffice.ECHALLENGEREQUIRED || body.Message == "" || body.Challenge.Algorithm != altcha.Algorithm {
		t.Fatalf("join without a proof = %+v, want challenge_required with a sentence and a SHA-256 challenge", body)
	}
	return body.Challenge
}

// solve returns the payload that solves ch.
func solve(t *testing.T, ch altcha.Challenge) string {
	t.Helper()
	p, ok := altcha.Solve(ch)
	if !ok {
		t.Fatalf("no number solves %+v", ch)
	}
	return p
}

// notInLine fails the test if the account has a place in the event's line.
func (a *testApp) notInLine(t *testing.T, eventID, accountID int64) {
	t.Helper()
	_, err := a.Srv.Queue.Position(context.Background(), eventID, accountID, boxoffice.QueuePlace{})
	if boxoffice.ErrorCode(err) != boxoffice.ENOTINQUEUE {
		t.Errorf("position after a refused join: %v, want not_in_queue", err)
	}
}

// An event that asks a proof of work refuses a join without one (428 with
// a challenge), with a forged, reused, expired one, or one for another
// event or account (403 with a sentence), and the refused fan has no
// place in line; a solved challenge joins once.
func TestQueue_Join_ProofOfWork(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev, other := app.saleEvent(t), app.saleEvent(t)
	app.askProof(t, ev.ID, 30)
	app.askProof(t, other.ID, 30)
	join := fmt.Sprintf("/events/%d/queue", ev.ID)
	refused := func(t *testing.T, c *client, acct *boxoffice.Account, payload string) {
		t.Helper()
		resp := c.do("POST", join, url.Values{"altcha": {payload}}, "Accept: application/json")
		wantStatus(t, resp, http.StatusForbidden)
		m := decode(t, resp)
		if m["error"] != boxoffice.ECHALLENGEFAILED || m["message"] == "" || m["challenge"] == nil {
			t.Errorf("join with a bad proof = %v, want challenge_failed with a sentence and a fresh challenge", m)
		}
		app.notInLine(t, ev.ID, acct.ID)
	}

	t.Run("Required", func(t *testing.T) {
		c, acct := app.newAccount(t, "noproof@example.com", boxoffice.RoleFan)
		if ch := challenge(t, c, ev.ID); ch.MaxNumber != 30 {
			t.Errorf("challenge maxnumber = %d, want the event's difficulty 30", ch.MaxNumber)
		}
		page := c.do("POST", join, url.Values{})
		wantStatus(t, page, http.StatusPreconditionRequired)
		d := doc(t, page)
		if testid(d, "join-challenge-why") == "" || d.Find(`altcha-widget[challengejson]`).Length() != 1 {
			t.Error("the browser's 428 page has no sentence or no widget with a challenge")
		}
		app.notInLine(t, ev.ID, acct.ID)
	})
	t.Run("Forged", func(t *testing.T) {
		c, acct := app.newAccount(t, "forger@example.com", boxoffice.RoleFan)
		forged := altcha.NewChallenge([]byte("not the server's key"), 30,
			url.Values{"event": {strconv.FormatInt(ev.ID, 10)}, "account": {strconv.FormatInt(acct.ID, 10)}}, time.Now().Add(time.Minute))
		refused(t, c, acct, solve(t, forged))
		refused(t, c, acct, "not base64 at all")
	})
	t.Run("Expired", func(t *testing.T) {
		c, acct := app.newAccount(t, "late@example.com", boxoffice.RoleFan)
		old := altcha.NewChallenge(testChallengeKey, 30,
			url.Values{"event": {strconv.FormatInt(ev.ID, 10)}, "account": {strconv.FormatInt(acct.ID, 10)}}, time.Now().Add(-time.Second))
		refused(t, c, acct, solve(t, old))
	})
	t.Run("OtherAccount", func(t *testing.T) {
		c, acct := app.newAccount(t, "borrower@example.com", boxoffice.RoleFan)
		lender, _ := app.newAccount(t, "lender@example.com", boxoffice.RoleFan)
		refused(t, c, acct, solve(t, challenge(t, lender, ev.ID)))
	})
	t.Run("OtherEvent", func(t *testing.T) {
		c, acct := app.newAccount(t, "elsewhere@example.com", boxoffice.RoleFan)
		refused(t, c, acct, solve(t, challenge(t, c, other.ID)))
	})
	t.Run("OKThenReused", func(t *testing.T) {
		c, _ := app.newAccount(t, "solver@example.com", boxoffice.RoleFan)
		proof := solve(t, challenge(t, c, ev.ID))
		resp := c.do("POST", join, url.Values{"altcha": {proof}}, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		if m := decode(t, resp); m["status"] != boxoffice.QueueWaiting && m["status"] != boxoffice.QueueAdmitted {
			t.Errorf("join with a proof = %v, want a place", m)
		}
		resp = c.do("POST", join, url.Values{"altcha": {proof}}, "Accept: application/json")
		wantStatus(t, resp, http.StatusForbidden)
		if m := decode(t, resp); m["error"] != boxoffice.ECHALLENGEFAILED {
			t.Errorf("join with the proof again = %v, want challenge_failed", m)
		}
		page := c.do("POST", join, url.Values{"altcha": {proof}})
		wantStatus(t, page, http.StatusForbidden)
		if testid(doc(t, page), "join-challenge-why") == "" {
			t.Error("the browser's 403 page for a reused proof has no sentence")
		}
	})
}

// Hundreds of requests racing with one valid proof: exactly one joins, the
// others get 403 challenge_failed, round after round.
func TestQueue_Join_ProofReplayRace(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.saleEvent(t)
	app.askProof(t, ev.ID, 10)
	const racers, rounds = 200, 5
	for round := range rounds {
		c, _ := app.newAccount(t, fmt.Sprintf("racer%d@example.com", round), boxoffice.RoleFan)
		proof := solve(t, challenge(t, c, ev.ID))
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		for range racers {
			wg.Go(func() {
				resp, err := c.try("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{"altcha": {proof}}, "Accept: application/json")
				code := -1
				if err == nil {
					code = resp.StatusCode
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if codes[http.StatusOK] != 1 || codes[http.StatusForbidden] != racers-1 {
			t.Fatalf("round %d: answers %v to %d racers with one proof, want one 200 and %d 403", round, codes, racers, racers-1)
		}
		st, err := app.Srv.Queue.QueueStats(context.Background(), ev.ID)
		if err != nil || st.Joined != int64(round+1) {
			t.Fatalf("round %d: %d places handed out (%v), want %d", round, st.Joined, err, round+1)
		}
	}
}
