package boxoffice

import "context"

type contextKey int

const (
	sessionContextKey contextKey = iota + 1
	langContextKey
)

// session is what a request's context carries of its session: the session
// key and, once logged in, the account (account points at acct). One value
// for both, made in one allocation, so that loading a request's session
// costs one context value instead of three allocations and two values.
type session struct {
	key     string
	account *Account
	acct    Account
}

// NewContextWithSession returns a copy of ctx carrying the session key (a
// random value stored in the session when it is created, which entry
// tokens are bound to; it is not the session cookie) and a copy of the
// logged-in account, or no account when a is nil.
func NewContextWithSession(ctx context.Context, key string, a *Account) context.Context {
	s := &session{key: key}
	if a != nil {
		s.acct = *a
		s.account = &s.acct
	}
	return context.WithValue(ctx, sessionContextKey, s)
}

// noSession is what sessionFromContext returns outside a session; never
// changed.
var noSession session

// sessionFromContext returns the session of ctx, or noSession.
func sessionFromContext(ctx context.Context) *session {
	if s, _ := ctx.Value(sessionContextKey).(*session); s != nil {
		return s
	}
	return &noSession
}

// NewContextWithAccount returns a copy of ctx carrying the logged-in account
// (a copy of *a), and the session key that ctx carries.
func NewContextWithAccount(ctx context.Context, a *Account) context.Context {
	return NewContextWithSession(ctx, sessionFromContext(ctx).key, a)
}

// AccountFromContext returns the logged-in account, or nil for a visitor.
func AccountFromContext(ctx context.Context) *Account {
	return sessionFromContext(ctx).account
}

// NewContextWithSessionKey returns a copy of ctx carrying the session key,
// and the account that ctx carries (NewContextWithSession).
func NewContextWithSessionKey(ctx context.Context, key string) context.Context {
	return NewContextWithSession(ctx, key, sessionFromContext(ctx).account)
}

// SessionKeyFromContext returns the session key, or "" outside a session.
func SessionKeyFromContext(ctx context.Context) string {
	return sessionFromContext(ctx).key
}

// NewContextWithLang returns a copy of ctx carrying the language the
// request is answered in, a base language tag such as "ko" or "en" (chosen
// by the handlers' language middleware).
func NewContextWithLang(ctx context.Context, lang string) context.Context {
	return context.WithValue(ctx, langContextKey, lang)
}

// LangFromContext returns the request's language, or "" outside a request
// (views then speaks its default language).
func LangFromContext(ctx context.Context) string {
	l, _ := ctx.Value(langContextKey).(string)
	return l
}
