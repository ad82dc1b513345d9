package main

import (
	"bytes"
	"context"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// The operator's commands: migrate, create-admin (with every reason for bad
// input, and nothing written) and seed-demo (once).
func TestRun_Commands(t *testing.T) {
	ctx := context.Background()
	dbURL := storetest.NewDatabaseURL(t)
	cfg := env(map[string]string{"DATABASE_URL": dbURL, "LOG_LEVEL": "error"})
	var out bytes.Buffer

	if err := run(ctx, []string{"migrate"}, cfg, &out, &out); err != nil || !strings.Contains(out.String(), "migrations applied") {
		t.Fatalf("migrate = %v, printed %q", err, out.String())
	}
	err := run(ctx, []string{"create-admin", "--email", "not-an-email", "--password", "short"}, cfg, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "email:") || !strings.Contains(err.Error(), "password:") {
		t.Fatalf("create-admin with bad input = %v, want the reasons for email and password", err)
	}
	if err := run(ctx, []string{"create-admin", "--emial", "x"}, cfg, &out, &out); err == nil || !strings.Contains(err.Error(), "want --email E --password P") {
		t.Fatalf("create-admin with an unknown flag = %v, want the usage", err)
	}
	db, err := store.OpenDB(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func() int {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM account WHERE role = 'admin'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("%d admins after refused create-admin calls, want 0", n)
	}
	out.Reset()
	if err := run(ctx, []string{"create-admin", "--email", "Boss@Example.com", "--password", "correct horse"}, cfg, &out, &out); err != nil ||
		!strings.Contains(out.String(), "admin boss@example.com created") || count() != 1 {
		t.Fatalf("create-admin = %v, printed %q, %d admins; want one created", err, out.String(), count())
	}
	out.Reset()
	if err := run(ctx, []string{"seed-demo", "--password", "demo-password"}, cfg, &out, &out); err != nil || !strings.Contains(out.String(), "admin@boxoffice.test") {
		t.Fatalf("seed-demo = %v, printed %q", err, out.String())
	}
	out.Reset()
	nothing := views.In(views.Korean, boxoffice.M("demo_nothing_to_do", "Why", boxoffice.M("demo_skip_venues")))
	if err := run(ctx, []string{"seed-demo"}, cfg, &out, &out); err != nil || strings.TrimSpace(out.String()) != nothing {
		t.Fatalf("second seed-demo = %v, printed %q; want nothing done", err, out.String())
	}
}
