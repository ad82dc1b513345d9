package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/handlers"
)

// cookiesOfAVisit logs a fan in, switches the language, joins the
// event's queue and logs out, each request from a client of its own that
// newClient returns with the headers, and returns every cookie the site
// set. It fails unless the session, language and place cookies are among
// them.
func cookiesOfAVisit(t *testing.T, app *testApp, newClient func() *client, email string, headers ...string) []*http.Cookie {
	t.Helper()
	if _, err := app.Srv.Accounts.CreateAccount(context.Background(), boxoffice.Signup{Email: email, Password: "correct horse", Name: email, Role: boxoffice.RoleFan}); err != nil {
		t.Fatal(err)
	}
	ev := app.openEvent(t)
	var cookies []*http.Cookie
	visit := func(method, path string, form url.Values, want int, more ...string) *http.Response {
		resp := newClient().do(method, path, form, append(more, headers...)...)
		wantStatus(t, resp, want)
		cookies = append(cookies, resp.Cookies()...)
		return resp
	}
	session := sessionCookie(visit("POST", "/login", url.Values{"email": {email}, "password": {"correct horse"}}, http.StatusSeeOther))
	if session == nil {
		t.Fatal("log-in set no session cookie")
	}
	withSession := "Cookie: boxoffice_session=" + session.Value
	visit("POST", "/lang", url.Values{"lang": {"ko"}}, http.StatusSeeOther, withSession)
	visit("POST", fmt.Sprintf("/events/%d/queue", ev.ID), url.Values{}, http.StatusSeeOther, withSession)
	visit("POST", "/logout", url.Values{}, http.StatusSeeOther, withSession)
	for _, name := range []string{handlers.SessionCookie, "boxoffice_lang", "boxoffice_queue_epoch"} {
		if !hasCookie(cookies, name) {
			t.Fatalf("the visit set cookies %v, want %s among them", cookies, name)
		}
	}
	return cookies
}

func hasCookie(cookies []*http.Cookie, name string) bool {
	for _, c := range cookies {
		if c.Name == name {
			return true
		}
	}
	return false
}

// wantSecure fails unless every cookie's Secure is secure.
func wantSecure(t *testing.T, cookies []*http.Cookie, secure bool) {
	t.Helper()
	for _, c := range cookies {
		if c.Secure != secure {
			t.Errorf("cookie %s (%s): Secure %v, want %v", c.Name, c.Raw, c.Secure, secure)
		}
	}
}

// Every cookie the site sets is Secure when the request came over https:
// TLS on the connection, or X-Forwarded-Proto: https from a trusted load
// balancer (TRUSTED_PROXIES), and only then; an https BASE_URL makes them
// Secure whatever the request.
func TestCookies_Secure(t *testing.T) {
	t.Parallel()
	behind := newTestApp(t, withTrustedProxy) // trusts 127.0.0.1, not 127.0.0.2

	t.Run("TrustedProxyHTTPS", func(t *testing.T) {
		wantSecure(t, cookiesOfAVisit(t, behind, func() *client { return behind.newClient(t) }, "trusted@example.com",
			"X-Forwarded-Proto: https"), true)
	})
	t.Run("TrustedProxyHTTP", func(t *testing.T) {
		wantSecure(t, cookiesOfAVisit(t, behind, func() *client { return behind.newClient(t) }, "plain@example.com",
			"X-Forwarded-Proto: http"), false)
	})
	t.Run("UntrustedPeer", func(t *testing.T) {
		wantSecure(t, cookiesOfAVisit(t, behind, func() *client { return behind.newClientFrom(t, "127.0.0.2") }, "forger@example.com",
			"X-Forwarded-Proto: https"), false)
	})
	t.Run("NoProxiesTrusted", func(t *testing.T) {
		app := newTestApp(t)
		wantSecure(t, cookiesOfAVisit(t, app, func() *client { return app.newClient(t) }, "direct@example.com",
			"X-Forwarded-Proto: https"), false)
	})
	t.Run("TLS", func(t *testing.T) {
		app := newTestApp(t)
		tlsSrv := httptest.NewTLSServer(app.Config.Handler)
		t.Cleanup(tlsSrv.Close)
		newTLSClient := func() *client {
			return &client{
				Client: &http.Client{Transport: tlsSrv.Client().Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
				t:      t,
				base:   tlsSrv.URL,
			}
		}
		wantSecure(t, cookiesOfAVisit(t, app, newTLSClient, "tls@example.com", "X-Forwarded-Proto: http"), true)
	})
	t.Run("BaseURLHTTPS", func(t *testing.T) {
		app := newTestApp(t, func(s *handlers.Server) { s.Sessions.Cookie.Secure = true })
		wantSecure(t, cookiesOfAVisit(t, app, func() *client { return app.newClient(t) }, "base@example.com"), true)
	})
}

// Requests over https through the balancer and forged ones from an
// untrusted peer, all at once: each response's cookie follows its own
// request's scheme.
func TestCookies_SecureConcurrent(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, withTrustedProxy)
	trusted, untrusted := app.newClient(t), app.newClientFrom(t, "127.0.0.2")
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			c, secure := trusted, i%2 == 0
			if !secure {
				c = untrusted
			}
			resp, err := c.try("POST", "/lang", url.Values{"lang": {"en"}}, "X-Forwarded-Proto: https")
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if ck := responseCookie(resp, "boxoffice_lang"); ck == nil || ck.Secure != secure {
				errs <- fmt.Errorf("request %d (Secure wanted: %v) set the language cookie %+v", i, secure, ck)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A response to a request that came over https (TLS, or X-Forwarded-Proto:
// https from a trusted balancer) tells the browser to use https only
// (Strict-Transport-Security, RFC 6797); one over plain http never does,
// not even with an https BASE_URL, nor when an untrusted peer forges the
// balancer's header.
func TestHTTPS_StrictTransportSecurity(t *testing.T) {
	t.Parallel()
	behind := newTestApp(t, withTrustedProxy) // trusts 127.0.0.1, not 127.0.0.2
	base := newTestApp(t, func(s *handlers.Server) { s.Sessions.Cookie.Secure = true })
	tlsSrv := httptest.NewTLSServer(base.Config.Handler)
	t.Cleanup(tlsSrv.Close)
	overTLS := &client{Client: tlsSrv.Client(), t: t, base: tlsSrv.URL}
	for _, tc := range []struct {
		name    string
		client  *client
		headers []string
		want    string
	}{
		{"TLS", overTLS, nil, "max-age=31536000"},
		{"TrustedProxyHTTPS", behind.newClient(t), []string{"X-Forwarded-Proto: https"}, "max-age=31536000"},
		{"TrustedProxyHTTP", behind.newClient(t), []string{"X-Forwarded-Proto: http"}, ""},
		{"UntrustedPeer", behind.newClientFrom(t, "127.0.0.2"), []string{"X-Forwarded-Proto: https"}, ""},
		{"BaseURLHTTPSOverHTTP", base.newClient(t), nil, ""},
	} {
		for _, path := range []string{"/", "/login", "/no-such-page"} {
			resp := tc.client.do("GET", path, nil, tc.headers...)
			resp.Body.Close()
			if got := resp.Header.Values("Strict-Transport-Security"); strings.Join(got, "|") != tc.want {
				t.Errorf("%s: GET %s (%d): Strict-Transport-Security %q, want %q", tc.name, path, resp.StatusCode, got, tc.want)
			}
		}
	}
}
