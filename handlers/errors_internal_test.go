package handlers

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/boxoffice/boxoffice"
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
		if got := statusOf(err); got != tt.want {
			t.Errorf("SQLSTATE %s: status %d, want %d", tt.code, got, tt.want)
		}
		if tt.want == http.StatusBadRequest && boxoffice.ErrorCode(fromEcho(err)) != boxoffice.EBADREQUEST {
			t.Errorf("SQLSTATE %s: code %q, want %s", tt.code, boxoffice.ErrorCode(fromEcho(err)), boxoffice.EBADREQUEST)
		}
	}
}
