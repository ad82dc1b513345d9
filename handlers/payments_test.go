package handlers_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/handlers"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/payment/toss"
	"github.com/boxoffice/boxoffice/views"
)

// answeringPG is the sandbox's client whose confirm and look-ups answer
// err, a Toss error answer.
type answeringPG struct {
	*toss.Client
	err error
}

func (g *answeringPG) Confirm(context.Context, string, string, boxoffice.Money) (*boxoffice.Payment, error) {
	return nil, g.err
}

func (g *answeringPG) GetPayment(context.Context, string) (*boxoffice.Payment, error) {
	return nil, g.err
}

// logBuffer is a log the test reads, written by the server's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// withLog makes the server and its checkout service log into a buffer.
func withLog(log *logBuffer) func(*handlers.Server) {
	return func(s *handlers.Server) { s.Logger = slog.New(slog.NewTextHandler(log, nil)) }
}

// A Toss error answer on the success redirect is a sentence for the buyer
// and a log line for the operator, never a 500: a refused key
// (INVALID_API_KEY) and a card company that is down (PROVIDER_ERROR) leave
// the order waiting with why, and it is confirmed once the PG answers; a
// refused card (INVALID_REJECT_CARD) leaves it payable, saying the card was
// refused.
func TestPaymentSuccess_PGErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		code, wait string
		sentence   boxoffice.MsgID
	}{
		{boxoffice.PGInvalidAPIKey, views.PGWaitRefused, "err_pg_refused"},
		{boxoffice.PGProviderError, views.PGWaitUnavailable, "err_pg_unavailable_settle"},
	} {
		t.Run(tt.code, func(t *testing.T) {
			t.Parallel()
			log := &logBuffer{}
			app := newTestApp(t, withLog(log))
			c, _, o := app.checkout(t, "pg-error@example.com", "A-1-1")
			success := app.payAtSandbox(t, c, o, "pay", sandbox.ScenarioWebhookNever)
			app.Checkout.PG = &answeringPG{Client: app.PG, err: &boxoffice.PGError{Status: http.StatusBadRequest, Code: tt.code, Message: "the test's answer"}}

			resp := c.do("GET", success, nil)
			wantStatus(t, resp, http.StatusSeeOther)
			loc := resp.Header.Get("Location")
			if want := "/orders/" + o.OrderID + "?pg=" + tt.wait; loc != want {
				t.Fatalf("Location %q, want %q", loc, want)
			}
			page := doc(t, c.do("GET", loc, nil))
			if got, want := testid(page, "payment-waiting"), views.In(views.English, boxoffice.M(tt.sentence)); got != want {
				t.Errorf("payment-waiting %q, want %q", got, want)
			}
			if got := testid(page, "order-status"); got != "Waiting for payment" {
				t.Errorf("order-status %q, want Waiting for payment", got)
			}
			if poll, _ := page.Find(`[data-testid="order"]`).Attr("hx-get"); poll != loc {
				t.Errorf("the page polls %q, want %q (keeping why it waits)", poll, loc)
			}
			resp = c.do("GET", success, nil, "Accept: application/json")
			if m := decode(t, resp); resp.StatusCode != http.StatusServiceUnavailable || m["error"] != boxoffice.EUNAVAILABLE || m["message"] == "" {
				t.Errorf("JSON: status %d %v, want 503 unavailable with a sentence", resp.StatusCode, m)
			}
			if !strings.Contains(log.String(), tt.code) {
				t.Errorf("no log line names %s; log:\n%s", tt.code, log)
			}

			app.Checkout.PG = app.PG
			wantStatus(t, c.do("GET", success, nil), http.StatusSeeOther)
			if got := testid(doc(t, c.do("GET", "/orders/"+o.OrderID, nil)), "order-status"); got != "Confirmed" {
				t.Errorf("once the PG answers: order-status %q, want Confirmed", got)
			}
		})
	}
	t.Run(boxoffice.PGInvalidRejectCard, func(t *testing.T) {
		t.Parallel()
		log := &logBuffer{}
		app := newTestApp(t, withLog(log))
		app.Checkout.Logger = app.Srv.Logger
		c, _, o := app.checkout(t, "card@example.com", "A-1-2")
		success := app.payAtSandbox(t, c, o, "pay", sandbox.ScenarioRejectCard)
		resp := c.do("GET", success, nil)
		wantStatus(t, resp, http.StatusSeeOther)
		page := doc(t, c.do("GET", resp.Header.Get("Location"), nil))
		if got, want := testid(page, "order-failure"), views.In(views.English, boxoffice.M("order_fail_payment")); got != want {
			t.Errorf("order-failure %q, want %q", got, want)
		}
		if testid(page, "order-status") != "Waiting for payment" || page.Find(`[data-testid="order-pay"]`).Length() != 1 {
			t.Errorf("order-status %q: want the order payable again, with the pay button", testid(page, "order-status"))
		}
		if !strings.Contains(log.String(), boxoffice.PGInvalidRejectCard) {
			t.Errorf("no log line names %s; log:\n%s", boxoffice.PGInvalidRejectCard, log)
		}
	})
}

// The success redirect followed by a browser logged in as another account
// (a link passed on, a shared computer) confirms the order for its owner as
// the PG reports it, and shows that browser nothing of the order: the order
// page and the JSON answer are 404, its orders list is empty.
func TestPaymentSuccess_OtherAccount(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c, _, o := app.checkout(t, "owner@example.com", "A-1-3")
	success := app.payAtSandbox(t, c, o, "pay", sandbox.ScenarioWebhookNever)
	stranger, _ := app.newAccount(t, "passer-by@example.com", boxoffice.RoleFan)

	resp := stranger.do("GET", success, nil, "Accept: application/json")
	if m := decode(t, resp); resp.StatusCode != http.StatusNotFound || m["status"] != nil || m["outcome"] != nil {
		t.Errorf("JSON to another account: status %d %v, want 404 without the order", resp.StatusCode, m)
	}
	resp = stranger.do("GET", success, nil)
	wantStatus(t, resp, http.StatusSeeOther)
	page := stranger.do("GET", resp.Header.Get("Location"), nil)
	d := doc(t, page)
	if page.StatusCode != http.StatusNotFound || strings.Contains(d.Text(), "A-1-3") || strings.Contains(d.Text(), "Section A") {
		t.Errorf("the order page to another account: status %d, want 404 showing nothing of the order", page.StatusCode)
	}
	if n := doc(t, stranger.do("GET", "/me/orders", nil)).Find(`[data-testid="no-orders"]`).Length(); n != 1 {
		t.Error("another account's orders list is not empty")
	}
	owner := doc(t, c.do("GET", "/orders/"+o.OrderID, nil))
	if testid(owner, "order-status") != "Confirmed" || owner.Find(`[data-testid="ticket"]`).Length() != 1 {
		t.Errorf("the owner's order: %q with %d tickets, want Confirmed with 1", testid(owner, "order-status"), owner.Find(`[data-testid="ticket"]`).Length())
	}
	p, err := app.PG.GetPaymentByOrderID(context.Background(), o.OrderID)
	if err != nil || p.Status != boxoffice.PaymentStatusDone {
		t.Errorf("the PG's payment %+v (%v), want DONE", p, err)
	}
}
