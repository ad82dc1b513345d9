package boxoffice_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/boxoffice/boxoffice"
)

func errorsAs(err error, target **boxoffice.Error) bool { return errors.As(err, target) }

func TestErrorCode(t *testing.T) {
	wrapped := fmt.Errorf("hold: %w", boxoffice.NewError(boxoffice.ESEATTAKEN, "hold_limit", "Limit", 5))
	tests := []struct {
		err  error
		code string
		msg  boxoffice.MsgID
	}{
		{nil, "", ""},
		{wrapped, boxoffice.ESEATTAKEN, "hold_limit"},
		{errors.New("dial tcp: refused"), boxoffice.EINTERNAL, ""},
	}
	for _, tt := range tests {
		if got := boxoffice.ErrorCode(tt.err); got != tt.code {
			t.Errorf("ErrorCode(%v) = %q, want %q", tt.err, got, tt.code)
		}
		if got := boxoffice.ErrorMsg(tt.err); got.ID != tt.msg {
			t.Errorf("ErrorMsg(%v) = %v, want %q", tt.err, got, tt.msg)
		}
	}
	if got := boxoffice.ErrorMsg(wrapped).Args["Limit"]; got != 5 {
		t.Errorf("the message's Limit = %v, want 5", got)
	}
	if s := wrapped.Error(); !strings.Contains(s, "seat_taken") || !strings.Contains(s, "hold_limit") {
		t.Errorf("Error() = %q, want the code and the message id for the log", s)
	}
	if boxoffice.Invalid(nil) != nil {
		t.Error("Invalid(nil) is not nil")
	}
}

// sqlStateError stands in for a driver's error that carries a SQLSTATE.
type sqlStateError string

func (e sqlStateError) Error() string    { return "SQLSTATE " + string(e) }
func (e sqlStateError) SQLState() string { return string(e) }

func TestUnreachable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("connect: %w", syscall.ECONNREFUSED), true},
		{fmt.Errorf("read: %w", io.EOF), true},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("query: %w", sqlStateError("08006")), true}, // connection_failure
		{fmt.Errorf("query: %w", sqlStateError("57P01")), true}, // admin_shutdown
		{fmt.Errorf("query: %w", sqlStateError("23505")), false},
		{errors.New("dial tcp: refused"), false}, // words are not behaviour
		{boxoffice.NewError(boxoffice.ESEATTAKEN, "hold_taken"), false},
	}
	for _, tt := range tests {
		if got := boxoffice.Unreachable(tt.err); got != tt.want {
			t.Errorf("Unreachable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestClipInput(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"북측좌석", 2, "북측…"},
	} {
		if got := boxoffice.ClipInput(tt.in, tt.n); got != tt.want {
			t.Errorf("ClipInput(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
