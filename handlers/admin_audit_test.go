package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// An admin's changes made through the pages are in the audit log under
// that admin, with what changed, in HTML and JSON, filterable by event,
// admin and action.
func TestAdminAudit(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin, adminAcct := app.newAccount(t, "auditor@example.com", boxoffice.RoleAdmin)
	v := adminVenue(t, app, "Hall")
	e := adminEvent(t, app, v.ID, "Audited night")
	wantStatus(t, admin.do("POST", fmt.Sprintf("/admin/venues/%d/name", v.ID), url.Values{"name": {"Grand Hall"}}), http.StatusSeeOther)
	wantStatus(t, admin.do("POST", fmt.Sprintf("/admin/events/%d/publish", e.ID), url.Values{}), http.StatusSeeOther)
	wantStatus(t, admin.do("POST", fmt.Sprintf("/admin/events/%d/admission", e.ID), url.Values{"rate": {"7"}}), http.StatusSeeOther)

	page := doc(t, admin.do("GET", "/admin/audit", nil))
	rows := page.Find(`[data-testid="audit-row"]`)
	if rows.Length() != 5 {
		t.Fatalf("%d entries, want 5: the venue and event created, the rename, the publish, the rate", rows.Length())
	}
	newest := rows.First()
	if got := newest.AttrOr("data-action", ""); got != "admission" || !strings.Contains(newest.Find(`[data-testid="audit-who"]`).Text(), "auditor@example.com") ||
		!strings.Contains(newest.Find(`[data-testid="audit-change"]`).Text(), "admission rate (fans per second): 100 → 7") ||
		strings.Contains(newest.Find(`[data-testid="audit-change"]`).Text(), "paused") {
		t.Errorf("newest entry %s by %q changing %q; want admission by auditor@example.com, admission rate (fans per second): 100 → 7 and nothing about the pause, which did not change",
			got, newest.Find(`[data-testid="audit-who"]`).Text(), newest.Find(`[data-testid="audit-change"]`).Text())
	}

	for lang, want := range map[string]string{"en": "status: Draft → On sale", "ko": "상태: 비공개 → 판매 중"} {
		published := doc(t, admin.do("GET", "/admin/audit?action=event_publish", nil, "Accept-Language: "+lang))
		if got := published.Find(`[data-testid="audit-change"]`).Text(); !strings.Contains(got, want) {
			t.Errorf("%s: the publish's change %q, want %q", lang, got, want)
		}
	}

	// A notice's text is shown as typed, not as JSON's escapes of < and >.
	if resp := admin.do("POST", fmt.Sprintf("/admin/events/%d/broadcast", e.ID), url.Values{"message": {"<b>곧 재개</b>"}}); resp.StatusCode >= 400 {
		t.Fatalf("broadcast: %d", resp.StatusCode)
	}
	notice := doc(t, admin.do("GET", "/admin/audit?action=broadcast", nil, "Accept-Language: ko"))
	if got := notice.Find(`[data-testid="audit-change"]`).Text(); !strings.Contains(got, `공지 내용: "<b>곧 재개</b>"`) {
		t.Errorf("the notice's change %q, want 공지 내용: \"<b>곧 재개</b>\"", got)
	}

	resp := admin.do("GET", fmt.Sprintf("/admin/audit?action=venue_rename&admin=%d", adminAcct.ID), nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	var got struct {
		Entries []struct {
			Action  string         `json:"action"`
			AdminID int64          `json:"admin_id"`
			Admin   string         `json:"admin"`
			VenueID int64          `json:"venue_id"`
			Before  map[string]any `json:"before"`
			After   map[string]any `json:"after"`
		} `json:"entries"`
		Next *string `json:"next"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 1 || got.Entries[0].VenueID != v.ID || got.Entries[0].Before["name"] != "Hall" || got.Entries[0].After["name"] != "Grand Hall" || got.Next != nil {
		t.Errorf("renames by the admin: %+v, want the one from Hall to Grand Hall", got)
	}
	if d := doc(t, admin.do("GET", fmt.Sprintf("/admin/audit?event=%d", e.ID), nil)); d.Find(`[data-testid="audit-row"]`).Length() != 4 {
		t.Errorf("%d entries of the event, want 4 (created, published, paced, the notice)", d.Find(`[data-testid="audit-row"]`).Length())
	}

	resp = admin.do("GET", "/admin/audit?event=x&admin=-1&action=DROP%20TABLE&after=z", nil)
	wantStatus(t, resp, http.StatusBadRequest)
	if n := doc(t, resp).Find(`[data-testid="field-error"]`).Length(); n != 4 {
		t.Errorf("%d reasons, want 4 at once", n)
	}
	wantErrorCode(t, admin.do("GET", "/admin/audit?action=zzz", nil, "Accept: application/json"), boxoffice.EBADREQUEST) // well formed, but no action of the log
	fan, _ := app.newAccount(t, "fan@example.com", boxoffice.RoleFan)
	wantStatus(t, fan.do("GET", "/admin/audit", nil), http.StatusForbidden)
}
