package handlers

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// Session keys of the waiting room, one set per event: the queue's epoch
// from Join (so that a lost line is reported as QueueReset; see also
// queueEpochCookie), and the join sequence and position of the place when
// this session first saw it (the progress bar's start).
func queueEpochKey(eventID int64) string { return "queue_epoch:" + strconv.FormatInt(eventID, 10) }
func queueSeqKey(eventID int64) string   { return "queue_seq:" + strconv.FormatInt(eventID, 10) }
func queueStartKey(eventID int64) string { return "queue_start:" + strconv.FormatInt(eventID, 10) }

// queueEpochCookie is the cookie that keeps the queue's epoch from the
// fan's last join of an event, beside the session's copy, with Path
// /events/{id}/queue. Sessions live in Redis, so a Redis that loses the line
// loses the sessions' epochs with it; the cookie outlives that, so that a
// fan who logs in again is told that the line was reset, not that they are
// not in it. It grants nothing: a forged or stale value can at most make the
// waiting room say that the line was reset.
const queueEpochCookie = "boxoffice_queue_epoch"

// maxQueueEpochAge caps the epoch cookie's life, which otherwise ends with
// the sale.
const maxQueueEpochAge = 24 * time.Hour

// queuePlace is what a session keeps of its place in an event's line.
type queuePlace struct {
	epoch string // the session's, else the epoch cookie's
	seq   int64  // join sequence of the place that start belongs to
	start int    // position when this session joined
}

func (s *Server) queuePlace(c echo.Context, eventID int64) queuePlace {
	ctx := c.Request().Context()
	pl := queuePlace{
		epoch: s.Sessions.GetString(ctx, queueEpochKey(eventID)),
		seq:   s.Sessions.GetInt64(ctx, queueSeqKey(eventID)),
		start: s.Sessions.GetInt(ctx, queueStartKey(eventID)),
	}
	if pl.epoch == "" {
		pl.epoch = queueEpochFromCookie(c)
	}
	return pl
}

// queueEpochFromCookie returns the epoch cookie's value, or "" when there is
// none or it is not shaped as an epoch.
func queueEpochFromCookie(c echo.Context) string {
	ck, err := c.Cookie(queueEpochCookie)
	if err != nil || !boxoffice.ValidQueueEpoch(ck.Value) {
		return ""
	}
	return ck.Value
}

// keepQueuePlace stores what Join returned for event e: the epoch in the
// session and in the epoch cookie (until the sale ends, at most
// maxQueueEpochAge), and for a place this session has not seen yet its
// sequence and starting position. A waiting fan's entry token from an
// earlier turn is dropped, so that the next turn's token is taken from
// Redis.
func (s *Server) keepQueuePlace(c echo.Context, e *boxoffice.Event, p boxoffice.QueuePosition) {
	ctx := c.Request().Context()
	s.Sessions.Put(ctx, queueEpochKey(e.ID), p.Epoch)
	if boxoffice.ValidQueueEpoch(p.Epoch) {
		c.SetCookie(&http.Cookie{
			Name:     queueEpochCookie,
			Value:    p.Epoch,
			Path:     fmt.Sprintf("/events/%d/queue", e.ID),
			MaxAge:   max(int(min(e.SaleEndsAt.Sub(s.Now()), maxQueueEpochAge)/time.Second), 1),
			HttpOnly: true,
			Secure:   s.Sessions.Cookie.Secure,
			SameSite: http.SameSiteLaxMode,
		})
	}
	if p.Status != boxoffice.QueueWaiting {
		return
	}
	s.Sessions.Remove(ctx, entrySessionKey(e.ID))
	if s.Sessions.GetInt64(ctx, queueSeqKey(e.ID)) != p.Sequence {
		s.Sessions.Put(ctx, queueSeqKey(e.ID), p.Sequence)
		s.Sessions.Put(ctx, queueStartKey(e.ID), p.Position)
	}
}

// progress returns how far the fan at p has come since this session joined.
func (pl queuePlace) progress(p boxoffice.QueuePosition) float64 {
	if p.Status == boxoffice.QueueWaiting && p.Sequence != pl.seq {
		return 0
	}
	return p.Progress(pl.start)
}

// liveEvent returns the event from the short-lived cache for the fans' hot
// paths. Errors: ENOTFOUND, also for a draft seen by a fan.
func (s *Server) liveEvent(ctx context.Context, id int64) (*boxoffice.Event, error) {
	e, err := s.LiveEvents.Event(ctx, id)
	if err != nil {
		return nil, err
	}
	if e.Status == boxoffice.EventDraft && !boxoffice.AccountFromContext(ctx).IsAdmin() {
		return nil, errNoEvent
	}
	return e, nil
}

// queueNotOpen is the EQUEUENOTOPEN error for e at now, with the queue's
// opening and the sale's end (RFC 3339) in its details.
func queueNotOpen(e *boxoffice.Event, now time.Time) error {
	return &boxoffice.Error{
		Code:    boxoffice.EQUEUENOTOPEN,
		Msg:     views.QueueNotOpenMsg(e, now),
		Details: map[string]any{"queue_opens_at": e.QueueOpensAt, "sale_ends_at": e.SaleEndsAt},
	}
}

// positionJSON is a position as the contract's join and status answers
// have it: {"status", "position", "ahead", "eta_seconds", "paused"}.
func positionJSON(p boxoffice.QueuePosition) map[string]any {
	return map[string]any{
		"status":      p.Status,
		"position":    p.Position,
		"ahead":       p.Ahead,
		"eta_seconds": int64(math.Ceil(p.ETA.Seconds())),
		"paused":      p.Paused,
	}
}

// handleQueueJoin handles POST /events/:id/queue: the account takes a place
// in line, or keeps the one it has (CONTRACT.md). JSON: 200 with the
// position; HTML: 303 to the waiting room. Before the queue opens or after
// the sale ends: 409 queue_not_open, with a page saying when it opens.
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
	p, err := s.Queue.Join(ctx, id, account.ID, boxoffice.SessionKeyFromContext(ctx))
	if err != nil {
		return err
	}
	s.keepQueuePlace(c, e, p)
	if wantsJSON(c) {
		return c.JSON(http.StatusOK, positionJSON(p))
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/events/%d/queue", id))
}

// position returns where the account stands in the event's line. Errors:
// EQUEUENOTOPEN when the queue does not take fans now, ENOTINQUEUE.
func (s *Server) position(ctx context.Context, e *boxoffice.Event, pl queuePlace) (boxoffice.QueuePosition, error) {
	if now := s.Now(); !e.QueueOpen(now) {
		return boxoffice.QueuePosition{}, queueNotOpen(e, now)
	}
	return s.Queue.Position(ctx, e.ID, boxoffice.AccountFromContext(ctx).ID, pl.epoch)
}

// queueView turns a position, or the error that stood for one, into what
// the waiting room shows; other errors are returned.
func (s *Server) queueView(e *boxoffice.Event, p boxoffice.QueuePosition, err error, pl queuePlace) (views.QueueView, error) {
	v := views.QueueView{EventID: e.ID, Title: e.Title, TimeZone: e.TimeZone, OpensAt: e.QueueOpensAt}
	switch boxoffice.ErrorCode(err) {
	case "":
		v.Status, v.Position, v.Ahead, v.ETA, v.Paused = p.Status, p.Position, p.Ahead, p.ETA, p.Paused
		v.Progress = pl.progress(p)
		if v.Status == boxoffice.QueueNotInQueue && soldOut(e) {
			v.Status = boxoffice.QueueSoldOut
		}
	case boxoffice.EQUEUENOTOPEN:
		v.Status = views.QueueSaleEnded
		if e.Status == boxoffice.EventOnSale && s.Now().Before(e.QueueOpensAt) {
			v.Status = views.QueueNotOpen
		}
	case boxoffice.ENOTINQUEUE:
		v.Status = boxoffice.QueueNotInQueue
		switch {
		case boxoffice.NoEntryReason(err) == boxoffice.ReasonExpired:
			v.Status = boxoffice.QueueExpired
		case soldOut(e):
			v.Status = boxoffice.QueueSoldOut
		}
	default:
		return v, err
	}
	return v, nil
}

// soldOut reports whether the event (as counted when it was read) has no
// seat left.
func soldOut(e *boxoffice.Event) bool {
	left := 0
	for _, g := range e.Grades {
		left += g.SeatsLeft
	}
	return len(e.Grades) > 0 && left == 0
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
	pl := s.queuePlace(c, id)
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
	v, err := s.queueView(e, p, err, pl)
	if err != nil {
		return err
	}
	if v.Status == boxoffice.QueueNotInQueue && c.QueryParam("entry") == "expired" {
		v.Status = boxoffice.QueueExpired
	}
	return render(c, http.StatusOK, views.WaitingRoomPage(v))
}

// handleQueueStatus handles GET /events/:id/queue/status: the position as
// JSON (as the join answer; 404 not_in_queue, 409 queue_not_open), or else
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
		return c.JSON(http.StatusOK, positionJSON(p))
	}
	v, err := s.queueView(e, p, err, pl)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.QueueState(v))
}
