package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

// Audit actions (audit_log.action).
const (
	AuditRefund       = "refund"        // a refund applied (an admin's, or one made at the PG: no admin)
	AuditRefundFailed = "refund_failed" // the PG refused an admin's refund; nothing changed
	AuditBlock        = "block"         // an admin blocked seats of an event (Blocks)
	AuditUnblock      = "unblock"       // an admin gave blocked seats back to the sale (Blocks)
)

// Audit actions of the admin's set-up and steering (audit_log.action): each
// is written by the store method that makes the change, in its transaction.
const (
	AuditVenueCreate  = "venue_create"  // a venue generated or imported: after name, seats
	AuditVenueRename  = "venue_rename"  // before and after name
	AuditVenueDelete  = "venue_delete"  // before name, seats
	AuditVenueOrder   = "venue_order"   // before and after: the changed sections' best-first orders
	AuditEventCreate  = "event_create"  // after: the event's settings
	AuditEventUpdate  = "event_update"  // before and after: the settings that changed
	AuditEventPublish = "event_publish" // before and after status
	AuditEventClose   = "event_close"   // before and after status
	AuditAdmission    = "admission"     // before and after paused and rate
)

// AuditBroadcast is an admin's message to an event's fans (after: message).
const AuditBroadcast = "broadcast"

// auditEntry is one row of the audit log: an admin's action (AdminID nil for
// one made at the PG), on an event, an order and seats, with the before and
// after that matter.
type auditEntry struct {
	AdminID       *int64
	Action        string
	EventID       int64
	VenueID       int64
	OrderID       string
	Seats         []string
	Before, After map[string]any
}

// writeAudit writes e to the audit log in tx, the transaction of the change
// it records, so that the log has every change and nothing that was undone.
func writeAudit(ctx context.Context, tx pgx.Tx, e auditEntry, now time.Time) error {
	before, err := json.Marshal(orEmpty(e.Before))
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	after, err := json.Marshal(orEmpty(e.After))
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	var orderID *string
	if e.OrderID != "" {
		orderID = &e.OrderID
	}
	var eventID *int64
	if e.EventID != 0 {
		eventID = &e.EventID
	}
	var venueID *int64
	if e.VenueID != 0 {
		venueID = &e.VenueID
	}
	seats := e.Seats
	if seats == nil {
		seats = []string{}
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO audit_log (admin_id, action, event_id, order_id, seats, before, after, created_at, venue_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, e.AdminID, e.Action, eventID, orderID, seats, before, after, now, venueID)
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// adminOf is the id of the admin whose request ctx carries
// (boxoffice.AccountFromContext), the "who" of an audit entry; nil outside
// a request (a command such as seed-demo).
func adminOf(ctx context.Context) *int64 {
	if a := boxoffice.AccountFromContext(ctx); a != nil {
		return &a.ID
	}
	return nil
}
