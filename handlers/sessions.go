package handlers

import (
	"net/http"
	"time"

	"github.com/alexedwards/scs/v2"
)

// SessionStore is where sessions live: store.Sessions, an scs store with a
// codec of its own.
type SessionStore interface {
	scs.CtxStore
	Codec() scs.Codec
}

// SessionLifetime is how long a session lasts from log-in. There is no idle
// timeout: with one, scs saves the session again on every request to move
// its deadline, a Redis write per request at the opening of a sale.
const SessionLifetime = 12 * time.Hour

// SessionCookie is the name of the session cookie.
const SessionCookie = "boxoffice_session"

// NewSessions returns the session manager of the site on st: the cookie
// SessionCookie, HttpOnly and SameSite=Lax, Secure when secure (BASE_URL is
// https; otherwise the Server marks it Secure on each request that came over
// https, see Server.overHTTPSOnly), and sessions that last SessionLifetime.
func NewSessions(st SessionStore, secure bool) *scs.SessionManager {
	m := scs.New()
	m.Store, m.Codec = st, st.Codec()
	m.Lifetime = SessionLifetime
	m.Cookie.Name = SessionCookie
	m.Cookie.HttpOnly = true
	m.Cookie.SameSite = http.SameSiteLaxMode
	m.Cookie.Secure = secure
	return m
}
