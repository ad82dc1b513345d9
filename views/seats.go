package views

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/boxoffice/boxoffice"
)

// Seat-map drawing sizes, in layout units (boxoffice.SeatPitch is 12).
const (
	seatRadius     = 5  // a seat's circle: 2 units between neighbours
	sectionPadding = 9  // how far a section's outline reaches past its seats
	mapMargin      = 24 // around everything drawn
)

// SeatMap is an event's seat map laid out for drawing: the SVG's view box,
// the stage, each section's outline and name, and each seat's markup. It is
// built once per event and version of its grades by NewSeatMap and read by
// any number of requests at once; nothing in it changes after it is built.
type SeatMap struct {
	EventID  int64
	Currency string
	// ViewBox is the SVG viewBox, "minX minY width height" in layout units.
	ViewBox string
	// Stage is where the stage is drawn (layout units), and StageFontSize
	// the size of its name.
	Stage         Box
	StageFontSize float64
	// LabelFontSize is the size of the sections' names: larger on larger
	// maps, so that they stay readable when the whole venue is shown.
	LabelFontSize float64
	Sections      []MapSection
	// Grades are the event's grades, dearest first, for the legend.
	Grades []boxoffice.Grade

	seats []mapSeat
	index map[string]int // label -> index in seats
	runs  []seatRun      // consecutive seats of one section and grade
}

// Box is an axis-aligned rectangle in layout units.
type Box struct {
	X, Y, W, H float64
}

// MapSection is a section of the map: its name, its seats' outline (a convex
// hull, as SVG polygon points) and where its name is written.
type MapSection struct {
	Name           string
	Outline        string
	LabelX, LabelY float64
	Seats          []int    // indexes of its seats, in map order (row, then number)
	Grades         []string // codes of its seats' grades, in map order
}

// mapSeat is one seat as the map draws and describes it.
type mapSeat struct {
	label, section, row, number, grade string
	x, y                               float64
	markup                             string // `<circle .../>`: the same in every language
}

// seatRun is a stretch of seats of one section and grade drawn inside one
// <g> of their grade's colour, whose data-desc is the description of its
// seats with "<r>" and "<n>" for the row and number (no section's name
// holds < or >) (static/seatmap.js
// describes a seat from it, so that 15,000 seats carry no description each).
type seatRun struct {
	open     []string // per language of Langs: the <g> start tag
	from, to int
}

// NewSeatMap lays out seats (an event's, ordered by section, row and number
// as store.Events.EventSeats returns them) for drawing with the event's
// grades: prices in each seat's accessible name come from e.Grades, so a
// changed price needs a new SeatMap. The stage is put in front of the rows of
// the central section whose rows run away from it (smaller y), as wide as the
// seats at that front line; the map works for any layout, the default one of
// generated venues included.
func NewSeatMap(e *boxoffice.Event, seats []boxoffice.Seat) *SeatMap {
	m := &SeatMap{
		EventID:  e.ID,
		Currency: e.Currency,
		Grades:   e.Grades,
		seats:    make([]mapSeat, len(seats)),
		index:    make(map[string]int, len(seats)),
	}
	colors := map[string]string{}
	for _, g := range e.Grades {
		colors[g.Code] = g.Color
	}
	ctxs := make([]context.Context, len(Langs))
	for i, l := range Langs {
		ctxs[i] = boxoffice.NewContextWithLang(context.Background(), l)
	}
	sectionAt := map[string]int{}
	for i, s := range seats {
		m.index[s.Label] = i
		sec, ok := sectionAt[s.Section]
		if !ok {
			sec = len(m.Sections)
			sectionAt[s.Section] = sec
			m.Sections = append(m.Sections, MapSection{Name: s.Section})
		}
		m.Sections[sec].Seats = append(m.Sections[sec].Seats, i)
		if !slices.Contains(m.Sections[sec].Grades, s.Grade) {
			m.Sections[sec].Grades = append(m.Sections[sec].Grades, s.Grade)
		}
		var b strings.Builder
		b.WriteString(`<circle cx="`)
		b.WriteString(num(s.X))
		b.WriteString(`" cy="`)
		b.WriteString(num(s.Y))
		b.WriteString(`" r="` + strconv.Itoa(seatRadius) + `" data-id="`)
		b.WriteString(html.EscapeString(s.Label))
		b.WriteString(`"`)
		if i == 0 {
			b.WriteString(` tabindex="0"`) // the map's one tab stop; arrow keys move it (seatmap.js)
		}
		b.WriteString(`/>`)
		m.seats[i] = mapSeat{label: s.Label, section: s.Section, row: s.Row, number: s.Number, grade: s.Grade, x: s.X, y: s.Y, markup: b.String()}
		if n := len(m.runs); n == 0 || seats[i-1].Section != s.Section || seats[i-1].Grade != s.Grade {
			color := colors[s.Grade]
			if color == "" {
				color = boxoffice.DefaultGradeColor
			}
			run := seatRun{open: make([]string, len(Langs)), from: i}
			for li := range Langs {
				desc := m.describeSeat(ctxs[li], mapSeat{section: s.Section, row: "<r>", number: "<n>", grade: s.Grade})
				run.open[li] = `<g class="grade grade-` + html.EscapeString(s.Grade) + `" fill="` + html.EscapeString(color) +
					`" data-desc="` + html.EscapeString(desc) + `">`
			}
			m.runs = append(m.runs, run)
		}
		m.runs[len(m.runs)-1].to = i + 1
	}
	m.layOut()
	return m
}

// Describe returns the description of the seat with the label for people
// and screen readers in ctx's language ("Section F1, row 3, seat 12, VIP
// seat, ₩220,000"; "F1구역 3열 12번, VIP석, 220,000원"), or the label
// itself for a seat not on the map.
func (m *SeatMap) Describe(ctx context.Context, label string) string {
	i, ok := m.index[label]
	if !ok {
		return label
	}
	return m.describe(ctx, i)
}

func (m *SeatMap) describe(ctx context.Context, i int) string {
	return m.describeSeat(ctx, m.seats[i])
}

func (m *SeatMap) describeSeat(ctx context.Context, s mapSeat) string {
	grade, price := s.grade, ""
	for _, g := range m.Grades {
		if g.Code == s.grade {
			grade, price = Title(ctx, g.Name), Money(ctx, g.Price, m.Currency)
		}
	}
	return T(ctx, "seat_name", "Section", s.section, "Row", s.row, "Number", s.number, "Grade", grade, "Price", price)
}

// Section returns the section with the name, or nil.
func (m *SeatMap) Section(name string) *MapSection {
	for i := range m.Sections {
		if m.Sections[i].Name == name {
			return &m.Sections[i]
		}
	}
	return nil
}

// SectionOf returns the name of the section of the seat with the label, or
// "" for a seat not on the map.
func (m *SeatMap) SectionOf(label string) string {
	if i, ok := m.index[label]; ok {
		return m.seats[i].section
	}
	return ""
}

// SectionOfGrade returns the first section, in map order, with seats of
// grade, or "" when none has.
func (m *SeatMap) SectionOfGrade(grade string) string {
	for _, sec := range m.Sections {
		if slices.Contains(sec.Grades, grade) {
			return sec.Name
		}
	}
	return ""
}

// MapRow is one row of a section in the seat list of the page without
// JavaScript.
type MapRow struct {
	Row   string
	Seats []MapSeat
}

// MapSeat is one seat of a MapRow with its status.
type MapSeat struct {
	Label, Number string
	Status        boxoffice.SeatStatus
}

// Rows returns the section's seats by row, with their statuses in st.
func (m *SeatMap) Rows(sec *MapSection, st boxoffice.SeatMapState) []MapRow {
	var rows []MapRow
	for _, i := range sec.Seats {
		s := m.seats[i]
		if len(rows) == 0 || rows[len(rows)-1].Row != s.row {
			rows = append(rows, MapRow{Row: s.row})
		}
		r := &rows[len(rows)-1]
		r.Seats = append(r.Seats, MapSeat{Label: s.label, Number: s.number, Status: st.Status(s.label)})
	}
	return rows
}

// seatsMarkup writes every seat, grouped in <g> elements of their grade's
// colour and each run's description (data-desc), all of them free: the map
// is the same for every fan, and static/seatmap.js marks the statuses it
// reads from the seat statuses. The markup of each seat is built once by
// NewSeatMap, so a rendering costs one pass over the seats.
func (m *SeatMap) seatsMarkup() templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		li := max(slices.Index(Langs, Lang(ctx)), 0)
		bw := &errWriter{w: w}
		for _, r := range m.runs {
			bw.write(r.open[li])
			for _, s := range m.seats[r.from:r.to] {
				bw.write(s.markup)
			}
			bw.write(`</g>`)
		}
		return bw.err
	})
}

// errWriter keeps the first write error, so that a loop can write freely.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) write(s string) {
	if e.err == nil {
		_, e.err = io.WriteString(e.w, s)
	}
}

// point is a position in layout units.
type point struct{ x, y float64 }

// layOut computes the sections' outlines and name positions, the stage and
// the view box.
func (m *SeatMap) layOut() {
	if len(m.seats) == 0 {
		m.ViewBox = "0 0 100 100"
		return
	}
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	grow := func(x, y, pad float64) {
		minX, minY = min(minX, x-pad), min(minY, y-pad)
		maxX, maxY = max(maxX, x+pad), max(maxY, y+pad)
	}
	for _, s := range m.seats {
		grow(s.x, s.y, seatRadius+sectionPadding)
	}
	m.LabelFontSize = math.Round(min(max((maxX-minX)/70, 14), 40))
	for i := range m.Sections {
		sec := &m.Sections[i]
		pts := make([]point, len(sec.Seats))
		for j, k := range sec.Seats {
			pts[j] = point{m.seats[k].x, m.seats[k].y}
		}
		var b strings.Builder
		for j, p := range convexHull(pts) {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(num(p.x) + "," + num(p.y))
		}
		sec.Outline = b.String()
		sec.LabelX, sec.LabelY = m.labelPosition(sec)
		grow(sec.LabelX, sec.LabelY, 1.5*m.LabelFontSize)
	}
	m.Stage = m.stage(minX, maxX)
	m.StageFontSize = math.Round(min(max(min(m.Stage.H*0.4, m.Stage.W/8), 10), 2*m.LabelFontSize))
	grow(m.Stage.X, m.Stage.Y, 0)
	grow(m.Stage.X+m.Stage.W, m.Stage.Y+m.Stage.H, 0)
	minX, minY, maxX, maxY = minX-mapMargin, minY-mapMargin, maxX+mapMargin, maxY+mapMargin
	m.ViewBox = strings.Join([]string{num(minX), num(minY), num(maxX - minX), num(maxY - minY)}, " ")
}

// rowEnds returns the centres of a section's first and last rows (by row
// number), and whether the section has more than one row.
func (m *SeatMap) rowEnds(sec *MapSection) (first, last point, rows bool) {
	lo, hi := math.MaxInt, math.MinInt
	for _, i := range sec.Seats {
		r, _ := strconv.Atoi(m.seats[i].row)
		lo, hi = min(lo, r), max(hi, r)
	}
	var nf, nl float64
	for _, i := range sec.Seats {
		s := m.seats[i]
		switch r, _ := strconv.Atoi(s.row); r {
		case lo:
			first.x, first.y, nf = first.x+s.x, first.y+s.y, nf+1
			if lo == hi {
				last = first
				nl = nf
			}
		case hi:
			last.x, last.y, nl = last.x+s.x, last.y+s.y, nl+1
		}
	}
	first = point{first.x / nf, first.y / nf}
	last = point{last.x / nl, last.y / nl}
	return first, last, lo != hi
}

// labelPosition puts a section's name behind its last row, away from the
// first (below a section of one row).
func (m *SeatMap) labelPosition(sec *MapSection) (float64, float64) {
	offset := seatRadius + sectionPadding/2 + 0.6*m.LabelFontSize
	first, last, rows := m.rowEnds(sec)
	dx, dy := last.x-first.x, last.y-first.y
	if d := math.Hypot(dx, dy); rows && d > 0 {
		return last.x + dx/d*offset, last.y + dy/d*offset
	}
	return last.x, last.y + offset
}

// stage places the stage in front of the front line: the first row of the
// section across the map's centre (minX..maxX) whose rows run towards larger
// y (or of any such section, or of any section), a row and a half before it,
// as wide as 80 % of the seats on that line in such sections, and as deep as
// the free room before it allows (seats behind a stage, such as choir seats,
// stay clear).
func (m *SeatMap) stage(minX, maxX float64) Box {
	cx := (minX + maxX) / 2
	var facing, central []*MapSection
	for i := range m.Sections {
		if first, last, _ := m.rowEnds(&m.Sections[i]); first.y <= last.y {
			facing = append(facing, &m.Sections[i]) // rows run away from the stage's side
		}
	}
	if len(facing) == 0 {
		for i := range m.Sections {
			facing = append(facing, &m.Sections[i])
		}
	}
	for _, sec := range facing {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, k := range sec.Seats {
			lo, hi = min(lo, m.seats[k].x), max(hi, m.seats[k].x)
		}
		if lo <= cx && cx <= hi {
			central = append(central, sec)
		}
	}
	if len(central) == 0 {
		central = facing
	}
	front := math.Inf(1)
	for _, sec := range central {
		for _, k := range sec.Seats {
			front = min(front, m.seats[k].y)
		}
	}
	x0, x1 := math.Inf(1), math.Inf(-1)
	for _, sec := range facing {
		for _, k := range sec.Seats {
			if s := m.seats[k]; s.y >= front && s.y < front+boxoffice.RowPitch/2 {
				x0, x1 = min(x0, s.x), max(x1, s.x)
			}
		}
	}
	width := max((x1-x0)*0.8, 20*boxoffice.SeatPitch)
	left := (x0+x1)/2 - width/2
	bottom := front - 1.5*boxoffice.RowPitch
	depth := min(width/4, 10*boxoffice.RowPitch)
	behind := math.Inf(-1)
	for _, s := range m.seats {
		if s.y < bottom && s.x >= left && s.x <= left+width {
			behind = max(behind, s.y)
		}
	}
	if !math.IsInf(behind, -1) {
		depth = min(max(bottom-behind-1.5*boxoffice.RowPitch, 4*boxoffice.RowPitch), width/3)
	}
	return Box{X: left, Y: bottom - depth, W: width, H: depth}
}

// convexHull returns the convex hull of pts in order (Andrew's monotone
// chain); for fewer than three distinct points, the points themselves.
func convexHull(pts []point) []point {
	pts = slices.Clone(pts)
	slices.SortFunc(pts, func(a, b point) int {
		if a.x != b.x {
			return cmpFloat(a.x, b.x)
		}
		return cmpFloat(a.y, b.y)
	})
	pts = slices.Compact(pts)
	if len(pts) < 3 {
		return pts
	}
	cross := func(o, a, b point) float64 { return (a.x-o.x)*(b.y-o.y) - (a.y-o.y)*(b.x-o.x) }
	hull := make([]point, 0, 2*len(pts))
	for _, p := range pts {
		for len(hull) >= 2 && cross(hull[len(hull)-2], hull[len(hull)-1], p) <= 0 {
			hull = hull[:len(hull)-1]
		}
		hull = append(hull, p)
	}
	lower := len(hull) + 1
	for i := len(pts) - 2; i >= 0; i-- {
		for len(hull) >= lower && cross(hull[len(hull)-2], hull[len(hull)-1], pts[i]) <= 0 {
			hull = hull[:len(hull)-1]
		}
		hull = append(hull, pts[i])
	}
	return hull[:len(hull)-1]
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Notice is a message shown once at the top of the hold panel: what the
// fan's last hold or release did, not yet in any language, so that a notice
// kept as a flash in the session (EncodeNotice) is shown in the language of
// the page that shows it, not of the one that made it. Msg is the sentence;
// Seat, when set, is a label that Text describes into Msg's "Seat"
// argument; Held marks a granted hold's notice (HeldNotice), whose total and
// time Text takes from the holds the panel shows; Seats are labels listed
// after the sentence (the first noticeSeats of them). Error marks a
// refusal. The zero Notice is none.
type Notice struct {
	Msg   boxoffice.Msg `json:"msg"`
	Seat  string        `json:"seat,omitempty"`
	Held  bool          `json:"held,omitempty"`
	Seats []string      `json:"seats,omitempty"`
	Error bool          `json:"error,omitempty"`
}

// HeldNotice says that n seats were just held (0: the hold asked only for
// seats the fan held already). It carries no time: Text
// gives the time left until the fan's first hold ends, as the panel's
// countdown does, since seats held earlier end before the new ones (the
// new seats' own TTL would contradict the countdown), and a flash is shown
// a moment after it was made.
func HeldNotice(n int) Notice {
	return Notice{Msg: boxoffice.M("hold_notice", "Count", n), Held: true}
}

// ReleasedNotice says that the seat with the label is free again.
func ReleasedNotice(label string) Notice {
	return Notice{Msg: boxoffice.M("hold_released"), Seat: label}
}

// noticeSeats is how many seats a notice names at most.
const noticeSeats = 5

// RefusedNotice explains a refused hold or release: the error's message
// (ErrorMsg), and the seats it names (Details["seats"]).
func RefusedNotice(err error) Notice {
	n := Notice{Msg: ErrorMsg(err), Error: true}
	var e *boxoffice.Error
	if errors.As(err, &e) {
		if seats, ok := e.Details["seats"].([]string); ok {
			n.Seats = seats
		}
	}
	return n
}

// Text is the notice in ctx's language, its seats described as m describes
// them (by their labels when m is nil); "" for the zero Notice. A held
// notice (HeldNotice) is told with st, the fan's holds that the panel shows
// beside it, so that the three agree: when the fan held seats before, it
// says that Count seats were added to the len(st.Mine) now held
// (hold_notice_added), else that the fan holds len(st.Mine) seats
// (hold_notice, also when the hold added none), and its time is st.HoldsTTL, where
// the countdown starts; "" when st has no holds left (they ended before the
// notice was shown, and the panel says there are none).
func (n Notice) Text(ctx context.Context, m *SeatMap, st boxoffice.SeatMapState) string {
	if n.Msg.ID == "" || n.Held && len(st.Mine) == 0 {
		return ""
	}
	describe := func(l string) string {
		if m == nil {
			return l
		}
		return m.Describe(ctx, l)
	}
	msg := boxoffice.Msg{ID: n.Msg.ID, Args: maps.Clone(n.Msg.Args)}
	if n.Seat != "" || n.Held {
		if msg.Args == nil {
			msg.Args = map[string]any{}
		}
		if n.Seat != "" {
			msg.Args["Seat"] = describe(n.Seat)
		}
		if n.Held {
			if count, ok := msg.Args["Count"].(int); ok && count > 0 && len(st.Mine) > count {
				msg.ID, msg.Args["Total"] = "hold_notice_added", len(st.Mine)
			} else {
				msg.Args["Count"] = len(st.Mine)
			}
			msg.Args["Time"] = Duration(ctx, st.HoldsTTL)
		}
	}
	text := Say(ctx, msg)
	if len(n.Seats) > 0 {
		var names []string
		for _, l := range n.Seats[:min(len(n.Seats), noticeSeats)] {
			names = append(names, describe(l))
		}
		if more := len(n.Seats) - noticeSeats; more > 0 {
			names = append(names, T(ctx, "hold_more_seats", "Count", more))
		}
		text += " (" + strings.Join(names, "; ") + ")"
	}
	return text
}

// EncodeNotice returns n as the session keeps a flash: JSON of the message's
// id and arguments, untranslated.
func EncodeNotice(n Notice) string {
	b, err := json.Marshal(n)
	if err != nil { // an argument JSON cannot hold: the sentence without it
		b, _ = json.Marshal(Notice{Msg: boxoffice.M(n.Msg.ID), Seat: n.Seat, Held: n.Held, Seats: n.Seats, Error: n.Error})
	}
	return string(b)
}

// DecodeNotice reads a notice that EncodeNotice made; "" (no flash) or
// anything else is the zero Notice. The arguments of a hold's or a
// release's messages are strings and whole numbers: these come back as int,
// so that "Count" still picks the plural form and is grouped.
func DecodeNotice(s string) Notice {
	var n Notice
	if s == "" {
		return n
	}
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&n); err != nil {
		return Notice{}
	}
	for k, v := range n.Msg.Args {
		if num, ok := v.(json.Number); ok {
			if i, err := num.Int64(); err == nil {
				n.Msg.Args[k] = int(i)
			} else if f, err := num.Float64(); err == nil {
				n.Msg.Args[k] = f
			}
		}
	}
	return n
}

// SectionSeatsURL is the seat map's address with the list of a section's
// seats open (SeatsURL when section is "").
func SectionSeatsURL(eventID int64, section string) string {
	if section == "" {
		return SeatsURL(eventID)
	}
	return SeatsURL(eventID) + "?section=" + url.QueryEscape(section) + "#pick"
}

// holdURL is the address of the account's hold on a seat (DELETE), or with
// suffix "/release" its form fallback (POST).
func holdURL(eventID int64, label, suffix string) string {
	return "/events/" + strconv.FormatInt(eventID, 10) + "/holds/" + url.PathEscape(label) + suffix
}
