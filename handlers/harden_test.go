package handlers_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/handlers"
)

// Input that is not text (a NUL byte, invalid UTF-8) anywhere PostgreSQL
// would see it is refused with 400 before any handler runs, and nothing is
// written.
func TestUnreadableInput(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	fan, _ := app.newAccount(t, "fan@example.com", "fan")
	v := adminVenue(t, app, "Hall")
	eventForm := formValues(t, doc(t, admin.do("GET", fmt.Sprintf("/admin/events/new?venue_id=%d", v.ID), nil)), `[data-testid="event-form"]`)
	eventForm.Set("queue_opens_at", "2026-12-01T20:00")
	eventForm.Set("sale_ends_at", "2026-12-31T18:00")
	eventForm.Set("starts_at", "2026-12-31T22:30")
	eventForm.Set("grades[0].price", "150000")
	eventForm.Set("grades[1].price", "90000")
	eventForm.Set("action", "save")
	with := func(f url.Values, field, value string) url.Values {
		g := url.Values{}
		for k, vs := range f {
			g[k] = append([]string(nil), vs...)
		}
		g.Set(field, value)
		return g
	}
	accounts, events := app.count(t, "account"), app.count(t, "event")

	tests := []struct {
		name   string
		c      *client
		method string
		path   string
		form   url.Values
	}{
		{"OrderPathNUL", fan, "GET", "/orders/abcdef%00", nil},
		{"OrderPathInvalidUTF8", fan, "GET", "/orders/abc%ffdef", nil},
		{"SignupNameNUL", app.newClient(t), "POST", "/signup", signupForm("nul@example.com", "correct horse", "x\x00y")},
		{"SignupNameInvalidUTF8", app.newClient(t), "POST", "/signup", signupForm("ff@example.com", "correct horse", "x\xffy")},
		{"SignupKeyNUL", app.newClient(t), "POST", "/signup", with(signupForm("key@example.com", "correct horse", "Key"), "a\x00", "b")},
		{"LoginEmailNUL", app.newClient(t), "POST", "/login", url.Values{"email": {"fan@example.com\x00"}, "password": {"correct horse"}}},
		{"PaymentSuccessNUL", fan, "GET", "/payments/success?orderId=abc%00def&paymentKey=k&amount=1", nil},
		{"PaymentFailNUL", fan, "GET", "/payments/fail?orderId=abc%00def&code=X", nil},
		{"PaymentFailInvalidUTF8", fan, "GET", "/payments/fail?orderId=abc%ff&code=X", nil},
		{"EventTitleNUL", admin, "POST", "/admin/events", with(eventForm, "title.en", "Con\x00cert")},
		{"EventDescriptionInvalidUTF8", admin, "POST", "/admin/events", with(eventForm, "description.en", "A \xff night")},
		{"GradeNameNUL", admin, "POST", "/admin/events", with(eventForm, "grades[0].name.en", "R\x00")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := tt.c.do(tt.method, tt.path, tt.form, "Accept: application/json")
			wantStatus(t, resp, http.StatusBadRequest)
			wantErrorCode(t, resp, "bad_request")
		})
	}
	t.Run("MultipartTitleNUL", func(t *testing.T) {
		var body bytes.Buffer
		w := multipart.NewWriter(&body)
		for k, vs := range with(eventForm, "title.en", "Con\x00cert") {
			for _, v := range vs {
				w.WriteField(k, v)
			}
		}
		w.Close()
		req, _ := http.NewRequest("POST", app.URL+"/admin/events", &body)
		req.Header.Set("Content-Type", w.FormDataContentType())
		resp, err := admin.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		wantStatus(t, resp, http.StatusBadRequest)
	})
	t.Run("UploadedFileMayHoldAnything", func(t *testing.T) {
		resp := admin.upload("/admin/venues/import", "Binary", "seats.csv", []byte("section,row\x00,\xff\n"))
		if resp.StatusCode == http.StatusBadRequest || resp.StatusCode >= 500 {
			t.Errorf("upload of a file with NUL and \\xff: status %d, want it read (and refused by the seat-map rules)", resp.StatusCode)
		}
	})
	t.Run("WebhookPaymentKeyNUL", func(t *testing.T) {
		resp, err := http.Post(app.URL+"/payments/webhook", "application/json",
			strings.NewReader(`{"eventType":"PAYMENT_STATUS_CHANGED","data":{"paymentKey":"ab\u0000c","orderId":"o"}}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		wantStatus(t, resp, http.StatusBadRequest)
	})

	if n := app.count(t, "account"); n != accounts {
		t.Errorf("%d accounts, want %d: unreadable sign-ups were saved", n, accounts)
	}
	if n := app.count(t, "event"); n != events {
		t.Errorf("%d events, want %d: unreadable events were saved", n, events)
	}
	// Readable input still goes through.
	wantRedirect(t, app.newClient(t).do("POST", "/signup", signupForm("ok@example.com", "correct horse", "Zoë 김")), "/")
}

// The static files are served, their directory is not listed.
func TestStaticFiles_NoListing(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c := app.newClient(t)
	for _, method := range []string{"GET", "HEAD"} {
		for _, path := range []string{"/static/", "/static//", "/static/./", "/static/."} {
			t.Run(method+path, func(t *testing.T) {
				wantStatus(t, c.do(method, path, nil), http.StatusNotFound)
			})
		}
		for _, path := range []string{"/static/app.css", "/static/htmx.min.js", "/favicon.ico"} {
			t.Run(method+path, func(t *testing.T) {
				wantStatus(t, c.do(method, path, nil), http.StatusOK)
			})
		}
	}
}

// Every response, a page, a file or an error, forbids framing and sniffing.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	c := app.newClient(t)
	want := map[string]string{
		"X-Frame-Options":         "DENY",
		"Content-Security-Policy": "frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "same-origin",
	}
	for _, path := range []string{"/", "/login", "/static/app.css", "/no-such-page", "/orders/x%00"} {
		resp := c.do("GET", path, nil)
		for k, v := range want {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("GET %s: %s %q, want %q", path, k, got, v)
			}
		}
	}
}

// The home page says a queue is open rather than when it opened.
func TestHome_OnSaleNow(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	open := app.openEvent(t)
	later := app.newEvent(t, time.Now().Add(24*time.Hour), time.Now().Add(48*time.Hour), false)
	d := doc(t, app.newClient(t).do("GET", "/", nil))
	sale := map[string]string{}
	d.Find(`[data-testid="event-card"]`).Each(func(_ int, card *goquery.Selection) {
		href := card.Find(`[data-testid="event-link"]`).AttrOr("href", "")
		sale[href] = strings.TrimSpace(card.Find(`[data-testid="event-sale"]`).Text())
	})
	if len(sale) != 2 {
		t.Fatalf("home lists %v, want 2 events", sale)
	}
	if got := sale[fmt.Sprintf("/events/%d", open.ID)]; got != "On sale now: the queue is open" {
		t.Errorf("open event says %q, want that it is on sale now", got)
	}
	if got := sale[fmt.Sprintf("/events/%d", later.ID)]; !strings.HasPrefix(got, "Queue opens ") {
		t.Errorf("later event says %q, want when its queue opens", got)
	}
}

// A client that sends a request's headers and then stalls in its body is
// refused once the body timeout has passed, and its connection closed; a
// fan's SSE stream, which has no body, stays open well past it.
func TestBodyTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	app := newTestApp(t, func(s *handlers.Server) { s.BodyTimeout = timeout })

	t.Run("StalledBody", func(t *testing.T) {
		conn, err := net.Dial("tcp", app.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(30 * time.Second)) // a server that waits on fails the test, not hangs it
		fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 60000\r\n\r\nemail=fan", app.Listener.Addr())
		r := bufio.NewReader(conn)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("no answer to a stalled body: %v", err)
		}
		defer resp.Body.Close()
		wantStatus(t, resp, http.StatusBadRequest)
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
			t.Errorf("after the answer: %d bytes, %v; want the connection closed", len(rest), err)
		}
	})

	t.Run("Stream", func(t *testing.T) {
		ev := app.openEvent(t)
		fan, _ := app.newAccount(t, "streaming@example.com", boxoffice.RoleFan)
		wantStatus(t, fan.do("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}), http.StatusSeeOther)
		_, ch := stream(t, fan, ev.ID)
		if e := next(t, ch); e.name != "position" {
			t.Fatalf("first event %q, want position", e.name)
		}
		wait := time.After(5 * timeout)
	waiting:
		for {
			select {
			case e, ok := <-ch:
				if !ok {
					t.Fatal("the stream ended before the fan was admitted")
				}
				if e.name != "position" {
					t.Fatalf("event %q before the fan was admitted", e.name)
				}
			case <-wait:
				break waiting
			}
		}
		app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: 1})
		e := next(t, ch)
		for e.name == "position" {
			e = next(t, ch)
		}
		if e.name != "admitted" {
			t.Errorf("after the admission: %q, want admitted", e.name)
		}
	})
}

// A JSON body sent where the site reads forms is refused with a sentence
// that says to send a form, and changes nothing, rather than being read as
// a form whose every field is empty; a post without a body, whatever its
// Content-Type, and a form are read as before.
func TestFormOnly(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.openEvent(t)
	fan, _ := app.newAccount(t, "json@example.com", boxoffice.RoleFan)
	post := func(path, contentType, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("POST", app.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Accept-Language", "en")
		resp, err := fan.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for _, r := range []struct{ path, contentType, body string }{
		{"/login", "application/json", `{"email":"json@example.com","password":"correct horse"}`},
		{fmt.Sprintf("/events/%d/holds", ev.ID), "application/json; charset=utf-8", `{"seat":["A-1-1"]}`},
		{fmt.Sprintf("/events/%d/queue", ev.ID), "text/plain", "join"},
	} {
		resp := post(r.path, r.contentType, r.body)
		var body struct{ Error, Message string }
		decodeJSON(t, resp, &body)
		if resp.StatusCode != http.StatusBadRequest || body.Error != boxoffice.EBADREQUEST || !strings.Contains(body.Message, "Send this address a form") {
			t.Errorf("POST %s (%s): %d %q %q, want 400 bad_request asking for a form", r.path, r.contentType, resp.StatusCode, body.Error, body.Message)
		}
	}
	// The refused join placed nobody.
	wantStatus(t, fan.do("GET", fmt.Sprintf("/events/%d/queue/status", ev.ID), nil, "Accept: application/json"), http.StatusNotFound)
	if resp := post(fmt.Sprintf("/events/%d/queue", ev.ID), "application/json", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("a join without a body, Content-Type application/json: %d, want 200", resp.StatusCode)
	}
}
