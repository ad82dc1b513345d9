package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// queuePlaceCookie is the cookie that keeps what the browser knows of its
// place in an event's line from the fan's last join, with Path
// /events/{id}/queue: "<epoch>.<account>.<sequence>.<start>", the queue's
// epoch, the account that joined, the place's join sequence and its
// position at the join (the progress bar's start; sequence and start are 0
// for a fan who was admitted at the join). The session holds none of it, so
// that a join writes no session: the cookie lets a position poll of a fan
// still waiting be answered from the instance's shared figures with no
// Redis round trip (store.Queue.Position), and it outlives Redis losing the
// line (and the sessions with it), so that a fan who logs in again is told
// that the line was reset, not that they are not in it. It grants nothing:
// a forged or stale value can at most make the waiting room show a wrong
// position or say that the line was reset, to the account that sent it. It
// is read only for the account that joined.
const queuePlaceCookie = "boxoffice_queue_epoch"

// maxQueuePlaceAge caps the place cookie's life, which otherwise ends with
// the sale.
const maxQueuePlaceAge = 24 * time.Hour

// queuePlace is what the browser keeps of its place in an event's line.
type queuePlace struct {
	boxoffice.QueuePlace
	start int // position at the join
}

// queuePlace returns the place cookie of the account asking, or the zero
// place when there is none, it is another account's or it is malformed.
func (s *Server) queuePlace(c echo.Context) queuePlace {
	v, ok := cookieValue(c.Request(), queuePlaceCookie)
	if !ok {
		return queuePlace{}
	}
	epoch, v, _ := strings.Cut(v, ".")
	owner, v, _ := strings.Cut(v, ".")
	seqText, startText, ok := strings.Cut(v, ".")
	acct := boxoffice.AccountFromContext(c.Request().Context())
	if !ok || strings.Contains(startText, ".") || !boxoffice.ValidQueueEpoch(epoch) || acct == nil {
		return queuePlace{}
	}
	var buf [20]byte
	seq, err1 := strconv.ParseInt(seqText, 10, 64)
	start, err2 := strconv.Atoi(startText)
	if owner != string(strconv.AppendInt(buf[:0], acct.ID, 10)) || err1 != nil || err2 != nil || seq < 0 || start < 0 {
		return queuePlace{}
	}
	return queuePlace{QueuePlace: boxoffice.QueuePlace{Epoch: epoch, Sequence: seq}, start: start}
}

// keepQueuePlace stores what Join returned for event e in the place cookie
// (until the sale ends, at most maxQueuePlaceAge): the epoch and, for a fan
// in line (waiting, or sold out with a place), the sequence and the starting
// position, kept from the cookie when it already names this place. A join
// that placed nobody (sold out, no sequence) stores nothing: there is no
// place to keep, and a cookie of its epoch would only make the status say
// that the line was reset should Redis lose it, to a fan never in it.
func (s *Server) keepQueuePlace(c echo.Context, e *boxoffice.Event, p boxoffice.QueuePosition) {
	if !boxoffice.ValidQueueEpoch(p.Epoch) || p.Status == boxoffice.QueueSoldOut && p.Sequence == 0 {
		return
	}
	var seq int64
	start := 0
	if p.Sequence > 0 {
		seq, start = p.Sequence, p.Position
		if pl := s.queuePlace(c); pl.Sequence == p.Sequence {
			start = pl.start
		}
	}
	acct := boxoffice.AccountFromContext(c.Request().Context())
	maxAge := max(int64(min(e.SaleEndsAt.Sub(s.Now()), maxQueuePlaceAge)/time.Second), 1)
	var buf [192]byte
	line := appendQueuePlaceCookie(buf[:0], p.Epoch, acct.ID, seq, start, e.ID, maxAge, s.Sessions.Cookie.Secure)
	h := c.Response().Header()
	h["Set-Cookie"] = append(h["Set-Cookie"], string(line))
}

// appendQueuePlaceCookie appends the Set-Cookie line of the place cookie
// "<epoch>.<account>.<seq>.<start>" of event e, as http.Cookie's String
// writes it (HttpOnly, SameSite=Lax, Secure when secure), written in one
// buffer: net/http's builds the value and the path as strings, then the
// line, and checks each byte of them, where every byte here is a digit, a
// constant or the epoch's (boxoffice.ValidQueueEpoch, checked by the caller:
// letters, digits, '-' and '_').
func appendQueuePlaceCookie(b []byte, epoch string, account, seq int64, start int, e, maxAge int64, secure bool) []byte {
	b = append(append(b, queuePlaceCookie+"="...), epoch...)
	b = strconv.AppendInt(append(b, '.'), account, 10)
	b = strconv.AppendInt(append(b, '.'), seq, 10)
	b = strconv.AppendInt(append(b, '.'), int64(start), 10)
	b = strconv.AppendInt(append(b, "; Path=/events/"...), e, 10)
	b = strconv.AppendInt(append(b, "/queue; Max-Age="...), maxAge, 10)
	b = append(b, "; HttpOnly"...)
	if secure {
		b = append(b, "; Secure"...)
	}
	return append(b, "; SameSite=Lax"...)
}

// progress returns how far the fan at p has come since this browser joined.
func (pl queuePlace) progress(p boxoffice.QueuePosition) float64 {
	if p.Status == boxoffice.QueueWaiting && p.Sequence != pl.Sequence {
		return 0
	}
	return p.Progress(pl.start)
}

// liveEvent returns the event from the short-lived cache for the fans' hot
// paths. Errors: ENOTFOUND, also for a draft seen by a fan.
func (s *Server) liveEvent(ctx context.Context, id int64) (*boxoffice.Event, error) {
	return visibleEvent(ctx, s.LiveEvents, id)
}

// visibleEvent returns the event from r, or errNoEvent for a draft to
// anyone but an admin.
func visibleEvent(ctx context.Context, r EventReader, id int64) (*boxoffice.Event, error) {
	e, err := r.Event(ctx, id)
	if err != nil {
		return nil, err
	}
	if e.Status == boxoffice.EventDraft && !boxoffice.AccountFromContext(ctx).IsAdmin() {
		return nil, errNoEvent
	}
	return e, nil
}

// queueNotOpen is the EQUEUENOTOPEN error for e at now, with the queue's
// opening, the pre-queue's if the event has one, and the sale's end (RFC
// 3339) in its details; its sentence names the first of them fans may join.
func queueNotOpen(e *boxoffice.Event, now time.Time) error {
	details := map[string]any{"queue_opens_at": e.QueueOpensAt, "sale_ends_at": e.SaleEndsAt}
	if e.HasPrequeue() {
		details["prequeue_opens_at"] = e.PrequeueOpensAt
	}
	return &boxoffice.Error{Code: boxoffice.EQUEUENOTOPEN, Msg: views.QueueNotOpenMsg(e, now), Details: details}
}

// positionAnswer is a position as the contract's join and status answers
// have it: {"status", "position", "ahead", "eta_seconds", "paused"}, and
// "ticket" and "entrants" in the pre-queue. A struct, not a map: encoding
// a map sorts its keys and boxes each value on every poll.
type positionAnswer struct {
	Ahead      int     `json:"ahead"`
	Entrants   *int    `json:"entrants,omitempty"`
	ETASeconds int64   `json:"eta_seconds"`
	Paused     bool    `json:"paused"`
	Position   int     `json:"position"`
	Status     string  `json:"status"`
	Ticket     *string `json:"ticket,omitempty"`
}

// positionJSON is p as the join and status answers have it.
func positionJSON(p boxoffice.QueuePosition) positionAnswer {
	a := positionAnswer{Status: p.Status, Position: p.Position, Ahead: p.Ahead,
		ETASeconds: int64(math.Ceil(p.ETA.Seconds())), Paused: p.Paused}
	if p.Status == boxoffice.QueuePrequeue {
		// copies, so that p itself stays off the heap on every other answer
		ticket, entrants := p.Ticket, p.Entrants
		a.Ticket, a.Entrants = &ticket, &entrants
	}
	return a
}

// answerPosition answers 200 with p as the join and status answers have it
// (positionJSON), the same bytes answerJSON writes (its fields in the
// struct's order, a newline after), appended by hand for a fan in line or
// past it: encoding/json's encoder, the boxed answer and its reflection
// over the struct were most of a waiting fan's poll beyond /healthz. A
// pre-queue answer (its ticket a string to escape), a status that is not
// plain lower case, ?pretty and echo's debug mode go through answerJSON.
func answerPosition(c echo.Context, p boxoffice.QueuePosition) error {
	a := positionJSON(p)
	if a.Ticket != nil || a.Entrants != nil || !plainStatus(a.Status) || c.Request().URL.RawQuery != "" || c.Echo().Debug {
		return answerJSON(c, http.StatusOK, a)
	}
	res := c.Response()
	if h := res.Header(); len(h[echo.HeaderContentType]) == 0 {
		h[echo.HeaderContentType] = jsonContentType
	}
	res.Status = http.StatusOK
	_, err := res.Write(a.appendJSON(make([]byte, 0, 96)))
	return err
}

// appendJSON appends a as encoding/json's Encoder writes it when it has no
// ticket nor entrants and a plainStatus: {"ahead":…,"eta_seconds":…,
// "paused":…,"position":…,"status":"…"} and a newline.
func (a positionAnswer) appendJSON(b []byte) []byte {
	b = append(b, `{"ahead":`...)
	b = strconv.AppendInt(b, int64(a.Ahead), 10)
	b = append(b, `,"eta_seconds":`...)
	b = strconv.AppendInt(b, a.ETASeconds, 10)
	b = append(b, `,"paused":`...)
	b = strconv.AppendBool(b, a.Paused)
	b = append(b, `,"position":`...)
	b = strconv.AppendInt(b, int64(a.Position), 10)
	b = append(b, `,"status":"`...)
	b = append(b, a.Status...)
	return append(b, "\"}\n"...)
}

// plainStatus reports whether status is lower-case ASCII letters and
// underscores (every boxoffice.Queue* status), which JSON writes unescaped.
func plainStatus(status string) bool {
	for i := 0; i < len(status); i++ {
		if b := status[i]; (b < 'a' || b > 'z') && b != '_' {
			return false
		}
	}
	return true
}

// handleQueueJoin handles POST /events/:id/queue: the account takes a place
// in line, or keeps the one it has (CONTRACT.md), in one Redis round trip
// (the join script); the place goes into the place cookie (a sold-out join
// places nobody and sets none), never into the
// session. JSON: 200 with the position; HTML: 303 to the waiting room. Before the queue opens or after
// the sale ends: 409 queue_not_open, with a page saying when it opens. An
// account that already bought the event's limit: 409 limit_reached. An
// event that asks a proof of work: 428 challenge_required without one, 403
// challenge_failed for a bad one (handlers/challenge.go).
func (s *Server) handleQueueJoin(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	e, err := s.liveEvent(ctx, id)
	if err != nil {
		return err
	}
	if now := s.Now(); !e.QueueOpen(now) {
		if wantsJSON(c) {
			return queueNotOpen(e, now)
		}
		return render(c, http.StatusConflict, views.QueueNotOpenPage(e, now))
	}
	account := boxoffice.AccountFromContext(ctx)
	req := boxoffice.JoinRequest{EventID: id, AccountID: account.ID, SessionKey: boxoffice.SessionKeyFromContext(ctx),
		Limit: e.MaxPerAccount}
	if e.PowDifficulty > 0 {
		var refusal *boxoffice.Error
		if req.Proof, req.ProofExpires, refusal = s.checkProof(c, e); refusal != nil {
			return s.challengeAnswer(c, e, refusal)
		}
	}
	if e.HasPrequeue() {
		if req, err = s.prequeueJoin(ctx, e, req); err != nil {
			return err
		}
	}
	p, err := s.Queue.Join(ctx, req)
	var refusal *boxoffice.Error
	if errors.As(err, &refusal) && refusal.Code == boxoffice.ECHALLENGEFAILED {
		return s.challengeAnswer(c, e, refusal)
	} else if err != nil {
		return err
	}
	s.keepQueuePlace(c, e, p)
	if wantsJSON(c) {
		return answerPosition(c, p)
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/events/%d/queue", id))
}

// prequeueJoin adds to req what a join of an event with a pre-queue needs:
// the draw's time, a fresh draw ticket (16 random bytes in hex, kept only
// if the account has none) and its rank under the event's seed.
func (s *Server) prequeueJoin(ctx context.Context, e *boxoffice.Event, req boxoffice.JoinRequest) (boxoffice.JoinRequest, error) {
	seed, err := s.Draws.Seed(ctx, e.ID)
	if err != nil {
		return req, err
	}
	b := make([]byte, boxoffice.DrawTicketBytes)
	rand.Read(b)
	req.DrawAt, req.Ticket = e.QueueOpensAt, hex.EncodeToString(b)
	req.Rank = boxoffice.DrawRank(seed, req.Ticket)
	return req, nil
}

// position returns where the account stands in the event's line, or its
// draw ticket in the pre-queue. A pre-queue entrant asking after the
// draw's time before anyone drew has the draw done first. An account
// neither in line nor past a turn of a sold-out event gets QueueSoldOut,
// as its join would (notInLine). Errors: EQUEUENOTOPEN when the queue does
// not take fans now, ENOTINQUEUE (Details["reason"] as Queue.Position has
// them; ReasonNone only while the event has seats to sell).
func (s *Server) position(ctx context.Context, e *boxoffice.Event, pl queuePlace) (boxoffice.QueuePosition, error) {
	now := s.Now()
	if !e.QueueOpen(now) {
		return boxoffice.QueuePosition{}, queueNotOpen(e, now)
	}
	acct := boxoffice.AccountFromContext(ctx).ID
	if e.InPrequeue(now) {
		ticket, n, err := s.Queue.PrequeueTicket(ctx, e.ID, acct)
		if err != nil {
			return boxoffice.QueuePosition{}, err
		}
		if ticket == "" {
			return notInLine(e)
		}
		return boxoffice.QueuePosition{Status: boxoffice.QueuePrequeue, Ticket: ticket, Entrants: n, Epoch: pl.Epoch}, nil
	}
	place := pl.QueuePlace
	place.SessionKey = boxoffice.SessionKeyFromContext(ctx)
	p, err := s.Queue.Position(ctx, e.ID, acct, place)
	if boxoffice.ErrorCode(err) == boxoffice.ENOTINQUEUE && e.HasPrequeue() {
		if drawn, derr := s.Queue.Draw(ctx, e.ID, e.QueueOpensAt); derr == nil && drawn {
			p, err = s.Queue.Position(ctx, e.ID, acct, place)
		}
	}
	if boxoffice.ErrorCode(err) == boxoffice.ENOTINQUEUE && boxoffice.NoEntryReason(err) == boxoffice.ReasonNone {
		return notInLine(e)
	}
	return p, err
}

// notInLine answers an account of event e that neither is in line nor
// has had a turn (ReasonNone): QueueSoldOut (no place, position 0) once e
// sold out (Event.SeatStatus, from the cached event the request already
// read: no round trip), as a join would answer it; else ENOTINQUEUE with
// ReasonNone.
func notInLine(e *boxoffice.Event) (boxoffice.QueuePosition, error) {
	if e.SeatStatus() == boxoffice.EventSoldOut {
		return boxoffice.QueuePosition{Status: boxoffice.QueueSoldOut}, nil
	}
	return boxoffice.QueuePosition{}, &boxoffice.Error{Code: boxoffice.ENOTINQUEUE, Details: map[string]any{"reason": boxoffice.ReasonNone}}
}

// queueView turns a position, or the error that stood for one, into what
// the waiting room shows; other errors are returned.
func (s *Server) queueView(ctx context.Context, e *boxoffice.Event, p boxoffice.QueuePosition, err error, pl queuePlace) (views.QueueView, error) {
	v := views.QueueView{EventID: e.ID, Title: e.Title, TimeZone: e.TimeZone, OpensAt: e.JoinOpensAt(), Prequeue: e.HasPrequeue(),
		Broadcast: s.latestBroadcast(ctx, e.ID)}
	switch boxoffice.ErrorCode(err) {
	case "":
		v.Status, v.Position, v.Ahead, v.ETA, v.Paused = p.Status, p.Position, p.Ahead, p.ETA, p.Paused
		if p.Status == boxoffice.QueuePrequeue {
			seed, err := s.Draws.Seed(ctx, e.ID)
			if err != nil {
				return v, err
			}
			v.Ticket, v.Entrants, v.Commitment, v.DrawAt = p.Ticket, p.Entrants, boxoffice.DrawCommitment(seed), e.QueueOpensAt
			v.ReloadIn = int(min(max(e.QueueOpensAt.Sub(s.Now()), 0), time.Minute)/time.Second) + 1
		}
		v.Progress = pl.progress(p)
		if v.Status == boxoffice.QueueNotInQueue && e.SeatStatus() == boxoffice.EventSoldOut {
			v.Status = boxoffice.QueueSoldOut
		}
	case boxoffice.EQUEUENOTOPEN:
		v.Status = views.QueueSaleEnded
		if e.Status == boxoffice.EventOnSale && s.Now().Before(e.QueueOpensAt) {
			v.Status = views.QueueNotOpen
		}
	case boxoffice.ENOTINQUEUE:
		v.Status = boxoffice.QueueNotInQueue
		switch boxoffice.NoEntryReason(err) {
		case boxoffice.ReasonExpired:
			v.Status = boxoffice.QueueExpired
		case boxoffice.ReasonDone:
			v.Status = boxoffice.QueueDone
		case boxoffice.ReasonLeft:
			v.Status = boxoffice.QueueLeft
		case boxoffice.ReasonOtherSession:
			v.Status = boxoffice.QueueOtherSession
		}
	default:
		return v, err
	}
	return v, nil
}

// readPosition reads the event of the request's :id, the session's place in
// its line and the position there. A nil event means err is the answer (no
// such event); otherwise err is the position's error, for the view to show.
func (s *Server) readPosition(c echo.Context) (*boxoffice.Event, queuePlace, boxoffice.QueuePosition, error) {
	id, err := eventID(c)
	if err != nil {
		return nil, queuePlace{}, boxoffice.QueuePosition{}, err
	}
	ctx := c.Request().Context()
	e, err := s.liveEvent(ctx, id)
	if err != nil {
		return nil, queuePlace{}, boxoffice.QueuePosition{}, err
	}
	pl := s.queuePlace(c)
	p, err := s.position(ctx, e, pl)
	return e, pl, p, err
}

// handleWaitingRoom handles GET /events/:id/queue: the waiting room. A
// reload keeps the place (the position is read, never taken again);
// ?entry=expired is where requireEntry sends a fan whose entry ran out.
func (s *Server) handleWaitingRoom(c echo.Context) error {
	e, pl, p, err := s.readPosition(c)
	if e == nil {
		return err
	}
	v, err := s.queueView(c.Request().Context(), e, p, err, pl)
	if err != nil {
		return err
	}
	if v.Status == boxoffice.QueueNotInQueue && c.QueryParam("entry") == "expired" {
		v.Status = boxoffice.QueueExpired
	}
	return render(c, http.StatusOK, views.WaitingRoomPage(v))
}

// handleQueueStatus handles GET /events/:id/queue/status: the position as
// JSON (as the join answer, 200 sold_out included; 404 not_in_queue with a
// reason, 409 queue_not_open), or else
// the waiting room's state fragment (200 whatever the state, so that
// htmx's poll swaps it in).
func (s *Server) handleQueueStatus(c echo.Context) error {
	e, pl, p, err := s.readPosition(c)
	if e == nil {
		return err
	}
	if wantsJSON(c) {
		if err != nil {
			return err
		}
		return answerPosition(c, p)
	}
	v, err := s.queueView(c.Request().Context(), e, p, err, pl)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.QueueState(v))
}
