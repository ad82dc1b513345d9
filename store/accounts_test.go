package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"golang.org/x/crypto/bcrypt"
)

func newAccounts(t *testing.T) *store.Accounts {
	t.Helper()
	return &store.Accounts{DB: storetest.MustOpenDB(t), Cost: bcrypt.MinCost}
}

func TestAccounts_CreateAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newAccounts(t)

	t.Run("OK", func(t *testing.T) {
		a, err := s.CreateAccount(ctx, boxoffice.Signup{Email: "Kim@Example.com", Password: "correct horse", Name: "Kim"})
		if err != nil {
			t.Fatalf("CreateAccount: %v", err)
		}
		if a.ID == 0 || a.Email != "kim@example.com" || a.Role != boxoffice.RoleFan {
			t.Fatalf("CreateAccount = %+v, want an id, the lower-cased e-mail and role fan", a)
		}
		got, err := s.Authenticate(ctx, "KIM@example.com", "correct horse")
		if err != nil || got.ID != a.ID {
			t.Fatalf("Authenticate = %+v, %v; want account %d", got, err, a.ID)
		}
	})

	t.Run("ErrTakenEmail", func(t *testing.T) {
		in := boxoffice.Signup{Email: "lee@example.com", Password: "correct horse", Name: "Lee"}
		if _, err := s.CreateAccount(ctx, in); err != nil {
			t.Fatal(err)
		}
		in.Email = "LEE@example.com"
		_, err := s.CreateAccount(ctx, in)
		if code := boxoffice.ErrorCode(err); code != boxoffice.EINVALID {
			t.Fatalf("second CreateAccount error code = %q (%v), want %q", code, err, boxoffice.EINVALID)
		}
	})

	t.Run("ErrInvalidWritesNothing", func(t *testing.T) {
		_, err := s.CreateAccount(ctx, boxoffice.Signup{Email: "park@example.com", Password: "short", Name: "Park"})
		if code := boxoffice.ErrorCode(err); code != boxoffice.EINVALID {
			t.Fatalf("error code = %q, want %q", code, boxoffice.EINVALID)
		}
		var n int
		if err := s.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM account WHERE email = 'park@example.com'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("accounts with the rejected e-mail = %d (%v), want 0", n, err)
		}
	})
}

func TestAccounts_Authenticate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newAccounts(t)
	if _, err := s.CreateAccount(ctx, boxoffice.Signup{Email: "choi@example.com", Password: "correct horse", Name: "Choi"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, email, password, code string }{
		{"ErrWrongPassword", "choi@example.com", "wrong horse", boxoffice.EUNAUTHORIZED},
		{"ErrUnknownEmail", "nobody@example.com", "correct horse", boxoffice.EUNAUTHORIZED},
		{"ErrLongEmail", strings.Repeat("x", boxoffice.MaxEmailLen) + "@example.com", "correct horse", boxoffice.EINVALID},
		{"ErrLongPassword", "choi@example.com", "correct horse" + strings.Repeat("!", boxoffice.MaxPasswordLen), boxoffice.EINVALID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Authenticate(ctx, tt.email, tt.password)
			if code := boxoffice.ErrorCode(err); code != tt.code {
				t.Fatalf("Authenticate error code = %q, want %q", code, tt.code)
			}
		})
	}
	if _, err := s.FindAccountByID(ctx, 999999); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		t.Fatalf("FindAccountByID(unknown) error = %v, want %s", err, boxoffice.ENOTFOUND)
	}
}

// One e-mail, many concurrent sign-ups: the UNIQUE constraint lets exactly one
// through and every other gets the "taken" reason, never a 500.
func TestAccounts_CreateAccount_Concurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newAccounts(t)
	for round := range 5 {
		email := fmt.Sprintf("race%d@example.com", round)
		var ok, taken atomic.Int32
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				_, err := s.CreateAccount(ctx, boxoffice.Signup{Email: email, Password: "correct horse", Name: "Racer"})
				switch boxoffice.ErrorCode(err) {
				case "":
					ok.Add(1)
				case boxoffice.EINVALID:
					taken.Add(1)
				default:
					t.Errorf("CreateAccount: unexpected error %v", err)
				}
			})
		}
		wg.Wait()
		if ok.Load() != 1 || taken.Load() != 99 {
			t.Fatalf("round %d: %d created and %d refused, want 1 and 99", round, ok.Load(), taken.Load())
		}
	}
}
