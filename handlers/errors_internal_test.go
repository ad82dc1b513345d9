package handlers

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL's refusal of characters is the person's input, not a failure
// of the box office: 400, not 500.
func TestFromEcho_UnreadableText(t *testing.T) {
	tests := []struct {
		code string
		want int
	}{
		{"22021", http.StatusBadRequest}, // character_not_in_repertoire
		{"22P05", http.StatusBadRequest}, // untranslatable_character
		{"23505", http.StatusInternalServerError},
		{"08006", http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		err := fmt.Errorf("create account: %w", &pgconn.PgError{Code: tt.code, Message: "invalid byte sequence"})
		if got := (&Server{}).statusOf(err); got != tt.want {
			t.Errorf("SQLSTATE %s: status %d, want %d", tt.code, got, tt.want)
		}
		if code := boxoffice.ErrorCode((&Server{}).fromEcho(err)); tt.want == http.StatusBadRequest && code != boxoffice.EBADREQUEST {
			t.Errorf("SQLSTATE %s: code %q, want %s", tt.code, code, boxoffice.EBADREQUEST)
		}
	}
}

// A pooled connection that PostgreSQL dropped (pgx's "conn closed", which
// carries no network error) is an outage when the server is told so by the
// store's classifier, as the binary is: 503, not 500.
func TestStatusOf_ConnClosed(t *testing.T) {
	err := fmt.Errorf("find event 1: %w", pgconn.ErrConnClosed)
	if got := (&Server{}).statusOf(err); got != http.StatusInternalServerError {
		t.Errorf("without a classifier: status %d, want 500", got)
	}
	s := &Server{Unreachable: store.Unreachable}
	if got := s.statusOf(err); got != http.StatusServiceUnavailable {
		t.Errorf("with the store's classifier: status %d, want 503", got)
	}
}
