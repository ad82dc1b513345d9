package boxoffice_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
)

const (
	hallCSV    = "demo/venues/seoul_arts_center_concert_hall.csv"
	hallPretix = "demo/venues/seoul_arts_center_concert_hall.pretix.json"
	arenaCSV   = "demo/venues/inspire_arena.csv"
)

func readFile(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// wantProblems checks that err is one EINVALID *Error listing exactly want.
func wantProblems(t *testing.T, err error, want []string) {
	t.Helper()
	var e *boxoffice.Error
	if !errorsAs(err, &e) || e.Code != boxoffice.EINVALID {
		t.Fatalf("error = %v, want an *Error with code %s", err, boxoffice.EINVALID)
	}
	if got := problemTexts(err); !slices.Equal(got, want) {
		t.Fatalf("problems:\n  got  %q\n  want %q", got, want)
	}
}

func TestParseSeatCSV(t *testing.T) {
	tests := []struct {
		name  string
		csv   string
		opts  boxoffice.SeatMapOptions
		want  []string // problems; nil means the parse succeeds
		seats int
	}{
		{"OKHeaderXY", "section,row,number,grade,x,y\nA,1,1,R,0,0\nA,1,2,R,12,0\n", boxoffice.SeatMapOptions{}, nil, 2},
		{"OKNoHeaderNoXY", "A,1,1,R\nA,1,2,S\n", boxoffice.SeatMapOptions{}, nil, 2},
		{"OKSpacesBOMCRLF", "\ufeff Section , Row , Number , Grade \r\n A , 1 , 1 , R \r\n\r\n", boxoffice.SeatMapOptions{}, nil, 1},
		{"OKQuoted", "\"Box, left\",1,1,R\n", boxoffice.SeatMapOptions{}, nil, 1},
		{"EmptyField", "section,row,number,grade\nA,1,,R\n,1,2,R\nA,1,3,\n", boxoffice.SeatMapOptions{},
			[]string{"line 2: number is empty", "line 3: section is empty", "line 4: grade is empty"}, 0},
		{"DuplicateSeat", "section,row,number,grade\nA,1,1,R\nA,1,2,R\nA,1,1,S\n", boxoffice.SeatMapOptions{},
			[]string{"line 4: duplicate seat A-1-1 (also at line 2)"}, 0},
		{"UnknownGrade", "A,1,1,R\nA,1,2,X\n", boxoffice.SeatMapOptions{Grades: []string{"S", "R"}},
			[]string{`line 2: grade "X" is unknown (known grades: R, S)`}, 0},
		{"BadGradeCode", "A,1,1,Premium seat\nA,1,2,ABCDEFGHI\n", boxoffice.SeatMapOptions{}, []string{
			`line 1: grade must be 1 to 8 letters or digits, not "Premium seat"`,
			`line 2: grade must be 1 to 8 letters or digits, not "ABCDEFGHI"`}, 0},
		{"RowNotNumber", "A,x,1,R\nA,01,1,R\nA,0,1,R\nA,10000,1,R\nA,1,-1,R\nA,1,1.5,R\n", boxoffice.SeatMapOptions{}, []string{
			`line 1: row must be a whole number from 1 to 9999 without a leading zero, not "x"`,
			`line 2: row must be a whole number from 1 to 9999 without a leading zero, not "01"`,
			`line 3: row must be a whole number from 1 to 9999 without a leading zero, not "0"`,
			`line 4: row must be a whole number from 1 to 9999 without a leading zero, not "10000"`,
			`line 5: number must be a whole number from 1 to 9999 without a leading zero, not "-1"`,
			`line 6: number must be a whole number from 1 to 9999 without a leading zero, not "1.5"`}, 0},
		{"BadXY", "A,1,1,R,abc,0\nA,1,2,R,NaN,Inf\nA,1,3,R,1e7,\n", boxoffice.SeatMapOptions{}, []string{
			`line 1: x must be a number, not "abc"`,
			"line 2: x must be a number from -1e+06 to 1e+06",
			"line 2: y must be a number from -1e+06 to 1e+06",
			"line 3: x must be a number from -1e+06 to 1e+06",
			"line 3: y is empty"}, 0},
		{"LongValueQuotedShort", "A," + strings.Repeat("9", 5000) + ",1,R\n", boxoffice.SeatMapOptions{}, []string{
			`line 1: row must be a whole number from 1 to 9999 without a leading zero, not "` + strings.Repeat("9", boxoffice.MaxQuoted) + `…"`}, 0},
		{"SectionTooLong", strings.Repeat("S", 41) + ",1,1,R\nA\x07,1,1,R\n", boxoffice.SeatMapOptions{}, []string{
			"line 1: section is longer than 40 characters",
			"line 2: section contains a control character"}, 0},
		// A section name is text that travels as a seat label to pages,
		// tickets, URLs and the outbox: markup characters are refused, the
		// punctuation real halls use is not.
		{"SectionMarkup", "\"\"\"><svg onload=alert(1)>\",1,1,R\n<b>,1,1,R\n`x`,1,1,R\nA\\B,1,1,R\n\"Box \"\"A\"\"\",1,1,R\n", boxoffice.SeatMapOptions{}, []string{
			"line 1: section may not contain the characters < > \" ` \\",
			"line 2: section may not contain the characters < > \" ` \\",
			"line 3: section may not contain the characters < > \" ` \\",
			"line 4: section may not contain the characters < > \" ` \\",
			"line 5: section may not contain the characters < > \" ` \\"}, 0},
		{"OKSectionPunctuation", "Director's Box,1,1,R\nStalls & Circle,1,1,R\nC/D (left),1,1,R\nA-1,1,1,R\n북측 1층,1,1,R\n", boxoffice.SeatMapOptions{}, nil, 5},
		{"ColumnCount", "A,1,1,R,0\nA,1,1,R\nA,1,2,R,0,0\nsection,row,number,grade,x\nA;1;3;R\n", boxoffice.SeatMapOptions{}, []string{
			"line 1: has 5 fields; want 4 (section,row,number,grade), 6 (with x,y), 7 (with rank,row_order,seat_order) or 9 (with both)",
			"line 3: has 6 fields; want 4 like the lines before",
			"line 4: has 5 fields; want 4 like the lines before",
			"line 5: has 1 field; want 4 like the lines before"}, 0},
		{"HeaderColumnCount", "section,row,number,grade,x\nA,1,1,R\n", boxoffice.SeatMapOptions{}, []string{
			"line 1: the header has 5 columns; want section,row,number,grade, then optionally x,y, then optionally rank,row_order,seat_order"}, 0},
		{"BadQuote", "A,1\"1,R\nA,1,2,R\nA,x,3,R\nA,\"1,2,R\n", boxoffice.SeatMapOptions{}, []string{
			`line 1: a quote (") in an unquoted field`,
			`line 3: row must be a whole number from 1 to 9999 without a leading zero, not "x"`,
			`line 4: a quoted field is not closed`}, 0},
		{"NoSeats", "section,row,number,grade\n", boxoffice.SeatMapOptions{}, []string{"the file has no seats"}, 0},
		{"Empty", "", boxoffice.SeatMapOptions{}, []string{"the file has no seats"}, 0},
		{"NotText", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", boxoffice.SeatMapOptions{}, []string{"the file is not a CSV text file"}, 0},
		{"AllAtOnce", "section,row,number,grade\nA,1,1,R\nA,1,1,R\nB,x,1,R\nB,1,1,\nB,1,2,R,5\n", boxoffice.SeatMapOptions{}, []string{
			"line 3: duplicate seat A-1-1 (also at line 2)",
			`line 4: row must be a whole number from 1 to 9999 without a leading zero, not "x"`,
			"line 5: grade is empty",
			"line 6: has 5 fields; want 4 like the lines before"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seats, err := tt.opts.ParseCSV(strings.NewReader(tt.csv))
			if tt.want != nil {
				wantProblems(t, err, tt.want)
				return
			}
			if err != nil {
				t.Fatalf("ParseCSV: %v %q", err, problemTexts(err))
			}
			if len(seats) != tt.seats {
				t.Fatalf("got %d seats, want %d", len(seats), tt.seats)
			}
		})
	}
}

func TestParseSeatCSV_Values(t *testing.T) {
	seats, err := boxoffice.ParseSeatCSV(strings.NewReader("section,row,number,grade,x,y\n\"Box, left\",2,7,VIP,-1.5,28\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []boxoffice.Seat{{Label: "Box, left-2-7", Section: "Box, left", Row: "2", Number: "7", Grade: "VIP", X: -1.5, Y: 28, HasXY: true}}
	if !reflect.DeepEqual(seats, want) {
		t.Fatalf("seats = %+v, want %+v", seats, want)
	}
}

// Seats without x/y get the default layout: sections side by side in the
// order they appear, seat pitch 12, row pitch 14.
func TestParseSeatCSV_DefaultLayout(t *testing.T) {
	seats, err := boxoffice.ParseSeatCSV(strings.NewReader("A,1,1,R\nA,1,3,R\nA,2,1,R\nB,1,1,S\nB,3,2,S\n"))
	if err != nil {
		t.Fatal(err)
	}
	// Section A is 3 seats wide (x 0 to 24), then a gap of 24 and a pitch.
	want := [][2]float64{{0, 0}, {24, 0}, {0, 14}, {60, 0}, {72, 28}}
	for i, s := range seats {
		if s.X != want[i][0] || s.Y != want[i][1] || s.HasXY {
			t.Errorf("seat %s at (%g, %g) HasXY %v, want (%g, %g) and false", s.Label, s.X, s.Y, s.HasXY, want[i][0], want[i][1])
		}
	}
}

func TestParseSeatCSV_Limits(t *testing.T) {
	t.Run("TooManySeats", func(t *testing.T) {
		var b strings.Builder
		for i := range boxoffice.MaxSeats + 1 {
			fmt.Fprintf(&b, "S%d,%d,%d,R\n", i/1000, i%1000/10+1, i%10+1)
		}
		_, err := boxoffice.ParseSeatCSV(strings.NewReader(b.String()))
		wantProblems(t, err, []string{"the map has 20001 seats; at most 20000 are allowed"})
	})
	t.Run("TooLarge", func(t *testing.T) {
		big := strings.Repeat("A,1,1,R\n", boxoffice.MaxSeatMapBytes/8+1)
		_, err := boxoffice.ParseSeatCSV(strings.NewReader(big))
		wantProblems(t, err, []string{"the file is larger than 4 MiB (4194305 bytes or more)"})
		_, err = boxoffice.ParseSeatMap("big.csv", []byte(big))
		wantProblems(t, err, []string{fmt.Sprintf("the file is larger than 4 MiB (%d bytes or more)", len(big))})
	})
	t.Run("ProblemsCapped", func(t *testing.T) {
		bad := strings.Repeat("A,x,1,R\n", boxoffice.MaxSeatMapProblems+5)
		_, err := boxoffice.ParseSeatCSV(strings.NewReader(bad))
		got := problemTexts(err)
		if len(got) != boxoffice.MaxSeatMapProblems+1 || got[len(got)-1] != "and 5 more problems" {
			t.Fatalf("got %d problems ending %q, want %d and \"and 5 more problems\"", len(got), got[len(got)-1], boxoffice.MaxSeatMapProblems+1)
		}
		if msg := views.ErrorText(en, err); msg != "The seat map has 105 problems; nothing was imported." {
			t.Errorf("message = %q", msg)
		}
	})
	t.Run("TooManyListedFirst", func(t *testing.T) {
		var b strings.Builder
		for i := range boxoffice.MaxSeats + 1 {
			fmt.Fprintf(&b, "S%d,%d,%d,R\n", i/1000, i%1000/10+1, i%10+1)
		}
		b.WriteString(strings.Repeat("A,x,1,R\n", boxoffice.MaxSeatMapProblems))
		_, err := boxoffice.SeatMapOptions{}.Parse("", []byte(b.String()))
		got := problemTexts(err)
		if len(got) == 0 || got[0] != "the map has 20101 seats; at most 20000 are allowed" {
			t.Fatalf("first problem = %q, want the seat count", got[:1])
		}
	})
}

// The importer's errors for a pretix plan name the JSON path of each problem.
func TestParsePretixPlan(t *testing.T) {
	plan := func(categories, zones string) string {
		return `{"name": "P", "categories": [` + categories + `], "zones": [` + zones + `]}`
	}
	seat := func(number, category string, x, y any) string {
		return fmt.Sprintf(`{"seat_guid": "g%s", "seat_number": %q, "position": {"x": %v, "y": %v}, "category": %q}`, number, number, x, y, category)
	}
	zone := func(name, rowNumber string, seats ...string) string {
		return fmt.Sprintf(`{"name": %q, "position": {"x": 100, "y": 50}, "rows": [{"row_number": %q, "position": {"x": 0, "y": 14}, "seats": [%s]}]}`,
			name, rowNumber, strings.Join(seats, ","))
	}
	cats := `{"name": "R", "color": "#ff0000"}, {"name": "S"}`
	tests := []struct {
		name string
		json string
		opts boxoffice.SeatMapOptions
		want []string
	}{
		{"NotJSON", `{"zones": [}`, boxoffice.SeatMapOptions{}, []string{"the file is not valid JSON: line 1, column 12"}},
		{"Truncated", "{\n\"zones\": [", boxoffice.SeatMapOptions{}, []string{"the file is not valid JSON: line 2, column 11: it ends too early"}},
		{"TrailingData", `{} {}`, boxoffice.SeatMapOptions{}, []string{"the file is not valid JSON: line 1, column 4: extra data after the plan"}},
		{"NotAPlan", `[1, 2]`, boxoffice.SeatMapOptions{}, []string{"the file is JSON but not a pretix seating plan (an object with categories and zones)"}},
		{"MissingMembers", `{"name": "P"}`, boxoffice.SeatMapOptions{}, []string{"categories: is missing", "zones: is missing"}},
		{"WrongTypes", plan(`"R"`, `{"name": 5, "position": {"x": "0", "y": 0}, "rows": {}}`), boxoffice.SeatMapOptions{}, []string{
			"categories[0]: must be an object",
			"zones[0].name: must be a string",
			"zones[0].position.x: must be a number",
			"zones[0].rows: must be an array"}},
		{"NoCategories", `{"zones": [` + zone("A", "1", seat("1", "R", 0, 0), seat("2", "R", 12, 0)) + `]}`, boxoffice.SeatMapOptions{}, []string{"categories: is missing"}},
		{"EmptyZoneName", plan(cats, zone(" ", "1", seat("1", "R", 0, 0))), boxoffice.SeatMapOptions{}, []string{"zones[0].name: is empty"}},
		{"ZoneNameMarkup", plan(cats, zone(`"><img src=x onerror=alert(1)>`, "1", seat("1", "R", 0, 0))), boxoffice.SeatMapOptions{}, []string{
			"zones[0].name: may not contain the characters < > \" ` \\"}},
		{"RowNotNumber", plan(cats, zone("A", "AA", seat("1", "R", 0, 0))), boxoffice.SeatMapOptions{}, []string{
			`zones[0].rows[0].row_number: must be a whole number from 1 to 9999 without a leading zero, not "AA"`}},
		{"SeatNumberNotNumber", plan(cats, zone("A", "1", seat("1", "R", 0, 0), seat("0", "R", 12, 0))), boxoffice.SeatMapOptions{}, []string{
			`zones[0].rows[0].seats[1].seat_number: must be a whole number from 1 to 9999 without a leading zero, not "0"`}},
		{"UnknownCategory", plan(cats, zone("A", "1", seat("1", "R", 0, 0), seat("2", "Z", 12, 0))), boxoffice.SeatMapOptions{}, []string{
			`zones[0].rows[0].seats[1].category: unknown grade "Z" (not among the plan's categories)`}},
		{"UnknownGrade", plan(cats, zone("A", "1", seat("1", "R", 0, 0), seat("2", "S", 12, 0))), boxoffice.SeatMapOptions{Grades: []string{"R"}}, []string{
			`categories[1].name: grade "S" is unknown (known grades: R)`}},
		{"BadCategoryName", plan(`{"name": "Front stalls"}`, zone("A", "1", seat("1", "Front stalls", 0, 0), seat("2", "Front stalls", 12, 0))), boxoffice.SeatMapOptions{}, []string{
			`categories[0].name: grade must be 1 to 8 letters or digits, not "Front stalls"`}},
		{"EmptyCategory", plan(cats, zone("A", "1", seat("1", "", 0, 0))), boxoffice.SeatMapOptions{}, []string{
			"zones[0].rows[0].seats[0].category: is empty"}},
		{"DuplicateSeat", plan(cats, zone("A", "1", seat("1", "R", 0, 0), seat("1", "S", 12, 0))+","+zone("A", "1", seat("1", "R", 0, 0))), boxoffice.SeatMapOptions{}, []string{
			"zones[0].rows[0].seats[1]: duplicate seat A-1-1 (also at zones[0].rows[0].seats[0])",
			"zones[1].rows[0].seats[0]: duplicate seat A-1-1 (also at zones[0].rows[0].seats[0])"}},
		{"BadPosition", plan(cats, zone("A", "1",
			`{"seat_guid": "a", "seat_number": "1", "category": "R"}`,
			`{"seat_guid": "b", "seat_number": "2", "category": "R", "position": {"x": 1}}`,
			`{"seat_guid": "c", "seat_number": "3", "category": "R", "position": {"x": 1e400, "y": true}}`,
			seat("4", "R", 999990, 0))), boxoffice.SeatMapOptions{}, []string{
			"zones[0].rows[0].seats[0].position: is missing",
			"zones[0].rows[0].seats[1].position.y: is missing",
			"zones[0].rows[0].seats[2].position.x: must be a number from -1e+06 to 1e+06",
			"zones[0].rows[0].seats[2].position.y: must be a number",
			"zones[0].rows[0].seats[3].position: the absolute position (1.00009e+06, 64) is beyond ±1e+06"}},
		{"NoSeats", plan(cats, zone("A", "1")), boxoffice.SeatMapOptions{}, []string{"the plan has no seats"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.opts.ParsePretix([]byte(tt.json))
			wantProblems(t, err, tt.want)
		})
	}

	t.Run("OKPositions", func(t *testing.T) {
		// Integer and decimal positions; zone + row + seat; no size; areas ignored.
		j := `{"name": "P", "categories": [{"name": "R"}], "zones": [{"name": "Box", "position": {"x": 100, "y": 50},
			"areas": [{"width": 10, "height": 10, "position": {"x": 0, "y": 0}, "text": "Stage"}],
			"rows": [{"row_number": "3", "position": {"x": 0.5, "y": 14}, "seats": [` + seat("7", "R", 12, 0.25) + `]},
			         {"row_number": "4", "seats": [` + seat("1", "R", 0, 0) + `]}]}]}`
		seats, err := boxoffice.ParsePretixPlan([]byte(j))
		if err != nil {
			t.Fatalf("ParsePretixPlan: %v %q", err, problemTexts(err))
		}
		want := []boxoffice.Seat{
			{Label: "Box-3-7", Section: "Box", Row: "3", Number: "7", Grade: "R", X: 112.5, Y: 64.25, HasXY: true},
			{Label: "Box-4-1", Section: "Box", Row: "4", Number: "1", Grade: "R", X: 100, Y: 50, HasXY: true},
		}
		if !reflect.DeepEqual(seats, want) {
			t.Fatalf("seats = %+v\nwant %+v", seats, want)
		}
	})
	t.Run("TooManySeats", func(t *testing.T) {
		var seats []string
		for i := range boxoffice.MaxSeats + 1 {
			seats = append(seats, seat(fmt.Sprint(i%9000+1), "R", i%9000, 0))
		}
		var zones []string
		for z := range 3 {
			zones = append(zones, zone(fmt.Sprintf("Z%d", z), "1", seats[z*7000:min((z+1)*7000, len(seats))]...))
		}
		_, err := boxoffice.ParsePretixPlan([]byte(plan(cats, strings.Join(zones, ","))))
		wantProblems(t, err, []string{"the map has 20001 seats; at most 20000 are allowed"})
	})
	t.Run("TooLarge", func(t *testing.T) {
		big := append([]byte(`{"name": "`), bytes.Repeat([]byte("x"), boxoffice.MaxSeatMapBytes)...)
		_, err := boxoffice.ParsePretixPlan(big)
		wantProblems(t, err, []string{fmt.Sprintf("the file is larger than 4 MiB (%d bytes or more)", len(big))})
	})
}

func wantGradeCounts(t *testing.T, seats []boxoffice.Seat, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for _, c := range boxoffice.CountByGrade(seats) {
		got[c.Grade] = c.Seats
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("grade counts = %v, want %v", got, want)
	}
}

// The demo files: the pretix plan of the concert hall holds the same 2,523
// seats as its CSV.
func TestParseSeatMap_DemoVenues(t *testing.T) {
	hallGrades := map[string]int{"R": 740, "S": 564, "A": 220, "B": 545, "C": 454}
	pretix, err := boxoffice.ParseSeatMap("seoul.pretix.json", readFile(t, hallPretix))
	if err != nil {
		t.Fatalf("pretix plan: %v %q", err, problemTexts(err))
	}
	if len(pretix) != 2523 {
		t.Fatalf("pretix plan: %d seats, want 2523", len(pretix))
	}
	wantGradeCounts(t, pretix, hallGrades)
	csvSeats, err := boxoffice.ParseSeatMap("hall.csv", readFile(t, hallCSV))
	if err != nil {
		t.Fatalf("hall CSV: %v %q", err, problemTexts(err))
	}
	wantGradeCounts(t, csvSeats, hallGrades)
	byLabel := map[string]string{}
	for _, s := range csvSeats {
		byLabel[s.Label] = s.Grade
	}
	for _, s := range pretix {
		if byLabel[s.Label] != s.Grade {
			t.Fatalf("pretix seat %s has grade %q, the CSV %q", s.Label, s.Grade, byLabel[s.Label])
		}
	}
	arena, err := boxoffice.ParseSeatMap("", readFile(t, arenaCSV))
	if err != nil {
		t.Fatalf("arena CSV: %v %q", err, problemTexts(err))
	}
	if len(arena) != 15000 {
		t.Fatalf("arena: %d seats, want 15000", len(arena))
	}
	wantGradeCounts(t, arena, map[string]int{"VIP": 1800, "R": 4500, "S": 5600, "A": 3100})
}

func TestParseSeatMap_Detect(t *testing.T) {
	tests := []struct {
		name, filename, data string
		want                 []string
		seats                int
	}{
		{"CSVByContent", "plan.txt", "A,1,1,R\n", nil, 1},
		{"JSONByContent", "plan.csv", `{"categories": [{"name": "R"}], "zones": [{"name": "A", "position": {"x": 0, "y": 0}, "rows": [{"row_number": "1", "seats": [{"seat_guid": "x", "seat_number": "1", "category": "R", "position": {"x": 0, "y": 0}}]}]}]}`, nil, 1},
		{"JSONByName", "plan.JSON", "zones: none", []string{"the file is not valid JSON: line 1, column 1"}, 0},
		{"Empty", "plan.csv", " \n\t", []string{"the file is empty"}, 0},
		{"Binary", "seats.png", "\x89PNG\r\n\x1a\n\x00\x00,", []string{"the file is neither CSV (section,row,number,grade[,x,y]) nor a pretix seating plan (JSON)"}, 0},
		{"TextWithoutCommas", "notes.txt", "These are my seats\nrow 1\n", []string{"the file is neither CSV (section,row,number,grade[,x,y]) nor a pretix seating plan (JSON)"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seats, err := boxoffice.ParseSeatMap(tt.filename, []byte(tt.data))
			if tt.want != nil {
				wantProblems(t, err, tt.want)
				return
			}
			if err != nil || len(seats) != tt.seats {
				t.Fatalf("ParseSeatMap = %d seats, %v %q; want %d seats", len(seats), err, problemTexts(err), tt.seats)
			}
		})
	}
}

// roundTrip writes seats as CSV and reads them back.
func roundTrip(tb testing.TB, seats []boxoffice.Seat) []boxoffice.Seat {
	tb.Helper()
	var b bytes.Buffer
	if err := boxoffice.WriteSeatCSV(&b, seats); err != nil {
		tb.Fatal(err)
	}
	again, err := boxoffice.ParseSeatCSV(&b)
	if err != nil {
		tb.Fatalf("re-import: %v %q", err, problemTexts(err))
	}
	return again
}

// sameSeats compares seats except HasXY, which export always makes true.
func sameSeats(a, b []boxoffice.Seat) bool {
	return slices.EqualFunc(a, b, func(x, y boxoffice.Seat) bool {
		x.HasXY, y.HasXY = false, false
		return x == y
	})
}

func TestWriteSeatCSV_RoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"HallCSV", readFile(t, hallCSV)},
		{"ArenaCSV", readFile(t, arenaCSV)},
		{"HallPretix", readFile(t, hallPretix)},
		{"NoXYQuoted", []byte("\"Box, 'left'\",1,1,R\nB,2,3,S\nB,1,1,S\n")},
		{"Decimals", []byte("A,1,1,R,0.1,-0.30000000000000004\nA,1,2,R,1e-7,123456.789\n")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seats, err := boxoffice.ParseSeatMap("", tt.data)
			if err != nil {
				t.Fatalf("import: %v %q", err, problemTexts(err))
			}
			again := roundTrip(t, seats)
			if !sameSeats(seats, again) {
				t.Fatalf("import -> export -> import changed the seats:\n first %+v\n again %+v", seats[:min(3, len(seats))], again[:min(3, len(again))])
			}
			for _, s := range again {
				if !s.HasXY {
					t.Fatalf("re-imported seat %s has HasXY false, want true (export writes x,y)", s.Label)
				}
			}
		})
	}
}

func TestGenerateSeats(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		seats, err := boxoffice.GenerateSeats([]boxoffice.SectionSpec{
			{Name: " A ", Rows: 2, SeatsPerRow: 3, Grade: "R"},
			{Name: "B", Rows: 1, SeatsPerRow: 2, Grade: "S"},
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range seats {
			got = append(got, fmt.Sprintf("%s %s %g,%g", s.Label, s.Grade, s.X, s.Y))
		}
		want := []string{"A-1-1 R 0,0", "A-1-2 R 12,0", "A-1-3 R 24,0", "A-2-1 R 0,14", "A-2-2 R 12,14", "A-2-3 R 24,14",
			"B-1-1 S 60,0", "B-1-2 S 72,0"}
		if !slices.Equal(got, want) {
			t.Fatalf("seats = %q\nwant %q", got, want)
		}
		if err := boxoffice.ValidateSeats(seats); err != nil {
			t.Fatalf("ValidateSeats(generated) = %v %q", err, problemTexts(err))
		}
	})
	tests := []struct {
		name     string
		sections []boxoffice.SectionSpec
		fields   []string
	}{
		{"None", nil, []string{"sections"}},
		{"AllAtOnce", []boxoffice.SectionSpec{{Name: "", Rows: 0, SeatsPerRow: 201, Grade: "R S"}}, []string{
			"sections[0].name", "sections[0].rows", "sections[0].seats_per_row", "sections[0].grade"}},
		{"Markup", []boxoffice.SectionSpec{{Name: "<script>", Rows: 1, SeatsPerRow: 1, Grade: "R"}}, []string{"sections[0].name"}},
		{"Repeated", []boxoffice.SectionSpec{{Name: "A", Rows: 1, SeatsPerRow: 1, Grade: "R"}, {Name: "A", Rows: 1, SeatsPerRow: 1, Grade: "R"}}, []string{"sections[1].name"}},
		{"Limits", []boxoffice.SectionSpec{{Name: strings.Repeat("x", 41), Rows: 201, SeatsPerRow: 0, Grade: ""}}, []string{
			"sections[0].name", "sections[0].rows", "sections[0].seats_per_row", "sections[0].grade"}},
		{"TooManySeats", []boxoffice.SectionSpec{
			{Name: "A", Rows: 200, SeatsPerRow: 50, Grade: "R"}, {Name: "B", Rows: 200, SeatsPerRow: 50, Grade: "R"},
			{Name: "C", Rows: 1, SeatsPerRow: 1, Grade: "R"}}, []string{"sections"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := boxoffice.GenerateSeats(tt.sections)
			var e *boxoffice.Error
			if !errorsAs(err, &e) || e.Code != boxoffice.EINVALID {
				t.Fatalf("GenerateSeats = %v, want %s", err, boxoffice.EINVALID)
			}
			got := slices.Sorted(maps.Keys(e.Fields))
			want := slices.Sorted(slices.Values(tt.fields))
			if !slices.Equal(got, want) {
				t.Fatalf("fields = %v (%v), want %v", got, e.Fields, want)
			}
		})
	}
}

func TestValidateSeats(t *testing.T) {
	seats := []boxoffice.Seat{
		{Section: "A", Row: "1", Number: "1", Grade: "R"},
		{Section: "A", Row: "1", Number: "1", Grade: "S"},
		{Section: "A", Row: "0", Number: "2", Grade: "R", X: 2e6},
	}
	wantProblems(t, boxoffice.ValidateSeats(seats), []string{
		"seat 1: duplicate seat A-1-1 (also at seat 0)",
		`seat 2: row must be a whole number from 1 to 9999 without a leading zero, not "0"`,
		"seat 2: x must be a number from -1e+06 to 1e+06",
	})
	wantProblems(t, boxoffice.ValidateSeats(nil), []string{"the map has no seats"})
}

func TestValidateVenue(t *testing.T) {
	ok := []boxoffice.Seat{{Section: "A", Row: "1", Number: "1", Grade: "R"}}
	if err := boxoffice.ValidateVenue("Hall", ok); err != nil {
		t.Fatalf("ValidateVenue(ok) = %v", err)
	}
	err := boxoffice.ValidateVenue("", nil)
	var e *boxoffice.Error
	if !errorsAs(err, &e) || e.Fields["name"].ID == "" || len(problemTexts(err)) != 1 {
		t.Fatalf("ValidateVenue(\"\", nil) = %+v, want Fields[name] and one problem", e)
	}
	if err := boxoffice.ValidateVenue(strings.Repeat("n", 201), ok); boxoffice.ErrorCode(err) != boxoffice.EINVALID {
		t.Fatalf("ValidateVenue(long name) = %v, want %s", err, boxoffice.EINVALID)
	}
}

func TestCountByGrade(t *testing.T) {
	seats := []boxoffice.Seat{{Grade: "S"}, {Grade: "R"}, {Grade: "S"}, {Grade: "A"}, {Grade: "R"}, {Grade: "S"}}
	want := []boxoffice.GradeCount{{Grade: "S", Seats: 3}, {Grade: "R", Seats: 2}, {Grade: "A", Seats: 1}}
	if got := boxoffice.CountByGrade(seats); !slices.Equal(got, want) {
		t.Fatalf("CountByGrade = %v, want %v", got, want)
	}
}

func TestSeatMapBounds(t *testing.T) {
	seats := []boxoffice.Seat{{X: 5, Y: -3}, {X: -7, Y: 10}, {X: 2, Y: 4}}
	if x0, y0, x1, y1 := boxoffice.SeatMapBounds(seats); x0 != -7 || y0 != -3 || x1 != 5 || y1 != 10 {
		t.Fatalf("SeatMapBounds = %g,%g,%g,%g, want -7,-3,5,10", x0, y0, x1, y1)
	}
	if x0, y0, x1, y1 := boxoffice.SeatMapBounds(nil); x0 != 0 || y0 != 0 || x1 != 0 || y1 != 0 {
		t.Fatalf("SeatMapBounds(nil) = %g,%g,%g,%g, want zeros", x0, y0, x1, y1)
	}
}

// firstLines returns the first n lines of a file, for fuzz seeds.
func firstLines(tb testing.TB, name string, n int) []byte {
	lines := bytes.SplitAfterN(readFile(tb, name), []byte("\n"), n+1)
	return bytes.Join(lines[:n], nil)
}

// checkParsed holds for every parser result: either valid seats that survive
// a CSV round trip, or one EINVALID error with problems.
func checkParsed(t *testing.T, seats []boxoffice.Seat, err error) {
	if err != nil {
		if boxoffice.ErrorCode(err) != boxoffice.EINVALID || len(problemTexts(err)) == 0 {
			t.Fatalf("error %v has code %s and problems %q, want %s with problems", err, boxoffice.ErrorCode(err), problemTexts(err), boxoffice.EINVALID)
		}
		return
	}
	if err := boxoffice.ValidateSeats(seats); err != nil {
		t.Fatalf("parsed seats are invalid: %q", problemTexts(err))
	}
	for _, s := range seats {
		if s.Label != boxoffice.SeatLabel(s.Section, s.Row, s.Number) {
			t.Fatalf("seat label %q, want %q", s.Label, boxoffice.SeatLabel(s.Section, s.Row, s.Number))
		}
	}
	if again := roundTrip(t, seats); !sameSeats(seats, again) {
		t.Fatalf("round trip changed the seats: %+v -> %+v", seats, again)
	}
}

func FuzzParseSeatCSV(f *testing.F) {
	f.Add(firstLines(f, hallCSV, 5))
	f.Add(firstLines(f, arenaCSV, 5))
	f.Add([]byte("A,1,1,R\nA,1,2,S\n"))
	f.Add([]byte("\"Box, left\",1,1,R,1.5,-2\n"))
	f.Add([]byte("section,row,number,grade\nA,x,,R\nA,1,1,R,5\n\"A,1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		seats, err := boxoffice.ParseSeatCSV(bytes.NewReader(data))
		checkParsed(t, seats, err)
		seats, err = boxoffice.ParseSeatMap("fuzz.csv", data)
		checkParsed(t, seats, err)
	})
}

func FuzzParsePretixPlan(f *testing.F) {
	f.Add(firstLines(f, hallPretix, 1)[:2000])
	f.Add([]byte(`{"name": "P", "categories": [{"name": "R"}], "zones": [{"name": "A", "position": {"x": 1, "y": 2}, "rows": [{"row_number": "1", "position": {"x": 0.5, "y": 0}, "seats": [{"seat_guid": "a", "seat_number": "1", "category": "R", "position": {"x": 3, "y": 4}}]}]}]}`))
	f.Add([]byte(`{"categories": [{"name": "R"}, 5], "zones": [{"name": "", "rows": [{"row_number": "01", "seats": [null, {"seat_number": "2"}]}]}]}`))
	f.Add([]byte(`[{"zones": []}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		seats, err := boxoffice.ParsePretixPlan(data)
		checkParsed(t, seats, err)
		seats, err = boxoffice.ParseSeatMap("fuzz.json", data)
		checkParsed(t, seats, err)
	})
}

// en is a context whose language is English, for the sentences tests read.
var en = boxoffice.NewContextWithLang(context.Background(), views.English)

// problemTexts returns the problems of a seat-map error in English.
func problemTexts(err error) []string {
	p := boxoffice.ErrorProblems(err)
	if p == nil {
		return nil
	}
	return views.SayAll(en, p)
}
