package boxoffice

import "context"

type contextKey int

const (
	sessionContextKey contextKey = iota + 1
	langContextKey
)

// session is the context of a request with its session: the session key
// and, once logged in, the account (account points at acct). It is the
// context and its value in one allocation (a context.WithValue of it would
// be a second), so that loading a request's session costs one allocation
// instead of four.
type session struct {
	context.Context
	key     string
	account *Account
	acct    Account
}

// Value returns s for sessionContextKey, and what its parent holds for any
// other key.
func (s *session) Value(key any) any {
	if key == sessionContextKey {
		return s
	}
	return s.Context.Value(key)
}

// NewContextWithSession returns a copy of ctx carrying the session key (a
// random value stored in the session when it is created, which entry
// tokens are bound to; it is not the session cookie) and a copy of the
// logged-in account, or no account when a is nil.
func NewContextWithSession(ctx context.Context, key string, a *Account) context.Context {
	s := &session{Context: ctx, key: key}
	if a != nil {
		s.acct = *a
		s.account = &s.acct
	}
	return s
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
	return &langContext{Context: ctx, lang: lang}
}

// langContext is the context of a request with its language, in one
// allocation where context.WithValue would box the string in a second.
type langContext struct {
	context.Context
	lang string
}

// Value returns the context itself for langContextKey, and what its parent
// holds for any other key.
func (c *langContext) Value(key any) any {
	if key == langContextKey {
		return c
	}
	return c.Context.Value(key)
}

// LangFromContext returns the request's language, or "" outside a request
// (views then speaks its default language).
func LangFromContext(ctx context.Context) string {
	if c, _ := ctx.Value(langContextKey).(*langContext); c != nil {
		return c.lang
	}
	return ""
}
