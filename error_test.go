package boxoffice_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/boxoffice/boxoffice"
)

func errorsAs(err error, target **boxoffice.Error) bool { return errors.As(err, target) }

func TestErrorCode(t *testing.T) {
	wrapped := fmt.Errorf("hold: %w", boxoffice.Errorf(boxoffice.ESEATTAKEN, "taken"))
	tests := []struct {
		err  error
		code string
		msg  string
	}{
		{nil, "", ""},
		{wrapped, boxoffice.ESEATTAKEN, "taken"},
		{errors.New("dial tcp: refused"), boxoffice.EINTERNAL, "Something went wrong on our side. Please try again."},
	}
	for _, tt := range tests {
		if got := boxoffice.ErrorCode(tt.err); got != tt.code {
			t.Errorf("ErrorCode(%v) = %q, want %q", tt.err, got, tt.code)
		}
		if got := boxoffice.ErrorMessage(tt.err); got != tt.msg {
			t.Errorf("ErrorMessage(%v) = %q, want %q", tt.err, got, tt.msg)
		}
	}
	if boxoffice.Invalid(nil) != nil {
		t.Error("Invalid(nil) is not nil")
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
