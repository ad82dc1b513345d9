package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/boxoffice/boxoffice"
	"github.com/pressly/goose/v3"
)

// emailKeyVersion is the version of the migration that gives accounts
// their e-mail key (boxoffice.EmailKey), in Go because PostgreSQL has no
// IDNA mapping.
const emailKeyVersion = 7

// Go returns the migrations written in Go, for goose.WithGoMigrations.
func Go() []*goose.Migration {
	return []*goose.Migration{
		goose.NewGoMigration(emailKeyVersion, &goose.GoFunc{RunTx: upEmailKey}, &goose.GoFunc{RunTx: downEmailKey}),
	}
}

// upEmailKey adds account.email_key under a UNIQUE index. Accounts whose
// keys collide are never merged: the oldest keeps the key, each later one
// keeps its e-mail and password but no key (so it cannot log in) and is
// listed in account_email_collision, with the account that kept the key,
// for an admin to settle.
func upEmailKey(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `
		ALTER TABLE account ADD COLUMN email_key text;
		CREATE TABLE account_email_collision (
		    account_id      bigint PRIMARY KEY REFERENCES account (id),
		    kept_account_id bigint NOT NULL REFERENCES account (id),
		    email_key       text NOT NULL,
		    found_at        timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
		return fmt.Errorf("add email_key: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, email FROM account ORDER BY created_at, id`)
	if err != nil {
		return fmt.Errorf("read accounts: %w", err)
	}
	type account struct {
		id  int64
		key string
	}
	var all []account
	for rows.Next() {
		var a account
		var email string
		if err := rows.Scan(&a.id, &email); err != nil {
			rows.Close()
			return err
		}
		if a.key, err = boxoffice.EmailKey(email); err != nil {
			a.key = email // signed up before the key's checks: its own address is its key
		}
		all = append(all, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	kept := map[string]int64{}
	for _, a := range all {
		if first, ok := kept[a.key]; ok {
			if _, err := tx.ExecContext(ctx, `INSERT INTO account_email_collision (account_id, kept_account_id, email_key) VALUES ($1, $2, $3)`,
				a.id, first, a.key); err != nil {
				return fmt.Errorf("list colliding account %d: %w", a.id, err)
			}
			continue
		}
		kept[a.key] = a.id
		if _, err := tx.ExecContext(ctx, `UPDATE account SET email_key = $2 WHERE id = $1`, a.id, a.key); err != nil {
			return fmt.Errorf("key account %d: %w", a.id, err)
		}
	}
	_, err = tx.ExecContext(ctx, `CREATE UNIQUE INDEX account_email_key_idx ON account (email_key)`)
	return err
}

func downEmailKey(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `DROP TABLE account_email_collision; ALTER TABLE account DROP COLUMN email_key`)
	return err
}
