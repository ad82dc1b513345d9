package boxoffice

import "context"

type contextKey int

const (
	accountContextKey contextKey = iota + 1
	sessionKeyContextKey
	langContextKey
)

// NewContextWithAccount returns a copy of ctx carrying the logged-in account.
func NewContextWithAccount(ctx context.Context, a *Account) context.Context {
	return context.WithValue(ctx, accountContextKey, a)
}

// AccountFromContext returns the logged-in account, or nil for a visitor.
func AccountFromContext(ctx context.Context) *Account {
	a, _ := ctx.Value(accountContextKey).(*Account)
	return a
}

// NewContextWithSessionKey returns a copy of ctx carrying the session key: a
// random value stored in the session when it is created, which entry tokens
// are bound to (it is not the session cookie).
func NewContextWithSessionKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, sessionKeyContextKey, key)
}

// SessionKeyFromContext returns the session key, or "" outside a session.
func SessionKeyFromContext(ctx context.Context) string {
	k, _ := ctx.Value(sessionKeyContextKey).(string)
	return k
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
