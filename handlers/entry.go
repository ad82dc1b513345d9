package handlers

import (
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
// was issued to this session (DESIGN rule 5): one Redis round trip. The
// first such request after an admission takes the token from Redis into the
// session (EntryToken checks the binding to this session); later ones check
// the session's token (CheckEntry), and one that holds an earlier turn's
// token takes the current one. Without one: 403 no_entry_token, or for a
// page, a page that explains and links back to the queue; a fan whose token
// expired is sent back to the queue page.
func (s *Server) requireEntry(next echo.HandlerFunc) echo.HandlerFunc {
	return requireAccount(func(c echo.Context) error {
		id, err := eventID(c)
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		account, sessionKey := boxoffice.AccountFromContext(ctx), boxoffice.SessionKeyFromContext(ctx)
		if token := s.Sessions.GetString(ctx, entrySessionKey(id)); token != "" {
			err := s.Queue.CheckEntry(ctx, id, account.ID, sessionKey, token)
			if err == nil {
				return next(c)
			}
			s.Sessions.Remove(ctx, entrySessionKey(id))
			if boxoffice.NoEntryReason(err) != boxoffice.ReasonMismatch {
				return s.noEntry(c, id, err)
			}
		}
		token, _, err := s.Queue.EntryToken(ctx, id, account.ID, sessionKey)
		if err != nil {
			return s.noEntry(c, id, err)
		}
		s.Sessions.Put(ctx, entrySessionKey(id), token)
		return next(c)
	})
}

// handleEntry handles GET /events/:id/entry (behind requireEntry): how long
// the session's entry lasts, as JSON {"ttl_ms": n}, a sentence for htmx
// (the waiting room shows it to an admitted fan), or a page.
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
		return c.JSON(http.StatusOK, map[string]any{"ttl_ms": ttl.Milliseconds()})
	}
	if isHTMX(c) {
		return render(c, http.StatusOK, views.EntryTime(ttl))
	}
	return render(c, http.StatusOK, views.EntryPage(id, ttl))
}

// noEntry answers a request that has no live entry token: the error for
// JSON and htmx (views words it by its reason), a redirect to the queue
// page when the token expired, and otherwise a page that explains and
// links back to the queue.
func (s *Server) noEntry(c echo.Context, eventID int64, err error) error {
	if boxoffice.ErrorCode(err) != boxoffice.ENOENTRYTOKEN {
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
