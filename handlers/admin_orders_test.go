package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/sandbox"
)

// The order desk: an admin finds a confirmed order, is refused a refund with
// every reason of a bad form at once, refunds one of its tickets (the PG's
// webhook for that refund changing nothing more), and the fan's order keeps
// one ticket while the seat can be held again.
func TestAdminOrderRefund(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	fan, _, o := app.checkout(t, "refund@example.com", "A-1-3", "A-1-4")
	success := app.payAtSandbox(t, fan, o, "pay", sandbox.ScenarioDefault)
	wantStatus(t, fan.do("GET", success, nil), http.StatusSeeOther)
	app.Sandbox.Wait()
	admin := app.newAdmin(t)

	page := doc(t, admin.do("GET", "/admin/orders/"+o.OrderID, nil))
	if got := testid(page, "order-status"); got != "Confirmed" || page.Find(`[data-testid="refund-form"]`).Length() != 1 {
		t.Fatalf("order page: status %q, %d refund forms; want Confirmed and the form", got, page.Find(`[data-testid="refund-form"]`).Length())
	}
	wantStatus(t, fan.do("POST", "/admin/orders/"+o.OrderID+"/refund", url.Values{"reason": {"mine"}}), http.StatusForbidden)

	resp := admin.do("POST", "/admin/orders/"+o.OrderID+"/refund", url.Values{"seat": {"A-1-3"}, "reason": {"  "}})
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	if d := doc(t, resp); d.Find(`[data-testid="field-error"]`).Length() != 1 || !strings.Contains(testid(d, "field-error"), "reason") {
		t.Errorf("refund without a reason: field errors %q, want the reason's", testid(d, "field-error"))
	}
	resp = admin.do("POST", "/admin/orders/"+o.OrderID+"/refund", url.Values{"seat": {"B-9-9"}, "reason": {"x"}}, "Accept: application/json")
	wantErrorCode(t, resp, boxoffice.EINVALID)
	// No reason and a seat not in the order: both reasons at once.
	resp = admin.do("POST", "/admin/orders/"+o.OrderID+"/refund", url.Values{"seat": {"B-9-9"}, "reason": {""}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	var both struct{ Fields map[string]string }
	if err := json.NewDecoder(resp.Body).Decode(&both); err != nil || both.Fields["reason"] == "" || !strings.Contains(both.Fields["seat"], "B-9-9") {
		t.Errorf("refund without a reason of a seat not in the order: fields %v (%v), want the reason's and the seat's", both.Fields, err)
	}

	resp = admin.do("POST", "/admin/orders/"+o.OrderID+"/refund", url.Values{"seat": {"A-1-3"}, "reason": {"the show moved"}}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	var got struct {
		OrderID        string   `json:"order_id"`
		Status         string   `json:"status"`
		RefundedAmount int64    `json:"refunded_amount"`
		Seats          []string `json:"seats"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.OrderID != o.OrderID || got.Status != "CONFIRMED" || got.RefundedAmount != 150000 || !slices.Equal(got.Seats, []string{"A-1-3"}) {
		t.Errorf("refund answer %+v, want CONFIRMED, 150000, [A-1-3]", got)
	}
	app.Sandbox.Wait() // the PG's webhook for the refund
	resp = admin.do("POST", "/admin/orders/"+o.OrderID+"/refund", url.Values{"seat": {"A-1-3"}, "reason": {"again"}}, "Accept: application/json")
	wantErrorCode(t, resp, boxoffice.ECONFLICT)
	if n := app.queryInt(t, `SELECT count(*) FROM refund WHERE order_id = $1 AND status = 'done'`, o.OrderID); n != 1 {
		t.Errorf("%d refunds done, want 1", n)
	}
	if n := app.queryInt(t, `SELECT count(*) FROM audit_log WHERE order_id = $1 AND action = 'refund'`, o.OrderID); n != 1 {
		t.Errorf("%d audit rows, want 1", n)
	}

	var mine orderAnswer
	if err := json.NewDecoder(fan.do("GET", "/orders/"+o.OrderID, nil, "Accept: application/json").Body).Decode(&mine); err != nil {
		t.Fatal(err)
	}
	if len(mine.Tickets) != 1 || mine.Tickets[0].Seat != "A-1-4" {
		t.Errorf("the fan's tickets %+v, want only A-1-4", mine.Tickets)
	}
	page = doc(t, admin.do("GET", "/admin/orders/"+o.OrderID, nil))
	if n := page.Find(`[data-testid="refund-row"]`).Length(); n != 1 {
		t.Errorf("%d refund rows on the order page, want 1", n)
	}
	_, acct := app.newAccount(t, "next@example.com", boxoffice.RoleFan)
	app.hold(t, acct, o.eventID(t, app), "A-1-3") // the refunded seat is free again

	// Once wholly refunded, the order is refused another refund in a
	// sentence that names its status in words, never its code.
	wantStatus(t, admin.do("POST", "/admin/orders/"+o.OrderID+"/refund", url.Values{"seat": {"A-1-4"}, "reason": {"the rest"}}, "Accept: application/json"), http.StatusOK)
	app.Sandbox.Wait()
	for lang, word := range map[string]string{"en": "“Refunded”", "ko": "'환불 완료'"} {
		resp = admin.do("POST", "/admin/orders/"+o.OrderID+"/refund", url.Values{"reason": {"again"}}, "Accept: application/json", "Accept-Language: "+lang)
		var refused struct{ Error, Message string }
		if err := json.NewDecoder(resp.Body).Decode(&refused); err != nil || refused.Error != boxoffice.ECONFLICT ||
			!strings.Contains(refused.Message, word) || strings.Contains(refused.Message, "REFUNDED") {
			t.Errorf("%s: refund of a refunded order: %+v (%v), want %s naming the status %s", lang, refused, err, boxoffice.ECONFLICT, word)
		}
	}
	page = doc(t, admin.do("GET", "/admin/audit?action=refund", nil, "Accept-Language: ko"))
	if got := page.Find(`[data-testid="audit-change"]`).First().Text(); !strings.Contains(got, "상태: 예매 완료 → 환불 완료") {
		t.Errorf("the audit log's last refund, in Korean: %q, want 상태: 예매 완료 → 환불 완료", got)
	}
}
