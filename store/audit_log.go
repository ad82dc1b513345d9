package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

var _ boxoffice.AuditLog = (*AuditLog)(nil)

// AuditLog reads the audit log that the store's changes write (writeAudit).
// It is safe for concurrent use.
type AuditLog struct {
	DB *DB
}

// auditActions lists the actions of the audit log's filter.
var auditActions = []string{
	AuditVenueCreate, AuditVenueRename, AuditVenueDelete, AuditVenueOrder,
	AuditEventCreate, AuditEventUpdate, AuditEventPublish, AuditEventClose, AuditAdmission,
	AuditBlock, AuditUnblock, AuditBroadcast, AuditRefund, AuditRefundFailed,
}

// AuditActions lists every action the store writes to the audit log.
func (l *AuditLog) AuditActions() []string { return auditActions }

// FindAudit returns one page of the entries f finds, newest first (by id,
// which grows with each entry), each with its admin's e-mail, read by keyset
// from the primary key or the index of its filter (audit_log_event,
// audit_log_admin, audit_log_action), from the replica when there is one.
func (l *AuditLog) FindAudit(ctx context.Context, f boxoffice.AuditFilter) (*boxoffice.AuditPage, error) {
	if f.Limit <= 0 {
		f.Limit = boxoffice.AuditPageSize
	}
	var where []string
	args := []any{boxoffice.DefaultTimeZone}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.EventID != 0 {
		where = append(where, "l.event_id = "+arg(f.EventID))
	}
	if f.AdminID != 0 {
		where = append(where, "l.admin_id = "+arg(f.AdminID))
	}
	if f.Action != "" {
		where = append(where, "l.action = "+arg(f.Action))
	}
	if f.After != 0 {
		where = append(where, "l.id < "+arg(f.After))
	}
	sql := `SELECT l.id, coalesce(l.admin_id, 0), coalesce(a.email, ''), l.action, coalesce(l.event_id, 0), coalesce(l.venue_id, 0),
	               coalesce(l.order_id, ''), l.seats, l.before, l.after, l.created_at, coalesce(e.time_zone, $1)
	        FROM audit_log l LEFT JOIN account a ON a.id = l.admin_id LEFT JOIN event e ON e.id = l.event_id`
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY l.id DESC LIMIT " + arg(f.Limit+1)
	rows, err := l.DB.reader().Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("find audit: %w", err)
	}
	entries, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.AuditEntry, error) {
		var e boxoffice.AuditEntry
		err := row.Scan(&e.ID, &e.AdminID, &e.AdminEmail, &e.Action, &e.EventID, &e.VenueID, &e.OrderID, &e.Seats, &e.Before, &e.After, &e.CreatedAt, &e.TimeZone)
		e.CreatedAt = e.CreatedAt.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("find audit: %w", err)
	}
	page := &boxoffice.AuditPage{Entries: entries}
	if len(entries) > f.Limit {
		page.Entries = entries[:f.Limit]
		page.Next = page.Entries[f.Limit-1].ID
	}
	return page, nil
}
