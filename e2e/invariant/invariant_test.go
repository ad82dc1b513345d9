package invariant_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/e2e/invariant"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// fixture is a database with a four-seat venue (A-1-1 to A-1-4, grade R at
// 1,000) and one account, on which each case makes an event of its own.
type fixture struct {
	db      *store.DB
	r       *store.Redis
	venue   int64
	account int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{db: storetest.MustOpenDB(t), r: storetest.MustOpenRedis(t)}
	seats, err := boxoffice.GenerateSeats([]boxoffice.SectionSpec{{Name: "A", Rows: 1, SeatsPerRow: 4, Grade: "R"}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := (&store.Venues{DB: f.db}).CreateVenue(ctx, "Hall", seats)
	if err != nil {
		t.Fatal(err)
	}
	f.venue = v.ID
	a, err := (&store.Accounts{DB: f.db, Cost: 4}).CreateAccount(ctx, boxoffice.Signup{
		Email: "fan@example.com", Password: "correct horse", Name: "Fan", Role: boxoffice.RoleFan})
	if err != nil {
		t.Fatal(err)
	}
	f.account = a.ID
	return f
}

// event creates an event on the venue with the given limit per account.
func (f *fixture) event(t *testing.T, limit int) int64 {
	t.Helper()
	in := boxoffice.NewEventInput()
	in.VenueID, in.Title, in.MaxPerAccount = f.venue, boxoffice.Text{"en": "Night"}, limit
	in.QueueOpensAt = time.Now().Add(-time.Hour).Truncate(time.Second)
	in.SaleEndsAt = time.Now().Add(time.Hour).Truncate(time.Second)
	in.StartsAt = in.SaleEndsAt.Add(time.Hour)
	in.Grades = []boxoffice.Grade{{Code: "R", Name: boxoffice.Text{"en": "R seat"}, Price: 1000}}
	e, err := (&store.Events{DB: f.db}).CreateEvent(context.Background(), in)
	if err != nil {
		t.Fatalf("create event: %v %v", err, boxoffice.ErrorProblems(err))
	}
	return e.ID
}

// order inserts an order of the account for the seats with the given
// status; paid adds its confirmed payment of the order's amount, sold its
// sold_seat and ticket rows. It returns the order's id.
func (f *fixture) order(t *testing.T, event int64, status string, paid, sold bool, seats ...string) string {
	t.Helper()
	ctx := context.Background()
	id := rand.Text()[:22]
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := f.db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`INSERT INTO orders (id, event_id, account_id, status, amount, currency, order_name, expires_at)
		VALUES ($1, $2, $3, $4, $5, 'KRW', 'Night', now() + interval '10 minutes')`, id, event, f.account, status, 1000*len(seats))
	for _, s := range seats {
		exec(`INSERT INTO order_item (order_id, event_id, seat_label, grade, price) VALUES ($1, $2, $3, 'R', 1000)`, id, event, s)
		if sold {
			exec(`INSERT INTO sold_seat (event_id, seat_label, order_id, account_id) VALUES ($1, $2, $3, $4)`, event, s, id, f.account)
			exec(`INSERT INTO ticket (id, order_id, event_id, seat_label) VALUES (gen_random_uuid(), $1, $2, $3)`, id, event, s)
		}
	}
	if paid {
		exec(`INSERT INTO payment (payment_key, order_id, amount, status, outcome) VALUES ($1, $2, $3, 'DONE', 'confirmed')`,
			"pay-"+id, id, 1000*len(seats))
	}
	return id
}

// Check finds a sale that keeps every rule whole, and each kind of broken
// rule in a sale that breaks it.
func TestCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	names := invariant.Names()
	for _, tt := range []struct {
		name   string
		limit  int
		sale   func(t *testing.T, event int64)
		broken string // "" when every rule holds
	}{
		{"Kept", 5, func(t *testing.T, e int64) {
			f.order(t, e, "CONFIRMED", true, true, "A-1-1", "A-1-2")
			f.order(t, e, "EXPIRED", false, false, "A-1-1")
		}, ""},
		{"SeatInTwoConfirmedOrders", 5, func(t *testing.T, e int64) {
			f.order(t, e, "CONFIRMED", true, true, "A-1-1")
			f.order(t, e, "CONFIRMED", true, false, "A-1-1")
		}, names[0]},
		{"OverTheLimit", 1, func(t *testing.T, e int64) {
			f.order(t, e, "CONFIRMED", true, true, "A-1-1", "A-1-2")
		}, names[1]},
		{"ConfirmedUnpaid", 5, func(t *testing.T, e int64) {
			f.order(t, e, "CONFIRMED", false, true, "A-1-1")
		}, names[2]},
		{"SoldToPendingOrder", 5, func(t *testing.T, e int64) {
			f.order(t, e, "PENDING_PAYMENT", false, true, "A-1-1")
		}, names[3]},
		{"HoldOnSoldSeat", 5, func(t *testing.T, e int64) {
			f.order(t, e, "CONFIRMED", true, true, "A-1-1")
			if err := f.r.Client.Set(context.Background(), f.r.Key("seat:lock:{%d}:A-1-1", e), f.account, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}, names[4]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := f.event(t, tt.limit)
			tt.sale(t, e)
			got := invariant.Check(context.Background(), f.db, f.r, e)
			if len(got) != len(names) {
				t.Fatalf("Check returned %d results, want %d", len(got), len(names))
			}
			for i, r := range got {
				if r.Name != names[i] {
					t.Errorf("result %d is %q, want %q", i, r.Name, names[i])
				}
				switch {
				case r.Name == tt.broken && r.OK:
					t.Errorf("%s holds (%s), want it broken", r.Name, r.Detail)
				case tt.broken == "" && !r.OK:
					t.Errorf("%s is broken (%s), want it to hold", r.Name, r.Detail)
				}
			}
		})
	}
}
