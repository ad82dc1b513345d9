package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// seatMapImportPath is the route of the seat-map upload, which has its own
// body limit (maxSeatMapUploadBytes) instead of MaxBodyBytes.
const seatMapImportPath = "/admin/venues/import"

// maxSeatMapUploadBytes is the body limit of the seat-map upload: the file's
// own limit plus room for the multipart framing and the venue name, so that
// a file a little over boxoffice.MaxSeatMapBytes gets the page that lists
// the problem, and only a body far above it gets 413.
const maxSeatMapUploadBytes = boxoffice.MaxSeatMapBytes + 1<<20

// Repeated rows of the admin forms (generator sections, event grades).
const (
	minFormRows = 3   // rows a new form shows
	maxFormRows = 100 // rows a form may have; rows past it are not read
)

var (
	errNoSeatMapFile = boxoffice.Invalid(map[string]boxoffice.Msg{"file": boxoffice.M("val_seatmap_file")})
	errBadUpload     = boxoffice.NewError(boxoffice.EBADREQUEST, "err_upload_unreadable")
	errBadForm       = boxoffice.NewError(boxoffice.EBADREQUEST, "err_form_unreadable")
)

// handleAdminVenues handles GET /admin/venues: every venue with its seats
// and the number of events using it.
func (s *Server) handleAdminVenues(c echo.Context) error {
	venues, err := s.Venues.FindVenues(c.Request().Context())
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AdminVenues(venues, s.popFlash(c)))
}

// handleAdminVenueNew handles GET /admin/venues/new: the generator and the
// import forms.
func (s *Server) handleAdminVenueNew(c echo.Context) error {
	return render(c, http.StatusOK, views.AdminVenueNew(views.VenueForm{Sections: padSections(nil, 0)}))
}

// handleAdminVenueGenerate handles POST /admin/venues: a venue generated
// from sections (name, rows, seats per row, grade), 303 to its page; with
// action=add_section, the form again with one more section row; 422 with
// every reason at once and nothing saved.
func (s *Server) handleAdminVenueGenerate(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return errBadForm
	}
	f := views.VenueForm{Mode: views.VenueGenerate, Name: form.Get("name"), Sections: formSections(form)}
	shown, _ := strconv.Atoi(form.Get("section_rows"))
	if form.Get("action") == "add_section" {
		f.Mode = ""
		f.Sections = padSections(f.Sections, shown+1)
		return render(c, http.StatusOK, views.AdminVenueNew(f))
	}
	fields, specs := map[string]boxoffice.Msg{}, make([]boxoffice.SectionSpec, len(f.Sections))
	for i, row := range f.Sections {
		specs[i] = boxoffice.SectionSpec{Name: row.Name, Grade: row.Grade,
			Rows:        formInt(row.Rows, views.FieldKey("sections", i, "rows"), fields),
			SeatsPerRow: formInt(row.SeatsPerRow, views.FieldKey("sections", i, "seats_per_row"), fields)}
	}
	seats, err := boxoffice.GenerateSeats(specs)
	if err := addFields(fields, err); err != nil {
		return err
	}
	name := boxoffice.NormalizeVenueName(f.Name)
	if err := addFields(fields, boxoffice.ValidateVenueName(name)); err != nil {
		return err
	}
	if len(fields) == 0 {
		v, err := s.Venues.CreateVenue(c.Request().Context(), name, seats)
		if err == nil {
			return s.redirectWithFlash(c, venuePath(v.ID), views.FlashVenueCreated)
		} else if err := addFields(fields, err); err != nil {
			return err
		}
	}
	f.Errors = views.SayFields(c.Request().Context(), fields)
	f.Sections = padSections(f.Sections, shown)
	return render(c, http.StatusUnprocessableEntity, views.AdminVenueNew(f))
}

// handleAdminVenueImport handles POST /admin/venues/import (multipart: name,
// file): a venue from a CSV seat map or a pretix seating plan, 303 to its
// page; 422 listing every problem of the file with its line or JSON path,
// and nothing saved. Its body limit is maxSeatMapUploadBytes.
func (s *Server) handleAdminVenueImport(c echo.Context) error {
	r := c.Request()
	if err := r.ParseMultipartForm(maxSeatMapUploadBytes); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he // over the body limit: 413
		}
		return errBadUpload
	}
	f := views.VenueForm{Mode: views.VenueImport, Name: r.FormValue("name"), Sections: padSections(nil, 0)}
	fields := map[string]boxoffice.Msg{}
	name := boxoffice.NormalizeVenueName(f.Name)
	if err := addFields(fields, boxoffice.ValidateVenueName(name)); err != nil {
		return err
	}
	seats, orders, err := readSeatMap(r)
	if err := addFields(fields, err); err != nil {
		return err
	}
	problems := boxoffice.ErrorProblems(err)
	if len(fields) == 0 && len(problems) == 0 {
		v, err := s.Venues.ImportVenue(r.Context(), name, seats, orders)
		if err == nil {
			return s.redirectWithFlash(c, venuePath(v.ID), views.FlashVenueCreated)
		} else if err := addFields(fields, err); err != nil {
			return err
		}
		problems = boxoffice.ErrorProblems(err)
	}
	ctx := r.Context()
	f.Errors, f.Problems = views.SayFields(ctx, fields), views.SayAll(ctx, problems)
	return render(c, http.StatusUnprocessableEntity, views.AdminVenueNew(f))
}

// readSeatMap parses the uploaded file of a parsed multipart form, with the
// sections' best-first orders it gives. Errors: errNoSeatMapFile without a
// file; EINVALID with the problems (boxoffice.ErrorProblems) of a file that
// is too large or not a seat map.
func readSeatMap(r *http.Request) ([]boxoffice.Seat, []boxoffice.SectionOrder, error) {
	file, header, err := r.FormFile("file")
	if errors.Is(err, http.ErrMissingFile) || errors.Is(err, http.ErrNotMultipart) {
		return nil, nil, errNoSeatMapFile
	} else if err != nil {
		return nil, nil, errBadUpload
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, boxoffice.MaxSeatMapBytes+1))
	if err != nil {
		return nil, nil, errBadUpload
	}
	return boxoffice.ImportSeatMap(header.Filename, data)
}

// handleAdminVenue handles GET /admin/venues/:id: the venue's seat map drawn
// by grade with counts, its events, and the rename and delete forms.
func (s *Server) handleAdminVenue(c echo.Context) error {
	p, err := s.venuePage(c)
	if err != nil {
		return err
	}
	p.Flash = s.popFlash(c)
	return render(c, http.StatusOK, views.AdminVenue(p))
}

// venuePage loads what a venue's page shows, the rename field holding the
// venue's name.
func (s *Server) venuePage(c echo.Context) (views.VenuePage, error) {
	ctx := c.Request().Context()
	id, err := venueID(c)
	if err != nil {
		return views.VenuePage{}, err
	}
	v, err := s.Venues.FindVenueByID(ctx, id)
	if err != nil {
		return views.VenuePage{}, err
	}
	seats, err := s.Venues.VenueSeats(ctx, id)
	if err != nil {
		return views.VenuePage{}, err
	}
	events, err := s.venueEvents(ctx, id)
	if err != nil {
		return views.VenuePage{}, err
	}
	orders, err := s.Venues.SectionOrders(ctx, id)
	if err != nil {
		return views.VenuePage{}, err
	}
	return views.VenuePage{Venue: v, Seats: seats, Events: events, Name: v.Name, Orders: views.OrderTexts(orders)}, nil
}

// handleAdminVenueOrder handles POST /admin/venues/:id/order: the
// sections' best-first orders, sections[i].name with .rank (empty for none),
// .row_order and .seat_order (empty for the default), 303 to the venue's
// page; 422 with the page naming every reason at once, the values typed
// kept, and nothing saved.
func (s *Server) handleAdminVenueOrder(c echo.Context) error {
	id, err := venueID(c)
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return errBadForm
	}
	typed, orders, fields := formSectionOrders(form)
	if len(fields) == 0 {
		err := s.Venues.SetSectionOrders(c.Request().Context(), id, orders)
		if err == nil {
			return s.redirectWithFlash(c, venuePath(id), views.FlashVenueOrder)
		} else if err := addFields(fields, err); err != nil {
			return err
		}
	} else if err := s.addSectionFields(c.Request().Context(), id, orders, fields); err != nil {
		return err
	}
	p, err := s.venuePage(c)
	if err != nil {
		return err
	}
	p.Orders, p.OrderErrors = typed, views.SayFields(c.Request().Context(), fields)
	return render(c, http.StatusUnprocessableEntity, views.AdminVenue(p))
}

// addSectionFields adds to fields, the reasons a form's values are wrong,
// those of orders naming a section the venue's map does not have or one
// named twice (the reasons SetSectionOrders gives when every value is
// right), so that the refused page names them all at once. Errors:
// ENOTFOUND.
func (s *Server) addSectionFields(ctx context.Context, venueID int64, orders []boxoffice.SectionOrder, fields map[string]boxoffice.Msg) error {
	stored, err := s.Venues.SectionOrders(ctx, venueID)
	if err != nil {
		return err
	}
	sections := make(map[string]bool, len(stored))
	for _, o := range stored {
		sections[o.Section] = true
	}
	return addFields(fields, boxoffice.ValidateSectionOrders(orders, sections))
}

// formSectionOrders reads the order form's sections (up to maxFormRows),
// stopping at the first index without a name: what was typed, the orders,
// and every reason a value is wrong, keyed as the form's fields.
func formSectionOrders(form url.Values) ([]boxoffice.SectionOrderText, []boxoffice.SectionOrder, map[string]boxoffice.Msg) {
	var typed []boxoffice.SectionOrderText
	var orders []boxoffice.SectionOrder
	fields := map[string]boxoffice.Msg{}
	for i := range maxFormRows {
		get := func(field string) string { return strings.TrimSpace(form.Get(views.FieldKey("sections", i, field))) }
		t := boxoffice.SectionOrderText{Section: get("name"), Rank: get("rank"), Rows: get("row_order"), Seats: get("seat_order")}
		if t.Section == "" {
			break
		}
		o, bad := boxoffice.ParseSectionOrder(t)
		for k, m := range bad {
			fields[views.FieldKey("sections", i, k)] = m
		}
		typed, orders = append(typed, t), append(orders, o)
	}
	return typed, orders, fields
}

// venueEvents returns the events at a venue, by queue opening.
func (s *Server) venueEvents(ctx context.Context, venueID int64) ([]*boxoffice.Event, error) {
	all, err := s.Events.FindEvents(ctx, boxoffice.EventFilter{})
	if err != nil {
		return nil, err
	}
	var events []*boxoffice.Event
	for _, e := range all {
		if e.VenueID == venueID {
			events = append(events, e)
		}
	}
	return events, nil
}

// handleAdminVenueSeatsCSV handles GET /admin/venues/:id/seats.csv: the
// venue's seats as CSV (section,row,number,grade,x,y), which the import
// reads back unchanged.
func (s *Server) handleAdminVenueSeatsCSV(c echo.Context) error {
	id, err := venueID(c)
	if err != nil {
		return err
	}
	seats, err := s.Venues.VenueSeats(c.Request().Context(), id)
	if err != nil {
		return err
	}
	var b strings.Builder
	if err := boxoffice.WriteSeatCSV(&b, seats); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="venue-%d-seats.csv"`, id))
	return c.Blob(http.StatusOK, "text/csv; charset=utf-8", []byte(b.String()))
}

// handleAdminVenueRename handles POST /admin/venues/:id/name (name): 303 to
// the venue's page, or 422 with the reason and the name typed.
func (s *Server) handleAdminVenueRename(c echo.Context) error {
	id, err := venueID(c)
	if err != nil {
		return err
	}
	name := c.FormValue("name")
	_, err = s.Venues.RenameVenue(c.Request().Context(), id, name)
	if boxoffice.ErrorCode(err) != boxoffice.EINVALID {
		if err != nil {
			return err
		}
		return s.redirectWithFlash(c, venuePath(id), views.FlashVenueRenamed)
	}
	p, perr := s.venuePage(c)
	if perr != nil {
		return perr
	}
	p.Name, p.Errors = name, views.ErrorFields(c.Request().Context(), err)
	return render(c, http.StatusUnprocessableEntity, views.AdminVenue(p))
}

// handleAdminVenueDelete handles POST /admin/venues/:id/delete: 303 to the
// venue list, or 409 with the venue's page saying why while events use it.
func (s *Server) handleAdminVenueDelete(c echo.Context) error {
	id, err := venueID(c)
	if err != nil {
		return err
	}
	err = s.Venues.DeleteVenue(c.Request().Context(), id)
	if boxoffice.ErrorCode(err) != boxoffice.ECONFLICT {
		if err != nil {
			return err
		}
		return s.redirectWithFlash(c, "/admin/venues", views.FlashVenueDeleted)
	}
	p, perr := s.venuePage(c)
	if perr != nil {
		return perr
	}
	p.Message = views.ErrorText(c.Request().Context(), err)
	return render(c, http.StatusConflict, views.AdminVenue(p))
}

func venueID(c echo.Context) (int64, error) { return pathID(c, "err_no_venue") }

func venuePath(id int64) string { return "/admin/venues/" + strconv.FormatInt(id, 10) }

// formSections reads the generator's section rows, sections[i].name, .rows,
// .seats_per_row and .grade, skipping rows left empty.
func formSections(form url.Values) []views.SectionRow {
	var rows []views.SectionRow
	for i := range maxFormRows {
		get := func(field string) string { return strings.TrimSpace(form.Get(views.FieldKey("sections", i, field))) }
		row := views.SectionRow{Name: get("name"), Rows: get("rows"), SeatsPerRow: get("seats_per_row"), Grade: get("grade")}
		if row != (views.SectionRow{}) {
			rows = append(rows, row)
		}
	}
	return rows
}

// padSections adds empty rows for the form to show at least shown rows (and
// minFormRows), at most maxFormRows.
func padSections(rows []views.SectionRow, shown int) []views.SectionRow {
	for len(rows) < min(max(shown, minFormRows), maxFormRows) {
		rows = append(rows, views.SectionRow{})
	}
	return rows
}

// formInt parses a whole number typed in a form; a malformed one, or one
// beyond ±2³¹ (far past every limit, and safe to multiply into seconds), is
// a reason under key in fields, and 0.
func formInt(value, key string, fields map[string]boxoffice.Msg) int {
	if value == "" {
		return 0
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil {
		fields[key] = boxoffice.M("val_whole_number")
		return 0
	}
	return int(n)
}

// addFields adds the Fields of an EINVALID error to fields, keeping reasons
// found earlier (a malformed number over "out of range"), and returns nil; a
// nil error adds nothing; any other error is returned as is.
func addFields(fields map[string]boxoffice.Msg, err error) error {
	var e *boxoffice.Error
	if err == nil {
		return nil
	} else if !errors.As(err, &e) || e.Code != boxoffice.EINVALID {
		return err
	}
	for k, v := range e.Fields {
		if _, ok := fields[k]; !ok {
			fields[k] = v
		}
	}
	return nil
}
