package handlers

import (
	"net/http"
	"strconv"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// sessFlash is the session key of the flash code (views.FlashMessage) that
// the next admin page shows once, after a change and its redirect.
const sessFlash = "flash"

// handleAdmin handles GET /admin: the dashboard, with links to the venues
// and the events.
func (s *Server) handleAdmin(c echo.Context) error {
	ctx := c.Request().Context()
	venues, err := s.Venues.FindVenues(ctx)
	if err != nil {
		return err
	}
	events, err := s.Events.FindEvents(ctx, boxoffice.EventFilter{})
	if err != nil {
		return err
	}
	stuck, err := s.Orders.FindStuckOrders(ctx, 50)
	if err != nil {
		return err
	}
	collisions, err := s.Accounts.EmailCollisions(ctx)
	if err != nil {
		return err
	}
	sum := views.AdminSummary{Venues: len(venues), Stuck: stuck, Collisions: collisions}
	for _, e := range events {
		switch e.Status {
		case boxoffice.EventDraft:
			sum.Drafts++
		case boxoffice.EventOnSale:
			sum.OnSale++
		case boxoffice.EventClosed:
			sum.Closed++
		}
	}
	return render(c, http.StatusOK, views.AdminDashboard(sum))
}

// redirectWithFlash answers 303 to path, which shows the flash code once.
func (s *Server) redirectWithFlash(c echo.Context, path, flash string) error {
	s.Sessions.Put(c.Request().Context(), sessFlash, flash)
	return c.Redirect(http.StatusSeeOther, path)
}

// popFlash returns the session's flash code and forgets it.
func (s *Server) popFlash(c echo.Context) string {
	return s.Sessions.PopString(c.Request().Context(), sessFlash)
}

// pathID parses the :id path parameter. Errors: ENOTFOUND saying notFound
// for anything but a positive integer, so that a malformed id is a 404 like
// an unknown one.
func pathID(c echo.Context, notFound boxoffice.MsgID) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, boxoffice.NewError(boxoffice.ENOTFOUND, notFound)
	}
	return id, nil
}

// checkInput refuses request bodies over limit bytes with 413, then checks
// and parses the input within that limit (readableInput).
func checkInput(limit int) echo.MiddlewareFunc {
	bodyLimit := middleware.BodyLimit(strconv.Itoa(limit))
	return func(next echo.HandlerFunc) echo.HandlerFunc { return bodyLimit(readableInput(next)) }
}

// checkInputButImport is checkInput(MaxBodyBytes) on every route but the
// seat-map import, whose route runs checkInput(maxSeatMapUploadBytes) itself
// after requireAdmin: nothing reads that body until the account is known to
// be an admin's, so a visitor or a fan cannot make the server take in
// megabytes (they are refused with the body unread).
func checkInputButImport() echo.MiddlewareFunc {
	check := checkInput(MaxBodyBytes)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		checked := check(next)
		return func(c echo.Context) error {
			if c.Path() == seatMapImportPath {
				return next(c)
			}
			return checked(c)
		}
	}
}
