package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"
)

var _ boxoffice.AccountService = (*Accounts)(nil)

// Accounts stores accounts in PostgreSQL with bcrypt password hashes.
type Accounts struct {
	DB *DB
	// Cost is the bcrypt cost (bcrypt.DefaultCost when 0).
	Cost int

	dummyOnce sync.Once
	dummy     []byte
}

// dummyHash returns a hash at the accounts' cost, compared against when an
// e-mail is unknown so that a wrong e-mail and a wrong password take the same
// time. It is computed on first use, not at start-up (seconds under -race).
func (s *Accounts) dummyHash() []byte {
	s.dummyOnce.Do(func() {
		s.dummy, _ = bcrypt.GenerateFromPassword([]byte("boxoffice-dummy-password"), s.cost())
	})
	return s.dummy
}

func (s *Accounts) cost() int {
	if s.Cost == 0 {
		return bcrypt.DefaultCost
	}
	return s.Cost
}

// CreateAccount validates s, hashes the password with bcrypt and inserts the
// account. Errors: EINVALID with Fields, "email" when the address's mailbox
// has an account (boxoffice.EmailKey; the UNIQUE index on email_key
// decides, so two sign-ups racing for one mailbox, in whatever spelling,
// get one account).
func (s *Accounts) CreateAccount(ctx context.Context, in boxoffice.Signup) (*boxoffice.Account, error) {
	in.Normalize()
	if err := in.Validate(); err != nil {
		return nil, err
	}
	key, err := boxoffice.EmailKey(in.Email)
	if err != nil {
		return nil, fmt.Errorf("e-mail key: %w", err) // Validate refused such addresses
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(in.Password), s.cost())
	if err != nil {
		return nil, fmt.Errorf("hash password: %w", err)
	}
	a := &boxoffice.Account{Email: in.Email, Name: in.Name, Role: in.Role, Lang: in.Lang}
	err = s.DB.Pool.QueryRow(ctx,
		`INSERT INTO account (email, email_key, name, password_hash, role, lang) VALUES ($1, $2, $3, $4, $5, $6)
		 RETURNING id, created_at`, in.Email, key, in.Name, string(hash), in.Role, in.Lang).Scan(&a.ID, &a.CreatedAt)
	if pgErrCode(err) == "23505" {
		return nil, boxoffice.Invalid(map[string]boxoffice.Msg{"email": boxoffice.M("val_email_taken")})
	} else if err != nil {
		return nil, fmt.Errorf("insert account: %w", err)
	}
	return a, nil
}

// Authenticate returns the account with this e-mail (compared by
// boxoffice.EmailKey) and password. Errors: EINVALID (boxoffice.ValidateLogin) for an e-mail or
// password too long to be any account's, before any query or hashing;
// EUNAUTHORIZED for an unknown e-mail or a wrong password, with one message
// for both.
func (s *Accounts) Authenticate(ctx context.Context, email, password string) (*boxoffice.Account, error) {
	if err := boxoffice.ValidateLogin(email, password); err != nil {
		return nil, err
	}
	var a boxoffice.Account
	var hash string
	key, err := boxoffice.EmailKey(email)
	if err != nil {
		err = pgx.ErrNoRows // no account has such an address
	} else {
		err = s.DB.Pool.QueryRow(ctx,
			`SELECT id, email, name, role, lang, created_at, password_hash FROM account WHERE email_key = $1`, key).
			Scan(&a.ID, &a.Email, &a.Name, &a.Role, &a.Lang, &a.CreatedAt, &hash)
	}
	wrong := boxoffice.NewError(boxoffice.EUNAUTHORIZED, "err_login_wrong")
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		_ = bcrypt.CompareHashAndPassword(s.dummyHash(), []byte(password))
		return nil, wrong
	case err != nil:
		return nil, fmt.Errorf("find account: %w", err)
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) != nil {
		return nil, wrong
	}
	return &a, nil
}

// FindAccountByID returns the account. Errors: ENOTFOUND.
func (s *Accounts) FindAccountByID(ctx context.Context, id int64) (*boxoffice.Account, error) {
	var a boxoffice.Account
	err := s.DB.Pool.QueryRow(ctx, `SELECT id, email, name, role, lang, created_at FROM account WHERE id = $1`, id).
		Scan(&a.ID, &a.Email, &a.Name, &a.Role, &a.Lang, &a.CreatedAt)
	if err != nil {
		return nil, fmt.Errorf("find account %d: %w", id, notFound(err, "err_not_found"))
	}
	return &a, nil
}

// SetAccountLang stores the language the account chose (a base tag such as
// "ko"; the column's CHECK refuses anything else). Errors: ENOTFOUND.
func (s *Accounts) SetAccountLang(ctx context.Context, id int64, lang string) error {
	tag, err := s.DB.Pool.Exec(ctx, `UPDATE account SET lang = $2 WHERE id = $1`, id, lang)
	if err != nil {
		return fmt.Errorf("set language of account %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return boxoffice.NewError(boxoffice.ENOTFOUND, "err_not_found")
	}
	return nil
}

// EmailCollisions returns the accounts listed by the migration that
// introduced e-mail keys, oldest first (see boxoffice.EmailCollision).
func (s *Accounts) EmailCollisions(ctx context.Context) ([]boxoffice.EmailCollision, error) {
	rows, err := s.DB.Pool.Query(ctx, `
		SELECT a.id, a.email, a.name, a.created_at, k.id, k.email, k.name, k.created_at, c.email_key
		FROM account_email_collision c JOIN account a ON a.id = c.account_id JOIN account k ON k.id = c.kept_account_id
		WHERE a.email_key IS NULL
		ORDER BY a.created_at, a.id`)
	if err != nil {
		return nil, fmt.Errorf("find e-mail collisions: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (boxoffice.EmailCollision, error) {
		var c boxoffice.EmailCollision
		err := r.Scan(&c.Account.ID, &c.Account.Email, &c.Account.Name, &c.Account.CreatedAt,
			&c.Kept.ID, &c.Kept.Email, &c.Kept.Name, &c.Kept.CreatedAt, &c.Key)
		return c, err
	})
}
