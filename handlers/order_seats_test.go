package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// The notice of a release made without JavaScript is kept untranslated
// until the seat list shows it: released from an English page, it reads in
// Korean on a Korean one, the seat described in Korean.
func TestRelease_NoticeInPageLanguage(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	fan, _ := app.newFan(t, "flash@example.com", e.ID)
	hold(t, fan, e.ID, "A-1-1")
	resp := fan.do("POST", holdsPath(e.ID)+"/A-1-1/release", nil, "Accept-Language: en")
	wantStatus(t, resp, http.StatusSeeOther)
	d := doc(t, fan.do("GET", resp.Header.Get("Location"), nil, "Accept-Language: ko"))
	if got, want := testid(d, "hold-notice"), "A구역 1열 1번"; !strings.Contains(got, want) || !strings.Contains(got, "선점을 해제했습니다") {
		t.Errorf("the notice on the Korean page says %q, want the release of %s in Korean", got, want)
	}
}

// A fan whose order awaits payment cannot release its seats, nor leave the
// sale: JSON answers 409 seat_in_order or order_pending with the order's
// id, the hold panel (htmx), the seat list (form) and the leave's page say
// why in the fan's language, and nothing changes. A seat held outside the
// order is released as before.
func TestHolds_Release_SeatInOrder(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	fan, acct := app.newFan(t, "payer@example.com", e.ID)
	hold(t, fan, e.ID, "A-1-1", "A-1-2")
	resp := fan.do("POST", fmt.Sprintf("/events/%d/orders", e.ID), url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusCreated)
	var o orderAnswer
	decodeJSON(t, resp, &o)
	hold(t, fan, e.ID, "A-1-3")
	sentences := map[string]struct{ release, leave, seat string }{
		"en": {"This seat is in your order " + o.OrderID + ", which awaits payment", "Your order " + o.OrderID + " awaits payment", "Section A, row 1, seat 1"},
		"ko": {"이 좌석은 결제를 기다리는 예매(" + o.OrderID + ")에 포함되어 있어 선점을 풀 수 없습니다", "결제를 기다리는 예매(" + o.OrderID + ")가 있어", "A구역 1열 1번"},
	}
	wantMine := func(t *testing.T) {
		t.Helper()
		st := getSeatMap(t, fan, e.ID).statuses()
		for _, seat := range []string{"A-1-1", "A-1-2"} {
			if st[seat] != "mine" {
				t.Errorf("seat %s of the order is %q, want still mine", seat, st[seat])
			}
		}
	}

	t.Run("JSON", func(t *testing.T) {
		for lang, want := range sentences {
			for _, r := range []struct{ method, path, code string }{
				{"DELETE", holdsPath(e.ID) + "/A-1-1", boxoffice.ESEATINORDER},
				{"POST", holdsPath(e.ID) + "/A-1-2/release", boxoffice.ESEATINORDER},
				{"POST", fmt.Sprintf("/events/%d/leave", e.ID), boxoffice.EORDERPENDING},
			} {
				resp := fan.do(r.method, r.path, url.Values{}, "Accept: application/json", "Accept-Language: "+lang)
				wantStatus(t, resp, http.StatusConflict)
				var body map[string]string
				decodeJSON(t, resp, &body)
				sentence := want.release
				if r.code == boxoffice.EORDERPENDING {
					sentence = want.leave
				}
				if body["error"] != r.code || body["order_id"] != o.OrderID || !strings.Contains(body["message"], sentence) {
					t.Errorf("%s %s (%s) = %v, want %s naming order %s, saying %q", r.method, r.path, lang, body, r.code, o.OrderID, sentence)
				}
			}
		}
		wantMine(t)
	})

	t.Run("HTMX", func(t *testing.T) {
		for lang, want := range sentences {
			resp := fan.do("DELETE", holdsPath(e.ID)+"/A-1-1", nil, "HX-Request: true", "Accept-Language: "+lang)
			wantStatus(t, resp, http.StatusConflict)
			d := doc(t, resp)
			if got := testid(d, "hold-notice"); !strings.Contains(got, want.release) {
				t.Errorf("hold panel's notice (%s) = %q, want %q", lang, got, want.release)
			}
			if got := testid(d, "held-seats"); !strings.Contains(got, want.seat) {
				t.Errorf("hold panel's seats (%s) = %q, want A-1-1 still held", lang, got)
			}
		}
		wantMine(t)
	})

	t.Run("Form", func(t *testing.T) {
		for lang, want := range sentences {
			resp := fan.do("POST", holdsPath(e.ID)+"/A-1-1/release", nil, "Accept-Language: "+lang)
			wantStatus(t, resp, http.StatusSeeOther)
			d := doc(t, fan.do("GET", resp.Header.Get("Location"), nil, "Accept-Language: "+lang))
			if got := testid(d, "hold-notice"); !strings.Contains(got, want.release) {
				t.Errorf("seat list's notice (%s) = %q, want %q", lang, got, want.release)
			}

			resp = fan.do("POST", fmt.Sprintf("/events/%d/leave", e.ID), url.Values{}, "Accept-Language: "+lang)
			wantStatus(t, resp, http.StatusConflict)
			if got := testid(doc(t, resp), "error-message"); !strings.Contains(got, want.leave) {
				t.Errorf("the leave's page (%s) says %q, want %q", lang, got, want.leave)
			}
		}
		wantMine(t)
	})

	// The hold panel (htmx) and the seat list (no JavaScript) offer no
	// Release for the order's seats: a link to the order instead, and a
	// sentence that says why; the seat outside the order keeps its button.
	// The leave's refusal says that checking out again works too.
	t.Run("Panel", func(t *testing.T) {
		notes := map[string]struct{ note, link, leave string }{
			"en": {"Seats awaiting payment are in your order", "Awaiting payment", "check out again to pay for all the seats you hold"},
			"ko": {"결제 대기 중인 좌석은 예매에 포함되어 있어", "결제 대기 중", "선점한 좌석 전체로 다시 결제하거나"},
		}
		for lang, want := range notes {
			for _, path := range []string{seatsPath(e.ID), seatsPath(e.ID) + "?section=A"} {
				resp := fan.do("GET", path, nil, "HX-Request: "+fmt.Sprint(!strings.Contains(path, "?")), "Accept-Language: "+lang)
				wantStatus(t, resp, http.StatusOK)
				d := doc(t, resp)
				if got := testid(d, "hold-in-order-note"); !strings.Contains(got, want.note) {
					t.Errorf("%s (%s): the note says %q, want %q", path, lang, got, want.note)
				}
				for _, seat := range []string{"A-1-1", "A-1-2"} {
					if d.Find(`[data-testid="release-`+seat+`"]`).Length() != 0 {
						t.Errorf("%s (%s): a Release button for %s, in the order awaiting payment", path, lang, seat)
					}
					link := d.Find(`[data-testid="in-order-` + seat + `"]`)
					if href, _ := link.Attr("href"); href != "/orders/"+o.OrderID || strings.TrimSpace(link.Text()) != want.link {
						t.Errorf("%s (%s): %s links %q saying %q, want /orders/%s saying %q", path, lang, seat, href, link.Text(), o.OrderID, want.link)
					}
				}
				if d.Find(`[data-testid="release-A-1-3"]`).Length() != 1 {
					t.Errorf("%s (%s): no Release button for A-1-3, held outside the order", path, lang)
				}
			}
			resp := fan.do("POST", fmt.Sprintf("/events/%d/leave", e.ID), url.Values{}, "Accept: application/json", "Accept-Language: "+lang)
			wantStatus(t, resp, http.StatusConflict)
			var body map[string]string
			decodeJSON(t, resp, &body)
			if !strings.Contains(body["message"], want.leave) {
				t.Errorf("the leave's refusal (%s) says %q, want %q", lang, body["message"], want.leave)
			}
		}
	})

	t.Run("SeatOutsideTheOrder", func(t *testing.T) {
		resp := fan.do("DELETE", holdsPath(e.ID)+"/A-1-3", nil, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		if st := getSeatMap(t, fan, e.ID).statuses()["A-1-3"]; st != "free" {
			t.Errorf("seat A-1-3, outside the order, is %q after its release, want free", st)
		}
		wantMine(t)
	})

	// Log-out ends the session's turns, but the one with the order awaiting
	// payment keeps its seats held for the order.
	t.Run("LogOut", func(t *testing.T) {
		wantStatus(t, fan.do("POST", "/logout", url.Values{}), http.StatusSeeOther)
		held, _, err := app.Srv.Holds.MyHolds(context.Background(), e.ID, acct.ID)
		if err != nil || !slices.Equal(held, []string{"A-1-1", "A-1-2"}) {
			t.Errorf("after log-out the fan holds %v (%v), want its order's seats [A-1-1 A-1-2]", held, err)
		}
	})
}
