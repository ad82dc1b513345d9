package handlers

import (
	"fmt"
	"net/http"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// requireEntry lets a checkout request through only if the account holds a
// live entry token for the event that was issued (or moved by a rejoin) to
// this session (DESIGN rule 5): one Redis round trip. The seat map, its
// statuses, holds and releases check the entry in the same Redis step as
// their action instead (shopper). Without one: 403 no_entry_token, or for a
// page, a page that explains and links back to the queue; a fan whose
// token expired is sent back to the queue page.
func (s *Server) requireEntry(next echo.HandlerFunc) echo.HandlerFunc {
	return requireAccount(func(c echo.Context) error {
		id, err := eventID(c)
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		if err := s.Queue.CheckEntry(ctx, id, boxoffice.AccountFromContext(ctx).ID, boxoffice.SessionKeyFromContext(ctx)); err != nil {
			return s.noEntry(c, id, err)
		}
		return next(c)
	})
}

// shopper returns who asks for the event's seats: the account and the
// session key that its entry token must be bound to, which the store checks
// in the same step as the action. A session without a key holds no entry.
func shopper(c echo.Context, eventID int64) (boxoffice.Shopper, error) {
	ctx := c.Request().Context()
	sh := boxoffice.Shopper{EventID: eventID, AccountID: boxoffice.AccountFromContext(ctx).ID, SessionKey: boxoffice.SessionKeyFromContext(ctx)}
	if sh.SessionKey == "" {
		return sh, &boxoffice.Error{Code: boxoffice.ENOENTRYTOKEN, Details: map[string]any{"reason": boxoffice.ReasonNone}}
	}
	return sh, nil
}

// entryFirst answers a request refused for its input (a seat or section
// that is not one) as requireEntry would have before the input was read: a
// shopper without an entry is refused for that first (one round trip, only
// on bad input); otherwise refused is returned.
func (s *Server) entryFirst(c echo.Context, sh boxoffice.Shopper, refused error) error {
	if err := s.Queue.CheckEntry(c.Request().Context(), sh.EventID, sh.AccountID, sh.SessionKey); err != nil {
		return s.noEntry(c, sh.EventID, err)
	}
	return refused
}

// handleEntry handles GET /events/:id/entry: how long the session's entry
// lasts (one round trip, which checks it), as JSON {"ttl_ms": n}, a
// sentence for htmx (the waiting room shows it to an admitted fan), or a
// page.
func (s *Server) handleEntry(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	_, ttl, err := s.Queue.EntryToken(ctx, id, boxoffice.AccountFromContext(ctx).ID, boxoffice.SessionKeyFromContext(ctx))
	if err != nil {
		return s.noEntry(c, id, err)
	}
	if wantsJSON(c) {
		return answerJSON(c, http.StatusOK, map[string]any{"ttl_ms": ttl.Milliseconds()})
	}
	if isHTMX(c) {
		return render(c, http.StatusOK, views.EntryTime(ttl))
	}
	return render(c, http.StatusOK, views.EntryPage(id, ttl))
}

// noEntry answers a request that has no live entry token: the error for
// JSON and htmx (views words it by its reason), a redirect to the queue
// page when the token expired, and otherwise a page that explains and
// links back to the queue; for an event that does not exist or is a draft
// (to anyone but an admin), 404 not_found, whatever the reason.
func (s *Server) noEntry(c echo.Context, eventID int64, err error) error {
	if boxoffice.ErrorCode(err) != boxoffice.ENOENTRYTOKEN {
		return err
	}
	// The event comes from the instance's cache, read on refusals only.
	if _, err := s.liveEvent(c.Request().Context(), eventID); err != nil {
		return err
	}
	reason := boxoffice.NoEntryReason(err)
	if wantsJSON(c) || isHTMX(c) || c.Request().Method != http.MethodGet {
		return err
	}
	if reason == boxoffice.ReasonExpired {
		return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/events/%d/queue?entry=expired", eventID))
	}
	return render(c, http.StatusForbidden, views.NoEntryPage(eventID, reason))
}

// handleLeave handles POST /events/:id/leave, the "Leave the sale" button:
// the session's turn ends, with all the account's holds for the event, so
// that its place among the shoppers goes to the next fan in line (one
// script, Holds.Leave). JSON: 200 {"left": true}; a page: 303 to the event.
// Without a live entry token of this session: 403 no_entry_token; while the
// account has an order awaiting payment: 409 order_pending with "order_id"
// (a page says why); either way nothing changed.
func (s *Server) handleLeave(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	sh, err := shopper(c, id)
	if err == nil {
		err = s.Holds.Leave(c.Request().Context(), sh)
	}
	if err != nil {
		return s.noEntry(c, id, err)
	}
	if wantsJSON(c) {
		return answerJSON(c, http.StatusOK, map[string]any{"left": true})
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/events/%d", id))
}

// leaveAll ends the session's turns at every event whose sale is open, at
// log-out: a turn bound to another session of the account is not this
// log-out's to end (Holds.Leave refuses it), nor is a turn with an order
// awaiting payment, whose seats stay held for it. Errors: the events' read's
// or Redis's; a missing turn is none.
func (s *Server) leaveAll(c echo.Context) error {
	ctx := c.Request().Context()
	acct := boxoffice.AccountFromContext(ctx)
	key := boxoffice.SessionKeyFromContext(ctx)
	if acct == nil || key == "" {
		return nil
	}
	events, err := s.Events.FindEvents(ctx, boxoffice.EventFilter{Statuses: []string{boxoffice.EventOnSale}, Upcoming: true})
	if err != nil {
		return err
	}
	for _, e := range events {
		err := s.Holds.Leave(ctx, boxoffice.Shopper{EventID: e.ID, AccountID: acct.ID, SessionKey: key})
		if code := boxoffice.ErrorCode(err); code != "" && code != boxoffice.ENOENTRYTOKEN && code != boxoffice.EORDERPENDING {
			return err
		}
	}
	return nil
}
