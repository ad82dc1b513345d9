package boxoffice

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AuditPageSize is how many entries one page of the audit log holds.
const AuditPageSize = 100

// AuditEntry is one admin action of the audit log: who (AdminID, 0 for a
// change that came from the PG or a command; AdminEmail), when, what
// (Action, a store.Audit* constant), on which event, venue, order and
// seats (0 or "" when none), with the before and after that matter (JSON
// objects, keys by action).
type AuditEntry struct {
	ID            int64
	AdminID       int64
	AdminEmail    string
	Action        string
	EventID       int64
	VenueID       int64
	OrderID       string
	Seats         []string
	Before, After map[string]any
	CreatedAt     time.Time
	// TimeZone is the IANA zone of the entry's event, to show CreatedAt
	// in (DefaultTimeZone for an entry without an event).
	TimeZone string
}

// AuditFilter narrows the audit log (GET /admin/audit): each field that is
// set must match. After is the id of the last entry of the previous page
// (0: the first page).
type AuditFilter struct {
	EventID int64
	AdminID int64
	Action  string
	After   int64
	Limit   int // AuditPageSize when 0
}

// AuditPage is one page of the audit log, newest first; Next is the After
// of the following page, 0 on the last.
type AuditPage struct {
	Entries []AuditEntry
	Next    int64
}

// AuditLog reads the audit log. Its methods are safe for concurrent use.
type AuditLog interface {
	// FindAudit returns one page of the entries f finds, newest first.
	FindAudit(ctx context.Context, f AuditFilter) (*AuditPage, error)
	// AuditActions lists every action the log may hold, for a filter.
	AuditActions() []string
}

// ParseAuditFilter reads the audit log's raw URL query (ParseQuery):
// "event" and "admin" (ids), "action" (one of actions,
// AuditLog.AuditActions) and "after" (a page's cursor), and returns the
// parameters it could read (to show in the filters form) with the filter.
// Errors: EBADREQUEST with Fields naming every parameter that cannot be
// read, including a pair that is not valid percent-encoding and one of
// those four given more than once.
func ParseAuditFilter(rawQuery string, actions []string) (AuditFilter, url.Values, error) {
	var a AuditFilter
	q, f := ParseQuery(rawQuery, "event", "admin", "action", "after")
	if _, ok := f["after"]; ok {
		f["after"] = M("err_bad_cursor")
	}
	id := func(name string, msg MsgID, into *int64) {
		v := strings.TrimSpace(q.Get(name))
		if v == "" {
			return
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			f[name] = M(msg, "Value", ClipInput(v, MaxQuoted))
		}
		*into = n
	}
	id("event", "val_filter_event", &a.EventID)
	id("admin", "val_filter_admin", &a.AdminID)
	if v := strings.TrimSpace(q.Get("after")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			f["after"] = M("err_bad_cursor")
		}
		a.After = n
	}
	a.Action = strings.TrimSpace(q.Get("action"))
	if a.Action != "" && !slices.Contains(actions, a.Action) {
		f["action"] = M("val_filter_action", "Value", ClipInput(a.Action, MaxQuoted))
	}
	if len(f) > 0 {
		return AuditFilter{}, q, &Error{Code: EBADREQUEST, Msg: M("err_bad_filters"), Fields: f}
	}
	return a, q, nil
}
