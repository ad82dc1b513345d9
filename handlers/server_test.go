package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
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
