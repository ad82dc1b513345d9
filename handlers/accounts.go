package handlers

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// handleSignupPage handles GET /signup.
func (s *Server) handleSignupPage(c echo.Context) error {
	return render(c, http.StatusOK, views.SignupPage(views.SignupForm{}))
}

// handleSignup handles POST /signup: 303 to / with a new session, or 422 with
// every reason at once and nothing written.
func (s *Server) handleSignup(c echo.Context) error {
	ctx := c.Request().Context()
	in := boxoffice.Signup{
		Email:    c.FormValue("email"),
		Password: c.FormValue("password"),
		Name:     c.FormValue("name"),
		Lang:     views.Lang(ctx),
	}
	a, err := s.Accounts.CreateAccount(ctx, in)
	if boxoffice.ErrorCode(err) == boxoffice.EINVALID && !wantsJSON(c) {
		return render(c, http.StatusUnprocessableEntity, views.SignupPage(views.SignupForm{Email: in.Email, Name: in.Name, Errors: views.ErrorFields(ctx, err)}))
	} else if err != nil {
		return err
	}
	if err := s.startSession(c, a); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/")
}

// handleLoginPage handles GET /login.
func (s *Server) handleLoginPage(c echo.Context) error {
	return render(c, http.StatusOK, views.LoginPage(views.LoginForm{Next: localPath(c.QueryParam("next"))}))
}

// handleLogin handles POST /login: 303 to ?next (a local path) with a fresh
// session id and the account's language in the language cookie, or the
// form again: 401 for a wrong pair, 422 with the reasons for an e-mail or
// password too long to be any account's.
func (s *Server) handleLogin(c echo.Context) error {
	ctx := c.Request().Context()
	email, next := c.FormValue("email"), localPath(c.FormValue("next"))
	a, err := s.Accounts.Authenticate(ctx, email, c.FormValue("password"))
	if code := boxoffice.ErrorCode(err); (code == boxoffice.EUNAUTHORIZED || code == boxoffice.EINVALID) && !wantsJSON(c) {
		return render(c, s.statusOf(err), views.LoginPage(views.LoginForm{
			Email: email, Error: views.ErrorText(ctx, err), Errors: views.ErrorFields(ctx, err), Next: next,
		}))
	} else if err != nil {
		return err
	}
	if err := s.startSession(c, a); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, next)
}

// handleLogout handles POST /logout: the session's turns at the sales end
// (their holds with them, freeing their places among the shoppers), but for
// a turn with an order awaiting payment, whose seats stay held for it; then
// the session is destroyed.
func (s *Server) handleLogout(c echo.Context) error {
	if err := s.leaveAll(c); err != nil {
		return fmt.Errorf("end the session's turns: %w", err)
	}
	if err := s.Sessions.Destroy(c.Request().Context()); err != nil {
		return fmt.Errorf("destroy session: %w", err)
	}
	return c.Redirect(http.StatusSeeOther, "/")
}

// startSession renews the session id (against session fixation) and stores
// the account and a session key, which entry tokens are bound to. The same
// account logging in again in the same browser keeps its session key, so a
// place in line or a turn at the seat map survives it; anyone else gets a
// new random one. An account that chose a language gets it in the language
// cookie, so that the pages after log-in speak it.
func (s *Server) startSession(c echo.Context, a *boxoffice.Account) error {
	ctx := c.Request().Context()
	if views.ValidLang(a.Lang) {
		s.setLangCookie(c, a.Lang)
	}
	same := s.Sessions.GetInt64(ctx, sessAccountID) == a.ID && s.Sessions.GetString(ctx, sessSessionKey) != ""
	if err := s.Sessions.RenewToken(ctx); err != nil {
		return fmt.Errorf("renew session: %w", err)
	}
	s.Sessions.Put(ctx, sessAccountID, a.ID)
	s.Sessions.Put(ctx, sessEmail, a.Email)
	s.Sessions.Put(ctx, sessName, a.Name)
	s.Sessions.Put(ctx, sessRole, a.Role)
	if !same {
		key := make([]byte, 16)
		rand.Read(key)
		s.Sessions.Put(ctx, sessSessionKey, hex.EncodeToString(key))
	}
	return nil
}
