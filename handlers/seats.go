package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/singleflight"
)

// seatMapCache keeps each event's seats in memory, read from PostgreSQL once
// per event, venue and process (a seat map of 15,000 seats is read by every
// admitted fan every few seconds). An event's seats change only with its
// venue, and only before its queue opens (store.Events.UpdateEvent refuses
// it after): a copy is used only for the venue the event has (LiveEvents, a
// second old at most), so that a venue changed before the opening never
// serves the old map. Prices come from the event's grades, so a price an
// admin changes shows up; the drawn map is rebuilt when the event changes
// (its UpdatedAt). The zero value is ready; it is safe for concurrent use.
type seatMapCache struct {
	mu     sync.Mutex
	loads  singleflight.Group
	events map[int64]*eventSeats
}

// eventSeats is one event's seats as the seat map serves them.
type eventSeats struct {
	venueID int64 // the venue they were copied from
	seats   []boxoffice.Seat
	index   map[string]int // label -> index in seats
	label   []string       // JSON string of each seat's label
	json    []string       // each seat's JSON object up to its price: {"id":…,"grade":…,"price":

	mu     sync.Mutex
	drawn  *views.SeatMap
	drawAt time.Time // UpdatedAt of the event that drawn was built with
}

// loadSeats returns the seats of e, loading them on first use for e's venue
// (callers for one event and venue share one load).
func (s *Server) loadSeats(ctx context.Context, e *boxoffice.Event) (*eventSeats, error) {
	c := &s.seatMaps
	c.mu.Lock()
	es := c.events[e.ID]
	c.mu.Unlock()
	if es != nil && es.venueID == e.VenueID {
		return es, nil
	}
	v, err, _ := c.loads.Do(fmt.Sprint(e.ID, "/", e.VenueID), func() (any, error) {
		seats, err := s.Events.EventSeats(context.WithoutCancel(ctx), e.ID)
		if err != nil {
			return nil, err
		}
		es := newEventSeats(seats)
		es.venueID = e.VenueID
		c.mu.Lock()
		if c.events == nil {
			c.events = map[int64]*eventSeats{}
		}
		c.events[e.ID] = es
		c.mu.Unlock()
		return es, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*eventSeats), nil
}

func newEventSeats(seats []boxoffice.Seat) *eventSeats {
	es := &eventSeats{seats: seats, index: make(map[string]int, len(seats)), label: make([]string, len(seats)), json: make([]string, len(seats))}
	str := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	for i, st := range seats {
		es.index[st.Label] = i
		es.label[i] = str(st.Label)
		es.json[i] = `{"id":` + es.label[i] + `,"section":` + str(st.Section) + `,"row":` + str(st.Row) +
			`,"number":` + str(st.Number) + `,"grade":` + str(st.Grade) + `,"price":`
	}
	return es
}

// view returns the drawn seat map for e, built once per version of the event.
func (es *eventSeats) view(e *boxoffice.Event) *views.SeatMap {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.drawn == nil || e.UpdatedAt.After(es.drawAt) {
		es.drawn, es.drawAt = views.NewSeatMap(e, es.seats), e.UpdatedAt
	}
	return es.drawn
}

// seatMapJSON is the seat map as CONTRACT.md says: {"seats": [{"id",
// "section", "row", "number", "grade", "price", "status"}], "holds":
// {"seats": [...], "ttl_ms": n}, "limit": n, "owned": n}, built by appending
// each seat's cached JSON, its grade's price and its status.
func (es *eventSeats) seatMapJSON(e *boxoffice.Event, st boxoffice.SeatMapState) []byte {
	prices := make(map[string]int64, len(e.Grades))
	for _, g := range e.Grades {
		prices[g.Code] = g.Price
	}
	buf := make([]byte, 0, len(es.seats)*112+256)
	buf = append(buf, `{"seats":[`...)
	for i, seat := range es.seats {
		if i > 0 {
			buf = append(buf, ',')
		}
		price, ok := prices[seat.Grade]
		if !ok {
			price = seat.Price
		}
		buf = append(buf, es.json[i]...)
		buf = strconv.AppendInt(buf, price, 10)
		buf = append(buf, `,"status":"`...)
		buf = append(buf, st.Status(seat.Label)...)
		buf = append(buf, `"}`...)
	}
	buf = append(buf, `],`...)
	return es.appendAccount(buf, e, st)
}

// seatStatusJSON is the seat map's compact refresh: only the seats that are
// not free, {"statuses": {"<label>": "held", "sold" or "mine"}, "holds":
// {"seats": [...], "ttl_ms": n}, "limit": n, "owned": n, "left": n,
// "broadcast": "<the admin's message, or empty>"}.
func (es *eventSeats) seatStatusJSON(e *boxoffice.Event, st boxoffice.SeatMapState, broadcast string) []byte {
	buf := make([]byte, 0, len(st.Statuses)*24+256)
	buf = append(buf, `{"statuses":{`...)
	first := true
	for label, status := range st.Statuses {
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = es.appendLabel(buf, label)
		buf = append(buf, `:"`...)
		buf = append(buf, status...)
		buf = append(buf, '"')
	}
	buf = append(buf, `},"left":`...)
	buf = strconv.AppendInt(buf, int64(st.Left(e.MaxPerAccount)), 10)
	buf = append(buf, `,"broadcast":`...)
	b, _ := json.Marshal(broadcast)
	buf = append(buf, b...)
	buf = append(buf, ',')
	return es.appendAccount(buf, e, st)
}

// appendAccount ends a seat map's JSON with the account's part: "holds",
// "limit" and "owned".
func (es *eventSeats) appendAccount(buf []byte, e *boxoffice.Event, st boxoffice.SeatMapState) []byte {
	buf = append(buf, `"holds":{"seats":[`...)
	for i, label := range st.Mine {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = es.appendLabel(buf, label)
	}
	buf = append(buf, `],"ttl_ms":`...)
	buf = strconv.AppendInt(buf, st.HoldsTTL.Milliseconds(), 10)
	buf = append(buf, `},"limit":`...)
	buf = strconv.AppendInt(buf, int64(e.MaxPerAccount), 10)
	buf = append(buf, `,"owned":`...)
	buf = strconv.AppendInt(buf, int64(st.Owned), 10)
	return append(buf, '}')
}

// appendLabel appends a seat label as a JSON string.
func (es *eventSeats) appendLabel(buf []byte, label string) []byte {
	if i, ok := es.index[label]; ok {
		return append(buf, es.label[i]...)
	}
	b, _ := json.Marshal(label)
	return append(buf, b...)
}

// seatMapRequest reads what every seat-map and hold handler needs: the event
// (a second old at most), its seats, and the shopper (behind requireAccount;
// the store checks the shopper's entry in the same step as the action).
func (s *Server) seatMapRequest(c echo.Context) (*boxoffice.Event, *eventSeats, boxoffice.Shopper, error) {
	id, err := eventID(c)
	if err != nil {
		return nil, nil, boxoffice.Shopper{}, err
	}
	sh, err := shopper(c, id)
	if err != nil {
		return nil, nil, sh, s.noEntry(c, id, err)
	}
	ctx := c.Request().Context()
	e, err := s.LiveEvents.Event(ctx, id)
	if err != nil {
		return nil, nil, sh, err
	}
	es, err := s.loadSeats(ctx, e)
	if err != nil {
		return nil, nil, sh, err
	}
	return e, es, sh, nil
}

// handleSeatMap handles GET /events/:id/seats: the seat map page, the same
// for every fan, from the instance's cache (seatMapPages) once the entry is
// checked (one Redis round trip), with an ETag and 304 to If-None-Match;
// for htmx, the fan's hold panel (static/seatmap.js loads it, and reloads it
// when the fan's holds change); ?section= the fan's list of that section's
// seats (the way without JavaScript); JSON as CONTRACT.md says
// (seatMapJSON). The statuses and the entry check cost one Redis round trip
// (Holds.SeatStatuses) whatever the number of seats. 400 for a section
// that is not one of the map's.
func (s *Server) handleSeatMap(c echo.Context) error {
	e, es, sh, err := s.seatMapRequest(c)
	if err != nil {
		return err
	}
	section := queryParam(c, "section")
	if err := es.checkSection(e, section); err != nil {
		return s.entryFirst(c, sh, err)
	}
	ctx := c.Request().Context()
	if sharesSeatMapPage(c) {
		if err := s.entryFirst(c, sh, nil); err != nil {
			return err
		}
		page, err := s.seatMapPages.page(e, es, views.Lang(ctx), s.latestBroadcast(ctx, e.ID))
		if err != nil {
			return err
		}
		return page.serve(c)
	}
	st, err := s.Holds.SeatStatuses(ctx, sh)
	if err != nil {
		return s.noEntry(c, e.ID, err)
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	if wantsJSON(c) {
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, es.seatMapJSON(e, st))
	}
	m := es.view(e)
	notice := s.popNotice(ctx)
	if isHTMX(c) {
		return render(c, http.StatusOK, views.HoldPanel(views.HoldPanelData{Map: m, State: st, Limit: e.MaxPerAccount, Notice: notice}))
	}
	return render(c, http.StatusOK, views.SeatSectionPage(views.SeatSectionPageData{
		Event: e, Map: m, Section: m.Section(section), State: st, Notice: notice, Broadcast: s.latestBroadcast(ctx, e.ID),
	}))
}

// errNoSection refuses a section parameter that names no section of the map.
var errNoSection = boxoffice.NewError(boxoffice.EBADREQUEST, "err_no_section")

// checkSection returns errNoSection unless section is "" (none) or the name
// of one of e's sections, so that a section parameter of any length or
// content goes no further (into a page, a session or a Location).
func (es *eventSeats) checkSection(e *boxoffice.Event, section string) error {
	if section != "" && es.view(e).Section(section) == nil {
		return errNoSection
	}
	return nil
}

// handleSeatStatus handles GET /events/:id/seats/status, the seat map's
// refresh every few seconds: JSON with only the seats that are not free
// and the event's broadcast (seatStatusJSON), one Redis round trip with the
// entry check (the broadcast is read once a second per process).
func (s *Server) handleSeatStatus(c echo.Context) error {
	e, es, sh, err := s.seatMapRequest(c)
	if err != nil {
		return err
	}
	st, err := s.Holds.SeatStatuses(c.Request().Context(), sh)
	if err != nil {
		return s.noEntry(c, e.ID, err)
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, es.seatStatusJSON(e, st, s.latestBroadcast(c.Request().Context(), e.ID)))
}
