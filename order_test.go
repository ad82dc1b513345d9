package boxoffice_test

import (
	"slices"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

func TestOrderStatus_CanBecome(t *testing.T) {
	const (
		P = boxoffice.OrderPendingPayment
		C = boxoffice.OrderConfirmed
		F = boxoffice.OrderFailed
		E = boxoffice.OrderExpired
		X = boxoffice.OrderCancelled
		R = boxoffice.OrderRefunded
	)
	// allowed lists every allowed move; every other pair is refused.
	allowed := map[[2]boxoffice.OrderStatus]bool{
		{P, C}: true, {P, F}: true, {P, E}: true, {P, X}: true, {P, R}: true,
		{E, C}: true, {E, F}: true, {E, R}: true, // a late payment: sold, or refunded
		{E, X}: true, // replaced by the account's newer order
		{F, R}: true, // a payment that arrives for a failed order is refunded
		{X, R}: true, // likewise for one given up
	}
	for _, from := range boxoffice.OrderStatuses {
		for _, to := range boxoffice.OrderStatuses {
			want := allowed[[2]boxoffice.OrderStatus{from, to}]
			if got := from.CanBecome(to); got != want {
				t.Errorf("%s.CanBecome(%s) = %v, want %v", from, to, got, want)
			}
		}
	}
	// A failure never moves an order out of CONFIRMED, and nothing undoes a refund.
	for _, s := range []boxoffice.OrderStatus{C, R} {
		if !s.Final() {
			t.Errorf("%s.Final() = false, want true", s)
		}
	}
	for _, s := range []boxoffice.OrderStatus{P, E, F, X} {
		if s.Final() {
			t.Errorf("%s.Final() = true, want false", s)
		}
	}
	if got := boxoffice.OrderStatus("PAID").CanBecome(C); got {
		t.Error("an unknown status may become CONFIRMED, want not")
	}
}

func TestOrderStatusesBefore(t *testing.T) {
	tests := []struct {
		to   boxoffice.OrderStatus
		want []boxoffice.OrderStatus
	}{
		{boxoffice.OrderConfirmed, []boxoffice.OrderStatus{boxoffice.OrderPendingPayment, boxoffice.OrderExpired}},
		{boxoffice.OrderExpired, []boxoffice.OrderStatus{boxoffice.OrderPendingPayment}},
		{boxoffice.OrderFailed, []boxoffice.OrderStatus{boxoffice.OrderPendingPayment, boxoffice.OrderExpired}},
		{boxoffice.OrderRefunded, []boxoffice.OrderStatus{boxoffice.OrderPendingPayment, boxoffice.OrderFailed,
			boxoffice.OrderExpired, boxoffice.OrderCancelled}},
		{boxoffice.OrderCancelled, []boxoffice.OrderStatus{boxoffice.OrderPendingPayment, boxoffice.OrderExpired}},
		{boxoffice.OrderPendingPayment, nil},
	}
	for _, tt := range tests {
		if got := boxoffice.OrderStatusesBefore(tt.to); !slices.Equal(got, tt.want) {
			t.Errorf("OrderStatusesBefore(%s) = %v, want %v", tt.to, got, tt.want)
		}
	}
}

func TestOrder_Payable(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		status boxoffice.OrderStatus
		now    time.Time
		want   bool
	}{
		{boxoffice.OrderPendingPayment, at.Add(-time.Second), true},
		{boxoffice.OrderPendingPayment, at, false},
		{boxoffice.OrderExpired, at.Add(-time.Second), false},
		{boxoffice.OrderConfirmed, at.Add(-time.Second), false},
	}
	for _, tt := range tests {
		o := &boxoffice.Order{Status: tt.status, ExpiresAt: at}
		if got := o.Payable(tt.now); got != tt.want {
			t.Errorf("%s order expiring %v: Payable(%v) = %v, want %v", tt.status, at, tt.now, got, tt.want)
		}
	}
}

func TestTicketCode(t *testing.T) {
	secret := []byte("a-secret-of-at-least-32-characters!!")
	tk := boxoffice.Ticket{ID: "9b2f3c1e-2a7d-4c41-9a55-0c1d2e3f4a5b", EventID: 42, Seat: "A-12-7"}
	code := boxoffice.TicketCode(secret, tk)
	if code != boxoffice.TicketCode(secret, tk) {
		t.Fatal("TicketCode is not deterministic")
	}
	if id, ok := boxoffice.VerifyTicketCode(secret, code, 42, "A-12-7"); !ok || id != tk.ID {
		t.Fatalf("VerifyTicketCode(own code) = %q, %v; want %q, true", id, ok, tk.ID)
	}
	tests := []struct {
		name    string
		secret  []byte
		code    string
		eventID int64
		seat    string
	}{
		{"OtherSeat", secret, code, 42, "A-12-8"},
		{"OtherEvent", secret, code, 43, "A-12-7"},
		{"OtherSecret", []byte("another-secret-of-32-characters-x!!"), code, 42, "A-12-7"},
		{"OtherID", secret, "0" + code[1:], 42, "A-12-7"},
		{"NoSignature", secret, tk.ID, 42, "A-12-7"},
		{"BadBase64", secret, tk.ID + ".!!", 42, "A-12-7"},
		{"Truncated", secret, code[:len(code)-2], 42, "A-12-7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := boxoffice.VerifyTicketCode(tt.secret, tt.code, tt.eventID, tt.seat); ok {
				t.Errorf("VerifyTicketCode(%q, %d, %s) = ok, want refused", tt.code, tt.eventID, tt.seat)
			}
		})
	}
}
