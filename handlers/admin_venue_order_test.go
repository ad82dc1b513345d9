package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

func TestAdminVenues_SectionOrder(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	csv := "section,row,number,grade,rank,row_order,seat_order\n" +
		"A,1,1,R,2,descending,\nA,1,2,R,,,low\nA,2,1,R,,,\nB,1,1,S,1,,\nB,1,2,S,,,\n"
	venue := wantRedirect(t, admin.upload("/admin/venues/import", "Ordered hall", "hall.csv", []byte(csv)), "/admin/venues/")

	t.Run("Imported", func(t *testing.T) {
		d := doc(t, admin.do("GET", venue, nil))
		sections := d.Find(`[data-testid="order-section"]`)
		if sections.Length() != 2 {
			t.Fatalf("%d sections in the order form, want 2", sections.Length())
		}
		a, b := sections.First(), sections.Last()
		if got := a.Find(`[data-testid="order-rank"]`).AttrOr("value", ""); got != "2" {
			t.Errorf("A's rank %q, want 2 from the file", got)
		}
		if got := a.Find(`[data-testid="order-rows"] option[selected]`).AttrOr("value", ""); got != "descending" {
			t.Errorf("A's row order %q, want descending", got)
		}
		if got := a.Find(`[data-testid="order-seats"] option[selected]`).AttrOr("value", ""); got != "low" {
			t.Errorf("A's seat order %q, want low", got)
		}
		if got := b.Find(`[data-testid="order-rank"]`).AttrOr("value", ""); got != "1" {
			t.Errorf("B's rank %q, want 1", got)
		}
	})

	t.Run("ImportRefused", func(t *testing.T) {
		bad := "section,row,number,grade,rank,row_order,seat_order\nA,1,1,R,x,sideways,\nA,1,2,R,,,middle\nA,1,3,R,,,low\n"
		resp := admin.upload("/admin/venues/import", "Bad hall", "bad.csv", []byte(bad))
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		problems := doc(t, resp).Find(`[data-testid="import-problem"]`)
		var all []string
		problems.Each(func(_ int, s *goquery.Selection) { all = append(all, s.Text()) })
		joined := strings.Join(all, "\n")
		for _, want := range []string{"line 2: Section A: the rank", "line 2: Section A: the row order “sideways”", "line 4: section A: seat_order is low here but middle at line 3"} {
			if !strings.Contains(joined, want) {
				t.Errorf("problems %q lack %q", all, want)
			}
		}
		if n := app.count(t, "venue WHERE name = 'Bad hall'"); n != 0 {
			t.Errorf("%d venues from a refused file, want 0", n)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		form := url.Values{
			"sections[0].name": {"A"}, "sections[0].rank": {"0"}, "sections[0].row_order": {"up"}, "sections[0].seat_order": {"low"},
			"sections[1].name": {"B"}, "sections[1].rank": {"1"}, "sections[1].row_order": {"front"}, "sections[1].seat_order": {"edge"},
		}
		resp := admin.do("POST", venue+"/order", form)
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		d := doc(t, resp)
		for _, id := range []string{"error-sections[0].rank", "error-sections[0].row_order", "error-sections[1].seat_order"} {
			if testid(d, id) == "" {
				t.Errorf("no %s on the refused page", id)
			}
		}
		if got := d.Find(`[data-testid="order-section"]`).First().Find(`[data-testid="order-rank"]`).AttrOr("value", ""); got != "0" {
			t.Errorf("the rank typed shows as %q, want 0 kept", got)
		}
		d = doc(t, admin.do("GET", venue, nil))
		if got := d.Find(`[data-testid="order-rank"]`).First().AttrOr("value", ""); got != "2" {
			t.Errorf("A's rank %q after a refused change, want 2 unchanged", got)
		}
	})

	// A wrong value does not hide an unknown or a repeated section.
	t.Run("ErrInvalidSections", func(t *testing.T) {
		form := url.Values{
			"sections[0].name": {"A"}, "sections[0].rank": {""}, "sections[0].row_order": {"front"}, "sections[0].seat_order": {"edge"},
			"sections[1].name": {"Z"}, "sections[1].rank": {"1"}, "sections[1].row_order": {"front"}, "sections[1].seat_order": {"stage"},
			"sections[2].name": {"A"}, "sections[2].rank": {"3"}, "sections[2].row_order": {"front"}, "sections[2].seat_order": {"stage"},
		}
		resp := admin.do("POST", venue+"/order", form)
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		d := doc(t, resp)
		for id, want := range map[string]string{
			"error-sections[0].seat_order": "the seat order “edge”",
			"error-sections[1].rank":       "The seat map has no section Z.",
			"error-sections[2].rank":       "Section A is named twice.",
		} {
			if got := testid(d, id); !strings.Contains(got, want) {
				t.Errorf("%s = %q on the refused page, want %q", id, got, want)
			}
		}
	})

	t.Run("OK", func(t *testing.T) {
		form := url.Values{
			"sections[0].name": {"A"}, "sections[0].rank": {""}, "sections[0].row_order": {"front"}, "sections[0].seat_order": {"middle"},
			"sections[1].name": {"B"}, "sections[1].rank": {"1"}, "sections[1].row_order": {"front"}, "sections[1].seat_order": {"stage"},
		}
		wantRedirect(t, admin.do("POST", venue+"/order", form), venue)
		d := doc(t, admin.do("GET", venue, nil))
		a := d.Find(`[data-testid="order-section"]`).First()
		if got := a.Find(`[data-testid="order-rank"]`).AttrOr("value", "x"); got != "" {
			t.Errorf("A's rank %q, want none", got)
		}
		if got := a.Find(`[data-testid="order-seats"] option[selected]`).AttrOr("value", ""); got != "middle" {
			t.Errorf("A's seat order %q, want middle", got)
		}
		if got := testid(d, "flash"); got == "" {
			t.Error("no flash after saving")
		}
	})
}
