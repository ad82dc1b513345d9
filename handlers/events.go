package handlers

import (
	"net/http"
	"strconv"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// eventID parses the :id path parameter. Errors: ENOTFOUND for anything but
// a positive integer, so that a malformed id is a 404 like an unknown one.
func eventID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, boxoffice.Errorf(boxoffice.ENOTFOUND, "There is no such event.")
	}
	return id, nil
}

// handleEvent handles GET /events/:id: the event with its grades, prices and
// seats left per grade (JSON as CONTRACT.md says). Drafts are not shown.
func (s *Server) handleEvent(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	e, err := s.Events.FindEventByID(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if e.Status == boxoffice.EventDraft && !boxoffice.AccountFromContext(c.Request().Context()).IsAdmin() {
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "There is no such event.")
	}
	if wantsJSON(c) {
		grades := make([]map[string]any, 0, len(e.Grades))
		for _, g := range e.Grades {
			grades = append(grades, map[string]any{
				"code": g.Code, "name": g.Name, "price": g.Price, "seats_total": g.SeatsTotal, "seats_left": g.SeatsLeft,
			})
		}
		return c.JSON(http.StatusOK, map[string]any{
			"id": e.ID, "title": e.Title, "venue": e.VenueName, "time_zone": e.TimeZone,
			"starts_at": e.StartsAt, "queue_opens_at": e.QueueOpensAt, "sale_ends_at": e.SaleEndsAt,
			"status": e.Status, "limit": e.MaxPerAccount, "currency": e.Currency, "grades": grades,
		})
	}
	return render(c, http.StatusOK, views.EventPage(e, s.Now()))
}
