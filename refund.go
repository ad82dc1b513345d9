package boxoffice

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxRefundReasonLen is the longest reason of a refund, in characters (the
// PG's cancelReason allows 200, which also carries the refund's id).
const MaxRefundReasonLen = 150

// RefundRequest asks to refund a confirmed order: the tickets of Seats
// (labels), or all its tickets not refunded yet when Seats is empty, for
// Reason (said to the buyer and written to the PG and the audit log).
// AdminID is the admin who asks.
type RefundRequest struct {
	OrderID string
	Seats   []string
	Reason  string
	AdminID int64
}

// Validate checks the request's own fields, every reason at once: a reason
// of 1 to MaxRefundReasonLen characters (surrounding spaces dropped) and
// seats named at most once each. Errors: EINVALID with Fields "reason" and
// "seat".
func (r *RefundRequest) Validate() error {
	r.Reason = strings.TrimSpace(r.Reason)
	fields := map[string]Msg{}
	switch n := utf8.RuneCountInString(r.Reason); {
	case n == 0:
		fields["reason"] = M("refund_reason_required")
	case n > MaxRefundReasonLen:
		fields["reason"] = M("refund_reason_long", "Max", MaxRefundReasonLen)
	}
	for i, s := range r.Seats {
		if s == "" || len(s) > MaxSeatLabelLen || slices.Contains(r.Seats[:i], s) {
			fields["seat"] = M("refund_seat_bad", "Seat", ClipInput(s, MaxQuoted))
			break
		}
	}
	return Invalid(fields)
}

// Refund is one refund of some of an order's tickets. Amount is in the
// order's currency's minor unit. Source is "admin" (an admin asked for it)
// or "pg" (made at the PG, for example on its dashboard, and learned from its
// webhook or the reconciler). Status: "pending", "done" or "failed" (the PG
// refused; Failure says why, and nothing changed).
type Refund struct {
	ID        string
	OrderID   string
	Amount    int64
	Reason    string
	Source    string
	AdminID   *int64
	Status    string
	Failure   string
	Seats     []string
	CreatedAt time.Time
	DoneAt    *time.Time
}

// RefundResult is what a refund left: the order's status after it, the
// amount this refund returned (minor units) and its seats.
type RefundResult struct {
	OrderID        string      `json:"order_id"`
	Status         OrderStatus `json:"status"`
	RefundedAmount int64       `json:"refunded_amount"`
	Seats          []string    `json:"seats"`
}

// RefundService refunds confirmed orders. Safe for concurrent use.
type RefundService interface {
	// Refund refunds the request's tickets once, whoever else refunds the
	// same order at the same time; see checkout.Service.Refund.
	Refund(ctx context.Context, req RefundRequest) (*RefundResult, error)
	// ApplyPGCancels applies, once each, the refunds the PG reports for a
	// payment of the order (made on its dashboard, or ours racing their
	// webhook). Errors: EUNAUTHORIZED (the PG does not know the payment for
	// that order), EUNAVAILABLE (the PG does not answer). canceled reports
	// whether the PG's record of the payment is CANCELED or PARTIAL_CANCELED
	// (false: there was nothing to apply).
	ApplyPGCancels(ctx context.Context, paymentKey, orderID string) (canceled bool, err error)
	// FindRefunds returns the order's refunds, oldest first.
	FindRefunds(ctx context.Context, orderID string) ([]Refund, error)
}
