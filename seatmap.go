package boxoffice

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of a seat map. The schema (migrations/00002) holds the same limits
// for labels, rows, numbers and grade codes.
const (
	MaxSeatMapBytes    = 4 << 20 // bytes of an imported seat-map file
	MaxSeats           = 20000   // seats in one map
	MaxSectionRows     = 200     // rows of one generated section
	MaxSectionSeats    = 200     // seats per row of one generated section
	MaxSectionLen      = 40      // characters (runes) of a section name
	MaxSeatMapProblems = 100     // problems listed in one error; the rest are counted
	MaxSeatCoordinate  = 1e6     // bound on |x| and |y|, in layout units
)

// Layout units of seat maps: where a map has no positions of its own, seats
// are laid out on this grid with sections side by side, SectionGap apart.
const (
	SeatPitch  = 12
	RowPitch   = 14
	SectionGap = 2 * SeatPitch
)

// seatCSVHeader is the header WriteSeatCSV writes and the parser recognises.
var seatCSVHeader = []string{"section", "row", "number", "grade", "x", "y"}

// ErrorProblems returns the list of problems of a seat-map error (the
// Details["problems"] member of the first *Error in err's chain, one message
// per problem such as "line 7: duplicate seat A-1-3 (also on line 5)", at
// most MaxSeatMapProblems of them and then "and N more problems"), or nil.
func ErrorProblems(err error) []Msg {
	var e *Error
	if errors.As(err, &e) {
		p, _ := e.Details["problems"].([]Msg)
		return p
	}
	return nil
}

// atLine is where a problem of a CSV file is: its line, counted from 1.
func atLine(line int) Msg { return M("seatmap_where_line", "Line", line) }

// SeatMapOptions tunes the seat-map parsers. The zero value accepts any valid
// grade code.
type SeatMapOptions struct {
	// Grades, if not empty, lists the only grade codes seats may have; a seat
	// of another grade is an "unknown grade" problem.
	Grades []string
}

// ParseSeatCSV reads a seat map as CSV (RFC 4180, through encoding/csv) with
// the columns section,row,number,grade and optionally x,y, after an optional
// header line naming them. See SeatMapOptions.ParseCSV.
func ParseSeatCSV(r io.Reader) ([]Seat, error) { return SeatMapOptions{}.ParseCSV(r) }

// ParsePretixPlan reads a pretix seating plan (JSON). See
// SeatMapOptions.ParsePretix.
func ParsePretixPlan(data []byte) ([]Seat, error) { return SeatMapOptions{}.ParsePretix(data) }

// ParseSeatMap reads a CSV seat map or a pretix seating plan. See
// SeatMapOptions.Parse.
func ParseSeatMap(filename string, data []byte) ([]Seat, error) {
	return SeatMapOptions{}.Parse(filename, data)
}

// ImportSeatMap reads a CSV seat map or a pretix seating plan with the
// sections' best-first orders a CSV file gives (SeatMapOptions.ParseCSV).
// See SeatMapOptions.Import.
func ImportSeatMap(filename string, data []byte) ([]Seat, []SectionOrder, error) {
	return SeatMapOptions{}.Import(filename, data)
}

// Parse reads an uploaded seat map, CSV or pretix JSON, chosen by its content:
// a file whose first non-blank character is '{' or '[', or whose name ends in
// ".json", is read as JSON; other text with commas as CSV. filename is only
// that hint and may be empty. Errors as ParseCSV, including a file over
// MaxSeatMapBytes, an empty file and one that is neither CSV nor JSON.
func (o SeatMapOptions) Parse(filename string, data []byte) ([]Seat, error) {
	seats, _, err := o.Import(filename, data)
	return seats, err
}

// Import is Parse that also returns the sections' best-first orders of a
// CSV file's rank,row_order,seat_order columns (none for pretix JSON).
func (o SeatMapOptions) Import(filename string, data []byte) ([]Seat, []SectionOrder, error) {
	var p problems
	if len(data) > MaxSeatMapBytes {
		p.tooLarge(len(data))
		return nil, nil, p.err()
	}
	text := bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))
	switch {
	case len(text) == 0:
		p.add(M("seatmap_file_empty"))
	case text[0] == '{' || text[0] == '[' || strings.EqualFold(filepath.Ext(filename), ".json"):
		seats, err := o.ParsePretix(data)
		return seats, nil, err
	case !isText(text) || !bytes.ContainsRune(text, ','):
		p.add(M("seatmap_file_kind"))
	default:
		return o.parseCSV(data)
	}
	return nil, nil, p.err()
}

// ParseCSV reads a seat map as CSV (RFC 4180, through encoding/csv): one seat
// per line with the columns section,row,number,grade and optionally x,y (every
// line as many as the first), after an optional header line naming them. A
// UTF-8 byte order mark and spaces around fields are ignored. Seats are
// returned in file order with Label set; when the file has no x,y columns the
// seats get the default layout (sections side by side, SeatPitch and
// RowPitch) and HasXY false.
//
// Errors: one EINVALID *Error whose Details["problems"] (see ErrorProblems)
// lists every problem at once, each naming its line (1-based, the header
// counted): an empty field, a section over MaxSectionLen characters or with
// a control character or one of < > " ` \ (sectionMarkup), a row or number
// that is not a whole number from 1 to 9999 without a leading zero, a
// grade that is not 1 to 8 ASCII letters or digits or not in o.Grades, an x or
// y that is not a finite number within ±MaxSeatCoordinate, a wrong number of
// columns, a duplicate seat (same section-row-number), a malformed quote, more
// than MaxSeats seats, no seats, a file over MaxSeatMapBytes or one that is not
// text. At most MaxSeatMapProblems are listed and the rest counted. A failed
// read of r is returned wrapped, not as *Error.
func (o SeatMapOptions) ParseCSV(r io.Reader) ([]Seat, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSeatMapBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read seat map: %w", err)
	}
	if len(data) > MaxSeatMapBytes {
		var p problems
		p.tooLarge(len(data))
		return nil, p.err()
	}
	seats, _, err := o.parseCSV(data)
	return seats, err
}

var utf8BOM = []byte("\xef\xbb\xbf")

// isText reports whether b is UTF-8 without NUL bytes, which rules out the
// binary files (images, spreadsheets) people upload by mistake.
func isText(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }

// csvWidths are the column counts a seat-map CSV may have: section, row,
// number, grade, then optionally x,y, then optionally
// rank,row_order,seat_order.
var csvWidths = []int{4, 6, 7, 9}

func (o SeatMapOptions) parseCSV(data []byte) ([]Seat, []SectionOrder, error) {
	var p problems
	data = bytes.TrimPrefix(data, utf8BOM)
	if !isText(data) {
		p.add(M("seatmap_file_not_text"))
		return nil, nil, p.err()
	}
	var orders sectionOrdersRead
	allowed := gradeSet(o.Grades)
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1 // the column count is checked below, with a better message
	var (
		seats   []Seat
		width   int // columns of every line (csvWidths), set by the header or the first seat
		records int // seat lines, valid or not
		first   = map[string]int{}
	)
	for i := 0; ; i++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			p.add(M("seatmap_problem", "Where", atLine(pe.Line), "Problem", csvProblem(pe.Err)))
			continue
		} else if err != nil {
			return nil, nil, fmt.Errorf("read seat map: %w", err)
		}
		line, _ := r.FieldPos(0)
		for j := range rec {
			rec[j] = strings.TrimSpace(rec[j])
		}
		if i == 0 && isSeatCSVHeader(rec) {
			if slices.Contains(csvWidths, len(rec)) {
				width = len(rec)
			} else {
				p.add(M("seatmap_problem", "Where", atLine(line), "Problem", M("seatmap_header_columns", "Count", len(rec))))
			}
			continue
		}
		records++
		switch {
		case width == 0 && slices.Contains(csvWidths, len(rec)):
			width = len(rec)
		case width == 0:
			p.add(M("seatmap_problem", "Where", atLine(line), "Problem", M("seatmap_columns_first", "Count", len(rec))))
			continue
		case len(rec) != width:
			p.add(M("seatmap_problem", "Where", atLine(line), "Problem", M("seatmap_columns_mismatch", "Count", len(rec), "Want", width)))
			continue
		}
		xy := width == 6 || width == 9
		s := Seat{Section: rec[0], Row: rec[1], Number: rec[2], Grade: rec[3], HasXY: xy}
		bad := false
		report := func(field, problem Msg) {
			bad = true
			p.add(M("seatmap_field_problem", "Where", atLine(line), "Field", field, "Problem", problem))
		}
		checkSeat(s, allowed, report)
		if width >= 7 && !bad {
			orders.add(&p, line, SectionOrderText{Section: s.Section, Rank: rec[width-3], Rows: rec[width-2], Seats: rec[width-1]})
		}
		if xy {
			s.X = parseCoordinate(rec[4], func(problem Msg) { report(M("seatmap_field_x"), problem) })
			s.Y = parseCoordinate(rec[5], func(problem Msg) { report(M("seatmap_field_y"), problem) })
		}
		if bad {
			continue
		}
		s.Label = SeatLabel(s.Section, s.Row, s.Number)
		if at, dup := first[s.Label]; dup {
			p.add(M("seatmap_problem", "Where", atLine(line), "Problem", M("seatmap_duplicate", "Label", s.Label, "First", atLine(at))))
			continue
		}
		first[s.Label] = line
		seats = append(seats, s)
	}
	if records == 0 && p.empty() {
		p.add(M("seatmap_file_no_seats"))
	}
	p.tooMany(records)
	if err := p.err(); err != nil {
		return nil, nil, err
	}
	if width == 4 || width == 7 {
		layOut(seats)
	}
	return seats, orders.list, nil
}

// sectionOrdersRead gathers the sections' orders of a seat-map CSV: a
// section's rank, row order and seat order may be given on any of its
// lines (and left empty on the others), the same wherever given.
type sectionOrdersRead struct {
	list  []SectionOrder
	index map[string]int            // section -> its order in list
	where map[string]map[string]int // section -> field -> the line that gave it
}

// add reads one line's order columns, at line, adding to p every value
// that is wrong (naming the section) or differs from the section's earlier
// line.
func (r *sectionOrdersRead) add(p *problems, line int, t SectionOrderText) {
	o, bad := ParseSectionOrder(t)
	for _, f := range []string{"rank", "row_order", "seat_order"} {
		if m, ok := bad[f]; ok {
			p.add(M("seatmap_problem", "Where", atLine(line), "Problem", m))
		}
	}
	if len(bad) > 0 {
		return
	}
	if r.index == nil {
		r.index, r.where = map[string]int{}, map[string]map[string]int{}
	}
	i, ok := r.index[t.Section]
	if !ok {
		i, r.index[t.Section], r.where[t.Section] = len(r.list), len(r.list), map[string]int{}
		r.list = append(r.list, SectionOrder{Section: t.Section})
	}
	have := &r.list[i]
	for _, f := range []struct {
		name         string
		given, known string
		set          func()
	}{
		{"rank", t.Rank, rankText(have.Rank), func() { have.Rank = o.Rank }},
		{"row_order", t.Rows, string(have.Rows), func() { have.Rows = o.Rows }},
		{"seat_order", t.Seats, string(have.Seats), func() { have.Seats = o.Seats }},
	} {
		switch {
		case f.given == "":
		case f.known == "":
			f.set()
			r.where[t.Section][f.name] = line
		case f.given != f.known:
			p.add(M("seatmap_problem", "Where", atLine(line), "Problem", M("seatmap_order_differs",
				"Section", t.Section, "Field", f.name, "Value", ClipInput(f.given, MaxQuoted), "Was", f.known, "First", atLine(r.where[t.Section][f.name]))))
		}
	}
}

// rankText is a rank as a CSV file gives it: "" for none.
func rankText(rank int) string {
	if rank == 0 {
		return ""
	}
	return strconv.Itoa(rank)
}

// csvProblem names a CSV syntax error of encoding/csv.
func csvProblem(err error) Msg {
	switch {
	case errors.Is(err, csv.ErrBareQuote):
		return M("seatmap_csv_bare_quote")
	case errors.Is(err, csv.ErrQuote):
		return M("seatmap_csv_quote")
	}
	return M("seatmap_csv_malformed")
}

func isSeatCSVHeader(rec []string) bool {
	return len(rec) >= 4 && strings.EqualFold(rec[0], "section") && strings.EqualFold(rec[1], "row") &&
		strings.EqualFold(rec[2], "number") && strings.EqualFold(rec[3], "grade")
}

// ParsePretix reads a seating plan in pretix's format (JSON, schema
// src/pretix/static/seating/seating-plan.schema.json of pretix/pretix): the
// plan's categories become grade codes (category name = grade code), each
// zone's name the section, each row's row_number the row and each seat's
// seat_number the number; a seat's position is the sum of its zone's, its
// row's and its own position (integers or decimals; zone and row positions
// may be missing and count as 0). size, areas and members this importer does
// not use are ignored. Seats are returned in file order with Label set and
// HasXY true.
//
// Errors: one EINVALID *Error as ParseCSV's, each problem naming its JSON
// path (for example `zones[2].rows[0].seats[5].category`): invalid JSON (with
// line and column), a member missing or of the wrong type, an empty zone
// name or one ParseCSV refuses as a section, a row or seat number that is not a whole number from 1 to 9999, a
// category name that is not a valid grade code or not in o.Grades, a seat
// whose category the plan does not list, a duplicate seat, more than
// MaxSeats seats, no seats, or a file over MaxSeatMapBytes.
func (o SeatMapOptions) ParsePretix(data []byte) ([]Seat, error) {
	var p problems
	if len(data) > MaxSeatMapBytes {
		p.tooLarge(len(data))
		return nil, p.err()
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	err := dec.Decode(&doc)
	if err == nil && dec.More() {
		err = errExtraJSON
	}
	if err != nil {
		p.add(jsonProblem(data, err, dec.InputOffset()))
		return nil, p.err()
	}
	w := jsonWalker{p: &p}
	plan, ok := doc.(map[string]any)
	if !ok {
		p.add(M("seatmap_not_pretix"))
		return nil, p.err()
	}

	// Categories: valid ones become grades; invalid ones are reported once
	// here rather than on each of their seats.
	allowed := gradeSet(o.Grades)
	known, reported := map[string]bool{}, map[string]bool{}
	for i, c := range w.array(plan, "categories", "categories") {
		path := fmt.Sprintf("categories[%d]", i)
		cat, ok := w.object(c, path)
		if !ok {
			continue
		}
		name, ok := w.str(cat, "name", path+".name")
		if !ok {
			continue
		}
		reported[name] = true
		checkGrade(name, allowed, func(problem Msg) {
			p.add(M("seatmap_field_problem", "Where", path+".name", "Field", M("seatmap_field_grade"), "Problem", problem))
			ok = false
		})
		if ok {
			known[name] = true
		}
	}

	var (
		seats []Seat
		count int
		first = map[string]string{}
	)
	for zi, z := range w.array(plan, "zones", "zones") {
		zpath := fmt.Sprintf("zones[%d]", zi)
		zone, ok := w.object(z, zpath)
		if !ok {
			continue
		}
		section, sectionOK := w.str(zone, "name", zpath+".name")
		if sectionOK {
			section = strings.TrimSpace(section)
			checkSection(section, func(problem Msg) {
				p.add(M("seatmap_problem", "Where", zpath+".name", "Problem", problem))
				sectionOK = false
			})
		}
		zx, zy, _ := w.position(zone, zpath, false)
		for ri, r := range w.array(zone, "rows", zpath+".rows") {
			rpath := fmt.Sprintf("%s.rows[%d]", zpath, ri)
			row, ok := w.object(r, rpath)
			if !ok {
				continue
			}
			rowNumber, rowOK := w.str(row, "row_number", rpath+".row_number")
			if rowOK {
				rowNumber = strings.TrimSpace(rowNumber)
				checkSeatNumber(rowNumber, func(problem Msg) {
					p.add(M("seatmap_problem", "Where", rpath+".row_number", "Problem", problem))
					rowOK = false
				})
			}
			rx, ry, _ := w.position(row, rpath, false)
			for si, st := range w.array(row, "seats", rpath+".seats") {
				count++
				spath := fmt.Sprintf("%s.seats[%d]", rpath, si)
				seat, ok := w.object(st, spath)
				if !ok {
					continue
				}
				number, numberOK := w.str(seat, "seat_number", spath+".seat_number")
				if numberOK {
					number = strings.TrimSpace(number)
					checkSeatNumber(number, func(problem Msg) {
						p.add(M("seatmap_problem", "Where", spath+".seat_number", "Problem", problem))
						numberOK = false
					})
				}
				category, categoryOK := w.str(seat, "category", spath+".category")
				if categoryOK && !known[category] {
					categoryOK = false
					if _, listed := plan["categories"].([]any); listed && !reported[category] {
						p.add(M("seatmap_problem", "Where", spath+".category", "Problem", M("seatmap_category_unknown", "Value", ClipInput(category, MaxQuoted))))
					}
				}
				sx, sy, posOK := w.position(seat, spath, true)
				if !sectionOK || !rowOK || !numberOK || !categoryOK || !posOK {
					continue
				}
				s := Seat{
					Label: SeatLabel(section, rowNumber, number), Section: section, Row: rowNumber, Number: number,
					Grade: category, X: zx + rx + sx, Y: zy + ry + sy, HasXY: true,
				}
				if checkCoordinate(s.X) != nil || checkCoordinate(s.Y) != nil {
					p.add(M("seatmap_problem", "Where", spath+".position", "Problem",
						M("seatmap_position_range", "X", s.X, "Y", s.Y, "Max", float64(MaxSeatCoordinate))))
					continue
				}
				if at, dup := first[s.Label]; dup {
					p.add(M("seatmap_problem", "Where", spath, "Problem", M("seatmap_duplicate", "Label", s.Label, "First", at)))
					continue
				}
				first[s.Label] = spath
				seats = append(seats, s)
			}
		}
	}
	if count == 0 && p.empty() {
		p.add(M("seatmap_plan_no_seats"))
	}
	p.tooMany(count)
	if err := p.err(); err != nil {
		return nil, err
	}
	return seats, nil
}

// errExtraJSON is the decoding error of a file with data after the plan.
var errExtraJSON = errors.New("extra data after the plan")

// jsonProblem describes a JSON decoding error with the line and column of
// the byte it happened at; end is where decoding stopped.
func jsonProblem(data []byte, err error, end int64) Msg {
	at := end // 0-based index of the offending byte
	var se *json.SyntaxError
	id := MsgID("seatmap_json_invalid")
	switch {
	case errors.As(err, &se):
		at = se.Offset - 1 // Offset counts the bytes read, the bad one included
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		at, id = int64(len(data)), "seatmap_json_eof"
	case errors.Is(err, errExtraJSON): // point at the extra data's first byte
		id = "seatmap_json_extra"
		for at < int64(len(data)) && strings.IndexByte(" \t\r\n", data[at]) >= 0 {
			at++
		}
	}
	at = min(max(at, 0), int64(len(data)))
	before := data[:at]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := len(before) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return M(id, "Line", line, "Column", col)
}

// jsonWalker reads members of a decoded JSON document (decoded with
// UseNumber), reporting each missing or mistyped member under its path.
type jsonWalker struct{ p *problems }

func (w jsonWalker) object(v any, path string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		w.p.add(M("seatmap_problem", "Where", path, "Problem", M("seatmap_not_object")))
	}
	return m, ok
}

func (w jsonWalker) array(m map[string]any, key, path string) []any {
	v, ok := m[key]
	if !ok {
		w.p.add(M("seatmap_problem", "Where", path, "Problem", M("seatmap_missing")))
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		w.p.add(M("seatmap_problem", "Where", path, "Problem", M("seatmap_not_array")))
	}
	return a
}

func (w jsonWalker) str(m map[string]any, key, path string) (string, bool) {
	v, ok := m[key]
	if !ok || v == nil {
		w.p.add(M("seatmap_problem", "Where", path, "Problem", M("seatmap_missing")))
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		w.p.add(M("seatmap_problem", "Where", path, "Problem", M("seatmap_not_string")))
		return "", false
	}
	if strings.TrimSpace(s) == "" {
		w.p.add(M("seatmap_problem", "Where", path, "Problem", M("seatmap_empty")))
		return "", false
	}
	return s, true
}

// position reads m's "position" member {"x": n, "y": n}. A missing position
// is a problem only if required; otherwise it is (0, 0).
func (w jsonWalker) position(m map[string]any, path string, required bool) (x, y float64, ok bool) {
	path += ".position"
	v, present := m["position"]
	if !present || v == nil {
		if required {
			w.p.add(M("seatmap_problem", "Where", path, "Problem", M("seatmap_missing")))
		}
		return 0, 0, !required
	}
	pos, ok := w.object(v, path)
	if !ok {
		return 0, 0, false
	}
	x, okX := w.number(pos, "x", path+".x")
	y, okY := w.number(pos, "y", path+".y")
	return x, y, okX && okY
}

func (w jsonWalker) number(m map[string]any, key, path string) (float64, bool) {
	v, ok := m[key]
	if !ok {
		w.p.add(M("seatmap_problem", "Where", path, "Problem", M("seatmap_missing")))
		return 0, false
	}
	n, ok := v.(json.Number)
	if !ok {
		w.p.add(M("seatmap_problem", "Where", path, "Problem", M("seatmap_not_number")))
		return 0, false
	}
	ok = true
	f := parseCoordinate(n.String(), func(problem Msg) { w.p.add(M("seatmap_problem", "Where", path, "Problem", problem)); ok = false })
	return f, ok
}

// WriteSeatCSV writes seats as CSV in the format ParseSeatCSV reads: the
// header section,row,number,grade,x,y, then one line per seat in the given
// order, x and y always written in the shortest form that reads back to the
// same float64. ParseSeatCSV of the output returns the same seats (with
// HasXY true). Errors: those of w.
func WriteSeatCSV(w io.Writer, seats []Seat) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(seatCSVHeader); err != nil {
		return fmt.Errorf("write seat map: %w", err)
	}
	for _, s := range seats {
		rec := []string{s.Section, s.Row, s.Number, s.Grade,
			strconv.FormatFloat(s.X, 'f', -1, 64), strconv.FormatFloat(s.Y, 'f', -1, 64)}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write seat map: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write seat map: %w", err)
	}
	return nil
}

// SectionSpec is one section of the seat-map generator: Rows rows of
// SeatsPerRow seats each, all of grade Grade.
type SectionSpec struct {
	Name        string
	Rows        int
	SeatsPerRow int
	Grade       string
}

// GenerateSeats builds a seat map from sections laid out side by side in the
// given order (SeatPitch, RowPitch, SectionGap apart; row 1 nearest the
// stage), labelled section-row-number with rows and numbers from 1. HasXY is
// false, as for any default layout.
//
// Errors: EINVALID with Fields naming every bad input at once, keyed
// "sections" (none given, more than MaxSeats seats in all) and
// "sections[i].name" (empty, too long, with a control character or one of
// < > " ` \, repeated), "sections[i].rows"
// (1 to MaxSectionRows), "sections[i].seats_per_row" (1 to MaxSectionSeats)
// and "sections[i].grade" (1 to 8 ASCII letters or digits), i counting from 0.
func GenerateSeats(sections []SectionSpec) ([]Seat, error) {
	f := map[string]Msg{}
	total := 0
	seen := map[string]bool{}
	for i, sec := range sections {
		key := fmt.Sprintf("sections[%d].", i)
		name := strings.TrimSpace(sec.Name)
		checkSection(name, func(problem Msg) { f[key+"name"] = M("val_section_name", "Problem", problem) })
		if seen[name] && name != "" {
			f[key+"name"] = M("val_section_name_taken")
		}
		seen[name] = true
		if sec.Rows < 1 || sec.Rows > MaxSectionRows {
			f[key+"rows"] = M("val_section_rows", "Max", MaxSectionRows)
		}
		if sec.SeatsPerRow < 1 || sec.SeatsPerRow > MaxSectionSeats {
			f[key+"seats_per_row"] = M("val_section_seats", "Max", MaxSectionSeats)
		}
		checkGrade(strings.TrimSpace(sec.Grade), nil, func(problem Msg) { f[key+"grade"] = M("val_section_grade", "Problem", problem) })
		total += max(sec.Rows, 0) * max(sec.SeatsPerRow, 0)
	}
	switch {
	case len(sections) == 0:
		f["sections"] = M("val_sections_none")
	case total > MaxSeats:
		f["sections"] = M("val_sections_many", "Seats", total, "Max", MaxSeats)
	}
	if err := Invalid(f); err != nil {
		return nil, err
	}
	seats := make([]Seat, 0, total)
	for _, sec := range sections {
		name, grade := strings.TrimSpace(sec.Name), strings.TrimSpace(sec.Grade)
		for r := 1; r <= sec.Rows; r++ {
			for n := 1; n <= sec.SeatsPerRow; n++ {
				row, number := strconv.Itoa(r), strconv.Itoa(n)
				seats = append(seats, Seat{Label: SeatLabel(name, row, number), Section: name, Row: row, Number: number, Grade: grade})
			}
		}
	}
	layOut(seats)
	return seats, nil
}

// ValidateSeats checks a seat map that did not come from a parser (the same
// rules as ParseCSV: fields, duplicates, MaxSeats, at least one seat). Labels
// are not read: they follow from section, row and number. Errors: EINVALID
// with Details["problems"], each naming the seat by its index from 0.
func ValidateSeats(seats []Seat) error {
	var p problems
	first := map[string]int{}
	for i, s := range seats {
		bad := false
		where := M("seatmap_where_seat", "Index", i)
		report := func(field, problem Msg) {
			bad = true
			p.add(M("seatmap_field_problem", "Where", where, "Field", field, "Problem", problem))
		}
		checkSeat(s, nil, report)
		if problem := checkCoordinate(s.X); problem != nil {
			report(M("seatmap_field_x"), *problem)
		}
		if problem := checkCoordinate(s.Y); problem != nil {
			report(M("seatmap_field_y"), *problem)
		}
		if bad {
			continue
		}
		label := SeatLabel(s.Section, s.Row, s.Number)
		if at, dup := first[label]; dup {
			p.add(M("seatmap_problem", "Where", where, "Problem", M("seatmap_duplicate", "Label", label, "First", M("seatmap_where_seat", "Index", at))))
			continue
		}
		first[label] = i
	}
	if len(seats) == 0 {
		p.add(M("seatmap_map_no_seats"))
	}
	p.tooMany(len(seats))
	return p.err()
}

// GradeCount is the number of seats of one grade in a seat map.
type GradeCount struct {
	Grade string
	Seats int
}

// CountByGrade counts seats per grade, in the order each grade first appears.
func CountByGrade(seats []Seat) []GradeCount {
	var counts []GradeCount
	at := map[string]int{}
	for _, s := range seats {
		i, ok := at[s.Grade]
		if !ok {
			i = len(counts)
			at[s.Grade] = i
			counts = append(counts, GradeCount{Grade: s.Grade})
		}
		counts[i].Seats++
	}
	return counts
}

// SeatMapBounds returns the smallest rectangle holding every seat's position
// (layout units), for an SVG viewBox; all zero for no seats. Callers add a
// margin of a seat pitch or so, since a seat is drawn around its point.
func SeatMapBounds(seats []Seat) (minX, minY, maxX, maxY float64) {
	for i, s := range seats {
		if i == 0 {
			minX, minY, maxX, maxY = s.X, s.Y, s.X, s.Y
			continue
		}
		minX, minY = min(minX, s.X), min(minY, s.Y)
		maxX, maxY = max(maxX, s.X), max(maxY, s.Y)
	}
	return minX, minY, maxX, maxY
}

// layOut gives seats the default layout: sections side by side in the order
// they first appear, each as wide as its longest row, seat n of row r at
// (offset + (n-1)·SeatPitch, (r-1)·RowPitch). Row and Number must be valid.
func layOut(seats []Seat) {
	var order []string
	width := map[string]int{}
	for _, s := range seats {
		n, _ := strconv.Atoi(s.Number)
		if _, ok := width[s.Section]; !ok {
			order = append(order, s.Section)
		}
		width[s.Section] = max(width[s.Section], n)
	}
	offset := map[string]float64{}
	x := 0.0
	for _, sec := range order {
		offset[sec] = x
		x += float64((width[sec]-1)*SeatPitch + SectionGap + SeatPitch)
	}
	for i := range seats {
		r, _ := strconv.Atoi(seats[i].Row)
		n, _ := strconv.Atoi(seats[i].Number)
		seats[i].X = offset[seats[i].Section] + float64((n-1)*SeatPitch)
		seats[i].Y = float64((r - 1) * RowPitch)
		seats[i].HasXY = false
	}
}

// checkSeat reports each bad field of s (not x and y) as report(field, problem).
func checkSeat(s Seat, allowed map[string]bool, report func(field, problem Msg)) {
	checkSection(s.Section, func(problem Msg) { report(M("seatmap_field_section"), problem) })
	checkSeatNumber(s.Row, func(problem Msg) { report(M("seatmap_field_row"), problem) })
	checkSeatNumber(s.Number, func(problem Msg) { report(M("seatmap_field_number"), problem) })
	checkGrade(s.Grade, allowed, func(problem Msg) { report(M("seatmap_field_grade"), problem) })
}

// sectionMarkup are the characters a section name may not hold: no hall
// names its sections with them, and they are what turns text into markup or
// code (HTML, SVG, scripts, CSV readers) wherever a seat label travels, to
// pages, tickets, URLs and the outbox's consumers.
const sectionMarkup = "<>\"`\\"

func checkSection(s string, report func(problem Msg)) {
	switch {
	case s == "":
		report(M("seatmap_empty"))
	case utf8.RuneCountInString(s) > MaxSectionLen:
		report(M("seatmap_section_long", "Max", MaxSectionLen))
	case strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		report(M("seatmap_control_char"))
	case strings.ContainsAny(s, sectionMarkup):
		report(M("seatmap_section_markup"))
	}
}

// checkSeatNumber checks a row or seat number: the schema's
// ^[1-9][0-9]{0,3}$, a whole number from 1 to 9999 without a leading zero.
func checkSeatNumber(s string, report func(problem Msg)) {
	if s == "" {
		report(M("seatmap_empty"))
		return
	}
	ok := len(s) <= 4 && s[0] >= '1' && s[0] <= '9'
	for i := 1; ok && i < len(s); i++ {
		ok = s[i] >= '0' && s[i] <= '9'
	}
	if !ok {
		report(M("seatmap_number_bad", "Value", ClipInput(s, MaxQuoted)))
	}
}

// ValidGradeCode reports whether code is a grade code: 1 to 8 ASCII letters
// or digits (the schema's ^[A-Za-z0-9]{1,8}$).
func ValidGradeCode(code string) bool {
	if len(code) < 1 || len(code) > 8 {
		return false
	}
	for _, r := range code {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func checkGrade(code string, allowed map[string]bool, report func(problem Msg)) {
	switch {
	case code == "":
		report(M("seatmap_empty"))
	case !ValidGradeCode(code):
		report(M("seatmap_grade_bad", "Value", ClipInput(code, MaxQuoted)))
	case allowed != nil && !allowed[code]:
		report(M("seatmap_grade_unknown", "Value", code, "Known", strings.Join(slices.Sorted(maps.Keys(allowed)), ", ")))
	}
}

func gradeSet(codes []string) map[string]bool {
	if len(codes) == 0 {
		return nil
	}
	set := make(map[string]bool, len(codes))
	for _, c := range codes {
		set[c] = true
	}
	return set
}

// parseCoordinate parses an x or y value, reporting an empty, malformed,
// infinite or out-of-range one.
func parseCoordinate(v string, report func(problem Msg)) float64 {
	if v == "" {
		report(M("seatmap_empty"))
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		report(M("seatmap_coord_nan", "Value", ClipInput(v, MaxQuoted)))
		return 0
	}
	if problem := checkCoordinate(f); problem != nil {
		report(*problem)
		return 0
	}
	return f
}

// checkCoordinate returns the problem of an x or y value out of range, or nil.
func checkCoordinate(f float64) *Msg {
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > MaxSeatCoordinate {
		m := M("seatmap_coord_range", "Max", float64(MaxSeatCoordinate))
		return &m
	}
	return nil
}

// problems collects a seat map's problems, listing the first
// MaxSeatMapProblems and counting the rest.
type problems struct {
	list []Msg
	more int
}

func (p *problems) add(m Msg) {
	if len(p.list) < MaxSeatMapProblems {
		p.list = append(p.list, m)
	} else {
		p.more++
	}
}

func (p *problems) empty() bool { return len(p.list) == 0 }

// first lists a problem of the whole file ahead of the others, so that the
// limit on listed problems never hides it.
func (p *problems) first(m Msg) {
	p.list = slices.Insert(p.list, 0, m)
	if len(p.list) > MaxSeatMapProblems {
		p.list = p.list[:MaxSeatMapProblems]
		p.more++
	}
}

func (p *problems) tooLarge(size int) {
	p.first(M("seatmap_too_large", "MiB", MaxSeatMapBytes>>20, "Size", size))
}

func (p *problems) tooMany(seats int) {
	if seats > MaxSeats {
		p.first(M("seatmap_too_many", "Seats", seats, "Max", MaxSeats))
	}
}

// err returns the EINVALID error listing the problems in Details["problems"],
// or nil if there are none.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	list := p.list
	if p.more > 0 {
		list = append(list, M("seatmap_more", "Count", p.more))
	}
	return &Error{Code: EINVALID, Msg: M("err_seatmap", "Count", len(p.list)+p.more), Details: map[string]any{"problems": list}}
}
