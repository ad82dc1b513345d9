package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func signupForm(email, password, name string) url.Values {
	return url.Values{"email": {email}, "password": {password}, "name": {name}}
}

func (a *testApp) countAccounts(t *testing.T) int {
	t.Helper()
	var n int
	if err := a.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM account`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSignup(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)

	t.Run("OK", func(t *testing.T) {
		c := app.newClient(t)
		resp := c.do("POST", "/signup", signupForm("kim@example.com", "correct horse", "Kim"))
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != "/" {
			t.Errorf("Location = %q, want /", loc)
		}
		home := c.do("GET", "/signup", nil)
		if got := testid(doc(t, home), "nav-account"); got != "Kim" {
			t.Errorf("nav shows %q after sign-up, want the account's name Kim", got)
		}
	})

	tests := []struct {
		name   string
		form   url.Values
		fields []string
	}{
		{"ErrEmpty", signupForm("", "", ""), []string{"email", "password", "name"}},
		{"ErrMalformedEmail", signupForm("kim-at-example.com", "correct horse", "Kim"), []string{"email"}},
		{"ErrShortPassword", signupForm("short@example.com", "1234567", "Short"), []string{"password"}},
		{"ErrTakenEmail", signupForm("KIM@example.com", "correct horse", "Kim Two"), []string{"email"}},
		{"ErrOverlong", signupForm(strings.Repeat("x", 300)+"@example.com", strings.Repeat("p", 100), strings.Repeat("n", 101)), []string{"email", "password", "name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := app.countAccounts(t)
			resp := app.newClient(t).do("POST", "/signup", tt.form)
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			d := doc(t, resp)
			for _, f := range tt.fields {
				if testid(d, "error-"+f) == "" {
					t.Errorf("no reason shown for %s", f)
				}
			}
			if n := d.Find(`[data-testid^="error-"]`).Length(); n != len(tt.fields) {
				t.Errorf("%d reasons shown, want %d", n, len(tt.fields))
			}
			if after := app.countAccounts(t); after != before {
				t.Errorf("accounts went from %d to %d, want nothing written", before, after)
			}
			if strings.Contains(d.Text(), tt.form.Get("password")) && tt.form.Get("password") != "" {
				t.Error("the page echoes the password back")
			}
		})
	}

	t.Run("ErrJSON", func(t *testing.T) {
		resp := app.newClient(t).do("POST", "/signup", signupForm("bad", "x", "J"), "Accept: application/json")
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		var body struct {
			Error   string            `json:"error"`
			Message string            `json:"message"`
			Fields  map[string]string `json:"fields"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if body.Error != "invalid" || body.Message == "" || body.Fields["email"] == "" || body.Fields["password"] == "" {
			t.Errorf("JSON error = %+v, want code invalid with reasons for email and password", body)
		}
	})
}

func TestLogin(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	wantStatus(t, app.newClient(t).do("POST", "/signup", signupForm("lee@example.com", "correct horse", "Lee")), http.StatusSeeOther)

	t.Run("OK", func(t *testing.T) {
		c := app.newClient(t)
		anon := c.do("GET", "/login?next=/signup", nil) // a visitor's session, to prove the id changes
		wantStatus(t, anon, http.StatusOK)
		resp := c.do("POST", "/login", url.Values{"email": {"Lee@Example.com"}, "password": {"correct horse"}, "next": {"/signup"}})
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != "/signup" {
			t.Errorf("Location = %q, want the next path /signup", loc)
		}
		cookie := sessionCookie(resp)
		if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode {
			t.Fatalf("session cookie = %+v, want an HttpOnly, SameSite=Lax cookie", cookie)
		}
		if got := testid(doc(t, c.do("GET", "/login", nil)), "nav-account"); got != "Lee" {
			t.Errorf("nav shows %q after log-in, want Lee", got)
		}
		out := c.do("POST", "/logout", url.Values{})
		wantStatus(t, out, http.StatusSeeOther)
		if got := testid(doc(t, c.do("GET", "/login", nil)), "nav-login"); got == "" {
			t.Error("after log-out the nav does not offer to log in")
		}
	})

	t.Run("NewSessionID", func(t *testing.T) {
		c := app.newClient(t)
		first := sessionCookie(c.do("POST", "/login", url.Values{"email": {"lee@example.com"}, "password": {"correct horse"}}))
		second := sessionCookie(c.do("POST", "/login", url.Values{"email": {"lee@example.com"}, "password": {"correct horse"}}))
		if first == nil || second == nil || first.Value == second.Value {
			t.Fatalf("session ids %v and %v: want a fresh one at each log-in", first, second)
		}
	})

	t.Run("ErrWrongPassword", func(t *testing.T) {
		resp := app.newClient(t).do("POST", "/login", url.Values{"email": {"lee@example.com"}, "password": {"wrong horse"}})
		wantStatus(t, resp, http.StatusUnauthorized)
		if msg := testid(doc(t, resp), "form-error"); !strings.Contains(msg, "do not match") {
			t.Errorf("form error = %q, want the wrong-pair message", msg)
		}
	})

	t.Run("ErrOverlong", func(t *testing.T) {
		// No account has such an e-mail or password (sign-up refuses them):
		// refused with the reasons, before any look-up.
		c := app.newClient(t)
		resp := c.do("POST", "/login", url.Values{"email": {strings.Repeat("x", 300) + "@example.com"}, "password": {strings.Repeat("p", 73)}})
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		d := doc(t, resp)
		if testid(d, "error-email") != "That e-mail address is too long." || !strings.Contains(testid(d, "error-password"), "too long") {
			t.Errorf("reasons: email %q, password %q; want both too long", testid(d, "error-email"), testid(d, "error-password"))
		}
		if testid(d, "nav-account") != "" {
			t.Error("a refused log-in logged in")
		}
		// A password that starts with the right 72 bytes is not the password
		// (bcrypt reads no further than 72 bytes).
		exact := strings.Repeat("a", 72)
		wantStatus(t, c.do("POST", "/signup", signupForm("long@example.com", exact, "Long")), http.StatusSeeOther)
		resp = app.newClient(t).do("POST", "/login", url.Values{"email": {"long@example.com"}, "password": {exact + "b"}}, "Accept: application/json")
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		wantErrorCode(t, resp, "invalid")
	})

	t.Run("ErrOpenRedirect", func(t *testing.T) {
		resp := app.newClient(t).do("POST", "/login", url.Values{"email": {"lee@example.com"}, "password": {"correct horse"}, "next": {"//evil.example/x"}})
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != "/" {
			t.Errorf("Location = %q, want / for a next that leaves the site", loc)
		}
	})

	t.Run("LongNext", func(t *testing.T) {
		// A local path longer than any of the site's links is replaced by
		// "/", never echoed into the page or a Location header.
		long := "/events/1?x=" + strings.Repeat("a", 2100)
		c := app.newClient(t)
		d := doc(t, c.do("GET", "/login?next="+url.QueryEscape(long), nil))
		if got := d.Find(`input[name="next"]`).AttrOr("value", ""); got != "/" {
			t.Errorf("hidden next = %.40q, want /", got)
		}
		resp := c.do("POST", "/login", url.Values{"email": {"lee@example.com"}, "password": {"correct horse"}, "next": {long}})
		wantStatus(t, resp, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != "/" {
			t.Errorf("Location = %.40q, want /", loc)
		}
		ok := "/events/1?x=" + strings.Repeat("a", 1000)
		if loc := c.do("POST", "/login", url.Values{"email": {"lee@example.com"}, "password": {"correct horse"}, "next": {ok}}).Header.Get("Location"); loc != ok {
			t.Errorf("Location = %.40q, want the 1 KB local path followed", loc)
		}
	})
}

// sessionCookie returns the session cookie that resp sets, or nil.
func sessionCookie(resp *http.Response) *http.Cookie {
	return responseCookie(resp, "boxoffice_session")
}

// responseCookie returns the cookie called name that resp sets, or nil.
func responseCookie(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}
