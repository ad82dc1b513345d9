package handlers

import (
	"encoding/hex"
	"net/http"
	"slices"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// handleDraw handles GET /events/:id/draw, the pre-queue's draw for anyone
// to check (no log-in needed). JSON: {"commitment", "prequeue_opens_at",
// "draw_at", "entrants"}, plus "seed" (hex) and "tickets" (every draw
// ticket, in drawn order) once drawn; a page for people, with the fan's
// own ticket and place. Asked after the draw's time before anyone drew, it
// draws first. 404 not_found for an event without a pre-queue.
func (s *Server) handleDraw(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	e, err := s.liveEvent(ctx, id)
	if err != nil {
		return err
	}
	if !e.HasPrequeue() {
		return boxoffice.NewError(boxoffice.ENOTFOUND, "err_no_draw")
	}
	seed, err := s.Draws.Seed(ctx, id)
	if err != nil {
		return err
	}
	if !s.Now().Before(e.QueueOpensAt) {
		if _, err := s.Queue.Draw(ctx, id, e.QueueOpensAt); err != nil {
			return err
		}
	}
	drawn, entrants, tickets, err := s.Queue.DrawState(ctx, id)
	if err != nil {
		return err
	}
	d := boxoffice.Draw{Commitment: boxoffice.DrawCommitment(seed), PrequeueOpensAt: e.PrequeueOpensAt, DrawAt: e.QueueOpensAt,
		Entrants: entrants, Drawn: drawn}
	if drawn {
		d.Seed, d.Tickets = hex.EncodeToString(seed), tickets
		if d.Tickets == nil {
			d.Tickets = []string{}
		}
	}
	if wantsJSON(c) {
		m := map[string]any{"commitment": d.Commitment, "prequeue_opens_at": d.PrequeueOpensAt.Format(time.RFC3339),
			"draw_at": d.DrawAt.Format(time.RFC3339), "entrants": d.Entrants}
		if drawn {
			m["seed"], m["tickets"] = d.Seed, d.Tickets
		}
		return answerJSON(c, http.StatusOK, m)
	}
	v := views.DrawView{EventID: id, Title: e.Title, TimeZone: e.TimeZone, Draw: d}
	if a := boxoffice.AccountFromContext(ctx); a != nil {
		if v.MyTicket, _, err = s.Queue.PrequeueTicket(ctx, id, a.ID); err != nil {
			return err
		}
		if i := slices.Index(tickets, v.MyTicket); v.MyTicket != "" && i >= 0 {
			v.MyPlace = i + 1
		}
	}
	return render(c, http.StatusOK, views.DrawPage(v))
}
