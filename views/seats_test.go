package views

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
)

func testEvent() *boxoffice.Event {
	return &boxoffice.Event{ID: 7, Currency: "KRW", Grades: []boxoffice.Grade{
		{Code: "R", Name: boxoffice.Text{"en": "R seat", "ko": "R석"}, Price: 150000, Color: "#c0392b"},
		{Code: "S", Name: boxoffice.Text{"en": "S seat", "ko": "S석"}, Price: 90000, Color: "#2980b9"},
	}}
}

// heldFor is the state of a fan who holds n seats, the first of which is
// released in ttl.
func heldFor(n int, ttl time.Duration) boxoffice.SeatMapState {
	st := boxoffice.SeatMapState{HoldsTTL: ttl}
	for i := range n {
		st.Mine = append(st.Mine, "A-1-"+strconv.Itoa(i+1))
	}
	return st
}

func generated(t *testing.T, specs ...boxoffice.SectionSpec) []boxoffice.Seat {
	t.Helper()
	seats, err := boxoffice.GenerateSeats(specs)
	if err != nil {
		t.Fatal(err)
	}
	return seats
}

func TestNewSeatMap_Stage(t *testing.T) {
	t.Run("GeneratedLayout", func(t *testing.T) {
		// sections side by side, row 1 at y 0: the stage is above them
		m := NewSeatMap(testEvent(), generated(t,
			boxoffice.SectionSpec{Name: "A", Rows: 5, SeatsPerRow: 10, Grade: "R"},
			boxoffice.SectionSpec{Name: "B", Rows: 5, SeatsPerRow: 10, Grade: "S"},
		))
		st := m.Stage
		if st.Y+st.H > -boxoffice.RowPitch || st.H <= 0 || st.W <= 0 {
			t.Errorf("stage %+v, want it above row 1 (y 0)", st)
		}
		if mid, want := st.X+st.W/2, (0+(10-1)*12+24+12+9*12)/2.0; mid != want {
			t.Errorf("stage centred at x %v, want %v (the middle of the front row)", mid, want)
		}
		if !strings.HasPrefix(m.ViewBox, "-") {
			t.Errorf("view box %q does not reach up to the stage", m.ViewBox)
		}
	})
	t.Run("SeatsBehindTheStage", func(t *testing.T) {
		// choir seats behind the stage (rows running up, row 1 nearest the
		// stage) and the stalls in front of it: the stage sits between
		var seats []boxoffice.Seat
		add := func(section, grade string, rows, per int, y0, dy float64) {
			for r := 1; r <= rows; r++ {
				for n := 1; n <= per; n++ {
					row, num := strconv.Itoa(r), strconv.Itoa(n)
					seats = append(seats, boxoffice.Seat{Label: boxoffice.SeatLabel(section, row, num), Section: section, Row: row, Number: num,
						Grade: grade, X: float64(n-1)*12 - float64(per-1)*6, Y: y0 + float64(r-1)*dy})
				}
			}
		}
		add("CHOIR", "S", 4, 10, -40, -14)
		add("STALLS", "R", 10, 20, 120, 14)
		m := NewSeatMap(testEvent(), seats)
		st := m.Stage
		if st.Y <= -40 || st.Y+st.H >= 120 {
			t.Errorf("stage from y %v to %v, want it between the choir (y ≤ -40) and the stalls (y ≥ 120)", st.Y, st.Y+st.H)
		}
		if got := m.Section("CHOIR"); got == nil || got.LabelY >= -82 {
			t.Errorf("the choir's name is at y %v, want it behind its last row (y -82)", got.LabelY)
		}
	})
}

func TestConvexHull(t *testing.T) {
	var pts []point
	for x := 0.0; x <= 4; x++ {
		for y := 0.0; y <= 3; y++ {
			pts = append(pts, point{x, y})
		}
	}
	got := convexHull(pts)
	want := []point{{0, 0}, {4, 0}, {4, 3}, {0, 3}}
	if len(got) != len(want) {
		t.Fatalf("hull of a grid = %v, want its 4 corners", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("hull of a grid = %v, want %v", got, want)
		}
	}
	if got := convexHull([]point{{1, 1}, {1, 1}, {2, 2}}); len(got) != 2 {
		t.Errorf("hull of two distinct points = %v", got)
	}
}

func TestSeatMap_SeatsMarkup(t *testing.T) {
	seats := generated(t,
		boxoffice.SectionSpec{Name: "A", Rows: 1, SeatsPerRow: 2, Grade: "R"},
		boxoffice.SectionSpec{Name: "B", Rows: 1, SeatsPerRow: 1, Grade: "S"},
	)
	// A section name the importers refuse, as a map made before that rule
	// may hold: the hand-written markup escapes it all the same.
	for i := range seats[:2] {
		seats[i].Section = `A"<&`
		seats[i].Label = boxoffice.SeatLabel(seats[i].Section, seats[i].Row, seats[i].Number)
	}
	m := NewSeatMap(testEvent(), seats)
	for lang, desc := range map[string][2]string{
		English: {"Section A&#34;&lt;&amp;, row &lt;r&gt;, seat &lt;n&gt;, R seat, ₩150,000", "Section B, row &lt;r&gt;, seat &lt;n&gt;, S seat, ₩90,000"},
		Korean:  {"A&#34;&lt;&amp;구역 &lt;r&gt;열 &lt;n&gt;번 · R석 · 150,000원", "B구역 &lt;r&gt;열 &lt;n&gt;번 · S석 · 90,000원"},
	} {
		var buf bytes.Buffer
		if err := m.seatsMarkup().Render(in(lang), &buf); err != nil {
			t.Fatal(err)
		}
		want := `<g class="grade grade-R" fill="#c0392b" data-desc="` + desc[0] + `">` +
			`<circle cx="0" cy="0" r="5" data-id="A&#34;&lt;&amp;-1-1" tabindex="0"/>` +
			`<circle cx="12" cy="0" r="5" data-id="A&#34;&lt;&amp;-1-2"/>` +
			`</g><g class="grade grade-S" fill="#2980b9" data-desc="` + desc[1] + `">` +
			`<circle cx="48" cy="0" r="5" data-id="B-1-1"/></g>`
		if got := buf.String(); got != want {
			t.Errorf("markup in %s =\n%s\nwant\n%s", lang, got, want)
		}
	}
}

func TestNotices(t *testing.T) {
	m := NewSeatMap(testEvent(), generated(t, boxoffice.SectionSpec{Name: "A", Rows: 1, SeatsPerRow: 8, Grade: "R"}))
	en, ko := in(English), in(Korean)
	var st boxoffice.SeatMapState
	if got := HeldNotice(1).Text(en, m, heldFor(1, 299400*time.Millisecond)); got != "You hold 1 seat for 4 min 59 s. Pay before the time runs out." {
		t.Errorf("HeldNotice = %q", got)
	}
	err := &boxoffice.Error{Code: boxoffice.ESEATTAKEN, Details: map[string]any{
		"seats": []string{"A-1-1", "A-1-2", "A-1-3", "A-1-4", "A-1-5", "A-1-6", "A-1-7"},
	}}
	n := RefusedNotice(errors.Join(errors.New("context"), err))
	if text := n.Text(en, m, st); !n.Error || !strings.HasPrefix(text, "Some of these seats are already sold or were just chosen by someone else. Please choose others. (Section A, row 1, seat 1, R seat, ₩150,000; ") || !strings.HasSuffix(text, "; and 2 more)") {
		t.Errorf("RefusedNotice = %+v: %q", n, text)
	}
	n = RefusedNotice(err)
	if text := n.Text(ko, m, st); !strings.HasPrefix(text, "이미 판매되었거나 다른 분이 선택한 좌석이 있습니다. 다른 좌석을 선택해 주세요. (A구역 1열 1번 · R석 · 150,000원; ") || !strings.HasSuffix(text, "; 외 2석)") {
		t.Errorf("RefusedNotice(ko) = %+v: %q", n, text)
	}
	if got := ReleasedNotice("A-1-8").Text(en, m, st); got != "You let go of Section A, row 1, seat 8, R seat, ₩150,000." {
		t.Errorf("ReleasedNotice = %q", got)
	}
}

// A notice kept as a flash is kept untranslated: made on an English page,
// it shows in Korean on a Korean one, its seats described and its numbers
// still numbers (the plural form and the digit grouping); what is not a
// notice is none.
func TestNotice_Encoded(t *testing.T) {
	m := NewSeatMap(testEvent(), generated(t, boxoffice.SectionSpec{Name: "A", Rows: 1, SeatsPerRow: 8, Grade: "R"}))
	en, ko := in(English), in(Korean)
	st := heldFor(2, 5*time.Minute)
	for _, tt := range []struct {
		n      Notice
		en, ko string
	}{
		{ReleasedNotice("A-1-8"), "You let go of Section A, row 1, seat 8, R seat, ₩150,000.", "A구역 1열 8번 · R석 · 150,000원 좌석의 선점을 해제했습니다."},
		{HeldNotice(2), "You hold 2 seats for 5 min 00 s. Pay before the time runs out.", ""},
		{RefusedNotice(&boxoffice.Error{Code: boxoffice.ELIMITEXCEEDED, Msg: boxoffice.M("hold_limit", "Limit", 1234)}), "", ""},
	} {
		got := DecodeNotice(EncodeNotice(tt.n))
		if !reflect.DeepEqual(got, tt.n) {
			t.Errorf("DecodeNotice(EncodeNotice(%+v)) = %+v", tt.n, got)
		}
		if tt.en != "" && got.Text(en, m, st) != tt.en {
			t.Errorf("%+v in English = %q, want %q", got, got.Text(en, m, st), tt.en)
		}
		if tt.ko != "" && got.Text(ko, m, st) != tt.ko {
			t.Errorf("%+v in Korean = %q, want %q", got, got.Text(ko, m, st), tt.ko)
		}
		if got.Text(en, m, st) == got.Text(ko, m, st) {
			t.Errorf("%+v says %q in both languages", got, got.Text(en, m, st))
		}
	}
	for _, s := range []string{"", "You let go of A-1-8.", "{"} {
		if n := DecodeNotice(s); n.Text(en, m, st) != "" {
			t.Errorf("DecodeNotice(%q) = %+v, want none", s, n)
		}
	}
}

// TestNewSeatMap_Demo lays out the demo arena: every seat drawn, every
// section outlined and named, the stage in front of the floor blocks.
func TestNewSeatMap_Demo(t *testing.T) {
	f, err := os.Open("../demo/venues/inspire_arena.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seats, err := boxoffice.ParseSeatCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	m := NewSeatMap(testEvent(), seats)
	if len(m.Sections) != 54 || len(m.seats) != 15000 {
		t.Fatalf("%d sections and %d seats, want 54 and 15000", len(m.Sections), len(m.seats))
	}
	// floor block F2's first row is at y -200, x -114 to 114
	if st := m.Stage; st.Y+st.H > -200 || st.X > -114 || st.X+st.W < 114 || st.W > 760 {
		t.Errorf("stage %+v, want it in front of the floor blocks and no wider than them", st)
	}
}

// A hold that adds seats to those the fan already held says how many it
// added and how many the fan now holds, as the heading beside it counts
// them, and gives the time the countdown below it starts from (the first
// hold's end, not the new seats' longer TTL), in both languages.
func TestHoldPanel_AddedNotice(t *testing.T) {
	m := NewSeatMap(testEvent(), generated(t, boxoffice.SectionSpec{Name: "A", Rows: 1, SeatsPerRow: 8, Grade: "R"}))
	st := boxoffice.SeatMapState{Mine: []string{"A-1-1", "A-1-2", "A-1-3", "A-1-4", "A-1-5"}, HoldsTTL: 3 * time.Minute}
	for _, tt := range []struct {
		lang, heading, notice, countdown string
	}{
		{English, "Your held seats (5)", "3 seats added: you now hold 5. Pay within 3 min 00 s, before the first of them is released.", "3 min 00 s"},
		{Korean, "선점한 좌석 5석", "좌석 3석을 추가로 선점해 모두 5석을 선점하고 있습니다. 가장 먼저 선점한 좌석이 3분 00초 뒤에 해제되니 그 전에 결제해 주세요.", "3분 00초"},
	} {
		var buf bytes.Buffer
		p := HoldPanelData{Map: m, State: st, Limit: 5, Notice: HeldNotice(3)}
		if err := HoldPanel(p).Render(in(tt.lang), &buf); err != nil {
			t.Fatal(err)
		}
		d, err := goquery.NewDocumentFromReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Find(`[data-testid=hold-count]`).Text(); got != tt.heading {
			t.Errorf("%s: heading = %q, want %q", tt.lang, got, tt.heading)
		}
		if got := d.Find(`[data-testid=hold-notice]`).Text(); got != tt.notice {
			t.Errorf("%s: notice = %q, want %q", tt.lang, got, tt.notice)
		}
		if got := d.Find(`[data-countdown]`).Text(); got != tt.countdown {
			t.Errorf("%s: countdown = %q, want %q", tt.lang, got, tt.countdown)
		}
	}
}

// A hold that asked only for seats the fan held already added none: its
// notice says what the fan holds, as the heading beside it counts.
func TestHeldNotice_NoneAdded(t *testing.T) {
	st := boxoffice.SeatMapState{Mine: []string{"A-1-1", "A-1-2", "A-1-3"}, HoldsTTL: 3 * time.Minute}
	for lang, want := range map[string]string{
		English: "You hold 3 seats for 3 min 00 s. Pay before the time runs out.",
		Korean:  "좌석 3석을 3분 00초 동안 선점했습니다. 시간 안에 결제해 주세요.",
	} {
		if got := HeldNotice(0).Text(in(lang), nil, st); got != want {
			t.Errorf("%s: HeldNotice(0) = %q, want %q", lang, got, want)
		}
	}
}
