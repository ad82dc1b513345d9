package store_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

func TestVenues_SetSectionOrders(t *testing.T) {
	t.Parallel()
	db := storetest.MustOpenDB(t)
	vs := &store.Venues{DB: db}
	ctx, _ := asAdmin(t, db)
	v := mustCreateVenue(t, vs, "Hall", generate(t, section("A", 2, 4, "R"), section("B", 2, 4, "S")))
	version := func() int {
		return count(t, db, `SELECT best_order_version FROM venue WHERE id = $1`, v.ID)
	}
	defaults := []boxoffice.SectionOrder{
		{Section: "A", Rows: boxoffice.RowsFront, Seats: boxoffice.SeatsStage},
		{Section: "B", Rows: boxoffice.RowsFront, Seats: boxoffice.SeatsStage},
	}
	wantOrders := func(t *testing.T, want []boxoffice.SectionOrder) {
		t.Helper()
		got, err := vs.SectionOrders(ctx, v.ID)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("SectionOrders = %+v, %v; want %+v", got, err, want)
		}
	}

	t.Run("ErrInvalid", func(t *testing.T) {
		err := vs.SetSectionOrders(ctx, v.ID, []boxoffice.SectionOrder{
			{Section: "A", Rank: 1000, Rows: "sideways"},
			{Section: "Z", Seats: "aisle"},
			{Section: "B", Rank: 1},
		})
		e := wantError(t, err, boxoffice.EINVALID)
		for _, k := range []string{"sections[0].rank", "sections[0].row_order", "sections[1].rank", "sections[1].seat_order"} {
			if _, ok := e.Fields[k]; !ok {
				t.Errorf("fields %v lack %s", e.Fields, k)
			}
		}
		if len(e.Fields) != 4 {
			t.Errorf("fields %v, want the 4 reasons", e.Fields)
		}
		wantOrders(t, defaults)
		if version() != 0 || len(auditOf(t, db, store.AuditVenueOrder)) != 0 {
			t.Errorf("version %d, audit %v after a refused change; want 0 and none", version(), auditOf(t, db, store.AuditVenueOrder))
		}
	})

	t.Run("OK", func(t *testing.T) {
		set := boxoffice.SectionOrder{Section: "B", Rank: 1, Rows: boxoffice.RowsDescending, Seats: boxoffice.SeatsLow}
		if err := vs.SetSectionOrders(ctx, v.ID, []boxoffice.SectionOrder{{Section: "A"}, set}); err != nil {
			t.Fatal(err)
		}
		wantOrders(t, []boxoffice.SectionOrder{defaults[0], set})
		if got := auditOf(t, db, store.AuditVenueOrder); version() != 1 || len(got) != 1 || got[0].VenueID != v.ID || len(got[0].After) != 1 {
			t.Errorf("version %d, audit %+v; want 1 and one entry naming B", version(), got)
		}
		// The same again changes nothing and writes nothing.
		if err := vs.SetSectionOrders(ctx, v.ID, []boxoffice.SectionOrder{set}); err != nil {
			t.Fatal(err)
		}
		if version() != 1 || len(auditOf(t, db, store.AuditVenueOrder)) != 1 {
			t.Errorf("version %d after a save without a change, want 1 and no new entry", version())
		}
		// Back to the default.
		if err := vs.SetSectionOrders(ctx, v.ID, []boxoffice.SectionOrder{{Section: "B"}}); err != nil {
			t.Fatal(err)
		}
		wantOrders(t, defaults)
		if n := count(t, db, `SELECT count(*) FROM venue_section_order WHERE venue_id = $1`, v.ID); n != 0 {
			t.Errorf("%d stored orders after going back to the default, want 0", n)
		}
	})

	t.Run("ImportVenue", func(t *testing.T) {
		seats := generate(t, section("A", 1, 2, "R"))
		_, err := vs.ImportVenue(ctx, "Bad", seats, []boxoffice.SectionOrder{{Section: "Q", Rank: 1}})
		wantError(t, err, boxoffice.EINVALID)
		w, err := vs.ImportVenue(ctx, "Good", seats, []boxoffice.SectionOrder{{Section: "A", Rank: 3, Seats: boxoffice.SeatsHigh}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := vs.SectionOrders(ctx, w.ID)
		if want := []boxoffice.SectionOrder{{Section: "A", Rank: 3, Rows: boxoffice.RowsFront, Seats: boxoffice.SeatsHigh}}; err != nil || !slices.Equal(got, want) {
			t.Errorf("imported orders %+v, %v; want %+v", got, err, want)
		}
		if n := count(t, db, `SELECT count(*) FROM venue WHERE name = 'Bad'`); n != 0 {
			t.Errorf("%d venues from a refused import, want 0", n)
		}
	})
}

// An admin's order changes which seats best available gives, on an instance
// that had kept the event's runs since before the change too.
func TestHolds_HoldBest_SectionOrder(t *testing.T) {
	t.Parallel()
	env := newHoldsEnv(t)
	var shift atomic.Int64 // how far the store's clock is ahead
	env.R.Now = func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	// R: section A, rows 1 and 2 of 50 seats.
	ev := newHoldEvent(t, env.DB, 200)
	ctx, _ := asAdmin(t, env.DB)
	if _, err := env.DB.Pool.Exec(ctx, `
		INSERT INTO venue_seat (venue_id, label, section, row_label, number, grade, x, y)
		SELECT e.venue_id, s.label, s.section, s.row_label, s.number, s.grade, s.x, s.y
		FROM event_seat s JOIN event e ON e.id = s.event_id WHERE e.id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	var venueID int64
	if err := env.DB.Pool.QueryRow(ctx, `SELECT venue_id FROM event WHERE id = $1`, ev.ID).Scan(&venueID); err != nil {
		t.Fatal(err)
	}

	res, err := env.holdBest(ev.ID, 1, "R", 2)
	if want := []string{"A-1-24", "A-1-25"}; err != nil || !slices.Equal(res.Held, want) {
		t.Fatalf("default: held %v, %v; want %v, nearest the stage", res.Held, err, want)
	}
	vs := &store.Venues{DB: env.DB}
	if err := vs.SetSectionOrders(ctx, venueID, []boxoffice.SectionOrder{
		{Section: "A", Rows: boxoffice.RowsDescending, Seats: boxoffice.SeatsLow},
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"A-2-1", "A-2-2"}
	// Another instance reads the new order at once.
	other := env.instance(t, nil)
	got, err := other.HoldBest(context.Background(), boxoffice.HoldRequest{EventID: ev.ID, AccountID: 2, Limit: limit, TTL: holdTTL}, "R", 2)
	if err != nil || !slices.Equal(got.Held, want) {
		t.Fatalf("a new instance held %v, %v; want %v (the back row, from seat 1)", got.Held, err, want)
	}
	// The first instance within bestOrderMaxAge keeps its copy; past it,
	// it checks the version in the background and then follows the order
	// (the front row's 50 seats last the old order 25 pairs).
	shift.Store(int64(2 * time.Second))
	want = []string{"A-2-3", "A-2-4"}
	deadline := time.Now().Add(10 * time.Second)
	for acct := int64(3); ; acct++ {
		res, err := env.holdBest(ev.ID, acct, "R", 2)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(res.Held, want) {
			break
		}
		if res.Held[0][:4] != "A-1-" || time.Now().After(deadline) {
			t.Fatalf("the first instance held %v; want the old order's front row, then %v", res.Held, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
