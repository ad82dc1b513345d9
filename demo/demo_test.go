package demo_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/demo"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/boxoffice/boxoffice/views"
	"golang.org/x/crypto/bcrypt"
)

func count(t *testing.T, db *store.DB, sql string) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func grades(ev *boxoffice.Event) string {
	var parts []string
	for _, g := range ev.Grades {
		parts = append(parts, fmt.Sprintf("%s %d %d", g.Code, g.Price, g.SeatsLeft))
	}
	return strings.Join(parts, ", ")
}

func TestSeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.MustOpenDB(t)
	now := time.Date(2026, 12, 1, 11, 0, 42, 0, time.UTC)
	db.Now = func() time.Time { return now }

	res, err := demo.Seed(ctx, db, demo.Options{BcryptCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped.ID != "" || len(res.Logins) != 4 || len(res.Venues) != 2 || len(res.Events) != 2 {
		t.Fatalf("Seed = %+v, want 4 log-ins, 2 venues, 2 events", res)
	}

	accounts := &store.Accounts{DB: db}
	seen := map[string]bool{}
	for i, l := range res.Logins {
		wantEmail, wantRole := fmt.Sprintf("fan%d@boxoffice.test", i), boxoffice.RoleFan
		if i == 0 {
			wantEmail, wantRole = demo.AdminEmail, boxoffice.RoleAdmin
		}
		if l.Email != wantEmail || l.Role != wantRole || len(l.Password) != 16 || seen[l.Password] {
			t.Fatalf("log-in %d = %+v, want %s (%s) with a fresh 16-character password", i, l, wantEmail, wantRole)
		}
		seen[l.Password] = true
		a, err := accounts.Authenticate(ctx, l.Email, l.Password)
		if err != nil || a.Role != wantRole {
			t.Fatalf("log in as %s: %+v, %v; want role %s", l.Email, a, err, wantRole)
		}
	}

	for i, want := range []struct {
		venue  string
		seats  int
		grades string
	}{
		{demo.HallName, 2523, "R 150000 740, S 120000 564, A 90000 220, B 60000 545, C 40000 454"},
		{demo.ArenaName, 15000, "VIP 220000 1800, R 176000 4500, S 154000 5600, A 132000 3100"},
	} {
		v, ev := res.Venues[i], res.Events[i]
		if v.Name != want.venue || v.Seats != want.seats {
			t.Errorf("venue %d = %s with %d seats, want %s with %d", i, v.Name, v.Seats, want.venue, want.seats)
		}
		if got := grades(ev); got != want.grades {
			t.Errorf("%s grades = %s, want %s", ev.Title, got, want.grades)
		}
		// Both languages: the title, the description and every grade's name.
		if ev.Title.In("ko") == ev.Title.In("en") || ev.Description["ko"] == "" || ev.Description["en"] == "" {
			t.Errorf("event %d: title %v, description %v; want both in Korean and English", i, ev.Title, ev.Description)
		}
		for _, g := range ev.Grades {
			if g.Name["ko"] != g.Code+"석" || g.Name["en"] != g.Code+" seat" {
				t.Errorf("grade %s named %v, want %s석 and %s seat", g.Code, g.Name, g.Code, g.Code)
			}
		}
		minute := now.Truncate(time.Minute)
		seoul, _ := time.LoadLocation("Asia/Seoul")
		y, m, d := minute.AddDate(0, 0, 30).In(seoul).Date()
		evening := time.Date(y, m, d+1, 19, 0, 0, 0, seoul) // the day after the sale ends, 19:00 in Seoul
		if ev.Status != boxoffice.EventOnSale || ev.VenueID != v.ID || ev.TimeZone != "Asia/Seoul" || ev.Currency != "KRW" ||
			!ev.QueueOpensAt.Equal(minute.Add(-time.Minute)) || !ev.SaleEndsAt.Equal(minute.AddDate(0, 0, 30)) ||
			!ev.StartsAt.Equal(evening) || !ev.QueueOpen(now) {
			t.Errorf("event %d = %+v, want on sale at %s in Asia/Seoul with its queue open since a minute", i, ev, v.Name)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM event_seat`); n != 17523 {
		t.Fatalf("event seats = %d, want 17523", n)
	}

	for lang, words := range map[string][]string{
		views.English: {"Log in with", demo.ArenaName, "15,000 seats", "On sale", "Arena Live Tour (demo)"},
		views.Korean:  {"로그인하세요", demo.ArenaName, "15,000석", "판매 중", "아레나 라이브 투어 (데모)"},
	} {
		var out bytes.Buffer
		if err := res.Print(&out, lang); err != nil {
			t.Fatal(err)
		}
		for _, want := range append([]string{demo.AdminEmail, res.Logins[0].Password, "fan3@boxoffice.test"}, words...) {
			if !strings.Contains(out.String(), want) {
				t.Errorf("Print(%s) output lacks %q:\n%s", lang, want, out.String())
			}
		}
	}

	t.Run("SecondSeedDoesNothing", func(t *testing.T) {
		again, err := demo.Seed(ctx, db, demo.Options{BcryptCost: bcrypt.MinCost})
		if err != nil || again.Skipped.ID != "demo_skip_venues" || len(again.Logins)+len(again.Venues)+len(again.Events) != 0 {
			t.Fatalf("second Seed = %+v, %v; want skipped", again, err)
		}
		if v, e, a := count(t, db, `SELECT count(*) FROM venue`), count(t, db, `SELECT count(*) FROM event`), count(t, db, `SELECT count(*) FROM account`); v != 2 || e != 2 || a != 4 {
			t.Fatalf("after a second seed: %d venues, %d events, %d accounts; want 2, 2, 4", v, e, a)
		}
		var out bytes.Buffer
		if err := again.Print(&out, views.Korean); err != nil || !strings.Contains(out.String(), "할 일이 없습니다") {
			t.Fatalf("Print = %q, %v", out.String(), err)
		}
	})
}

// An account made before the seed (say with create-admin) is kept with its
// password, and the rest of the demo is created.
func TestSeed_ExistingAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.MustOpenDB(t)
	accounts := &store.Accounts{DB: db, Cost: bcrypt.MinCost}
	if _, err := accounts.CreateAccount(ctx, boxoffice.Signup{Email: demo.AdminEmail, Password: "my own password", Name: "Me", Role: boxoffice.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	res, err := demo.Seed(ctx, db, demo.Options{Password: "demo-password", BcryptCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	if res.Logins[0].Password != "" || res.Logins[1].Password != "demo-password" || len(res.Events) != 2 {
		t.Fatalf("Seed = %+v, want the admin kept (no password) and fans with the given password", res)
	}
	if _, err := accounts.Authenticate(ctx, demo.AdminEmail, "my own password"); err != nil {
		t.Fatalf("the existing admin's password changed: %v", err)
	}
	if _, err := accounts.Authenticate(ctx, "fan2@boxoffice.test", "demo-password"); err != nil {
		t.Fatalf("fan2 with the given password: %v", err)
	}
}

// Instances started together each run the seed: the demo is created once.
func TestSeed_Concurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for round := range 2 {
		db := storetest.MustOpenDB(t)
		var seeded, skipped atomic.Int32
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				res, err := demo.Seed(ctx, db, demo.Options{Password: "demo-password", BcryptCost: bcrypt.MinCost})
				switch {
				case err != nil:
					t.Errorf("Seed: %v", err)
				case res.Skipped.ID == "":
					seeded.Add(1)
				default:
					skipped.Add(1)
				}
			})
		}
		wg.Wait()
		if seeded.Load() != 1 || skipped.Load() != 99 {
			t.Fatalf("round %d: %d seeded, %d skipped; want 1 and 99", round, seeded.Load(), skipped.Load())
		}
		if v, e := count(t, db, `SELECT count(*) FROM venue`), count(t, db, `SELECT count(*) FROM event`); v != 2 || e != 2 {
			t.Fatalf("round %d: %d venues and %d events, want 2 and 2", round, v, e)
		}
	}
}
