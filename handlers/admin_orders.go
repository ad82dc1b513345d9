package handlers

import (
	"net/http"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// adminOrder returns the order of the :order path parameter and its refunds.
// Errors: ENOTFOUND.
func (s *Server) adminOrder(c echo.Context) (*boxoffice.Order, []boxoffice.Refund, error) {
	ctx := c.Request().Context()
	id := c.Param("order")
	if !boxoffice.ValidOrderID(id) {
		return nil, nil, errNoOrder
	}
	o, err := s.Orders.FindOrderByID(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	refunds, err := s.Refunds.FindRefunds(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return o, refunds, nil
}

// handleAdminOrder handles GET /admin/orders/:order: an order with its
// items, live tickets and refunds, and the refund form. JSON: the fan's
// order JSON plus "account_id" and "refunds": [{"id", "amount", "reason",
// "source", "status", "failure", "seats", "created_at", "done_at"}].
func (s *Server) handleAdminOrder(c echo.Context) error {
	o, refunds, err := s.adminOrder(c)
	if err != nil {
		return err
	}
	if wantsJSON(c) {
		return answerJSON(c, http.StatusOK, adminOrderJSON(o, refunds))
	}
	return render(c, http.StatusOK, views.AdminOrderPage(views.AdminOrderView{Order: o, Refunds: refunds}, s.popFlash(c)))
}

// adminOrderJSON is an order as the order desk's JSON.
func adminOrderJSON(o *boxoffice.Order, refunds []boxoffice.Refund) map[string]any {
	out := orderJSON(o, "")
	out["account_id"] = o.AccountID
	list := make([]map[string]any, len(refunds))
	for i, r := range refunds {
		list[i] = map[string]any{
			"id": r.ID, "amount": r.Amount, "reason": r.Reason, "source": r.Source, "status": r.Status,
			"failure": r.Failure, "seats": r.Seats, "created_at": r.CreatedAt, "done_at": r.DoneAt,
		}
	}
	out["refunds"] = list
	return out
}

// handleAdminOrderRefund handles POST /admin/orders/:order/refund: the form's
// "reason" and repeated "seat" (all the order's tickets not refunded yet when
// none). JSON: 200 {"order_id", "status", "refunded_amount", "seats"}; HTML:
// 303 to the order's page, which says it was refunded, or the page again
// with the refusal and its status (422 with every reason of the form at once,
// 409 for a refund the order's state or the PG refuses; nothing changed).
func (s *Server) handleAdminOrderRefund(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return errBadForm
	}
	id := c.Param("order")
	if !boxoffice.ValidOrderID(id) {
		return errNoOrder
	}
	ctx := c.Request().Context()
	res, err := s.Refunds.Refund(ctx, boxoffice.RefundRequest{
		OrderID: id, Seats: form["seat"], Reason: form.Get("reason"), AdminID: boxoffice.AccountFromContext(ctx).ID,
	})
	switch {
	case err == nil && wantsJSON(c):
		return answerJSON(c, http.StatusOK, res)
	case err == nil:
		return s.redirectWithFlash(c, "/admin/orders/"+id, views.FlashRefunded)
	case wantsJSON(c) || boxoffice.ErrorCode(err) == boxoffice.ENOTFOUND:
		return err
	}
	o, refunds, ferr := s.adminOrder(c)
	if ferr != nil {
		return ferr
	}
	v := views.AdminOrderView{Order: o, Refunds: refunds, Err: err, Reason: form.Get("reason"), Seats: form["seat"]}
	return render(c, s.statusOf(err), views.AdminOrderPage(v, ""))
}
