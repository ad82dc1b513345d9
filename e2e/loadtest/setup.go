package main

// The bench-only set-up path. A sale's opening minute is what the bench
// measures, not sign-up and log-in, so the fans' accounts and logged-in
// sessions are written straight into the stores before the server takes
// load: accounts with one COPY into PostgreSQL, sessions with pipelined SETs
// into Redis in exactly the form the binary's session store (store.Sessions,
// scs's gob codec) writes them at log-in. The server has no copy of them
// yet, as an instance that never saw a fan: each fan's first request reads
// its session from Redis. Nothing here is an endpoint of the binary, and
// nothing in the binary knows about it.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/demo"
	"github.com/boxoffice/boxoffice/handlers"
	"github.com/boxoffice/boxoffice/store"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"
)

// benchPassword is every bench account's password. Its one bcrypt hash is
// computed once and shared by all of them.
const benchPassword = "bench-password-not-secret"

// fanEmail is the e-mail address of bench fan i.
func fanEmail(i int) string { return fmt.Sprintf("fan%06d@bench.boxoffice.test", i) }

// sessionPrefix is what the session store puts after REDIS_PREFIX
// (store.NewSessions).
const sessionPrefix = "session:"

// Sale is the event the bench sells and what it needs to know of it.
type Sale struct {
	EventID  int64
	Limit    int           // tickets per account
	TokenTTL time.Duration // entry token lifetime
	AdminID  int64
	Seats    int
}

// seed migrates the fresh database, seeds the demo (the 15,000-seat Inspire
// Arena's event among it) and creates a second event of the arena through
// the store (store.Events, as the demo creates its events: the same
// grades, limits and sale window), for the sell-out phase. It readies both
// for the bench: admission paused until their phase and no cap on live
// entry tokens. It returns the demo's arena event (the measured steps'
// sale) and the second (the sell-out's).
func seed(ctx context.Context, db *store.DB) (sale, sellout Sale, err error) {
	if err := db.Migrate(ctx); err != nil {
		return Sale{}, Sale{}, err
	}
	res, err := demo.Seed(ctx, db, demo.Options{Password: benchPassword, BcryptCost: bcrypt.MinCost})
	if err != nil {
		return Sale{}, Sale{}, err
	}
	if res.Skipped.ID != "" {
		return Sale{}, Sale{}, fmt.Errorf("seed: %s", res.Skipped)
	}
	var arena *boxoffice.Event
	for _, e := range res.Events {
		if e.VenueName == demo.ArenaName {
			arena = e
		}
	}
	if arena == nil {
		for _, v := range res.Venues {
			for _, e := range res.Events {
				if v.Name == demo.ArenaName && e.VenueID == v.ID {
					arena = e
				}
			}
		}
	}
	if arena == nil {
		return Sale{}, Sale{}, fmt.Errorf("seed: no event at the Inspire Arena")
	}
	events := &store.Events{DB: db}
	second, err := events.CreateEvent(ctx, arena.Input())
	if err == nil {
		second, err = events.PublishEvent(ctx, second.ID)
	}
	if err != nil {
		return Sale{}, Sale{}, fmt.Errorf("seed: the sell-out's event: %w", err)
	}
	if sale, err = ready(ctx, db, arena); err != nil {
		return Sale{}, Sale{}, err
	}
	if sellout, err = ready(ctx, db, second); err != nil {
		return Sale{}, Sale{}, err
	}
	return sale, sellout, nil
}

// ready pauses the admission of event e, lifts its cap on live entry
// tokens and returns it as a Sale, with its seats and the demo's admin.
func ready(ctx context.Context, db *store.DB, e *boxoffice.Event) (Sale, error) {
	sale := Sale{EventID: e.ID, Limit: e.MaxPerAccount, TokenTTL: e.TokenTTL}
	if _, err := db.Pool.Exec(ctx, `UPDATE event SET admission_paused = true, max_shoppers = NULL WHERE id = $1`, sale.EventID); err != nil {
		return Sale{}, fmt.Errorf("pause admission: %w", err)
	}
	err := db.Pool.QueryRow(ctx, `SELECT (SELECT id FROM account WHERE email = $1), (SELECT count(*) FROM event_seat WHERE event_id = $2)`,
		demo.AdminEmail, sale.EventID).Scan(&sale.AdminID, &sale.Seats)
	if err != nil {
		return Sale{}, fmt.Errorf("seed: admin and seats: %w", err)
	}
	return sale, nil
}

// createFans inserts n fan accounts with one COPY, all with one precomputed
// bcrypt hash of benchPassword, and returns them in order (fan i is
// fanEmail(i)).
func createFans(ctx context.Context, db *store.DB, n int) ([]*Fan, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(benchPassword), bcrypt.DefaultCost)
	if err != nil {
		return nil, err
	}
	rows := make([][]any, n)
	for i := range n {
		rows[i] = []any{fanEmail(i), fmt.Sprintf("Bench fan %d", i), string(hash), boxoffice.RoleFan}
	}
	if _, err := db.Pool.CopyFrom(ctx, pgx.Identifier{"account"}, []string{"email", "name", "password_hash", "role"}, pgx.CopyFromRows(rows)); err != nil {
		return nil, fmt.Errorf("copy accounts: %w", err)
	}
	fans := make([]*Fan, n)
	r, err := db.Pool.Query(ctx, `SELECT id, email FROM account WHERE email LIKE '%@bench.boxoffice.test' ORDER BY email`)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	i := 0
	for r.Next() {
		if i >= n {
			return nil, fmt.Errorf("more bench accounts than %d", n)
		}
		fans[i] = &Fan{}
		if err := r.Scan(&fans[i].ID, &fans[i].Email); err != nil {
			return nil, err
		}
		if fans[i].Email != fanEmail(i) {
			return nil, fmt.Errorf("bench account %d is %s, want %s", i, fans[i].Email, fanEmail(i))
		}
		i++
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if i != n {
		return nil, fmt.Errorf("found %d bench accounts, want %d", i, n)
	}
	return fans, nil
}

// writeSessions gives each fan a logged-in session, written into Redis as
// the session store writes one after handlers.startSession: key
// REDIS_PREFIX+"session:"+token (store.Sessions), value scs.GobCodec's
// encoding of the deadline and the values account_id (int64), email, name,
// role and sid (the random session key that entry tokens are bound to),
// expiring at the deadline (handlers.SessionLifetime from now). The token
// is 32 random bytes, base64url, as scs makes them. role is
// boxoffice.RoleFan or RoleAdmin; the name shown is the e-mail address.
func writeSessions(ctx context.Context, rdb redis.UniversalClient, prefix string, fans []*Fan, role string) error {
	deadline := time.Now().Add(handlers.SessionLifetime)
	const batch = 1000
	for start := 0; start < len(fans); start += batch {
		p := rdb.Pipeline()
		for _, f := range fans[start:min(start+batch, len(fans))] {
			tok := make([]byte, 32)
			rand.Read(tok)
			sid := make([]byte, 16)
			rand.Read(sid)
			token := base64.RawURLEncoding.EncodeToString(tok)
			b, err := scs.GobCodec{}.Encode(deadline, map[string]any{
				"account_id": f.ID,
				"email":      f.Email,
				"name":       f.Email,
				"role":       role,
				"sid":        hex.EncodeToString(sid),
			})
			if err != nil {
				return fmt.Errorf("encode session: %w", err)
			}
			p.Set(ctx, prefix+sessionPrefix+token, b, handlers.SessionLifetime)
			f.Cookie = sessionCookie + "=" + token
		}
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("write sessions: %w", err)
		}
	}
	return nil
}
