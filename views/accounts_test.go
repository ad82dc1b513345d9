package views

import (
	"bytes"
	"context"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// An untouched sign-up form marks no field (Pico shows aria-invalid="false"
// as a green tick); a refused one marks only the fields with a reason.
func TestSignupPage_AriaInvalid(t *testing.T) {
	tests := []struct {
		name   string
		errs   map[string]string
		marked []string
	}{
		{"Untouched", nil, nil},
		{"Refused", map[string]string{"email": "Enter an e-mail address.", "password": "Too short."}, []string{"email", "password"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := SignupPage(SignupForm{Name: "Ann", Errors: tt.errs}).Render(context.Background(), &b); err != nil {
				t.Fatal(err)
			}
			d, err := goquery.NewDocumentFromReader(&b)
			if err != nil {
				t.Fatal(err)
			}
			if n := d.Find(`[data-testid="signup-form"] input`).Length(); n != 3 {
				t.Fatalf("%d inputs, want 3", n)
			}
			var marked []string
			d.Find("[aria-invalid]").Each(func(_ int, s *goquery.Selection) {
				if v := s.AttrOr("aria-invalid", ""); v != "true" {
					t.Errorf("input %s has aria-invalid=%q, want none or \"true\"", s.AttrOr("name", ""), v)
				}
				marked = append(marked, s.AttrOr("name", ""))
			})
			if len(marked) != len(tt.marked) || len(marked) > 0 && (marked[0] != tt.marked[0] || marked[1] != tt.marked[1]) {
				t.Errorf("marked invalid %v, want %v", marked, tt.marked)
			}
		})
	}
}
