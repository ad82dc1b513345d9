package handlers

import (
	"encoding/json"
	"net/url"
	"strconv"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/altcha"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// ChallengeTTL is how long a proof-of-work challenge may be solved and
// used: long enough for a slow phone, short enough that a script cannot
// stock solutions ahead of an opening.
const ChallengeTTL = 5 * time.Minute

// newChallenge returns a fresh ALTCHA challenge of event e's difficulty,
// bound to e and to the account asking, expiring after ChallengeTTL.
func (s *Server) newChallenge(c echo.Context, e *boxoffice.Event) altcha.Challenge {
	acct := boxoffice.AccountFromContext(c.Request().Context())
	params := url.Values{"event": {strconv.FormatInt(e.ID, 10)}, "account": {strconv.FormatInt(acct.ID, 10)}}
	return altcha.NewChallenge(s.ChallengeKey, int64(e.PowDifficulty), params, s.Now().Add(ChallengeTTL))
}

// challengeJSON is a fresh challenge for the join form of event e, as the
// widget's challengejson attribute; "" when the event asks no proof of
// work or nobody is logged in (the join asks for a log-in first).
func (s *Server) challengeJSON(c echo.Context, e *boxoffice.Event) string {
	if e.PowDifficulty == 0 || boxoffice.AccountFromContext(c.Request().Context()) == nil {
		return ""
	}
	b, _ := json.Marshal(s.newChallenge(c, e))
	return string(b)
}

// checkProof verifies the proof of work of a join of event e, the form or
// query field "altcha" (the widget's payload: base64 of the solution's
// JSON), and returns its challenge and expiry for the join script, which
// takes each proof once. Errors: ECHALLENGEREQUIRED (428) without a proof,
// with a fresh challenge in Details["challenge"]; ECHALLENGEFAILED (403)
// for a forged or expired proof, or one for another event or account. A
// refusal is answered by challengeAnswer.
func (s *Server) checkProof(c echo.Context, e *boxoffice.Event) (string, time.Time, *boxoffice.Error) {
	acct := boxoffice.AccountFromContext(c.Request().Context())
	payload := c.FormValue("altcha")
	if payload == "" {
		return "", time.Time{}, boxoffice.NewError(boxoffice.ECHALLENGEREQUIRED, "err_challenge_required")
	}
	sol, params, err := altcha.Verify(s.ChallengeKey, payload, s.Now())
	if err != nil || params.Get("event") != strconv.FormatInt(e.ID, 10) || params.Get("account") != strconv.FormatInt(acct.ID, 10) {
		return "", time.Time{}, boxoffice.NewError(boxoffice.ECHALLENGEFAILED, "err_challenge_failed")
	}
	exp, _ := strconv.ParseInt(params.Get("expires"), 10, 64)
	return sol.Challenge, time.Unix(exp, 0), nil
}

// challengeAnswer answers a join of event e refused for its proof of work
// (refusal, ECHALLENGEREQUIRED or ECHALLENGEFAILED) with a fresh
// challenge: to JSON clients as the refusal's "challenge" (the error
// handler writes it), to browsers in a page with the join form, with the
// refusal's status and sentence.
func (s *Server) challengeAnswer(c echo.Context, e *boxoffice.Event, refusal *boxoffice.Error) error {
	ch := s.newChallenge(c, e)
	if wantsJSON(c) {
		refusal.Details = map[string]any{"challenge": ch}
		return refusal
	}
	b, _ := json.Marshal(ch)
	return render(c, statuses[refusal.Code], views.JoinChallengePage(e, string(b), refusal.Msg))
}
