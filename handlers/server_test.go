package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

func TestCrossOriginPost(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c := app.newClient(t)
	before := app.countAccounts(t)
	resp := c.do("POST", "/signup", signupForm("xo@example.com", "correct horse", "XO"), "Origin: https://evil.example", "Sec-Fetch-Site: cross-site")
	wantStatus(t, resp, http.StatusForbidden)
	if after := app.countAccounts(t); after != before {
		t.Errorf("a cross-origin sign-up wrote an account (%d -> %d)", before, after)
	}
	same := c.do("POST", "/signup", signupForm("xo@example.com", "correct horse", "XO"), "Origin: "+app.URL, "Sec-Fetch-Site: same-origin")
	wantStatus(t, same, http.StatusSeeOther)
}

func TestBodyTooLarge(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	form := url.Values{"name": {strings.Repeat("a", 100<<10)}, "email": {"big@example.com"}, "password": {"correct horse"}}
	resp := app.newClient(t).do("POST", "/signup", form, "Accept: application/json")
	wantStatus(t, resp, http.StatusRequestEntityTooLarge)
	var body map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body["error"] != "too_large" {
		t.Errorf("body = %v (%v), want error too_large", body, err)
	}
	if n := app.countAccounts(t); n != 0 {
		t.Errorf("%d accounts written, want 0", n)
	}
}

func TestErrorPages(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c := app.newClient(t)

	resp := c.do("GET", "/no/such/page", nil)
	wantStatus(t, resp, http.StatusNotFound)
	if msg := testid(doc(t, resp), "error-message"); msg != "There is no page at this address." {
		t.Errorf("404 page message = %q", msg)
	}
	j := c.do("GET", "/no/such/page", nil, "Accept: application/json")
	wantStatus(t, j, http.StatusNotFound)
	var body map[string]string
	if err := json.NewDecoder(j.Body).Decode(&body); err != nil || body["error"] != "not_found" || body["message"] == "" {
		t.Errorf("404 JSON = %v (%v), want error not_found with a message", body, err)
	}
	hx := c.do("GET", "/no/such/page", nil, "HX-Request: true")
	wantStatus(t, hx, http.StatusNotFound)
	d := doc(t, hx)
	if d.Find("html > body > main").Length() != 0 || testid(d, "error-message") == "" {
		t.Error("an htmx request got a whole page, want the error fragment alone")
	}
}

func TestHealthAndReady(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c := app.newClient(t)
	wantStatus(t, c.do("GET", "/healthz", nil), http.StatusOK)
	wantStatus(t, c.do("GET", "/readyz", nil), http.StatusOK)
	m := c.do("GET", "/metrics", nil)
	wantStatus(t, m, http.StatusOK)
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := m.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if !strings.Contains(sb.String(), "boxoffice_http_request_duration_seconds") {
		t.Error("/metrics lacks the request duration histogram")
	}
	for _, path := range []string{"/static/htmx.min.js", "/static/sse.min.js", "/static/pico.min.css", "/favicon.ico"} {
		wantStatus(t, c.do("GET", path, nil), http.StatusOK)
		wantStatus(t, c.do("HEAD", path, nil), http.StatusOK)
	}
}

// /metrics answers one Vary line naming what promhttp negotiates on, the
// format and the compression, each once; the metrics are the same in every
// language and for every session, so neither the language's headers nor
// the Cookie are named, however the scraper asks.
func TestMetrics_OneVary(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c := app.newClient(t)
	for _, headers := range [][]string{
		nil,
		{"Accept-Encoding: gzip"},
		{"Accept-Encoding: identity", "Accept-Language: ko", "Accept: text/plain"},
		{"Accept: application/openmetrics-text; version=1.0.0", "Accept-Encoding: gzip, zstd"},
	} {
		for _, method := range []string{"GET", "HEAD"} {
			resp := c.do(method, "/metrics", nil, headers...)
			wantStatus(t, resp, http.StatusOK)
			lines := resp.Header.Values("Vary")
			if len(lines) != 1 {
				t.Errorf("%s /metrics %v: %d Vary lines %q, want one", method, headers, len(lines), lines)
				continue
			}
			var names []string
			for name := range strings.SplitSeq(lines[0], ",") {
				names = append(names, http.CanonicalHeaderKey(strings.TrimSpace(name)))
			}
			slices.Sort(names)
			if want := []string{"Accept", "Accept-Encoding"}; !slices.Equal(names, want) {
				t.Errorf("%s /metrics %v: Vary %q, want %q", method, headers, lines[0], strings.Join(want, ", "))
			}
			if cl := resp.Header.Values("Content-Language"); len(cl) != 0 {
				t.Errorf("%s /metrics %v: Content-Language %q, want none", method, headers, cl)
			}
		}
	}
}

// Every response carries one Vary header listing each request header it
// depends on once, whichever middleware added which: the language, the
// session's cookie, the compression and the seat map page's own.
func TestServer_OneVary(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.saleEvent(t)
	c, _ := app.newAccount(t, "vary@example.com", boxoffice.RoleFan)
	app.enter(t, c, ev.ID)
	seats := fmt.Sprintf("/events/%d/seats", ev.ID)
	for _, tt := range []struct {
		path    string
		headers []string
		want    []string // what the one Vary must list, at least
	}{
		{"/", nil, []string{"Accept-Language", "Cookie"}},
		{fmt.Sprintf("/events/%d", ev.ID), []string{"Accept: application/json"}, []string{"Accept-Language", "Cookie"}},
		{seats, []string{"Accept-Encoding: gzip"}, []string{"Accept", "Accept-Encoding", "Accept-Language", "Cookie", "HX-Request"}},
		{seats, []string{"Accept-Encoding: gzip", "Accept: application/json"}, []string{"Accept-Encoding", "Accept-Language", "Cookie"}},
		{seats + "/status", []string{"Accept-Encoding: gzip", "HX-Request: true"}, []string{"Accept-Encoding", "Accept-Language", "Cookie"}},
	} {
		resp := c.do("GET", tt.path, nil, tt.headers...)
		wantStatus(t, resp, http.StatusOK)
		lines := resp.Header.Values("Vary")
		if len(lines) != 1 {
			t.Errorf("GET %s %v: %d Vary headers %q, want one", tt.path, tt.headers, len(lines), lines)
			continue
		}
		seen := map[string]bool{}
		for _, name := range strings.Split(lines[0], ",") {
			name = http.CanonicalHeaderKey(strings.TrimSpace(name))
			if seen[name] {
				t.Errorf("GET %s %v: Vary %q names %s twice", tt.path, tt.headers, lines[0], name)
			}
			seen[name] = true
		}
		for _, name := range tt.want {
			if !seen[http.CanonicalHeaderKey(name)] {
				t.Errorf("GET %s %v: Vary %q lacks %s", tt.path, tt.headers, lines[0], name)
			}
		}
	}
}
