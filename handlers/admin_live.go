package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/singleflight"
)

// liveJSON is the live page's figures as JSON: {"waiting", "admitted",
// "live_tokens", "held", "sold", "blocked", "free", "revenue", "currency",
// "grades": [{"code", "sold", "held", "free", "blocked"}],
// "orders_last_minute", "payment_failures", "refunds"} (README, "The live
// page").
func liveJSON(f views.LiveFigures) map[string]any {
	grades := make([]map[string]any, len(f.Sale.Grades))
	for i, g := range f.Sale.Grades {
		grades[i] = map[string]any{"code": g.Code, "sold": g.Sold, "held": g.Held, "free": g.Free, "blocked": g.Blocked}
	}
	return map[string]any{
		"waiting": f.Queue.Waiting, "admitted": f.Queue.AdmittedTotal, "live_tokens": f.Queue.LiveTokens,
		"held": f.Sale.Held, "sold": f.Sale.Sold, "blocked": f.Sale.Blocked, "free": f.Sale.Free,
		"revenue": f.Sale.Revenue, "currency": f.Sale.Currency, "grades": grades,
		"orders_last_minute": f.Sale.OrdersLastMinute, "payment_failures": f.Sale.PaymentFailures, "refunds": f.Sale.Refunds,
	}
}

// liveFigures shares the live page's figures of each event among all its
// watchers on this instance: they are read at most once per admission tick
// (one QueueStats and one SaleFigures call: two Redis round trips and one
// PostgreSQL statement), by one request while the others wait for its
// answer, however many admins watch.
type liveFigures struct {
	reads singleflight.Group
	mu    sync.Mutex
	last  map[int64]liveRead
}

// liveRead is one read of an event's figures and when it was made.
type liveRead struct {
	at      time.Time
	figures views.LiveFigures
}

// liveFigures returns the event's figures, read in the current tick or
// now (under a context that outlives the request of the one who reads them
// for all).
func (s *Server) liveFigures(ctx context.Context, id int64) (views.LiveFigures, error) {
	lf := &s.live
	now, tick := s.Now(), s.queueHub.tick()
	lf.mu.Lock()
	r, ok := lf.last[id]
	lf.mu.Unlock()
	if ok && boxoffice.TickIndex(r.at, tick) == boxoffice.TickIndex(now, tick) {
		return r.figures, nil
	}
	ctx = context.WithoutCancel(ctx)
	v, err, _ := lf.reads.Do(strconv.FormatInt(id, 10), func() (any, error) {
		st, err := s.Queue.QueueStats(ctx, id)
		if err != nil {
			return nil, err
		}
		sale, err := s.Holds.SaleFigures(ctx, id)
		if err != nil {
			return nil, err
		}
		f := views.LiveFigures{Queue: st, Sale: sale}
		lf.mu.Lock()
		if lf.last == nil {
			lf.last = map[int64]liveRead{}
		}
		lf.last[id] = liveRead{at: now, figures: f}
		lf.mu.Unlock()
		return f, nil
	})
	if err != nil {
		return views.LiveFigures{}, err
	}
	return v.(views.LiveFigures), nil
}

// handleAdminLive handles GET /admin/events/:id/live: the event's waiting
// room and sale for admins (queue length, admitted, live entry tokens,
// achieved and set rate, paused; seats sold, held, blocked and free in
// total and by grade, revenue, the last minute's orders, failed payments,
// refunds), as a page, the figures' fragment for htmx's poll, or JSON
// (liveJSON). The figures are shared by every watcher for a tick
// (Server.liveFigures). The event is read from PostgreSQL, never the
// cache: the settings shown are the ones the admitter reads at its next
// tick.
func (s *Server) handleAdminLive(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	e, err := s.Events.FindEventByID(ctx, id)
	if err != nil {
		return err
	}
	f, err := s.liveFigures(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case wantsJSON(c):
		return answerJSON(c, http.StatusOK, liveJSON(f))
	case isHTMX(c):
		return render(c, http.StatusOK, views.AdminLiveStats(e, f))
	}
	f.Broadcast = s.latestBroadcast(ctx, id)
	return render(c, http.StatusOK, views.AdminLivePage(e, f, views.AdmissionForm{Rate: strconv.Itoa(e.AdmissionRate)}))
}

// handleAdminAdmission handles POST /admin/events/:id/admission: form
// fields paused ("true" or "false") and/or rate (fans per second) change
// the event's admission, taking effect at the admitter's next tick; a
// pause or resume reaches the waiting room's joins at once. JSON:
// 200 {"paused", "rate"}; HTML: 303 to the live page; 422 with the reasons.
func (s *Server) handleAdminAdmission(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	pausedIn, rateIn := strings.TrimSpace(c.FormValue("paused")), strings.TrimSpace(c.FormValue("rate"))
	paused, rate, err := parseAdmission(pausedIn, rateIn)
	var e *boxoffice.Event
	if err == nil {
		e, err = s.Events.SetAdmission(ctx, id, paused, rate)
	}
	var invalid *boxoffice.Error
	if errors.As(err, &invalid) && invalid.Code == boxoffice.EINVALID && !wantsJSON(c) {
		ev, ferr := s.Events.FindEventByID(ctx, id)
		if ferr != nil {
			return ferr
		}
		f, ferr := s.liveFigures(ctx, id)
		if ferr != nil {
			return ferr
		}
		f.Broadcast = s.latestBroadcast(ctx, id)
		return render(c, http.StatusUnprocessableEntity, views.AdminLivePage(ev, f, views.AdmissionForm{Rate: rateIn, Errors: views.ErrorFields(ctx, err)}))
	} else if err != nil {
		return err
	}
	s.LiveEvents.Forget(id)
	if paused != nil {
		// Stored already: should Redis not take it now, the next admission
		// tick publishes it.
		if err := s.Queue.SetPaused(ctx, id, e.Paused); err != nil {
			s.Logger.Warn("admission: tell the waiting room", "event", id, "err", err)
		}
	}
	if wantsJSON(c) {
		return answerJSON(c, http.StatusOK, map[string]any{"paused": e.Paused, "rate": e.AdmissionRate})
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/admin/events/%d/live", id))
}

// parseAdmission reads the admission form's fields; an empty field is nil
// (kept as it is). Errors: EINVALID naming "paused" or "rate".
func parseAdmission(pausedIn, rateIn string) (*bool, *int, error) {
	var paused *bool
	var rate *int
	f := map[string]boxoffice.Msg{}
	if pausedIn != "" {
		if p, err := strconv.ParseBool(pausedIn); err != nil {
			f["paused"] = boxoffice.M("val_admission_paused")
		} else {
			paused = &p
		}
	}
	if rateIn != "" {
		if r, err := strconv.Atoi(rateIn); err != nil {
			f["rate"] = boxoffice.M("val_admission_rate_number", "Max", boxoffice.MaxAdmissionRate)
		} else {
			rate = &r
		}
	}
	return paused, rate, boxoffice.Invalid(f)
}

// handleAdminBroadcast handles POST /admin/events/:id/broadcast: form field
// message (1 to boxoffice.MaxBroadcastLen characters, plain text) becomes
// the event's broadcast, shown in its waiting room and on its seat map to
// every fan of every instance within a tick, and to those who open them
// later until replaced (BroadcastService). JSON: 200 {"message",
// "sent_at"}; HTML: 303 to the live page. Errors: 400 with a sentence for
// an empty or long message (nothing sent); 404 for an unknown event.
func (s *Server) handleAdminBroadcast(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	b, err := s.Broadcasts.Broadcast(ctx, boxoffice.AccountFromContext(ctx).ID, id, c.FormValue("message"))
	if err != nil {
		return err
	}
	if wantsJSON(c) {
		return answerJSON(c, http.StatusOK, map[string]any{"message": b.Message, "sent_at": b.SentAt})
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/admin/events/%d/live", id))
}

// latestBroadcast returns the event's broadcast message ("" for none, and
// when it cannot be read: a fan's page never fails for it; the failure is
// logged).
func (s *Server) latestBroadcast(ctx context.Context, eventID int64) string {
	b, err := s.Broadcasts.LatestBroadcast(ctx, eventID)
	if err != nil {
		s.Logger.Warn("read broadcast", "event", eventID, "err", err)
	}
	return b.Message
}
