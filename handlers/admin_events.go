package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// handleAdminEvents handles GET /admin/events: every event, whatever its
// status, with publish and close buttons.
func (s *Server) handleAdminEvents(c echo.Context) error {
	events, err := s.Events.FindEvents(c.Request().Context(), boxoffice.EventFilter{})
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AdminEvents(events, s.popFlash(c)))
}

// handleAdminEventNew handles GET /admin/events/new: the form of a new event
// with the defaults (boxoffice.NewEventInput). With ?venue_id=N (the venue
// select, or the "load grades" button, which send the whole form) it shows
// the values sent and one grade row per grade code of that venue's seats,
// keeping what was typed for those codes.
func (s *Server) handleAdminEventNew(c echo.Context) error {
	ctx := c.Request().Context()
	f := eventFormFromInput(boxoffice.NewEventInput())
	q := c.QueryParams()
	overlayEventForm(&f, q)
	if q.Has("venue_id") {
		if err := s.loadVenueGrades(ctx, &f); err != nil {
			return err
		}
	}
	return s.renderEventForm(c, http.StatusOK, f, len(f.Grades)+1)
}

// handleAdminEventCreate handles POST /admin/events: a draft event, 303 to
// its edit page; with action=add_grade, the form again with one more grade
// row; 422 with every reason at once and nothing saved.
func (s *Server) handleAdminEventCreate(c echo.Context) error {
	return s.saveEvent(c, nil)
}

// handleAdminEventEdit handles GET /admin/events/:id/edit: the event's form,
// times in its zone; with ?venue_id=N, as handleAdminEventNew, the values
// sent with that venue's grades.
func (s *Server) handleAdminEventEdit(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := eventID(c)
	if err != nil {
		return err
	}
	e, err := s.Events.FindEventByID(ctx, id)
	if err != nil {
		return err
	}
	f := eventForm(e)
	if f.Blocked, err = s.Blocks.BlockedSeats(ctx, id); err != nil {
		return err
	}
	q := c.QueryParams()
	overlayEventForm(&f, q)
	if q.Has("venue_id") {
		if err := s.loadVenueGrades(ctx, &f); err != nil {
			return err
		}
		withSeatCounts(&f, e)
	}
	f.Flash = s.popFlash(c)
	return s.renderEventForm(c, http.StatusOK, f, len(f.Grades)+1)
}

// handleAdminEventUpdate handles POST /admin/events/:id/edit: the event
// saved, 303 to its edit page. Times that still read as the saved ones keep
// their instants, so saving an unchanged form never moves a time. 422 with
// every reason; 409 with the form and the reason when sold tickets fix the
// venue or a grade's price; nothing is saved either way.
func (s *Server) handleAdminEventUpdate(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	e, err := s.Events.FindEventByID(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return s.saveEvent(c, e)
}

// saveEvent creates an event (prev nil) or updates prev from the posted form.
func (s *Server) saveEvent(c echo.Context, prev *boxoffice.Event) error {
	ctx := c.Request().Context()
	form, err := c.FormParams()
	if err != nil {
		return errBadForm
	}
	var f views.EventForm
	overlayEventForm(&f, form)
	if prev != nil {
		f.ID, f.Status = prev.ID, prev.Status
		withSeatCounts(&f, prev)
	}
	if form.Get("action") == "add_grade" {
		shown, _ := strconv.Atoi(form.Get("grade_rows"))
		return s.renderEventForm(c, http.StatusOK, f, shown+1)
	}

	fields := map[string]boxoffice.Msg{}
	in, unread := eventInput(f, prev, fields)
	in.Normalize()
	if err := addFields(fields, in.Validate()); err != nil {
		return err
	}
	if _, bad := fields["currency"]; !bad && s.PGCurrencies != nil && !slices.Contains(s.PGCurrencies, in.Currency) {
		fields["currency"] = boxoffice.M("val_currency_pg", "Currency", in.Currency, "Accepted", strings.Join(s.PGCurrencies, ", "))
	}
	for _, key := range unread {
		delete(fields, key)
	}
	status := http.StatusUnprocessableEntity
	if len(fields) == 0 {
		var e *boxoffice.Event
		flash := views.FlashEventCreated
		if prev == nil {
			e, err = s.Events.CreateEvent(ctx, in)
		} else {
			e, err = s.Events.UpdateEvent(ctx, prev.ID, in)
			flash = views.FlashEventSaved
		}
		var be *boxoffice.Error
		switch {
		case err == nil:
			return s.redirectWithFlash(c, eventEditPath(e.ID), flash)
		case errors.As(err, &be) && be.Code == boxoffice.ECONFLICT:
			f.Message = views.ErrorText(ctx, err)
			f.SoldGrades, _ = be.Details["grades"].([]string)
			status = http.StatusConflict
		default:
			if err := addFields(fields, err); err != nil {
				return err
			}
		}
	}
	f.Errors = views.SayFields(ctx, fields)
	return s.renderEventForm(c, status, f, len(f.Grades)+1)
}

// handleAdminEventPublish handles POST /admin/events/:id/publish: the draft
// goes on sale, 303 to next (a local path; the edit page by default); 409
// with the event's form saying why when it is not a draft.
func (s *Server) handleAdminEventPublish(c echo.Context) error {
	return s.setEventStatus(c, s.Events.PublishEvent, views.FlashEventPublish)
}

// handleAdminEventClose handles POST /admin/events/:id/close: the sale
// ends, 303 to next (a local path; the edit page by default); 409 with the
// event's form saying why when it is closed already.
func (s *Server) handleAdminEventClose(c echo.Context) error {
	return s.setEventStatus(c, s.Events.CloseEvent, views.FlashEventClosed)
}

func (s *Server) setEventStatus(c echo.Context, change func(context.Context, int64) (*boxoffice.Event, error), flash string) error {
	ctx := c.Request().Context()
	id, err := eventID(c)
	if err != nil {
		return err
	}
	_, err = change(ctx, id)
	if boxoffice.ErrorCode(err) == boxoffice.ECONFLICT {
		e, ferr := s.Events.FindEventByID(ctx, id)
		if ferr != nil {
			return ferr
		}
		f := eventForm(e)
		f.Message = views.ErrorText(ctx, err)
		return s.renderEventForm(c, http.StatusConflict, f, len(f.Grades)+1)
	} else if err != nil {
		return err
	}
	next := eventEditPath(id)
	if n := c.FormValue("next"); n != "" {
		next = localPath(n)
	}
	return s.redirectWithFlash(c, next, flash)
}

// renderEventForm renders the event form with the venues to choose from and
// at least rows grade rows, the empty ones after those typed.
func (s *Server) renderEventForm(c echo.Context, status int, f views.EventForm, rows int) error {
	venues, err := s.Venues.FindVenues(c.Request().Context())
	if err != nil {
		return err
	}
	f.Venues = venues
	f.Grades = padGrades(f.Grades, rows)
	return render(c, status, views.AdminEventForm(f))
}

// loadVenueGrades replaces the form's grade rows by one per grade code of
// the chosen venue's seats, in code order, keeping the row typed for a code
// and giving a new one the seat-map preview's colour. An unknown venue
// leaves the rows as they are (saving names it).
func (s *Server) loadVenueGrades(ctx context.Context, f *views.EventForm) error {
	id, err := strconv.ParseInt(f.VenueID, 10, 64)
	if err != nil || id <= 0 {
		return nil
	}
	seats, err := s.Venues.VenueSeats(ctx, id)
	if boxoffice.ErrorCode(err) == boxoffice.ENOTFOUND {
		return nil
	} else if err != nil {
		return err
	}
	codes := views.SeatGrades(seats)
	colors := views.GradeColors(codes)
	typed := map[string]views.GradeRow{}
	for _, g := range f.Grades {
		typed[g.Code] = g
	}
	f.Grades = nil
	for _, code := range codes {
		g, ok := typed[code]
		if !ok {
			g = views.GradeRow{Code: code, Color: colors[code]}
		}
		f.Grades = append(f.Grades, g)
	}
	return nil
}

// eventForm is the form of a saved event, with its grades' seat counts.
func eventForm(e *boxoffice.Event) views.EventForm {
	f := eventFormFromInput(e.Input())
	f.ID, f.Status = e.ID, e.Status
	withSeatCounts(&f, e)
	return f
}

// optionalLocalTime is boxoffice.FormatLocalTime, or "" for the zero time.
func optionalLocalTime(t time.Time, zone string) string {
	if t.IsZero() {
		return ""
	}
	return boxoffice.FormatLocalTime(t, zone)
}

// eventFormFromInput writes an input as the form shows it: times as
// datetime-local values in the event's zone (with their UTC offsets, which
// tell apart the two of a time that happens twice), TTLs in seconds, no cap
// as "".
func eventFormFromInput(in boxoffice.EventInput) views.EventForm {
	f := views.EventForm{
		Title: in.Title, Description: in.Description, TimeZone: in.TimeZone,
		StartsAt:        boxoffice.FormatLocalTime(in.StartsAt, in.TimeZone),
		QueueOpensAt:    boxoffice.FormatLocalTime(in.QueueOpensAt, in.TimeZone),
		PrequeueOpensAt: optionalLocalTime(in.PrequeueOpensAt, in.TimeZone),
		SaleEndsAt:      boxoffice.FormatLocalTime(in.SaleEndsAt, in.TimeZone),
		Currency:        in.Currency,
		MaxPerAccount:   strconv.Itoa(in.MaxPerAccount),
		HoldTTL:         strconv.Itoa(int(in.HoldTTL / time.Second)),
		TokenTTL:        strconv.Itoa(int(in.TokenTTL / time.Second)),
		AdmissionRate:   strconv.Itoa(in.AdmissionRate),
	}
	if in.VenueID > 0 {
		f.VenueID = strconv.FormatInt(in.VenueID, 10)
	}
	if in.MaxShoppers > 0 {
		f.MaxShoppers = strconv.Itoa(in.MaxShoppers)
	}
	if in.PowDifficulty > 0 {
		f.PowDifficulty = strconv.Itoa(in.PowDifficulty)
	}
	for _, g := range in.Grades {
		f.Grades = append(f.Grades, views.GradeRow{Code: g.Code, Name: g.Name, Price: strconv.FormatInt(g.Price, 10), Color: g.Color})
	}
	if loc, err := boxoffice.LoadTimeZone(in.TimeZone); err == nil {
		f.Offsets = map[string]string{}
		for key, t := range map[string]time.Time{"starts_at": in.StartsAt, "queue_opens_at": in.QueueOpensAt, "prequeue_opens_at": in.PrequeueOpensAt, "sale_ends_at": in.SaleEndsAt} {
			if !t.IsZero() {
				f.Offsets[key] = boxoffice.UTCOffset(t.In(loc))
			}
		}
	}
	return f
}

// withSeatCounts sets the seat counts of the form's grades that e has.
func withSeatCounts(f *views.EventForm, e *boxoffice.Event) {
	for i := range f.Grades {
		if g := e.Grade(f.Grades[i].Code); g != nil {
			f.Grades[i].SeatsTotal, f.Grades[i].SeatsLeft = g.SeatsTotal, g.SeatsLeft
		}
	}
}

// timeFields are the event form's times.
var timeFields = []string{"starts_at", "queue_opens_at", "prequeue_opens_at", "sale_ends_at"}

// overlayEventForm sets the form's values that form (a POST body or a
// query) holds; the grade rows when it holds any (grade_rows, the form's
// count of rows, is always sent), skipping rows left empty.
func overlayEventForm(f *views.EventForm, form url.Values) {
	for key, dst := range map[string]*boxoffice.Text{"title": &f.Title, "description": &f.Description} {
		overlayText(dst, key, form)
	}
	for key, dst := range map[string]*string{
		"venue_id": &f.VenueID, "time_zone": &f.TimeZone,
		"starts_at": &f.StartsAt, "queue_opens_at": &f.QueueOpensAt, "sale_ends_at": &f.SaleEndsAt,
		"prequeue_opens_at": &f.PrequeueOpensAt,
		"currency":          &f.Currency, "max_per_account": &f.MaxPerAccount, "hold_ttl": &f.HoldTTL,
		"token_ttl": &f.TokenTTL, "admission_rate": &f.AdmissionRate, "max_shoppers": &f.MaxShoppers,
		"pow_difficulty": &f.PowDifficulty,
	} {
		if form.Has(key) {
			*dst = form.Get(key)
		}
	}
	for _, key := range timeFields {
		if offset := form.Get(key + "_offset"); offset != "" {
			if f.Offsets == nil {
				f.Offsets = map[string]string{}
			}
			f.Offsets[key] = offset
		}
	}
	if !form.Has("grade_rows") {
		return
	}
	f.Grades = nil
	for i := range maxFormRows {
		get := func(field string) string { return strings.TrimSpace(form.Get(views.FieldKey("grades", i, field))) }
		g := views.GradeRow{Code: get("code"), Price: get("price"), Color: get("color")}
		overlayText(&g.Name, views.FieldKey("grades", i, "name"), form)
		if g.Code != "" || !g.Name.Trim().Empty() || g.Price != "" {
			f.Grades = append(f.Grades, g)
		}
	}
}

// overlayText sets the languages of a per-language text that form holds,
// one field per language of views.Langs (views.LangField: "title.ko").
func overlayText(dst *boxoffice.Text, field string, form url.Values) {
	for _, l := range views.Langs {
		if key := views.LangField(field, l); form.Has(key) {
			if *dst == nil {
				*dst = boxoffice.Text{}
			}
			(*dst)[l] = form.Get(key)
		}
	}
}

// eventInput reads the form into an event input, adding a reason to fields
// for each malformed number or time. prev, if not nil, is the saved event:
// a time that still reads as prev's keeps its instant
// (boxoffice.ReparseLocalTime). unread names the times that could not be
// read because the time zone is unknown (its own reason says so).
func eventInput(f views.EventForm, prev *boxoffice.Event, fields map[string]boxoffice.Msg) (in boxoffice.EventInput, unread []string) {
	in = boxoffice.EventInput{Title: f.Title, Description: f.Description, TimeZone: strings.TrimSpace(f.TimeZone), Currency: f.Currency}
	in.VenueID, _ = strconv.ParseInt(strings.TrimSpace(f.VenueID), 10, 64)
	var saved boxoffice.Event
	if prev != nil {
		saved = *prev
	}
	_, zoneErr := boxoffice.LoadTimeZone(in.TimeZone)
	for _, t := range []struct {
		key, value string
		prev       time.Time
		dst        *time.Time
	}{
		{"starts_at", f.StartsAt, saved.StartsAt, &in.StartsAt},
		{"queue_opens_at", f.QueueOpensAt, saved.QueueOpensAt, &in.QueueOpensAt},
		{"prequeue_opens_at", f.PrequeueOpensAt, saved.PrequeueOpensAt, &in.PrequeueOpensAt},
		{"sale_ends_at", f.SaleEndsAt, saved.SaleEndsAt, &in.SaleEndsAt},
	} {
		switch {
		case strings.TrimSpace(t.value) == "":
		case zoneErr != nil:
			unread = append(unread, t.key)
		default:
			at, err := boxoffice.ReparseLocalTime(t.value, in.TimeZone, f.Offsets[t.key], t.prev)
			if err != nil {
				fields[t.key] = boxoffice.ErrorMsg(err)
			}
			*t.dst = at
		}
	}
	in.MaxPerAccount = formInt(strings.TrimSpace(f.MaxPerAccount), "max_per_account", fields)
	in.HoldTTL = time.Duration(formInt(strings.TrimSpace(f.HoldTTL), "hold_ttl", fields)) * time.Second
	in.TokenTTL = time.Duration(formInt(strings.TrimSpace(f.TokenTTL), "token_ttl", fields)) * time.Second
	in.AdmissionRate = formInt(strings.TrimSpace(f.AdmissionRate), "admission_rate", fields)
	in.MaxShoppers = formInt(strings.TrimSpace(f.MaxShoppers), "max_shoppers", fields)
	in.PowDifficulty = formInt(strings.TrimSpace(f.PowDifficulty), "pow_difficulty", fields)
	for i, g := range f.Grades {
		price, err := strconv.ParseInt(g.Price, 10, 64)
		if err != nil && g.Price != "" {
			fields[views.FieldKey("grades", i, "price")] = boxoffice.M("val_price_whole")
		}
		in.Grades = append(in.Grades, boxoffice.Grade{Code: g.Code, Name: g.Name, Price: price, Color: g.Color})
	}
	return in, unread
}

// padGrades adds empty grade rows for the form to show at least shown rows
// (and minFormRows), at most maxFormRows.
func padGrades(rows []views.GradeRow, shown int) []views.GradeRow {
	for len(rows) < min(max(shown, minFormRows), maxFormRows) {
		rows = append(rows, views.GradeRow{})
	}
	return rows
}

// blocksFlash is the flash of a change of blocked seats that went through:
// what it did, or that it changed nothing.
func blocksFlash(action string, changed bool) string {
	switch {
	case action == boxoffice.BlockActionBlock && changed:
		return views.FlashBlocked
	case action == boxoffice.BlockActionBlock:
		return views.FlashBlockedNone
	case changed:
		return views.FlashUnblocked
	}
	return views.FlashUnblockedNone
}

func eventEditPath(id int64) string { return fmt.Sprintf("/admin/events/%d/edit", id) }

// handleAdminEventBlocks handles POST /admin/events/:id/blocks: "action"
// block or unblock, and "seat" repeated (each value may also name several
// labels separated by commas or line breaks, as the page's field does;
// not by spaces, which a label may hold, such as "1층 A-2-1"). JSON:
// 200 {"event_id", "action", "seats", "blocked", "changed"}; HTML: 303 to
// the event's edit page, which lists the blocked seats and says whether
// anything changed, or the page again with the
// refusal and its status (400 naming every unknown seat, 409 naming every
// seat sold, held or in an unpaid order; nothing changed).
func (s *Server) handleAdminEventBlocks(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return errBadForm
	}
	var seats []string
	for _, v := range form["seat"] {
		for _, l := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
			if l = strings.TrimSpace(l); l != "" {
				seats = append(seats, l)
			}
		}
	}
	ctx := c.Request().Context()
	action := form.Get("action")
	res, err := s.Blocks.ChangeBlocks(ctx, boxoffice.BlockRequest{
		EventID: id, AdminID: boxoffice.AccountFromContext(ctx).ID, Action: action, Seats: seats,
	})
	switch {
	case err == nil && wantsJSON(c):
		return answerJSON(c, http.StatusOK, res)
	case err == nil:
		return s.redirectWithFlash(c, fmt.Sprintf("/admin/events/%d/edit#blocks", id), blocksFlash(action, res.Changed))
	case wantsJSON(c) || boxoffice.ErrorCode(err) == boxoffice.ENOTFOUND:
		return err
	}
	e, ferr := s.Events.FindEventByID(ctx, id)
	if ferr != nil {
		return ferr
	}
	f := eventForm(e)
	if f.Blocked, ferr = s.Blocks.BlockedSeats(ctx, id); ferr != nil {
		return ferr
	}
	f.BlockError = err
	if action == boxoffice.BlockActionBlock {
		f.BlockSeats = strings.Join(seats, " ")
	}
	return s.renderEventForm(c, s.statusOf(err), f, len(f.Grades)+1)
}
