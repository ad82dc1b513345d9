package handlers

import (
	"net/http"
	"slices"
	"strings"
	"sync"

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
	table  *routeTable // shared by every group of e
}

// group returns the routes under r's prefix plus prefix, with r's middleware
// and then mw. As echo.Group.Use does, a path of the group that no route
// matches is answered through the group's middleware: under /admin, a
// visitor is sent to log in before learning whether a page exists. The
// answer is the one echo's router gives where no catch-all is registered
// (routeTable.unmatched): 404 for a path no route takes, 405 with Allow (or
// 204 with Allow for OPTIONS) for a path that routes take with other
// methods. A HEAD request is served by the path's GET route.
func (r routes) group(prefix string, mw ...echo.MiddlewareFunc) routes {
	g := routes{e: r.e, prefix: r.prefix + prefix, mw: append(slices.Clip(r.mw), mw...), table: r.table}
	if g.table == nil {
		g.table = &routeTable{e: r.e}
	}
	catchAll := g.table.headAsGet(g.compose(g.table.unmatched))
	g.e.RouteNotFound(g.prefix, catchAll)
	g.e.RouteNotFound(g.prefix+"/*", catchAll)
	return g
}

// routeTable tells which methods e's routes take at a path. echo's router
// answers 405 only when no catch-all (echo.RouteNotFound) covers the path:
// a group's catch-all wins over it, so the catch-all asks the table instead.
// The table reads e.Routes() at its first use, once every route is
// registered. Safe for concurrent use.
type routeTable struct {
	e       *echo.Echo
	once    sync.Once
	methods map[string]bool // the methods of e's routes
	routes  map[string]bool // "METHOD path" of each route, its path as registered
}

// allowOrder is the order of methods in an Allow header, echo's own
// (router.go, updateAllowHeader), after OPTIONS, which always comes first.
var allowOrder = []string{
	http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodPatch,
	http.MethodPost, echo.PROPFIND, http.MethodPut, http.MethodTrace, echo.REPORT,
}

// load reads e's routes, leaving out the catch-alls.
func (t *routeTable) load() {
	t.methods, t.routes = map[string]bool{}, map[string]bool{}
	for _, rt := range t.e.Routes() {
		if rt.Method == echo.RouteNotFound {
			continue
		}
		t.methods[rt.Method] = true
		t.routes[rt.Method+" "+rt.Path] = true
	}
}

// takes reports whether a route of method (not a catch-all) matches path,
// routed with the scratch context c.
func (t *routeTable) takes(c echo.Context, method, path string) bool {
	if !t.methods[method] {
		return false
	}
	c.SetPath("")
	t.e.Router().Find(method, path, c)
	return t.routes[method+" "+c.Path()]
}

// allow returns the Allow header's value for path, the raw path as echo
// routes it (echo.GetPath): "OPTIONS" and the methods that routes take
// there in allowOrder, HEAD included wherever GET is; "" when no route
// takes path.
func (t *routeTable) allow(path string) string {
	t.once.Do(t.load)
	c := t.e.NewContext(nil, nil)
	var b strings.Builder
	get := false
	for _, m := range allowOrder {
		ok := t.takes(c, m, path)
		if m == http.MethodGet {
			get = ok
		}
		if ok || m == http.MethodHead && get {
			b.WriteString(", ")
			b.WriteString(m)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return http.MethodOptions + b.String()
}

// unmatched answers a request that no route of its method matches, as
// echo's router does without a catch-all: echo.ErrMethodNotAllowed (405)
// with an Allow header when routes take the path with other methods, 204
// with it for OPTIONS, and echo.ErrNotFound (404) when none does.
func (t *routeTable) unmatched(c echo.Context) error {
	allow := t.allow(echo.GetPath(c.Request()))
	if allow == "" {
		return echo.ErrNotFound
	}
	c.Response().Header().Set(echo.HeaderAllow, allow)
	if c.Request().Method == http.MethodOptions {
		return c.NoContent(http.StatusNoContent)
	}
	return echo.ErrMethodNotAllowed
}

// headAsGet returns a catch-all that serves a HEAD request with the GET
// route of its path, whose handler carries its own middleware (net/http
// sends no body for HEAD), and passes any other request to next.
func (t *routeTable) headAsGet(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodHead {
			return next(c)
		}
		t.once.Do(t.load)
		path := echo.GetPath(r)
		if !t.takes(t.e.NewContext(nil, nil), http.MethodGet, path) {
			return next(c)
		}
		t.e.Router().Find(http.MethodGet, path, c)
		return c.Handler()(c)
	}
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
