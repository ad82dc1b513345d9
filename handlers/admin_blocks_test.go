package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// Blocked seats at the admin's event page and in JSON: a fan may not ask,
// unknown seats are named all at once, a held seat refuses the block, a
// block shows on the page and on the fan's map, and an unblock gives the
// seat back.
func TestAdminEventBlocks(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.newSeatEvent(t)
	path := fmt.Sprintf("/admin/events/%d/blocks", ev.ID)
	admin := app.newAdmin(t)
	fan, _ := app.newFan(t, "blocks@example.com", ev.ID)

	wantStatus(t, fan.do("POST", path, url.Values{"action": {"block"}, "seat": {"A-1-1"}}), http.StatusForbidden)

	resp := admin.do("POST", path, url.Values{"action": {"block"}, "seat": {"A-1-1", "Q-9-9, 1층 A-9-1"}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusBadRequest)
	var refused struct {
		Error   string
		Message string
		Seats   []string
	}
	decodeJSON(t, resp, &refused)
	if refused.Error != boxoffice.EBADSEAT || !slices.Equal(refused.Seats, []string{"Q-9-9", "1층 A-9-1"}) {
		t.Errorf("unknown seats: got %+v, want %s naming Q-9-9 and 1층 A-9-1 (a label may hold a space)", refused, boxoffice.EBADSEAT)
	}

	hold(t, fan, ev.ID, "A-1-2")
	resp = admin.do("POST", path, url.Values{"action": {"block"}, "seat": {"A-1-1,\nA-1-2"}})
	wantStatus(t, resp, http.StatusConflict)
	if d := doc(t, resp); !strings.Contains(testid(d, "block-error"), "A-1-2") || testid(d, "blocked-none") == "" {
		t.Errorf("block of a held seat: error %q, want it naming A-1-2 and no seat blocked", testid(d, "block-error"))
	}

	resp = admin.do("POST", path, url.Values{"action": {"block"}, "seat": {"A-1-1,A-1-3"}})
	wantStatus(t, resp, http.StatusSeeOther)
	page := doc(t, admin.do("GET", resp.Header.Get("Location"), nil))
	if got := strings.Fields(testid(page, "blocked-list")); !slices.Equal(got, []string{"A-1-1", "A-1-3"}) {
		t.Errorf("blocked list %q, want A-1-1 A-1-3", got)
	}
	var seatMap struct {
		Seats []struct{ Label, Status string }
	}
	decodeJSON(t, fan.do("GET", seatsPath(ev.ID), nil, "Accept: application/json"), &seatMap)
	for _, s := range seatMap.Seats {
		if (s.Label == "A-1-1" || s.Label == "A-1-3") && s.Status != string(boxoffice.SeatSold) {
			t.Errorf("fan's map: %s is %q, want %q (unavailable)", s.Label, s.Status, boxoffice.SeatSold)
		}
	}
	// A blocked seat is refused as not for sale, not as taken by another
	// fan; the code stays seat_taken, with the blocked seats named.
	for lang, want := range map[string]string{"en": "Not for sale: A-1-1.", "ko": "A-1-1 좌석은 판매하지 않습니다."} {
		resp = fan.do("POST", holdsPath(ev.ID), url.Values{"seat": {"A-1-1"}}, "Accept: application/json", "Accept-Language: "+lang)
		wantStatus(t, resp, http.StatusConflict)
		var notForSale struct {
			Error, Message string
			Seats, Blocked []string
		}
		decodeJSON(t, resp, &notForSale)
		if notForSale.Error != boxoffice.ESEATTAKEN || !strings.HasPrefix(notForSale.Message, want) ||
			!slices.Equal(notForSale.Seats, []string{"A-1-1"}) || !slices.Equal(notForSale.Blocked, []string{"A-1-1"}) {
			t.Errorf("%s: hold of a blocked seat: %+v, want %s saying %q, A-1-1 blocked", lang, notForSale, boxoffice.ESEATTAKEN, want)
		}
	}
	// Beside a seat another fan holds, both reasons are said.
	other, _ := app.newFan(t, "other@example.com", ev.ID)
	hold(t, other, ev.ID, "A-1-4")
	resp = fan.do("POST", holdsPath(ev.ID), url.Values{"seat": {"A-1-1", "A-1-4"}}, "Accept: application/json", "Accept-Language: en")
	wantStatus(t, resp, http.StatusConflict)
	var both struct{ Message string }
	decodeJSON(t, resp, &both)
	if !strings.Contains(both.Message, "already sold or were just chosen by someone else") || !strings.Contains(both.Message, "not for sale: A-1-1") {
		t.Errorf("hold of a blocked and a held seat says %q, want both reasons", both.Message)
	}

	resp = admin.do("POST", path, url.Values{"action": {"unblock"}, "seat": {"A-1-1"}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	var done boxoffice.BlockResult
	decodeJSON(t, resp, &done)
	if done.EventID != ev.ID || done.Action != "unblock" || !slices.Equal(done.Seats, []string{"A-1-1"}) || !slices.Equal(done.Blocked, []string{"A-1-3"}) {
		t.Errorf("unblock answer %+v, want A-1-1 unblocked and A-1-3 still blocked", done)
	}
	hold(t, fan, ev.ID, "A-1-1")

	// A block of a blocked seat and an unblock of a free one change
	// nothing, say so, and leave no audit entry.
	for lang, want := range map[string]string{"en": "Nothing changed", "ko": "바뀐 것이 없습니다"} {
		resp = admin.do("POST", path, url.Values{"action": {"block"}, "seat": {"A-1-3"}}, "Accept-Language: "+lang)
		wantStatus(t, resp, http.StatusSeeOther)
		if got := testid(doc(t, admin.do("GET", resp.Header.Get("Location"), nil, "Accept-Language: "+lang)), "flash"); !strings.Contains(got, want) {
			t.Errorf("%s: block of a blocked seat says %q, want %q", lang, got, want)
		}
	}
	resp = admin.do("POST", path, url.Values{"action": {"unblock"}, "seat": {"A-1-2"}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	decodeJSON(t, resp, &done)
	if done.Changed {
		t.Errorf("unblock of a free seat: %+v, want changed false", done)
	}
	if n := app.queryInt(t, `SELECT count(*) FROM audit_log WHERE event_id = $1 AND action IN ('block', 'unblock')`, ev.ID); n != 2 {
		t.Errorf("%d audit entries, want 2 (the block and the unblock; none for the changes that changed nothing)", n)
	}
}
