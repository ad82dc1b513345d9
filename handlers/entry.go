package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// entrySessionKey is where a session keeps its entry token for an event.
func entrySessionKey(eventID int64) string { return "entry:" + strconv.FormatInt(eventID, 10) }

// requireEntry lets a request for an event's seat map, holds or checkout
// through only if the session holds a live entry token for that event that
// was issued to this session (DESIGN rule 5). The first such request after
// admission takes the token from Redis into the session; every request
// checks it against Redis. Without one: 403 no_entry_token, or for a page, a
// page that explains and links back to the queue; a fan whose token expired
// is sent back to the queue page.
func (s *Server) requireEntry(next echo.HandlerFunc) echo.HandlerFunc {
	return requireAccount(func(c echo.Context) error {
		id, err := eventID(c)
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		account, sessionKey := boxoffice.AccountFromContext(ctx), boxoffice.SessionKeyFromContext(ctx)
		token := s.Sessions.GetString(ctx, entrySessionKey(id))
		if token == "" {
			if token, _, err = s.Queue.EntryToken(ctx, id, account.ID, sessionKey); err != nil {
				return s.noEntry(c, id, err)
			}
			s.Sessions.Put(ctx, entrySessionKey(id), token)
		}
		if err := s.Queue.CheckEntry(ctx, id, account.ID, sessionKey, token); err != nil {
			s.Sessions.Remove(ctx, entrySessionKey(id))
			return s.noEntry(c, id, err)
		}
		return next(c)
	})
}

// noEntry answers a request that has no live entry token: the error for
// JSON and htmx, a redirect to the queue page when the token expired, and
// otherwise a page that explains and links back to the queue.
func (s *Server) noEntry(c echo.Context, eventID int64, err error) error {
	var e *boxoffice.Error
	if !errors.As(err, &e) || e.Code != boxoffice.ENOENTRYTOKEN {
		return err
	}
	reason := boxoffice.NoEntryReason(err)
	if wantsJSON(c) || isHTMX(c) || c.Request().Method != http.MethodGet {
		return &boxoffice.Error{Code: e.Code, Message: views.NoEntryMessage(reason), Details: e.Details}
	}
	if reason == boxoffice.ReasonExpired {
		return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/events/%d/queue?entry=expired", eventID))
	}
	return render(c, http.StatusForbidden, views.NoEntryPage(eventID, reason))
}
