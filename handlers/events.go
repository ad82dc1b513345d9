package handlers

import (
	"net/http"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// eventID parses the :id path parameter. Errors: ENOTFOUND for anything but
// a positive integer, so that a malformed id is a 404 like an unknown one.
func eventID(c echo.Context) (int64, error) {
	return pathID(c, "err_no_event")
}

// errNoEvent answers for an event that does not exist, or that a fan may
// not see (a draft).
var errNoEvent = boxoffice.NewError(boxoffice.ENOTFOUND, "err_no_event")

// handleEvent handles GET /events/:id: the event with its grades, prices and
// seats left and held per grade and the status fans see (SeatStatus: also
// sold_out and all_taken; JSON as CONTRACT.md says), from the short-lived
// copy that counts live holds (EventPages, a second old at most): every fan
// opens it before joining, at the opening of a sale. Drafts are not shown.
func (s *Server) handleEvent(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	e, err := visibleEvent(c.Request().Context(), s.EventPages, id)
	if err != nil {
		return err
	}
	if wantsJSON(c) {
		lang := views.Lang(c.Request().Context())
		grades := make([]map[string]any, 0, len(e.Grades))
		for _, g := range e.Grades {
			grades = append(grades, map[string]any{
				"code": g.Code, "name": g.Name.In(lang), "price": g.Price, "seats_total": g.SeatsTotal, "seats_left": g.SeatsLeft,
				"seats_held": g.SeatsHeld,
			})
		}
		return answerJSON(c, http.StatusOK, map[string]any{
			"id": e.ID, "title": e.Title.In(lang), "venue": e.VenueName, "time_zone": e.TimeZone,
			"starts_at": e.StartsAt, "queue_opens_at": e.QueueOpensAt, "sale_ends_at": e.SaleEndsAt,
			"status": e.SeatStatus(), "limit": e.MaxPerAccount, "currency": e.Currency, "grades": grades,
		})
	}
	return render(c, http.StatusOK, views.EventPage(e, s.Now(), s.challengeJSON(c, e)))
}
