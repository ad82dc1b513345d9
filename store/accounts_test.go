package store_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
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

// One mailbox, many spellings, signing up at once: the UNIQUE index on the
// e-mail key lets exactly one account through, and every spelling logs in
// to it.
func TestAccounts_OneMailbox_Concurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newAccounts(t)
	for round := range 5 {
		spellings := []string{
			fmt.Sprintf("fan%d@example.com", round),
			fmt.Sprintf("ＦＡＮ%d@example.com", round),
			fmt.Sprintf("fan%d@ｅｘａｍｐｌｅ.com", round),
			fmt.Sprintf("Fan%d@EXAMPLE.com", round),
		}
		var ok, taken atomic.Int32
		storetest.AtOnce(100, func(i int) {
			_, err := s.CreateAccount(ctx, boxoffice.Signup{Email: spellings[i%len(spellings)], Password: "correct horse", Name: "Racer"})
			switch boxoffice.ErrorCode(err) {
			case "":
				ok.Add(1)
			case boxoffice.EINVALID:
				taken.Add(1)
			default:
				t.Errorf("CreateAccount: unexpected error %v", err)
			}
		})
		if ok.Load() != 1 || taken.Load() != 99 {
			t.Fatalf("round %d: %d created and %d refused, want 1 and 99", round, ok.Load(), taken.Load())
		}
		var first int64
		for _, email := range spellings {
			a, err := s.Authenticate(ctx, email, "correct horse")
			if err != nil {
				t.Fatalf("round %d: Authenticate(%q): %v", round, email, err)
			}
			if first == 0 {
				first = a.ID
			} else if a.ID != first {
				t.Fatalf("round %d: Authenticate(%q) = account %d, want %d", round, email, a.ID, first)
			}
		}
	}
}

// Accounts that an older version let open one mailbox twice are not merged
// by the migration that introduces e-mail keys: the oldest keeps the key,
// the others keep their rows and are listed for the admin.
func TestMigrate_EmailKeyCollisions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u, err := url.Parse(storetest.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = fmt.Sprintf("/boxoffice_test_emailkey_%d", time.Now().UnixNano())
	db, err := store.OpenDB(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		u.Path = "/postgres"
		if conn, err := pgx.Connect(context.Background(), u.String()); err == nil {
			conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+strings.TrimPrefix(u.Path, "/")+" WITH (FORCE)")
			conn.Close(context.Background())
		}
	})
	if err := store.MigrateUpTo(ctx, db, 6); err != nil {
		t.Fatal(err)
	}
	// Version 6 compared e-mails lower-cased only.
	ids := map[string]int64{}
	for _, email := range []string{"kim@example.com", "ｋｉｍ@example.com", "lee@example.com", "kim@ｅｘａｍｐｌｅ.com"} {
		var id int64
		if err := db.Pool.QueryRow(ctx, `INSERT INTO account (email, name, password_hash) VALUES ($1, 'Old', 'x') RETURNING id`, email).Scan(&id); err != nil {
			t.Fatalf("insert %q at version 6: %v", email, err)
		}
		ids[email] = id
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var accounts int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM account`).Scan(&accounts); err != nil || accounts != 4 {
		t.Fatalf("accounts after the migration = %d (%v), want all 4", accounts, err)
	}
	got, err := (&store.Accounts{DB: db}).EmailCollisions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("collisions = %+v, want 2", got)
	}
	for i, email := range []string{"ｋｉｍ@example.com", "kim@ｅｘａｍｐｌｅ.com"} {
		c := got[i]
		if c.Account.ID != ids[email] || c.Kept.ID != ids["kim@example.com"] || c.Key != "kim@example.com" {
			t.Errorf("collision %d = account %d kept by %d under %q, want %d kept by %d under kim@example.com",
				i, c.Account.ID, c.Kept.ID, c.Key, ids[email], ids["kim@example.com"])
		}
	}
	var key string
	if err := db.Pool.QueryRow(ctx, `SELECT email_key FROM account WHERE id = $1`, ids["lee@example.com"]).Scan(&key); err != nil || key != "lee@example.com" {
		t.Fatalf("lee's key = %q (%v), want lee@example.com", key, err)
	}
}
