package handlers

import (
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"
)

// echo v4 composes middleware anew for every request: a route's own and its
// group's (echo.Group) when the route is called, and e.Use's and e.Pre's
// around the router's pick, each a closure allocated per middleware per
// request. The route table composes them once instead, when it is built:
// routes hands echo finished handlers, and everything that runs on every
// request is one chain built once (globalChain).

// routes registers handlers under a path prefix, each composed once with
// the middleware of its group and its own (outermost first, as echo orders
// them).
type routes struct {
	e      *echo.Echo
	prefix string
	mw     []echo.MiddlewareFunc
}

// group returns the routes under r's prefix plus prefix, with r's middleware
// and then mw. As echo.Group.Use does, a path of the group that no route
// matches is answered 404 (or 405) through the group's middleware: under
// /admin, a visitor is sent to log in before learning whether a page exists.
func (r routes) group(prefix string, mw ...echo.MiddlewareFunc) routes {
	g := routes{e: r.e, prefix: r.prefix + prefix, mw: append(slices.Clip(r.mw), mw...)}
	notFound := g.compose(echo.NotFoundHandler)
	g.e.RouteNotFound(g.prefix, notFound)
	g.e.RouteNotFound(g.prefix+"/*", notFound)
	return g
}

// compose returns h inside mw, inside r's middleware.
func (r routes) compose(h echo.HandlerFunc, mw ...echo.MiddlewareFunc) echo.HandlerFunc {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	for i := len(r.mw) - 1; i >= 0; i-- {
		h = r.mw[i](h)
	}
	return h
}

// add registers h for method at r's prefix plus path.
func (r routes) add(method, path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.e.Add(method, r.prefix+path, r.compose(h, mw...))
}

// GET, POST and DELETE register a route as echo's methods of those names do.
func (r routes) GET(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodGet, path, h, mw...)
}

func (r routes) POST(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodPost, path, h, mw...)
}

func (r routes) DELETE(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.add(http.MethodDelete, path, h, mw...)
}

// globalChain returns a middleware for e.Use that runs mw (outermost first)
// around whatever handler the router picked for the request, including
// echo's own 404, 405 and OPTIONS answers, composed once: it ignores the
// handler echo passes (the router's pick, which it composes per request)
// and calls c.Handler(), the same pick, from inside the chain. It must be
// the only middleware given to e.Use, and nothing may be given to e.Pre.
func globalChain(mw ...echo.MiddlewareFunc) echo.MiddlewareFunc {
	var h echo.HandlerFunc = func(c echo.Context) error { return c.Handler()(c) }
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return func(echo.HandlerFunc) echo.HandlerFunc { return h }
}
