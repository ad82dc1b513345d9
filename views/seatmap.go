package views

import (
	"slices"
	"strconv"
	"strings"

	"github.com/boxoffice/boxoffice"
)

// gradePalette colours the grades of a seat-map preview, in grade code order:
// distinct hues that stay apart for people with the common colour-vision
// deficiencies (Okabe–Ito, then darker shades).
var gradePalette = []string{
	"#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7",
	"#7f6000", "#1b5e20", "#4a148c", "#880e4f", "#37474f",
}

// GradeColors gives each distinct grade code a colour of a fixed palette by
// the codes' sorted order, the same codes always the same colours; past the
// palette's end the colours repeat. The result maps code to "#rrggbb".
func GradeColors(codes []string) map[string]string {
	sorted := slices.Clone(codes)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	colors := make(map[string]string, len(sorted))
	for i, c := range sorted {
		colors[c] = gradePalette[i%len(gradePalette)]
	}
	return colors
}

// SeatGrades returns the grade codes of a seat map, sorted, each once.
func SeatGrades(seats []boxoffice.Seat) []string {
	var codes []string
	for _, g := range boxoffice.CountByGrade(seats) {
		codes = append(codes, g.Grade)
	}
	slices.Sort(codes)
	return codes
}

// seatSize is the side of a seat's square in the preview, in layout units
// (the seat pitch is boxoffice.SeatPitch).
const seatSize = 10

// seatMapPreview is a seat map prepared for an SVG drawing: the viewBox and
// one path per grade in code order (one path of many squares draws thousands
// of seats at the cost of one element). The stage is not drawn: a seat map
// does not say where it is, only that y grows away from it.
type seatMapPreview struct {
	ViewBox  string
	MaxWidth string // CSS width at most maxScale pixels per layout unit, so that a small map is not blown up
	Grades   []previewGrade
}

// maxScale is how many CSS pixels a layout unit takes at most in the preview.
const maxScale = 2

// previewGrade is one grade of a preview: its colour, its seat count and the
// path of its seats' squares.
type previewGrade struct {
	Code  string
	Color string
	Seats int
	Path  string
}

func newSeatMapPreview(seats []boxoffice.Seat) seatMapPreview {
	var p seatMapPreview
	minX, minY, maxX, maxY := boxoffice.SeatMapBounds(seats)
	const margin = boxoffice.SeatPitch
	width, height := maxX-minX+2*margin, maxY-minY+2*margin
	p.ViewBox = strings.Join([]string{num(minX - margin), num(minY - margin), num(width), num(height)}, " ")
	p.MaxWidth = num(width*maxScale) + "px"

	codes := SeatGrades(seats)
	colors := GradeColors(codes)
	paths := make(map[string]*strings.Builder, len(codes))
	counts := make(map[string]int, len(codes))
	for _, s := range seats {
		b := paths[s.Grade]
		if b == nil {
			b = &strings.Builder{}
			paths[s.Grade] = b
		}
		counts[s.Grade]++
		b.WriteString("M")
		b.WriteString(num(s.X - seatSize/2))
		b.WriteString(" ")
		b.WriteString(num(s.Y - seatSize/2))
		b.WriteString("h" + strconv.Itoa(seatSize) + "v" + strconv.Itoa(seatSize) + "h-" + strconv.Itoa(seatSize) + "z")
	}
	for _, c := range codes {
		p.Grades = append(p.Grades, previewGrade{Code: c, Color: colors[c], Seats: counts[c], Path: paths[c].String()})
	}
	return p
}

// num writes a coordinate in its shortest form.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
