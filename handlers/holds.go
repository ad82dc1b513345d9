package handlers

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// sessNotice is the session key of the notice shown once on the seat map
// after a form post (views.EncodeNotice: untranslated, so that it shows in
// the language of the page that shows it).
const sessNotice = "notice"

// refusals are the error codes of a hold or release that the fan caused and
// the hold panel explains; any other error goes to the error handler.
// errSaleOver refuses holds once an event's sale has ended or been closed,
// even for fans whose entry token is still live.
var errSaleOver = boxoffice.NewError(boxoffice.ECONFLICT, "err_sale_over")

var refusals = map[string]bool{
	boxoffice.ESEATTAKEN:     true,
	boxoffice.ELIMITEXCEEDED: true,
	boxoffice.EBADSEAT:       true,
	boxoffice.ENOTFOUND:      true,
	boxoffice.ENOTTOGETHER:   true,
	boxoffice.EBADCHOICE:     true,
	boxoffice.ESEATINORDER:   true,
}

// handleHold handles POST /events/:id/holds: the form's repeated "seat"
// values are all held for the account, or none (Holds.Hold, one Lua script
// that checks the entry first), under the event's limit and hold TTL. With
// "grade" and "quantity" instead of "seat" (best available), the box office
// picks that many free seats of the grade side by side (Holds.HoldBest, one
// Lua script in the common case). JSON: 200 {"held": [...], "ttl_ms": n,
// "expires_at": RFC 3339}, or 409 seat_taken ("seats"), 422
// limit_exceeded ("limit", "owned", "held"), 400 bad_seat; best available:
// 409 not_together ("left", the grade's free seats as of at most a second
// ago, see gradeLeft), 400 bad_choice for an
// unknown grade, a quantity that is not a number from 1 to what the fan may
// still hold ("left"), or "seat" with "grade". htmx: the hold panel with a
// notice, at the same status. A form: 303 back to the seat map (to the list
// of the form's "section", or of the held seats' section; after a refused
// best-available hold, of the grade's first section, or the map's first
// section for an unknown grade) with the notice as a
// flash. A "section" that is not a section of the map: 400, and nothing is
// held.
func (s *Server) handleHold(c echo.Context) error {
	e, es, sh, err := s.seatMapRequest(c)
	if err != nil {
		return err
	}
	if !e.QueueOpen(s.Now()) {
		return errSaleOver
	}
	form, err := c.FormParams()
	if err != nil {
		return errBadForm
	}
	if err := es.checkSection(e, form.Get("section")); err != nil {
		return s.entryFirst(c, sh, err)
	}
	req := boxoffice.HoldRequest{
		EventID: e.ID, AccountID: sh.AccountID, SessionKey: sh.SessionKey, Limit: e.MaxPerAccount, TTL: e.HoldTTL,
	}
	var res boxoffice.HoldResult
	best := form.Has("grade") || form.Has("quantity")
	if best {
		res, err = s.holdBest(c.Request().Context(), req, form)
	} else {
		res, err = s.Holds.Hold(c.Request().Context(), req, form["seat"])
	}
	mine, answered, err := s.holdRefused(c, sh, res.Mine, err)
	if answered {
		return err
	}
	if wantsJSON(c) {
		return answerHold(c, res)
	}
	notice := views.HeldNotice(res.Added)
	if err != nil {
		notice = views.RefusedNotice(err)
	}
	seats, section := form["seat"], form.Get("section")
	if best {
		// Back to the list of the seats held, or after a refusal to a list
		// of the grade's seats, where the fan may choose by hand.
		if seats = res.Held; len(seats) == 0 {
			m := es.view(e)
			if section = m.SectionOfGrade(form.Get("grade")); section == "" && len(m.Sections) > 0 {
				// A grade the event does not have: the first section's
				// list, which shows the notice (the shared map cannot).
				section = m.Sections[0].Name
			}
		}
	}
	return s.holdChanged(c, e, es, mine, notice, err, section, seats)
}

// holdBest holds the best seats of the form's "grade" and "quantity"
// (Holds.HoldBest), refusing with EBADCHOICE a quantity that is not a whole
// number and a form that also names seats, before Redis is touched.
func (s *Server) holdBest(ctx context.Context, req boxoffice.HoldRequest, form url.Values) (boxoffice.HoldResult, error) {
	if form.Has("seat") {
		return boxoffice.HoldResult{}, boxoffice.NewError(boxoffice.EBADCHOICE, "best_with_seat")
	}
	quantity, err := strconv.Atoi(form.Get("quantity"))
	if err != nil {
		return boxoffice.HoldResult{}, boxoffice.NewError(boxoffice.EBADCHOICE, "best_quantity_range", "Max", req.Limit)
	}
	res, err := s.Holds.HoldBest(ctx, req, form.Get("grade"), quantity)
	if boxoffice.ErrorCode(err) == boxoffice.ENOTTOGETHER {
		err = s.gradeLeft(ctx, req.EventID, form.Get("grade"), quantity, err)
	}
	return res, err
}

// gradeLeftWait is how long a not_together answer waits for EventPages to
// reload an expired copy of the event before it takes the last copy: the
// reload reads PostgreSQL, whose pool the paying fans keep busy near the
// sell-out (a quick load test's not_together answers waited 5.5 s for it).
const gradeLeftWait = 100 * time.Millisecond

// gradeLeft returns a best-available refusal (ENOTTOGETHER, notTogether)
// whose Details["left"] and sentence give the free seats of the grade (seats
// neither sold, blocked nor held, Grade.SeatsLeft) as EventPages shares them
// per event: as of at most its TTL ago (a second as served), at no Redis
// round trip or query for the request unless that copy has expired, and
// then waiting at most gradeLeftWait for the reload (else the last copy). The
// store's own figure counts only the runs its search read, far fewer near
// the sell-out. With none left the sentence says so (best_none_left). When
// the event's figures cannot be read, notTogether is returned as it is.
func (s *Server) gradeLeft(ctx context.Context, eventID int64, grade string, quantity int, notTogether error) error {
	ctx, cancel := context.WithTimeout(ctx, gradeLeftWait)
	defer cancel()
	e, err := s.EventPages.Event(ctx, eventID)
	if err != nil {
		return notTogether
	}
	for _, g := range e.Grades {
		if g.Code != grade {
			continue
		}
		msg := boxoffice.M("best_not_together", "Quantity", quantity, "Count", g.SeatsLeft)
		if g.SeatsLeft == 0 {
			msg = boxoffice.M("best_none_left")
		}
		return &boxoffice.Error{Code: boxoffice.ENOTTOGETHER, Msg: msg, Details: map[string]any{"left": g.SeatsLeft}}
	}
	return notTogether
}

// holdRefused decides what a hold or release that failed with err answers:
// a refusal the hold panel explains, shown with mine (answered false: the
// caller shows it), or the answer itself (answered true). A missing
// entry is answered as noEntry does; a seat or a best-available choice that
// is not one is refused only once the entry is known to be there (one round
// trip, only on bad input), and then the htmx panel shows the account's
// holds as SeatStatuses reads them.
func (s *Server) holdRefused(c echo.Context, sh boxoffice.Shopper, mine boxoffice.SeatMapState, err error) (boxoffice.SeatMapState, bool, error) {
	switch boxoffice.ErrorCode(err) {
	case "":
		return mine, false, nil
	case boxoffice.ENOENTRYTOKEN:
		return mine, true, s.noEntry(c, sh.EventID, err)
	case boxoffice.EBADSEAT, boxoffice.EBADCHOICE:
		if !isHTMX(c) {
			if err := s.entryFirst(c, sh, nil); err != nil {
				return mine, true, err
			}
			break
		}
		st, stErr := s.Holds.SeatStatuses(c.Request().Context(), sh)
		if stErr != nil {
			return mine, true, s.noEntry(c, sh.EventID, stErr)
		}
		mine = st
	}
	if wantsJSON(c) || !refusals[boxoffice.ErrorCode(err)] {
		return mine, true, err
	}
	return mine, false, err
}

// holdAnswer is a hold's JSON answer: {"held": [labels], "ttl_ms": n,
// "expires_at": RFC 3339}. ExpiresAt is formatted as time.Time's
// MarshalJSON would (RFC 3339 with nanoseconds, UTC), so that the encoder
// neither calls a marshaler nor checks its output on every hold.
type holdAnswer struct {
	ExpiresAt string   `json:"expires_at"`
	Held      []string `json:"held"`
	TTLMs     int64    `json:"ttl_ms"`
}

// answerHold answers a hold granted as JSON (holdAnswer): appended by hand
// (appendHoldJSON) when every label is plainLabel's, which encoding/json
// writes as it is, and without ?pretty or echo's debug mode; else through
// answerJSON. The encoder's reflection over the answer was a tenth of a
// hold's CPU beyond the store's.
func answerHold(c echo.Context, res boxoffice.HoldResult) error {
	if !slices.ContainsFunc(res.Held, func(l string) bool { return !plainLabel(l) }) && c.Request().URL.RawQuery == "" && !c.Echo().Debug {
		r := c.Response()
		if h := r.Header(); len(h[echo.HeaderContentType]) == 0 {
			h[echo.HeaderContentType] = jsonContentType
		}
		r.Status = http.StatusOK
		_, err := r.Write(appendHoldJSON(make([]byte, 0, 64+16*len(res.Held)), res))
		return err
	}
	return answerJSON(c, http.StatusOK, holdAnswer{Held: res.Held, TTLMs: res.TTL.Milliseconds(), ExpiresAt: res.ExpiresAt.UTC().Format(time.RFC3339Nano)})
}

// appendHoldJSON appends the holdAnswer of res as encoding/json's Encoder
// writes it, labels being plainLabel's: {"expires_at":"…","held":[…],
// "ttl_ms":…} and a newline.
func appendHoldJSON(b []byte, res boxoffice.HoldResult) []byte {
	b = append(b, `{"expires_at":"`...)
	b = res.ExpiresAt.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","held":`...)
	if res.Held == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, l := range res.Held {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(append(b, '"'), l...), '"')
		}
		b = append(b, ']')
	}
	b = append(b, `,"ttl_ms":`...)
	b = strconv.AppendInt(b, res.TTL.Milliseconds(), 10)
	return append(b, "}\n"...)
}

// plainLabel reports whether label is printable ASCII that encoding/json
// writes unescaped: neither a quote, a backslash, nor <, > or &, which its
// Encoder escapes for HTML.
func plainLabel(label string) bool {
	for i := 0; i < len(label); i++ {
		switch b := label[i]; {
		case b < 0x20 || b >= 0x7f, b == '"', b == '\\', b == '<', b == '>', b == '&':
			return false
		}
	}
	return true
}

// handleRelease handles DELETE /events/:id/holds/:seat and its form
// fallback POST /events/:id/holds/:seat/release: the account's own hold on
// the seat ends (Holds.Release, a compare-and-delete in a Lua script that
// checks the entry first), and nobody else's ever does. JSON: 200 {"released": label}; 404 not_found when the account
// does not hold the seat (free, expired, sold or another fan's), changing
// nothing; 409 seat_in_order with "order_id" when the seat is in the
// account's order awaiting payment, changing nothing; 400 bad_seat. htmx: the hold panel with a notice. Otherwise: 303
// to the seat map with the notice as a flash.
func (s *Server) handleRelease(c echo.Context) error {
	e, es, sh, err := s.seatMapRequest(c)
	if err != nil {
		return err
	}
	label := c.Param("seat")
	if c.Request().URL.RawPath != "" { // echo routes on the escaped path then
		if label, err = url.PathUnescape(label); err != nil {
			return s.entryFirst(c, sh, boxoffice.NewError(boxoffice.EBADSEAT, "hold_bad_seat"))
		}
	}
	mine, err := s.Holds.Release(c.Request().Context(), sh, label)
	mine, answered, err := s.holdRefused(c, sh, mine, err)
	if answered {
		return err
	}
	if wantsJSON(c) {
		return answerJSON(c, http.StatusOK, map[string]any{"released": label})
	}
	notice := views.ReleasedNotice(label)
	if err != nil {
		notice = views.RefusedNotice(err)
	}
	return s.holdChanged(c, e, es, mine, notice, err, "", []string{label})
}

// holdChanged answers a hold or release of seats for people: for htmx, the
// hold panel with the notice and the account's own part of the seat map as
// the hold or release read it (no other round trip), at refused's status
// (200 when it is nil); otherwise the notice as a flash and 303 to the list
// of section, or of the first seat's section, where the notice and the
// fan's holds show (the shared seat map page shows neither without
// JavaScript); to the seat map if no seat is on the map.
func (s *Server) holdChanged(c echo.Context, e *boxoffice.Event, es *eventSeats, mine boxoffice.SeatMapState, notice views.Notice, refused error, section string, seats []string) error {
	ctx := c.Request().Context()
	if isHTMX(c) {
		status := http.StatusOK
		if refused != nil {
			status = s.statusOf(refused)
		}
		return render(c, status, views.HoldPanel(views.HoldPanelData{Map: es.view(e), State: mine, Limit: e.MaxPerAccount, Notice: notice}))
	}
	s.Sessions.Put(ctx, sessNotice, views.EncodeNotice(notice))
	if section == "" && len(seats) > 0 {
		section = es.view(e).SectionOf(seats[0])
	}
	return c.Redirect(http.StatusSeeOther, views.SectionSeatsURL(e.ID, section))
}

// popNotice takes the flash notice out of the session (none: the zero Notice).
func (s *Server) popNotice(ctx context.Context) views.Notice {
	return views.DecodeNotice(s.Sessions.PopString(ctx, sessNotice))
}
