package handlers

import (
	"net/http"
	"strconv"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// handleAdminAudit handles GET /admin/audit?event=&admin=&action=&after=:
// the audit log, newest first, boxoffice.AuditPageSize entries a page.
// JSON: {"entries": [{"id", "admin_id", "admin", "action", "event_id",
// "venue_id", "order_id", "seats", "before", "after", "created_at"}],
// "next": the next page's URL or null} (ids 0 and order_id "" when none).
// HTML: the filters form and a table. 400 bad_request with every unreadable
// parameter at once, one that is not valid percent-encoding included
// (c.QueryParams would drop it).
func (s *Server) handleAdminAudit(c echo.Context) error {
	actions := s.Audit.AuditActions()
	f, query, ferr := boxoffice.ParseAuditFilter(c.Request().URL.RawQuery, actions)
	if ferr != nil && wantsJSON(c) {
		return ferr
	}
	v := views.AdminAuditView{
		Event: query.Get("event"), Admin: query.Get("admin"), Action: query.Get("action"),
		Actions: actions, Err: ferr,
	}
	if ferr == nil {
		page, err := s.Audit.FindAudit(c.Request().Context(), f)
		if err != nil {
			return err
		}
		v.Page = page
		if page.Next != 0 {
			v.Next = nextPageURL("/admin/audit", query, strconv.FormatInt(page.Next, 10), "event", "admin", "action")
		}
	}
	if wantsJSON(c) {
		return answerJSON(c, http.StatusOK, adminAuditJSON(v))
	}
	status := http.StatusOK
	if ferr != nil {
		status = s.statusOf(ferr)
	}
	return render(c, status, views.AdminAudit(v))
}

// adminAuditJSON is a page of the audit log as JSON.
func adminAuditJSON(v views.AdminAuditView) map[string]any {
	list := make([]map[string]any, len(v.Page.Entries))
	for i, e := range v.Page.Entries {
		list[i] = map[string]any{
			"id": e.ID, "admin_id": e.AdminID, "admin": e.AdminEmail, "action": e.Action, "event_id": e.EventID,
			"venue_id": e.VenueID, "order_id": e.OrderID, "seats": e.Seats, "before": e.Before, "after": e.After,
			"created_at": e.CreatedAt,
		}
	}
	var next any
	if v.Next != "" {
		next = v.Next
	}
	return map[string]any{"entries": list, "next": next}
}
