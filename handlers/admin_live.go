package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// liveJSON is the live page's figures as JSON.
func liveJSON(e *boxoffice.Event, st boxoffice.QueueStats) map[string]any {
	return map[string]any{
		"waiting": st.Waiting, "joined": st.Joined, "admitted": st.AdmittedTotal, "live_tokens": st.LiveTokens,
		"achieved_rate": st.AchievedRate, "rate": e.AdmissionRate, "paused": e.Paused, "sold_out": st.SoldOut,
	}
}

// handleAdminLive handles GET /admin/events/:id/live: the event's waiting
// room for admins (queue length, admitted, live entry tokens, achieved and
// set rate, paused), as a page, the figures' fragment for htmx's poll, or
// JSON. The event is read from PostgreSQL, never the cache: the settings
// shown are the ones the admitter reads at its next tick.
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
	st, err := s.Queue.QueueStats(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case wantsJSON(c):
		return c.JSON(http.StatusOK, liveJSON(e, st))
	case isHTMX(c):
		return render(c, http.StatusOK, views.AdminLiveStats(e, st))
	}
	return render(c, http.StatusOK, views.AdminLivePage(e, st, views.AdmissionForm{Rate: strconv.Itoa(e.AdmissionRate)}))
}

// handleAdminAdmission handles POST /admin/events/:id/admission: form
// fields paused ("true" or "false") and/or rate (fans per second) change
// the event's admission, taking effect at the admitter's next tick. JSON:
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
		st, ferr := s.Queue.QueueStats(ctx, id)
		if ferr != nil {
			return ferr
		}
		return render(c, http.StatusUnprocessableEntity, views.AdminLivePage(ev, st, views.AdmissionForm{Rate: rateIn, Errors: views.ErrorFields(ctx, err)}))
	} else if err != nil {
		return err
	}
	s.LiveEvents.Forget(id)
	if wantsJSON(c) {
		return c.JSON(http.StatusOK, map[string]any{"paused": e.Paused, "rate": e.AdmissionRate})
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
