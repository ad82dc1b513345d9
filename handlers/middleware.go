package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"

	"github.com/boxoffice/boxoffice"
	"github.com/labstack/echo/v4"
)

// Session keys.
const (
	sessAccountID  = "account_id"
	sessEmail      = "email"
	sessName       = "name"
	sessRole       = "role"
	sessSessionKey = "sid"
)

// recover turns a panic into a 500 with a generic message, logging the stack
// for operators; no stack trace reaches a person.
func (s *Server) recover(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.Logger.Error("panic", "path", c.Request().URL.Path, "panic", r, "stack", string(debug.Stack()))
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}

// crossOriginProtection refuses state-changing requests that a browser sends
// from another origin (Go's http.CrossOriginProtection: Sec-Fetch-Site, then
// Origin against Host). Requests without those headers, such as curl's, pass.
func crossOriginProtection() echo.MiddlewareFunc {
	cop := http.NewCrossOriginProtection()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := cop.Check(c.Request()); err != nil {
				return boxoffice.Errorf(boxoffice.EFORBIDDEN, "This request came from another site and was refused.")
			}
			return next(c)
		}
	}
}

// loadAccount puts the session's account and session key into the request's
// context. The account is read from the session (Redis), not PostgreSQL, so
// the hot paths of a sale cost no database query.
func (s *Server) loadAccount(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		ctx := boxoffice.NewContextWithSessionKey(r.Context(), s.Sessions.GetString(r.Context(), sessSessionKey))
		if id := s.Sessions.GetInt64(ctx, sessAccountID); id != 0 {
			ctx = boxoffice.NewContextWithAccount(ctx, &boxoffice.Account{
				ID:    id,
				Email: s.Sessions.GetString(ctx, sessEmail),
				Name:  s.Sessions.GetString(ctx, sessName),
				Role:  s.Sessions.GetString(ctx, sessRole),
			})
		}
		c.SetRequest(r.WithContext(ctx))
		return next(c)
	}
}

// requireAccount answers 401 (JSON) or redirects to the log-in page (HTML)
// for visitors.
func requireAccount(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if boxoffice.AccountFromContext(c.Request().Context()) != nil {
			return next(c)
		}
		if wantsJSON(c) || c.Request().Method != http.MethodGet && isHTMX(c) {
			return boxoffice.Errorf(boxoffice.EUNAUTHORIZED, "Please log in first.")
		}
		next := c.Request().URL.RequestURI()
		if c.Request().Method != http.MethodGet {
			next = c.Request().Referer()
		}
		return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(localPath(next)))
	}
}

// requireAdmin refuses fans with 403 and sends visitors to log in.
func requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return requireAccount(func(c echo.Context) error {
		if !boxoffice.AccountFromContext(c.Request().Context()).IsAdmin() {
			return boxoffice.Errorf(boxoffice.EFORBIDDEN, "This page is for administrators.")
		}
		return next(c)
	})
}

// localPath returns target if it is a path on this site, and "/" otherwise,
// so that ?next= can never send a person to another site.
func localPath(target string) string {
	u, err := url.Parse(target)
	if err != nil || target == "" {
		return "/"
	}
	if u.IsAbs() || u.Host != "" || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(target, "//") || strings.Contains(target, "\\") {
		return "/"
	}
	return u.RequestURI()
}
