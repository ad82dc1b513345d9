package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
	qrcode "github.com/skip2/go-qrcode"
)

// qrSize is the side of a ticket's QR code image, in pixels: about twice
// the 280 CSS pixels it is shown at, so that it stays sharp on phones.
const qrSize = 512

// handleCreateOrder handles POST /events/:id/orders: an order of all the
// account's live holds, then the PG's checkout. JSON: 201 {"order_id",
// "status", "amount", "currency", "checkout_url"}; a page: 303 to the
// checkout (htmx: HX-Redirect). Errors: 409 no_holds; 403 no_entry_token
// (requireEntry).
func (s *Server) handleCreateOrder(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	o, err := s.Orders.CreateOrder(ctx, id, boxoffice.AccountFromContext(ctx).ID)
	if err != nil {
		return err
	}
	checkout := s.Checkout.CheckoutURL(o)
	switch {
	case wantsJSON(c):
		return answerJSON(c, http.StatusCreated, map[string]any{
			"order_id": o.ID, "status": o.Status, "amount": o.Amount.Amount, "currency": o.Amount.Currency, "checkout_url": checkout,
		})
	case isHTMX(c):
		c.Response().Header().Set("HX-Redirect", checkout)
		return c.NoContent(http.StatusCreated)
	}
	return c.Redirect(http.StatusSeeOther, checkout)
}

// errNoOrder answers for an order that does not exist or is not the
// account's alike, so that an order id tells a stranger nothing.
var errNoOrder = boxoffice.NewError(boxoffice.ENOTFOUND, "err_no_order")

// ownOrder returns the order named by the :order parameter if it belongs to
// the logged-in account. Errors: ENOTFOUND for anyone else, so that an order
// id tells a stranger nothing.
func (s *Server) ownOrder(c echo.Context) (*boxoffice.Order, error) {
	return s.ownOrderByID(c.Request().Context(), c.Param("order"))
}

// ownOrderByID is ownOrder for an id from anywhere; one that is not an order
// id's shape (boxoffice.ValidOrderID) is not looked up.
func (s *Server) ownOrderByID(ctx context.Context, id string) (*boxoffice.Order, error) {
	if !boxoffice.ValidOrderID(id) {
		return nil, errNoOrder
	}
	o, err := s.Orders.FindOrderByID(ctx, id)
	if boxoffice.ErrorCode(err) == boxoffice.ENOTFOUND || err == nil && o.AccountID != boxoffice.AccountFromContext(ctx).ID {
		return nil, errNoOrder
	} else if err != nil {
		return nil, err
	}
	return o, nil
}

// handleOrder handles GET /orders/:order: the order to its owner (404 to
// anyone else). JSON: {"order_id", "status", "amount", "currency", "seats",
// "tickets": [{"id", "seat", "code", "qr_url"}], "expires_at", "event_id",
// "failure", "checkout_url" (while payable)}; htmx: the live part alone.
// ?pg=unavailable or ?pg=refused (where the success redirect sends the
// buyer when the PG left the payment unsettled) adds why to a pending
// order's page; any other value is ignored.
func (s *Server) handleOrder(c echo.Context) error {
	o, err := s.ownOrder(c)
	if err != nil {
		return err
	}
	v := views.OrderView{Order: o}
	if w := c.QueryParam("pg"); w == views.PGWaitUnavailable || w == views.PGWaitRefused {
		v.PGWait = w
	}
	return s.renderOrder(c, v)
}

// renderOrder answers with v's order as JSON, the live fragment (htmx) or
// the page; v's FailCode and PGWait say what the page explains, and the
// time and the way to pay are filled in here.
func (s *Server) renderOrder(c echo.Context, v views.OrderView) error {
	o := v.Order
	now := s.Now()
	v.Now = now
	if o.Payable(now) {
		v.CheckoutURL = s.Checkout.CheckoutURL(o)
	}
	switch {
	case wantsJSON(c):
		return answerJSON(c, http.StatusOK, orderJSON(o, v.CheckoutURL))
	case isHTMX(c):
		return render(c, http.StatusOK, views.OrderDetails(v))
	}
	return render(c, http.StatusOK, views.OrderPage(v))
}

// orderJSON is an order as CONTRACT.md's JSON.
func orderJSON(o *boxoffice.Order, checkoutURL string) map[string]any {
	tickets := make([]map[string]any, len(o.Tickets))
	for i, t := range o.Tickets {
		tickets[i] = map[string]any{"id": t.ID, "seat": t.Seat, "code": t.Code, "qr_url": "/orders/" + o.ID + "/tickets/" + t.ID + "/qr.png"}
	}
	out := map[string]any{
		"order_id": o.ID, "event_id": o.EventID, "status": o.Status, "amount": o.Amount.Amount, "currency": o.Amount.Currency,
		"seats": o.Seats(), "tickets": tickets, "expires_at": o.ExpiresAt.Format(time.RFC3339), "created_at": o.CreatedAt.Format(time.RFC3339),
	}
	if o.FailureCode != "" {
		out["failure"] = o.FailureCode
	}
	if checkoutURL != "" {
		out["checkout_url"] = checkoutURL
	}
	return out
}

// handleTicketQR handles GET /orders/:order/tickets/:ticket/qr.png: the QR
// code of the ticket's signed code, as a PNG, to the order's owner.
func (s *Server) handleTicketQR(c echo.Context) error {
	o, err := s.ownOrder(c)
	if err != nil {
		return err
	}
	for _, t := range o.Tickets {
		if t.ID != c.Param("ticket") {
			continue
		}
		png, err := qrcode.Encode(t.Code, qrcode.Medium, qrSize)
		if err != nil {
			return err
		}
		c.Response().Header().Set("Cache-Control", "private, max-age=86400")
		return c.Blob(http.StatusOK, "image/png", png)
	}
	return boxoffice.NewError(boxoffice.ENOTFOUND, "err_no_ticket")
}

// handleMyOrders handles GET /me/orders: the account's orders, newest
// first. JSON: {"orders": [<the order's JSON>...]}.
func (s *Server) handleMyOrders(c echo.Context) error {
	ctx := c.Request().Context()
	orders, err := s.Orders.FindOrders(ctx, boxoffice.AccountFromContext(ctx).ID)
	if err != nil {
		return err
	}
	if wantsJSON(c) {
		out := make([]map[string]any, len(orders))
		for i, o := range orders {
			out[i] = orderJSON(o, "")
			out[i]["event_title"] = o.EventTitle.In(views.Lang(ctx))
		}
		return answerJSON(c, http.StatusOK, map[string]any{"orders": out})
	}
	return render(c, http.StatusOK, views.MyOrdersPage(orders))
}
