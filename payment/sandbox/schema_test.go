package sandbox_test

import (
	"context"
	"crypto/rand"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/migrations"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// beforeSchemaMove is the last migration before 00010_sandbox_pg_schema.sql,
// the state of a deployment made before the sandbox had a schema of its own.
const beforeSchemaMove = 9

// oldDeployment returns an empty database of its own, migrated up to
// beforeSchemaMove (the sandbox's tables in the production schema), and the
// goose provider that migrates it further; both end with t.
func oldDeployment(t *testing.T) (*store.DB, *goose.Provider) {
	t.Helper()
	ctx := context.Background()
	name := "boxoffice_test_" + strings.ToLower(rand.Text()[:12])
	u, err := url.Parse(storetest.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	dsn := u.String()
	u.Path = "/postgres"
	admin := u.String()
	if err := store.CreateDatabase(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	db, err := store.OpenDB(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	sqlDB := stdlib.OpenDBFromPool(db.Pool)
	t.Cleanup(func() { sqlDB.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS, goose.WithGoMigrations(migrations.Go()...))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, beforeSchemaMove); err != nil {
		t.Fatal(err)
	}
	return db, p
}

// where returns the schema that holds each of the sandbox's tables ("" for none).
func where(t *testing.T, db *store.DB) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, table := range []string{"sandbox_pg_payment", "sandbox_pg_idempotency", "sandbox_pg_webhook"} {
		var schemas []string
		rows, err := db.Pool.Query(context.Background(), `SELECT table_schema FROM information_schema.tables WHERE table_name = $1`, table)
		if err != nil {
			t.Fatal(err)
		}
		if schemas, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatal(err)
		}
		got[table] = strings.Join(schemas, ",")
	}
	return got
}

func wantTablesIn(t *testing.T, db *store.DB, schema string) {
	t.Helper()
	for table, got := range where(t, db) {
		if got != schema {
			t.Errorf("%s is in schema %q, want %q", table, got, schema)
		}
	}
}

// A deployment that never used the sandbox (its tables empty) loses them
// from its production schema, and gets no sandbox_pg schema.
func TestMigration_DropsEmptySandboxTables(t *testing.T) {
	db, p := oldDeployment(t)
	wantTablesIn(t, db, "public")
	if _, err := p.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantTablesIn(t, db, "")
	var schema bool
	if err := db.Pool.QueryRow(context.Background(), `SELECT to_regnamespace('sandbox_pg') IS NOT NULL`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if schema {
		t.Error("the migration created the schema sandbox_pg in a deployment that never used the sandbox")
	}
}

// A deployment that uses the sandbox keeps everything of it: the migration
// moves its tables with their rows to sandbox_pg, where the sandbox finds
// its payments and goes on numbering them.
func TestMigration_MovesSandboxRows(t *testing.T) {
	ctx := context.Background()
	db, p := oldDeployment(t)
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO sandbox_pg_payment (payment_key, order_id, order_name, status, total_amount, balance_amount, requested_at, approved_at)
		VALUES ('pk-old-1', 'order-old-1', 'R석 1매', 'DONE', 150000, 150000, now(), now());
		INSERT INTO sandbox_pg_idempotency (idempotency_key, method, path, status, body)
		VALUES ('confirm:order-old-1:pk-old-1', 'POST', '/v1/payments/confirm', 200, '{}');
		INSERT INTO sandbox_pg_webhook (payment_key, body, next_at, delivered_at) VALUES ('pk-old-1', '{}', now(), now())`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	wantTablesIn(t, db, sandbox.Schema)
	var idem, hooks int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sandbox_pg.sandbox_pg_idempotency),
		(SELECT count(*) FROM sandbox_pg.sandbox_pg_webhook)`).Scan(&idem, &hooks); err != nil {
		t.Fatal(err)
	}
	if idem != 1 || hooks != 1 {
		t.Errorf("after the move: %d idempotency rows and %d webhooks, want 1 and 1", idem, hooks)
	}

	h := newHarnessOn(t, db)
	old, err := h.client.GetPayment(ctx, "pk-old-1")
	if err != nil {
		t.Fatalf("the sandbox looks up the payment it had before the move: %v", err)
	}
	if old.OrderID != "order-old-1" || old.Status != boxoffice.PaymentStatusDone || old.Total() != won(150000) {
		t.Errorf("payment after the move: %+v", old)
	}
	key := h.pay(t, "order-new-1", 20000, sandbox.ScenarioDefault).Get("paymentKey")
	mustConfirm(t, h, key, "order-new-1", 20000)
	latest, err := h.client.GetPaymentByOrderID(ctx, "order-new-1")
	if err != nil || latest.PaymentKey != key {
		t.Fatalf("a new payment after the move: %+v, %v", latest, err)
	}
	wantTablesIn(t, db, sandbox.Schema)
}

// The sandbox creates its schema and tables where they are missing (a
// fresh database: the main migrations create none), once however many
// instances start together, and starting again changes nothing.
func TestNew_CreatesItsSchema(t *testing.T) {
	db := storetest.MustOpenDB(t)
	wantTablesIn(t, db, "")
	cfg := sandbox.Config{Provider: sandbox.Provider, Pool: db.Pool, SecretKey: testSecret}
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make([]error, 16)
		for i := range errs {
			wg.Go(func() {
				sb, err := sandbox.New(context.Background(), cfg)
				if err == nil {
					err = sb.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, instance %d: %v", round, i, err)
			}
		}
		wantTablesIn(t, db, sandbox.Schema)
	}
}
