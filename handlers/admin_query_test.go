package handlers_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// A query parameter of an admin list that is not valid percent-encoding,
// holds a semicolon or is given twice is refused with 400 bad_request
// naming it, in the admin's language, as JSON and as the page; url's
// parser would drop it, and the list would answer as if it were not there.
func TestAdminLists_UnreadableQuery(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	e := adminEvent(t, app, adminVenue(t, app, "Hall").ID, "Query night")
	sellEvery(t, app, e.ID)
	// Unfiltered, both lists have rows: a dropped parameter would show them.
	for path, row := range map[string]string{"/admin/orders": "order-row", "/admin/audit": "audit-row"} {
		if n := doc(t, admin.do("GET", path, nil)).Find(`[data-testid="` + row + `"]`).Length(); n == 0 {
			t.Fatalf("%s lists no rows, want some", path)
		}
	}
	for _, tt := range []struct {
		url    string
		fields []string // the parameters the JSON error names
		en, ko string   // a reason the English and the Korean page give
	}{
		{"/admin/orders?after=%%%", []string{"after"},
			"This page link is not valid; start again from the first page.", "올바른 페이지 링크가 아닙니다. 첫 페이지부터 다시 보세요."},
		{"/admin/orders?event=%zz&q=x", []string{"event"},
			`The address's "event" filter cannot be read: it is not valid URL encoding.`, `주소의 검색 조건 "event"을(를) 읽을 수 없습니다. URL 인코딩이 올바르지 않습니다.`},
		{"/admin/orders?q=%E0%A4%A", []string{"q"},
			`The address's "q" filter cannot be read: it is not valid URL encoding.`, `주소의 검색 조건 "q"을(를) 읽을 수 없습니다. URL 인코딩이 올바르지 않습니다.`},
		{"/admin/orders?status=PAID;event=1", []string{"status"},
			`The address's "status" filter cannot be read: it is not valid URL encoding.`, `주소의 검색 조건 "status"을(를) 읽을 수 없습니다. URL 인코딩이 올바르지 않습니다.`},
		{"/admin/orders?status=CONFIRMED&status=REFUNDED&event=x", []string{"event", "status"},
			`The address gives the "status" filter more than once.`, `주소에 검색 조건 "status"이(가) 두 번 이상 들어 있습니다.`},
		{"/admin/orders?%zz=1", []string{"%zz"},
			`The address's "%zz" filter cannot be read: it is not valid URL encoding.`, `주소의 검색 조건 "%zz"을(를) 읽을 수 없습니다. URL 인코딩이 올바르지 않습니다.`},
		{"/admin/audit?after=%%%", []string{"after"},
			"This page link is not valid; start again from the first page.", "올바른 페이지 링크가 아닙니다. 첫 페이지부터 다시 보세요."},
		{"/admin/audit?event=%G1&action=refund", []string{"event"},
			`The address's "event" filter cannot be read: it is not valid URL encoding.`, `주소의 검색 조건 "event"을(를) 읽을 수 없습니다. URL 인코딩이 올바르지 않습니다.`},
		{"/admin/audit?action=%", []string{"action"},
			`The address's "action" filter cannot be read: it is not valid URL encoding.`, `주소의 검색 조건 "action"을(를) 읽을 수 없습니다. URL 인코딩이 올바르지 않습니다.`},
		{"/admin/audit?admin=1&admin=2&after=%%%", []string{"admin", "after"},
			`The address gives the "admin" filter more than once.`, `주소에 검색 조건 "admin"이(가) 두 번 이상 들어 있습니다.`},
	} {
		t.Run(tt.url, func(t *testing.T) {
			resp := admin.do("GET", tt.url, nil, "Accept: application/json")
			wantStatus(t, resp, http.StatusBadRequest)
			var body struct {
				Error  string            `json:"error"`
				Fields map[string]string `json:"fields"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			var named []string
			for k := range body.Fields {
				named = append(named, k)
			}
			slices.Sort(named)
			if body.Error != "bad_request" || !slices.Equal(named, tt.fields) {
				t.Errorf("JSON error %q naming %q, want bad_request naming %q", body.Error, named, tt.fields)
			}
			for lang, want := range map[string]string{"en": tt.en, "ko": tt.ko} {
				resp := admin.do("GET", tt.url, nil, "Accept-Language: "+lang)
				wantStatus(t, resp, http.StatusBadRequest)
				d := doc(t, resp)
				var reasons []string
				d.Find(`[data-testid="field-error"]`).Each(func(_ int, s *goquery.Selection) { reasons = append(reasons, strings.TrimSpace(s.Text())) })
				if !slices.Contains(reasons, want) || len(reasons) != len(tt.fields) {
					t.Errorf("%s page: reasons %q, want %d of them, with %q", lang, reasons, len(tt.fields), want)
				}
				if d.Find(`[data-testid="order-row"], [data-testid="audit-row"]`).Length() != 0 {
					t.Errorf("%s page lists rows despite the unreadable filter", lang)
				}
			}
		})
	}
	// The readable parameters still work, and the form keeps them.
	resp := admin.do("GET", "/admin/orders?event=%zz&q=x", nil)
	if v := doc(t, resp).Find(`[data-testid="filter-q"]`).AttrOr("value", ""); v != "x" {
		t.Errorf("the form kept q %q, want x", v)
	}
	wantStatus(t, admin.do("GET", "/admin/orders?q=a%40b&status=CONFIRMED", nil), http.StatusOK)
	wantStatus(t, admin.do("GET", "/admin/audit?action=refund&", nil), http.StatusOK)
}
