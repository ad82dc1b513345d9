package views

import (
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

func TestGradeColors(t *testing.T) {
	a := GradeColors([]string{"S", "R", "VIP", "R"})
	b := GradeColors([]string{"VIP", "S", "R"})
	if len(a) != 3 {
		t.Fatalf("GradeColors gave %d colours for 3 codes", len(a))
	}
	seen := map[string]bool{}
	for code, c := range a {
		if b[code] != c {
			t.Errorf("grade %s: %s in one order, %s in another; want the same colour", code, c, b[code])
		}
		if seen[c] {
			t.Errorf("colour %s given twice", c)
		}
		seen[c] = true
	}
	if a["R"] != gradePalette[0] || a["S"] != gradePalette[1] || a["VIP"] != gradePalette[2] {
		t.Errorf("colours %v, want the palette in code order R, S, VIP", a)
	}
}

func TestSeatMapPreview(t *testing.T) {
	seats, err := boxoffice.GenerateSeats([]boxoffice.SectionSpec{
		{Name: "A", Rows: 2, SeatsPerRow: 3, Grade: "S"},
		{Name: "B", Rows: 1, SeatsPerRow: 2, Grade: "R"},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := newSeatMapPreview(seats)
	if len(p.Grades) != 2 || p.Grades[0].Code != "R" || p.Grades[0].Seats != 2 || p.Grades[1].Code != "S" || p.Grades[1].Seats != 6 {
		t.Fatalf("grades %+v, want R with 2 seats then S with 6", p.Grades)
	}
	if n := strings.Count(p.Grades[1].Path, "M"); n != 6 {
		t.Errorf("S path draws %d squares, want 6", n)
	}
	// Seats span x 0..72 (B starts after A's 3 seats and the gap) and y 0..14;
	// the view adds a seat pitch on each side.
	if p.ViewBox != "-12 -12 96 38" {
		t.Errorf("viewBox %q, want -12 -12 96 38", p.ViewBox)
	}
	if !strings.HasPrefix(p.Grades[1].Path, "M-5 -5h10v10h-10z") {
		t.Errorf("S path starts %.30q, want the square around (0, 0)", p.Grades[1].Path)
	}
}
