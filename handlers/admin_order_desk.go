package handlers

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// orderLinesPerFlush is how many order lines the CSV export sends the
// client at a time.
const orderLinesPerFlush = 500

// handleAdminOrders handles GET /admin/orders?event=&q=&status=&after=: the
// order desk's search (boxoffice.ParseOrderSearch), newest first,
// boxoffice.OrderPageSize orders a page. JSON: {"orders": [{"order_id",
// "event_id", "status", "amount", "currency", "buyer", "seats",
// "created_at", "confirmed_at"}], "next": the next page's URL or null}.
// HTML: the filters form and a table linking each order to its page. 400
// bad_request with every unreadable parameter at once, one that is not
// valid percent-encoding included (c.QueryParams would drop it).
func (s *Server) handleAdminOrders(c echo.Context) error {
	ctx := c.Request().Context()
	search, query, serr := boxoffice.ParseOrderSearch(c.Request().URL.RawQuery)
	if serr != nil && wantsJSON(c) {
		return serr
	}
	v := views.AdminOrdersView{Event: query.Get("event"), Query: query.Get("q"), Status: query.Get("status"), Err: serr}
	if serr == nil {
		page, err := s.Desk.SearchOrders(ctx, search)
		if err != nil {
			return err
		}
		v.Page = page
		if page.Next != nil {
			v.Next = nextPageURL("/admin/orders", query, page.Next.String(), "event", "q", "status")
		}
	}
	if wantsJSON(c) {
		return answerJSON(c, http.StatusOK, adminOrdersJSON(v))
	}
	events, err := s.Events.FindEvents(ctx, boxoffice.EventFilter{})
	if err != nil {
		return err
	}
	v.Events = events
	status := http.StatusOK
	if serr != nil {
		status = s.statusOf(serr)
	}
	return render(c, status, views.AdminOrders(v))
}

// adminOrdersJSON is a page of the order desk's search as JSON.
func adminOrdersJSON(v views.AdminOrdersView) map[string]any {
	list := make([]map[string]any, len(v.Page.Orders))
	for i, l := range v.Page.Orders {
		o := l.Order
		list[i] = map[string]any{
			"order_id": o.ID, "event_id": o.EventID, "status": o.Status, "amount": o.Amount.Amount, "currency": o.Amount.Currency,
			"buyer": l.Buyer, "seats": o.Seats(), "created_at": o.CreatedAt, "confirmed_at": o.ConfirmedAt,
		}
	}
	var next any
	if v.Next != "" {
		next = v.Next
	}
	return map[string]any{"orders": list, "next": next}
}

// handleAdminOrdersCSV handles GET /admin/events/:id/orders.csv: every
// order line of the event (boxoffice.OrderLineWriter: order, status, buyer,
// seat, grade, price in minor units, currency, paid_at, refunded_at, times
// RFC 3339 in the event's time zone), streamed as PostgreSQL sends them and
// flushed every orderLinesPerFlush lines, so that neither the server nor the
// client waits for 15,000 lines. 404 for an unknown event. An error once
// lines went out cannot change the status: it is logged and the body ends
// short.
func (s *Server) handleAdminOrdersCSV(c echo.Context) error {
	id, err := pathID(c, "err_no_event")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	ev, err := s.Events.FindEventByID(ctx, id)
	if err != nil {
		return err
	}
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	res.Header().Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="event-%d-orders.csv"`, id))
	lw, err := boxoffice.NewOrderLineWriter(res, ev.Location())
	if err != nil {
		return err
	}
	n := 0
	err = s.Desk.EachOrderLine(ctx, id, func(l boxoffice.OrderLine) error {
		if err := lw.Write(l); err != nil {
			return err
		}
		if n++; n%orderLinesPerFlush == 0 {
			if err := lw.Flush(); err != nil {
				return err
			}
			res.Flush()
		}
		return nil
	})
	if err == nil {
		err = lw.Flush()
	}
	if err != nil && res.Committed {
		s.Logger.Error("orders csv cut short", "event", id, "lines", n, "err", err)
		return nil
	}
	return err
}

// nextPageURL is path's link to the page after the cursor after, keeping
// the filters of query named by filters that are set.
func nextPageURL(path string, query url.Values, after string, filters ...string) string {
	next := url.Values{"after": {after}}
	for _, k := range filters {
		if val := query.Get(k); val != "" {
			next.Set(k, val)
		}
	}
	return path + "?" + next.Encode()
}
