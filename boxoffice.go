// Package boxoffice holds the domain of a box office for sell-out events: the
// entities (accounts, venues, events, grades, seats, orders), the error codes
// that every layer speaks, and the rules that need no I/O. It imports none of
// echo, pgx, go-redis or templ; the store, payment, handlers and views packages
// meet through its types.
package boxoffice

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Error codes. Each is part of the HTTP contract (CONTRACT.md): the JSON error
// body carries the code, and handlers map it to a status through one table.
const (
	ECONFLICT      = "conflict"       // 409: the state does not allow it
	EINTERNAL      = "internal"       // 500: a bug or an unexpected failure
	EINVALID       = "invalid"        // 422: the input breaks a rule; Fields says which
	ENOTFOUND      = "not_found"      // 404
	EUNAUTHORIZED  = "unauthorized"   // 401: log-in needed or a wrong e-mail/password pair
	EFORBIDDEN     = "forbidden"      // 403
	EUNAVAILABLE   = "unavailable"    // 503: PostgreSQL or Redis does not answer
	ETOOLARGE      = "too_large"      // 413: a request body over its limit
	ERATELIMITED   = "rate_limited"   // 429
	EBADREQUEST    = "bad_request"    // 400: input that cannot be parsed at all
	EQUEUENOTOPEN  = "queue_not_open" // 409: before the queue opens or after the sale ends
	ENOTINQUEUE    = "not_in_queue"   // 404
	ENOENTRYTOKEN  = "no_entry_token" // 403: no live entry token of this session
	ESEATTAKEN     = "seat_taken"     // 409: a chosen seat is held or sold
	ELIMITEXCEEDED = "limit_exceeded" // 422: the per-account limit would be passed
	ELIMITREACHED  = "limit_reached"  // 409: the account already bought the event's limit
	EBADSEAT       = "bad_seat"       // 400: an unknown or malformed seat
	ENOHOLDS       = "no_holds"       // 409: checkout without live holds
	ENOTTOGETHER   = "not_together"   // 409: no block of the asked number of seats is left together
	EBADCHOICE     = "bad_choice"     // 400: a best-available grade or quantity that cannot be asked for
	// ESEATINORDER (409): a release of a seat that is in the account's
	// order awaiting payment; Details["order_id"] names the order.
	ESEATINORDER = "seat_in_order"
	// EORDERPENDING (409): leaving the sale while the account has an order
	// awaiting payment; Details["order_id"] names the order.
	EORDERPENDING = "order_pending"
	// ECHALLENGEREQUIRED (428): the event asks a proof of work to join;
	// Details["challenge"] is the ALTCHA challenge to solve.
	ECHALLENGEREQUIRED = "challenge_required"
	// ECHALLENGEFAILED (403): a proof of work that is forged, used before,
	// for another event or account, or expired.
	ECHALLENGEFAILED = "challenge_failed"
	// EMETHOD (405): a method that no route takes at a path that routes
	// take with other methods; the Allow header lists those.
	EMETHOD = "method_not_allowed"
)

// MsgID names a sentence for people in the message catalogs of package
// views (views/locales/*.toml), where every language has its own wording.
// Ids are snake_case ASCII; every id used in the code is a constant, so
// that a test can list them (views/catalog_test.go).
type MsgID string

// Msg is a sentence for people, not yet in any language: the id of its
// message in the catalogs and the arguments its template reads, by name
// (for example {"Limit": 5}). An argument that is itself a Msg is put into
// the same language first. The argument "Count" also picks the plural form.
type Msg struct {
	ID   MsgID
	Args map[string]any
}

// M returns the Msg id with args given as name, value pairs:
// M("hold_limit", "Limit", 5).
func M(id MsgID, args ...any) Msg {
	m := Msg{ID: id}
	if len(args) > 1 {
		m.Args = make(map[string]any, len(args)/2)
		for i := 0; i+1 < len(args); i += 2 {
			name, _ := args[i].(string)
			m.Args[name] = args[i+1]
		}
	}
	return m
}

// At is an instant as a Msg argument: views shows it in Zone (an IANA
// name), in the form of the message's language.
type At struct {
	Time time.Time
	Zone string
}

// Error is the error every package returns for failures a person may see.
// It carries no text for people: Code is the contract's code (the same in
// every language); Msg says why, as a message of the catalogs that views
// puts into the request's language (zero: the code's own sentence); Fields
// names each invalid input with its reason (all reasons at once); Details
// carries extra JSON members of the error body (for example "seats" for
// seat_taken), where a Msg or []Msg member is put into words as well.
type Error struct {
	Code    string
	Msg     Msg
	Fields  map[string]Msg
	Details map[string]any
}

// Error implements the error interface with developer text for logs: the
// code, the message id and its arguments.
func (e *Error) Error() string {
	s := "boxoffice error: code=" + e.Code
	if e.Msg.ID != "" {
		s += " msg=" + string(e.Msg.ID)
	}
	if len(e.Msg.Args) > 0 {
		s += fmt.Sprintf(" %v", e.Msg.Args)
	}
	return s
}

// NewError returns an *Error with the given code and the message id with
// args as name, value pairs (see M).
func NewError(code string, id MsgID, args ...any) *Error {
	return &Error{Code: code, Msg: M(id, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, "" for nil,
// and EINTERNAL for any other error.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	} else if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMsg returns what the first *Error in err's chain says to people;
// any other error, and an *Error without a Msg, says nothing of its own
// (the zero Msg: views then uses the code's sentence), so that internals
// never leak.
func ErrorMsg(err error) Msg {
	var e *Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return Msg{}
}

// Unreachable reports whether err says that PostgreSQL or Redis could not be
// reached or went away mid-request: a network error, a connection cut short
// (EOF), or a PostgreSQL error of SQLSTATE class 08 (connection exception)
// or 57 (operator intervention, such as a shutdown). Handlers answer such an
// error EUNAVAILABLE (503); the store serves what Redis still knows where a
// rule allows it. It looks at behaviour, not at the drivers' types, so that
// this package stays free of them.
func Unreachable(err error) bool {
	var netErr net.Error
	var state interface{ SQLState() string }
	switch {
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNREFUSED):
		return true
	case errors.As(err, &state):
		code := state.SQLState()
		return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57")
	}
	return false
}

// ClipInput returns s as a message to people may quote it: at most n
// characters, cut with "…", so that a refusal never echoes a long input
// back into a page, a session or a log.
func ClipInput(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// MaxQuoted is how many characters of a refused input a message quotes.
const MaxQuoted = 40

// Invalid returns an EINVALID error listing every field's reason, or nil when
// fields is empty, so that validators can collect all reasons and return once.
func Invalid(fields map[string]Msg) error {
	if len(fields) == 0 {
		return nil
	}
	return &Error{Code: EINVALID, Msg: M("err_invalid_fields"), Fields: fields}
}
