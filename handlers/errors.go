package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// statuses maps each error code of the contract to its HTTP status.
var statuses = map[string]int{
	boxoffice.EBADREQUEST:        http.StatusBadRequest,
	boxoffice.EMETHOD:            http.StatusMethodNotAllowed,
	boxoffice.EBADSEAT:           http.StatusBadRequest,
	boxoffice.EUNAUTHORIZED:      http.StatusUnauthorized,
	boxoffice.EFORBIDDEN:         http.StatusForbidden,
	boxoffice.ENOENTRYTOKEN:      http.StatusForbidden,
	boxoffice.ENOTFOUND:          http.StatusNotFound,
	boxoffice.ENOTINQUEUE:        http.StatusNotFound,
	boxoffice.ECONFLICT:          http.StatusConflict,
	boxoffice.EQUEUENOTOPEN:      http.StatusConflict,
	boxoffice.ESEATTAKEN:         http.StatusConflict,
	boxoffice.ENOHOLDS:           http.StatusConflict,
	boxoffice.ESEATINORDER:       http.StatusConflict,
	boxoffice.EORDERPENDING:      http.StatusConflict,
	boxoffice.ENOTTOGETHER:       http.StatusConflict,
	boxoffice.EBADCHOICE:         http.StatusBadRequest,
	boxoffice.ETOOLARGE:          http.StatusRequestEntityTooLarge,
	boxoffice.EINVALID:           http.StatusUnprocessableEntity,
	boxoffice.ELIMITEXCEEDED:     http.StatusUnprocessableEntity,
	boxoffice.ELIMITREACHED:      http.StatusConflict,
	boxoffice.ECHALLENGEREQUIRED: http.StatusPreconditionRequired,
	boxoffice.ECHALLENGEFAILED:   http.StatusForbidden,
	boxoffice.ERATELIMITED:       http.StatusTooManyRequests,
	boxoffice.EINTERNAL:          http.StatusInternalServerError,
	boxoffice.EUNAVAILABLE:       http.StatusServiceUnavailable,
}

// echoErrors turns echo's own errors (unknown route, wrong method, body too
// large) into the contract's codes and messages.
var echoErrors = map[int]*boxoffice.Error{
	http.StatusNotFound:              boxoffice.NewError(boxoffice.ENOTFOUND, "err_no_page"),
	http.StatusMethodNotAllowed:      boxoffice.NewError(boxoffice.EMETHOD, "err_method"),
	http.StatusRequestEntityTooLarge: boxoffice.NewError(boxoffice.ETOOLARGE, "err_too_large"),
	http.StatusBadRequest:            boxoffice.NewError(boxoffice.EBADREQUEST, "err_bad_request"),
	http.StatusForbidden:             boxoffice.NewError(boxoffice.EFORBIDDEN, "err_forbidden"),
	http.StatusUnauthorized:          boxoffice.NewError(boxoffice.EUNAUTHORIZED, "err_log_in"),
}

// handleError is echo's HTTPErrorHandler: it maps err's code to a status,
// shows people only the error's message, put into the request's language
// by views (the code stays the same in every language), logs only 5xx, and
// answers JSON, an htmx fragment or a page, as the request asks
// (CONTRACT.md "Errors").
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	err = s.fromEcho(err)
	code, status := boxoffice.ErrorCode(err), s.statusOf(err)
	if status == http.StatusServiceUnavailable {
		s.Logger.Warn("service unavailable", "path", c.Request().URL.Path, "client", c.RealIP(), "err", err)
	} else if status >= 500 {
		s.Logger.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "client", c.RealIP(), "status", status, "err", err)
	}
	ctx := c.Request().Context()
	if status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", "5")
	}
	var rerr error
	switch {
	case wantsJSON(c):
		body := map[string]any{"error": code, "message": views.ErrorText(ctx, err)}
		var e *boxoffice.Error
		if errors.As(err, &e) {
			for k, v := range e.Details {
				body[k] = views.Localize(ctx, v)
			}
			if len(e.Fields) > 0 {
				body["fields"] = views.ErrorFields(ctx, err)
			}
		}
		rerr = answerJSON(c, status, body)
	case isHTMX(c):
		rerr = render(c, status, views.ErrorFragment(err))
	default:
		rerr = render(c, status, views.ErrorPage(status, err))
	}
	if rerr != nil {
		s.Logger.Error("write error response", "err", rerr)
	}
}

// errServiceDown is what people see when PostgreSQL or Redis does not answer.
var errServiceDown = boxoffice.NewError(boxoffice.EUNAVAILABLE, "err_unavailable")

// fromEcho replaces echo's own errors with the contract's, a failure to
// reach PostgreSQL or Redis (s.unreachable) with EUNAVAILABLE, and
// PostgreSQL's refusal of characters (unreadableText) with EBADREQUEST.
func (s *Server) fromEcho(err error) error {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if mapped, ok := echoErrors[he.Code]; ok {
			return mapped
		}
	} else if s.unreachable(err) {
		return fmt.Errorf("%w (%w)", errServiceDown, err)
	} else if unreadableText(err) {
		return fmt.Errorf("%w (%w)", errUnreadable, err)
	}
	return err
}

// unreadableText reports whether err is PostgreSQL refusing characters of
// text: SQLSTATE 22021 (character_not_in_repertoire: a NUL byte or invalid
// UTF-8) or 22P05 (untranslatable_character). Like boxoffice.Unreachable, it
// looks at behaviour, not at the driver's types.
func unreadableText(err error) bool {
	var state interface{ SQLState() string }
	if !errors.As(err, &state) {
		return false
	}
	code := state.SQLState()
	return code == "22021" || code == "22P05"
}

// unreachable reports whether err says that PostgreSQL or Redis could not be
// reached or went away: s.Unreachable, or boxoffice.Unreachable when nil.
func (s *Server) unreachable(err error) bool {
	if s.Unreachable != nil {
		return s.Unreachable(err)
	}
	return boxoffice.Unreachable(err)
}

// statusOf returns the HTTP status for err's code (500 for unknown errors).
func (s *Server) statusOf(err error) int {
	if status, ok := statuses[boxoffice.ErrorCode(s.fromEcho(err))]; ok {
		return status
	}
	return http.StatusInternalServerError
}

// render writes component as an HTML response with the given status.
func render(c echo.Context, status int, component templ.Component) error {
	c.Response().Header()[echo.HeaderContentType] = htmlContentType
	c.Response().WriteHeader(status)
	return component.Render(c.Request().Context(), c.Response())
}

// answerJSON writes v as a JSON response with the given status, as echo's
// c.JSON does (indented for ?pretty or in debug mode, Content-Type
// application/json unless the handler set one), without parsing the query
// of a request that has none to learn that it asks for no indent, and
// without allocating the Content-Type header's value.
func answerJSON(c echo.Context, status int, v any) error {
	if c.Request().URL.RawQuery != "" || c.Echo().Debug {
		return c.JSON(status, v)
	}
	res := c.Response()
	if h := res.Header(); len(h[echo.HeaderContentType]) == 0 {
		h[echo.HeaderContentType] = jsonContentType
	}
	res.Status = status
	return json.NewEncoder(res).Encode(v)
}

// The Content-Type values that every answer shares (header keys in
// canonical form; a later Set replaces the slice, an Add copies it).
var (
	htmlContentType = []string{echo.MIMETextHTMLCharsetUTF8}
	jsonContentType = []string{echo.MIMEApplicationJSON}
)

// wantsJSON reports whether the request asks for JSON (Accept:
// application/json), as the contract's JSON routes answer, or sends JSON
// (the PG's webhooks, which name no Accept).
func wantsJSON(c echo.Context) bool {
	if ct := c.Request().Header.Get(echo.HeaderContentType); strings.HasPrefix(ct, echo.MIMEApplicationJSON) {
		return true
	}
	for part := range strings.SplitSeq(c.Request().Header.Get(echo.HeaderAccept), ",") {
		mediaType, _, _ := strings.Cut(part, ";")
		if strings.TrimSpace(mediaType) == echo.MIMEApplicationJSON {
			return true
		}
	}
	return false
}

// isHTMX reports whether htmx sent the request (it swaps a fragment).
func isHTMX(c echo.Context) bool {
	return c.Request().Header.Get("HX-Request") == "true"
}
