package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// bestJSON is a hold's JSON answer.
type bestJSON struct {
	Held  []string
	TTLMs int64 `json:"ttl_ms"`
}

// sideBySide reports whether labels are seats of one row with consecutive
// numbers.
func sideBySide(labels []string) bool {
	for i := 1; i < len(labels); i++ {
		a, b := labels[i-1], labels[i]
		ia, ib := strings.LastIndex(a, "-"), strings.LastIndex(b, "-")
		na, _ := strconv.Atoi(a[ia+1:])
		nb, _ := strconv.Atoi(b[ib+1:])
		if a[:ia] != b[:ib] || nb != na+1 {
			return false
		}
	}
	return true
}

func TestHolds_HoldBest(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	fan, _ := app.newFan(t, "fan@example.com", e.ID)

	t.Run("OK", func(t *testing.T) {
		resp := fan.do("POST", holdsPath(e.ID), url.Values{"grade": {"R"}, "quantity": {"2"}}, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		var body bestJSON
		decodeJSON(t, resp, &body)
		if len(body.Held) != 2 || !sideBySide(body.Held) || !strings.HasPrefix(body.Held[0], "A-1-") || body.TTLMs <= 0 {
			t.Fatalf("hold = %+v, want 2 seats side by side in section A's front row", body)
		}
		st := getSeatMap(t, fan, e.ID).statuses()
		for _, l := range body.Held {
			if st[l] != "mine" {
				t.Errorf("seat %s is %q after best available, want mine", l, st[l])
			}
		}
	})

	// The fan holds 2 of 5: 3 more may be asked for.
	refusals := []struct {
		name string
		form url.Values
		left any // the answer's "left", what the fan may still take; nil: none
	}{
		{"QuantityZero", url.Values{"grade": {"R"}, "quantity": {"0"}}, nil},
		{"QuantityNegative", url.Values{"grade": {"R"}, "quantity": {"-2"}}, nil},
		{"QuantityAboveLimit", url.Values{"grade": {"R"}, "quantity": {"6"}}, 3.0},
		{"QuantityFarAboveLimit", url.Values{"grade": {"R"}, "quantity": {"1000000"}}, 3.0},
		{"QuantityAboveLeft", url.Values{"grade": {"R"}, "quantity": {"4"}}, 3.0},
		{"QuantityNotANumber", url.Values{"grade": {"R"}, "quantity": {"two"}}, nil},
		{"QuantityMissing", url.Values{"grade": {"R"}}, nil},
		{"UnknownGrade", url.Values{"grade": {"Z"}, "quantity": {"1"}}, nil},
		{"GradeMissing", url.Values{"quantity": {"1"}}, nil},
		{"SeatWithGrade", url.Values{"grade": {"R"}, "quantity": {"1"}, "seat": {"A-3-1"}}, nil},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			before := getSeatMap(t, fan, e.ID)
			resp := fan.do("POST", holdsPath(e.ID), r.form, "Accept: application/json")
			wantStatus(t, resp, http.StatusBadRequest)
			var body map[string]any
			decodeJSON(t, resp, &body)
			if body["error"] != "bad_choice" || body["message"] == "" || body["left"] != r.left {
				t.Errorf("body = %v, want error bad_choice with a message and left %v", body, r.left)
			}
			if r.left != nil && !strings.Contains(fmt.Sprint(body["message"]), "You may hold only 3 more seats") {
				t.Errorf("message %q, want what the fan may still take", body["message"])
			}
			after := getSeatMap(t, fan, e.ID)
			if fmt.Sprint(after.statuses()) != fmt.Sprint(before.statuses()) {
				t.Errorf("a refused best-available hold changed the seats: %v, then %v", before.statuses(), after.statuses())
			}
		})
	}

	t.Run("NotTogether", func(t *testing.T) {
		other, _ := app.newFan(t, "other@example.com", e.ID)
		hold(t, other, e.ID, "Box B-1-2", "Box B-1-4", "C/D-1-1")
		resp := fan.do("POST", holdsPath(e.ID), url.Values{"grade": {"S"}, "quantity": {"2"}}, "Accept: application/json")
		wantStatus(t, resp, http.StatusConflict)
		var body map[string]any
		decodeJSON(t, resp, &body)
		if body["error"] != "not_together" || body["left"] != 3.0 || !strings.Contains(fmt.Sprint(body["message"]), "not 2 side by side") {
			t.Errorf("body = %v, want not_together with left 3", body)
		}
		resp = fan.do("POST", holdsPath(e.ID), url.Values{"grade": {"S"}, "quantity": {"1"}}, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
	})

	t.Run("Form", func(t *testing.T) {
		c, _ := app.newFan(t, "form@example.com", e.ID)
		resp := c.do("POST", holdsPath(e.ID), url.Values{"grade": {"R"}, "quantity": {"3"}})
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != seatsPath(e.ID)+"?section=A#pick" {
			t.Errorf("Location = %q, want the list of section A, where the seats are", loc)
		}
		d := doc(t, c.do("GET", resp.Header.Get("Location"), nil))
		if got := testid(d, "hold-notice"); !strings.Contains(got, "You hold 3 seats for") {
			t.Errorf("notice = %q, want that 3 seats are held", got)
		}
		if n := d.Find(`[data-testid=held-seats] li`).Length(); n != 3 {
			t.Errorf("%d seats in the hold panel, want 3", n)
		}
		resp = c.do("POST", holdsPath(e.ID), url.Values{"grade": {"S"}, "quantity": {"0"}})
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != seatsPath(e.ID)+"?section=Box+B#pick" {
			t.Errorf("Location = %q, want the list of the grade's first section", loc)
		}
		notice := doc(t, c.do("GET", resp.Header.Get("Location"), nil)).Find(`[data-testid=hold-notice]`)
		if !notice.HasClass("error") || !strings.Contains(notice.Text(), "Choose from 1 to 5 seats") {
			t.Errorf("notice = %q, want the refusal", notice.Text())
		}
		// An unknown grade has no section: the map's first section's list
		// shows the refusal (the shared map page shows no notice).
		resp = c.do("POST", holdsPath(e.ID), url.Values{"grade": {"Z"}, "quantity": {"1"}})
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != seatsPath(e.ID)+"?section=A#pick" {
			t.Errorf("Location = %q after an unknown grade, want the list of the map's first section", loc)
		}
		notice = doc(t, c.do("GET", resp.Header.Get("Location"), nil)).Find(`[data-testid=hold-notice]`)
		if !notice.HasClass("error") || !strings.Contains(notice.Text(), "Please choose one of this event's grades.") {
			t.Errorf("notice = %q after an unknown grade, want the refusal", notice.Text())
		}
	})

	t.Run("HTMX", func(t *testing.T) {
		c, _ := app.newFan(t, "htmx@example.com", e.ID)
		resp := c.do("POST", holdsPath(e.ID), url.Values{"grade": {"R"}, "quantity": {"2"}}, "HX-Request: true")
		wantStatus(t, resp, http.StatusOK)
		d := doc(t, resp)
		if d.Find("main").Length() != 0 || d.Find(`[data-testid=held-seats] li`).Length() != 2 {
			t.Error("the htmx answer is not the hold panel with the 2 new holds")
		}
		resp = c.do("POST", holdsPath(e.ID), url.Values{"grade": {"R"}, "quantity": {"9"}}, "HX-Request: true")
		wantStatus(t, resp, http.StatusBadRequest)
		if d := doc(t, resp); !strings.Contains(testid(d, "hold-notice"), "You may hold only 3 more seats") || d.Find(`[data-testid=held-seats] li`).Length() != 2 {
			t.Error("a refused htmx best-available hold does not answer the panel with the refusal")
		}
	})

	t.Run("Page", func(t *testing.T) {
		d := doc(t, fan.do("GET", seatsPath(e.ID), nil))
		var grades []string
		d.Find(`[data-testid=best-grade] option`).Each(func(_ int, s *goquery.Selection) { grades = append(grades, s.AttrOr("value", "")) })
		if !slices.Equal(grades, []string{"R", "S"}) {
			t.Errorf("best-available grades %v, want R and S", grades)
		}
		if d.Find(`[data-testid=best-quantity] option`).Length() != e.MaxPerAccount {
			t.Errorf("quantities offered: %d, want 1 to %d", d.Find(`[data-testid=best-quantity] option`).Length(), e.MaxPerAccount)
		}
		if first := d.Find(`main form`).First().AttrOr("data-testid", ""); first != "best-form" {
			t.Errorf("the page's first form is %q, want the best-available form", first)
		}
	})

	// The fan takes the rest of the account's 5 seats: one more is refused
	// with left 0 and a sentence that says so, not "0 more seats".
	t.Run("AtLimit", func(t *testing.T) {
		resp := fan.do("POST", holdsPath(e.ID), url.Values{"grade": {"R"}, "quantity": {"2"}}, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		for lang, want := range map[string]string{
			"en": "You have already taken all the seats one account may have for this event.",
			"ko": "이 공연에서 한 계정이 선택할 수 있는 좌석을 이미 모두 선택하셨습니다.",
		} {
			resp := fan.do("POST", holdsPath(e.ID), url.Values{"grade": {"R"}, "quantity": {"1"}}, "Accept: application/json", "Accept-Language: "+lang)
			wantStatus(t, resp, http.StatusBadRequest)
			var body map[string]any
			decodeJSON(t, resp, &body)
			if body["error"] != "bad_choice" || body["left"] != 0.0 || body["message"] != want {
				t.Errorf("%s: body = %v, want bad_choice, left 0 and %q", lang, body, want)
			}
		}
	})
}

// A refused best-available hold gives the grade's free seats (neither sold,
// blocked nor held), not only those of the runs the search read: with the
// grade's free seats scattered singles, the runs are out of the index for
// two seats, and yet the answer counts every free seat of the grade.
func TestHolds_HoldBestLeftOfGrade(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	admin := app.newAdmin(t)
	blocks := fmt.Sprintf("/admin/events/%d/blocks", e.ID)
	resp := admin.do("POST", blocks, url.Values{"action": {"block"}, "seat": {"Box B-1-2,Box B-1-4,C/D-1-2"}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	other, _ := app.newFan(t, "other@example.com", e.ID)
	hold(t, other, e.ID, "C/D-1-1")
	fan, _ := app.newFan(t, "fan@example.com", e.ID)
	app.Srv.EventPages.Forget(e.ID) // the figures as of now, not a second ago
	pair := url.Values{"grade": {"S"}, "quantity": {"2"}}

	// Free: Box B-1-1 and Box B-1-3. Asked again, the search reads no run
	// (the index dropped them), and the answer is the same.
	for round := range 2 {
		resp := fan.do("POST", holdsPath(e.ID), pair, "Accept: application/json")
		wantStatus(t, resp, http.StatusConflict)
		var body map[string]any
		decodeJSON(t, resp, &body)
		if body["error"] != "not_together" || body["left"] != 2.0 || !strings.Contains(fmt.Sprint(body["message"]), "2 seats of this grade are left, but not 2 side by side") {
			t.Errorf("round %d: body = %v, want not_together with left 2", round, body)
		}
		resp = fan.do("POST", holdsPath(e.ID), pair, "HX-Request: true")
		wantStatus(t, resp, http.StatusConflict)
		if got := testid(doc(t, resp), "hold-notice"); !strings.Contains(got, "2 seats of this grade are left, but not 2 side by side") {
			t.Errorf("round %d: htmx notice %q, want the grade's 2 free seats", round, got)
		}
	}

	hold(t, other, e.ID, "Box B-1-1", "Box B-1-3")
	app.Srv.EventPages.Forget(e.ID)
	resp = fan.do("POST", holdsPath(e.ID), pair, "Accept: application/json")
	wantStatus(t, resp, http.StatusConflict)
	var body map[string]any
	decodeJSON(t, resp, &body)
	if body["error"] != "not_together" || body["left"] != 0.0 || !strings.Contains(fmt.Sprint(body["message"]), "No seats of this grade are left") {
		t.Errorf("none left: body = %v, want not_together with left 0 and best_none_left", body)
	}
	resp = fan.do("POST", holdsPath(e.ID), pair, "HX-Request: true")
	wantStatus(t, resp, http.StatusConflict)
	if got := testid(doc(t, resp), "hold-notice"); !strings.Contains(got, "No seats of this grade are left") {
		t.Errorf("none left: htmx notice %q, want best_none_left", got)
	}
}
