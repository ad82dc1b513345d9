package handlers_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/handlers"
	"github.com/labstack/echo/v4"
)

// triedMethods are the methods sent to every route's path.
var triedMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
}

// routePaths returns the methods of app's routes by path as registered
// (catch-alls left out); HEAD counts as taken wherever GET is.
func routePaths(t *testing.T, app *testApp) map[string][]string {
	t.Helper()
	e, ok := app.Server.Config.Handler.(*echo.Echo)
	if !ok {
		t.Fatalf("handler is %T, want *echo.Echo", app.Server.Config.Handler)
	}
	paths := map[string][]string{}
	for _, rt := range e.Routes() {
		if rt.Method == echo.RouteNotFound {
			continue
		}
		paths[rt.Path] = append(paths[rt.Path], rt.Method)
	}
	for path, methods := range paths {
		if slices.Contains(methods, http.MethodGet) && !slices.Contains(methods, http.MethodHead) {
			paths[path] = append(methods, http.MethodHead)
		}
	}
	if len(paths) < 40 {
		t.Fatalf("%d route paths, want the whole table", len(paths))
	}
	return paths
}

// concrete is a URL path that the route path matches: each :param is 1,
// and a trailing * a file that exists under /static.
func concrete(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		switch {
		case strings.HasPrefix(s, ":"):
			segs[i] = "1"
		case s == "*":
			segs[i] = "app.css"
		}
	}
	return strings.Join(segs, "/")
}

// matches reports whether the route path (":param" a segment, a trailing
// "*" the rest) matches the URL path.
func matches(route, url string) bool {
	rs, us := strings.Split(route, "/"), strings.Split(url, "/")
	for i, r := range rs {
		if r == "*" {
			return true
		}
		if i >= len(us) || r != us[i] && !(strings.HasPrefix(r, ":") && us[i] != "") {
			return false
		}
	}
	return len(rs) == len(us)
}

// served returns the methods that some route takes at the URL path: a
// param route may take a path with a static route's name
// (/admin/venues/:id takes GET /admin/venues/import).
func served(paths map[string][]string, url string) []string {
	var out []string
	for path, methods := range paths {
		if matches(path, url) {
			for _, m := range methods {
				if !slices.Contains(out, m) {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// allowSet is the methods an Allow header lists.
func allowSet(h string) []string {
	var out []string
	for m := range strings.SplitSeq(h, ",") {
		out = append(out, strings.TrimSpace(m))
	}
	slices.Sort(out)
	return out
}

// Every path of the route table answers a method it does not take with 405
// and an Allow header listing the methods it does take (OPTIONS answers 204
// with the same header), whichever group's catch-all covers it; a path no
// route takes stays 404 for every method.
func TestRoutes_MethodNotAllowed(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin, _ := app.newAccount(t, "methods@example.com", boxoffice.RoleAdmin)
	visitor := app.newClient(t)
	paths := routePaths(t, app)
	for path := range paths {
		c := visitor
		if strings.HasPrefix(path, "/admin") {
			c = admin // under /admin, a visitor is sent to log in first
		}
		url := concrete(path)
		methods := served(paths, url)
		want := allowSet(strings.Join(append([]string{http.MethodOptions}, methods...), ","))
		lacking := 0
		for _, method := range triedMethods {
			if slices.Contains(methods, method) {
				continue
			}
			lacking++
			t.Run(method+" "+path, func(t *testing.T) {
				resp := c.do(method, url, nil)
				wantStatus(t, resp, http.StatusMethodNotAllowed)
				if got := allowSet(resp.Header.Get("Allow")); !slices.Equal(got, want) {
					t.Errorf("%s %s: Allow %q, want %q", method, url, got, want)
				}
			})
		}
		if lacking == 0 && !slices.Contains(methods, http.MethodOptions) {
			t.Errorf("%s takes every method tried but OPTIONS, %v: nothing tested", path, methods)
		}
		if slices.Contains(methods, http.MethodOptions) {
			continue
		}
		t.Run("OPTIONS "+path, func(t *testing.T) {
			resp := c.do(http.MethodOptions, url, nil)
			wantStatus(t, resp, http.StatusNoContent)
			if got := allowSet(resp.Header.Get("Allow")); !slices.Equal(got, want) {
				t.Errorf("OPTIONS %s: Allow %q, want %q", url, got, want)
			}
		})
	}
	for _, url := range []string{"/nope", "/events/1/nope", "/events/1/holds/A-1-1/nope", "/orders/1/tickets", "/me", "/payments", "/admin/nope", "/admin/events/1/nope"} {
		for _, method := range append(slices.Clone(triedMethods), http.MethodOptions) {
			t.Run("unknown "+method+" "+url, func(t *testing.T) {
				resp := admin.do(method, url, nil)
				wantStatus(t, resp, http.StatusNotFound)
				if allow := resp.Header.Values("Allow"); len(allow) > 0 {
					t.Errorf("%s %s: Allow %q on a 404", method, url, allow)
				}
			})
		}
	}
}

// A 405 is the product's error, as JSON for a JSON request and as the
// error page otherwise, in the person's language.
func TestRoutes_MethodNotAllowedAnswer(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c := app.newClient(t)

	t.Run("JSON", func(t *testing.T) {
		resp := c.do(http.MethodDelete, "/events/1/holds", nil, "Accept: application/json")
		wantStatus(t, resp, http.StatusMethodNotAllowed)
		if got := resp.Header.Get("Allow"); got != "OPTIONS, POST" {
			t.Errorf("Allow %q, want %q", got, "OPTIONS, POST")
		}
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("decode: %v", err)
		}
		want := map[string]any{"error": "method_not_allowed", "message": "This address does not take that kind of request."}
		if len(body) != len(want) || body["error"] != want["error"] || body["message"] != want["message"] {
			t.Errorf("body %v, want %v", body, want)
		}
	})
	for _, tt := range []struct {
		lang, heading, message string
	}{
		{"en", "Request method not accepted", "This address does not take that kind of request."},
		{"ko", "지원하지 않는 요청 방식", "이 주소에서는 지원하지 않는 요청입니다."},
	} {
		t.Run("Page/"+tt.lang, func(t *testing.T) {
			resp := c.do(http.MethodPut, "/login", nil, "Accept-Language: "+tt.lang)
			wantStatus(t, resp, http.StatusMethodNotAllowed)
			if got := resp.Header.Get("Allow"); got != "OPTIONS, GET, HEAD, POST" {
				t.Errorf("Allow %q, want %q", got, "OPTIONS, GET, HEAD, POST")
			}
			d := doc(t, resp)
			if got := testid(d, "error-message"); got != tt.message {
				t.Errorf("message %q, want %q", got, tt.message)
			}
			if got := strings.TrimSpace(d.Find("h1").Text()); got != tt.heading {
				t.Errorf("heading %q, want %q", got, tt.heading)
			}
		})
	}
	t.Run("GET /logout", func(t *testing.T) {
		resp := c.do(http.MethodGet, "/logout", nil)
		wantStatus(t, resp, http.StatusMethodNotAllowed)
		if got := resp.Header.Get("Allow"); got != "OPTIONS, POST" {
			t.Errorf("Allow %q, want %q", got, "OPTIONS, POST")
		}
	})
}

// HEAD is answered by a path's GET route, with its headers and no body:
// the site's pages as the static files.
func TestRoutes_Head(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin, _ := app.newAccount(t, "head@example.com", boxoffice.RoleAdmin)
	for _, path := range []string{"/", "/login", "/signup", "/metrics", "/healthz", "/static/app.css", "/favicon.ico", "/admin/orders"} {
		t.Run(path, func(t *testing.T) {
			get := admin.do(http.MethodGet, path, nil)
			wantStatus(t, get, http.StatusOK)
			head := admin.do(http.MethodHead, path, nil)
			wantStatus(t, head, http.StatusOK)
			if g, h := get.Header.Get("Content-Type"), head.Header.Get("Content-Type"); g != h {
				t.Errorf("HEAD %s: Content-Type %q, GET's is %q", path, h, g)
			}
			if b, _ := io.ReadAll(head.Body); len(b) != 0 {
				t.Errorf("HEAD %s: a body of %d bytes", path, len(b))
			}
		})
	}
	// HEAD of the waiting room's stream answers at once, as a stream's
	// header, and opens no stream: the fan's streams stay free (a fan may
	// have STREAMS_PER_SESSION open: 2 here), and the answer ends.
	t.Run("stream", func(t *testing.T) {
		app := newTestApp(t, func(s *handlers.Server) { s.StreamsPerSession = 2 })
		ev := app.openEvent(t)
		fan, _ := app.newAccount(t, "head-stream@example.com", boxoffice.RoleFan)
		path := fmt.Sprintf("/events/%d/queue/stream", ev.ID)
		for range 8 {
			head := fan.do(http.MethodHead, path, nil)
			wantStatus(t, head, http.StatusOK)
			if got := head.Header.Get("Content-Type"); got != "text/event-stream" {
				t.Errorf("HEAD %s: Content-Type %q, want text/event-stream", path, got)
			}
			if b, err := io.ReadAll(head.Body); err != nil || len(b) != 0 {
				t.Errorf("HEAD %s: a body of %d bytes (%v)", path, len(b), err)
			}
		}
	})
}
