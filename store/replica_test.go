package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// With DATABASE_READ_URL, the lists that may be a moment late (events,
// venues) come from a real streaming replica, while a look-up by id reads
// the primary: with the replica's replay paused, a new venue and event are
// found by id at once and in the lists only once the replay goes on. A
// primary named as the replica is refused.
func TestDB_ReadReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := storetest.StartPostgres(t)
	db := primary.MustOpenDB()
	if err := db.OpenReadPool(ctx, primary.URL); err == nil || !strings.Contains(err.Error(), "DATABASE_READ_URL") {
		t.Fatalf("OpenReadPool(the primary) = %v, want an error naming DATABASE_READ_URL", err)
	}
	replica := primary.StartReplica()
	if err := db.OpenReadPool(ctx, replica.URL); err != nil {
		t.Fatalf("OpenReadPool(the replica) = %v", err)
	}
	if _, err := db.Read.Exec(ctx, `SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}

	venues, events := &store.Venues{DB: db}, &store.Events{DB: db}
	seats, err := boxoffice.GenerateSeats([]boxoffice.SectionSpec{{Name: "A", Rows: 2, SeatsPerRow: 5, Grade: "R"}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := venues.CreateVenue(ctx, "Replica Hall", seats)
	if err != nil {
		t.Fatal(err)
	}
	in := boxoffice.NewEventInput()
	in.VenueID, in.Title = v.ID, boxoffice.Text{"en": "Replica Night"}
	in.Grades = []boxoffice.Grade{{Code: "R", Name: boxoffice.Text{"en": "R seat"}, Price: 100000}}
	now := time.Now().Truncate(time.Second)
	in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = now.Add(time.Hour), now.Add(24*time.Hour), now.Add(48*time.Hour)
	ev, err := events.CreateEvent(ctx, in)
	if err != nil {
		t.Fatalf("create the event: %v %v", err, boxoffice.ErrorProblems(err))
	}
	if _, err := venues.FindVenueByID(ctx, v.ID); err != nil {
		t.Fatalf("FindVenueByID on the primary = %v", err)
	}
	if _, err := events.FindEventByID(ctx, ev.ID); err != nil {
		t.Fatalf("FindEventByID on the primary = %v", err)
	}
	listed := func() (bool, bool) {
		vs, err := venues.FindVenues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		es, err := events.FindEvents(ctx, boxoffice.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(vs, func(x *boxoffice.Venue) bool { return x.ID == v.ID }),
			slices.ContainsFunc(es, func(x *boxoffice.Event) bool { return x.ID == ev.ID })
	}
	if inVenues, inEvents := listed(); inVenues || inEvents {
		t.Fatalf("with the replay paused the lists show the venue %v, the event %v; want neither: they read the replica", inVenues, inEvents)
	}
	if _, err := db.Read.Exec(ctx, `SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if inVenues, inEvents := listed(); inVenues && inEvents {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica's lists lack the venue or the event 30 s after the replay resumed")
		}
	}
}
