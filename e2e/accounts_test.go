package e2e

import (
	"strings"
	"testing"
)

func TestAccounts_SignupLogoutLogin(t *testing.T) {
	a := startApp(t)
	page := newPage(t)

	_, err := page.Goto(a.URL + "/signup")
	must(t, "open sign-up", err)
	must(t, "fill name", page.GetByLabel("Name").Fill("Kim Fan"))
	must(t, "fill e-mail", page.GetByLabel("E-mail").Fill("kim@example.com"))
	must(t, "fill password", page.GetByLabel("Password").Fill("correct horse"))
	screenshot(t, page, "signup")
	must(t, "sign up", page.GetByTestId("signup-submit").Click())
	waitForURL(t, page, "wait for home", a.URL+"/")
	if got := text(t, page, "nav-account"); got != "Kim Fan" {
		t.Fatalf("after sign-up the nav shows %q, want Kim Fan", got)
	}
	screenshot(t, page, "home-logged-in")

	must(t, "log out", page.GetByTestId("logout").Click())
	must(t, "wait for log-in link", page.GetByTestId("nav-login").WaitFor())

	_, err = page.Goto(a.URL + "/login")
	must(t, "open log-in", err)
	must(t, "fill e-mail", page.GetByLabel("E-mail").Fill("kim@example.com"))
	must(t, "fill wrong password", page.GetByLabel("Password").Fill("wrong horse"))
	must(t, "log in", page.GetByTestId("login-submit").Click())
	if got := text(t, page, "form-error"); !strings.Contains(got, "do not match") {
		t.Fatalf("wrong password shows %q, want the wrong-pair message", got)
	}
	screenshot(t, page, "login-wrong-password")

	must(t, "fill password", page.GetByLabel("Password").Fill("correct horse"))
	must(t, "log in", page.GetByTestId("login-submit").Click())
	waitForURL(t, page, "wait for home", a.URL+"/")
	if got := text(t, page, "nav-account"); got != "Kim Fan" {
		t.Fatalf("after log-in the nav shows %q, want Kim Fan", got)
	}
}
