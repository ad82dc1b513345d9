package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// asAdmin is ctx of a request by a new admin account.
func asAdmin(tb testing.TB, db *store.DB) (context.Context, int64) {
	tb.Helper()
	id := newHoldAccount(tb, db)
	return boxoffice.NewContextWithAccount(context.Background(), &boxoffice.Account{ID: id, Role: boxoffice.RoleAdmin}), id
}

// auditOf returns the audit log's entries of the action, oldest first.
func auditOf(tb testing.TB, db *store.DB, action string) []boxoffice.AuditEntry {
	tb.Helper()
	page, err := (&store.AuditLog{DB: db}).FindAudit(context.Background(), boxoffice.AuditFilter{Action: action, Limit: 1000})
	if err != nil {
		tb.Fatal(err)
	}
	slices.Reverse(page.Entries)
	return page.Entries
}

// auditAction is one admin action for the tests below: change makes it,
// changed reports whether its change is in the database.
type auditAction struct {
	action  string
	change  func(ctx context.Context) error
	changed func() bool
}

// auditActions builds, on a fresh fixture, one change of every kind an
// admin makes to venues and events, in an order in which each succeeds.
// The fixture's own entries are forgotten first.
func auditActions(t *testing.T, f *fixture) []auditAction {
	ctx := context.Background()
	if _, err := f.db.Pool.Exec(ctx, `DELETE FROM audit_log`); err != nil {
		t.Fatal(err)
	}
	var venueID, eventID int64
	venueNamed := func(name string) bool {
		v, err := f.vs.FindVenueByID(ctx, venueID)
		return err == nil && v.Name == name
	}
	event := func() *boxoffice.Event {
		ev, err := f.es.FindEventByID(ctx, eventID)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	two := func(ctx context.Context) (*boxoffice.Venue, error) {
		return f.vs.CreateVenue(ctx, "Second", generate(t, section("A", 1, 2, "R")))
	}
	return []auditAction{
		{store.AuditVenueCreate, func(ctx context.Context) error {
			v, err := two(ctx)
			if err == nil {
				venueID = v.ID
			}
			return err
		}, func() bool { return venueID != 0 }},
		{store.AuditVenueRename, func(ctx context.Context) error {
			_, err := f.vs.RenameVenue(ctx, venueID, "Renamed")
			return err
		}, func() bool { return venueNamed("Renamed") }},
		{store.AuditVenueDelete, func(ctx context.Context) error { return f.vs.DeleteVenue(ctx, venueID) },
			func() bool { return !venueNamed("Renamed") }},
		{store.AuditEventCreate, func(ctx context.Context) error {
			ev, err := f.es.CreateEvent(ctx, eventInput(f.venue.ID, "R", "S", "A"))
			if err == nil {
				eventID = ev.ID
			}
			return err
		}, func() bool { return eventID != 0 }},
		{store.AuditEventUpdate, func(ctx context.Context) error {
			in := event().Input()
			in.Title = boxoffice.Text{"en": "Encore"}
			_, err := f.es.UpdateEvent(ctx, eventID, in)
			return err
		}, func() bool { return event().Title["en"] == "Encore" }},
		{store.AuditEventPublish, func(ctx context.Context) error {
			_, err := f.es.PublishEvent(ctx, eventID)
			return err
		}, func() bool { return event().Status == boxoffice.EventOnSale }},
		{store.AuditAdmission, func(ctx context.Context) error {
			paused := true
			_, err := f.es.SetAdmission(ctx, eventID, &paused, nil)
			return err
		}, func() bool { return event().Paused }},
		{store.AuditEventClose, func(ctx context.Context) error {
			_, err := f.es.CloseEvent(ctx, eventID)
			return err
		}, func() bool { return event().Status == boxoffice.EventClosed }},
	}
}

// Every admin change writes its audit entry, naming the admin and what it
// changed on, and a change that is refused writes none.
func TestAudit_EveryAction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, adminID := asAdmin(t, f.db)
	for _, a := range auditActions(t, f) {
		if err := a.change(ctx); err != nil {
			t.Fatalf("%s: %v", a.action, err)
		}
		entries := auditOf(t, f.db, a.action)
		if len(entries) != 1 || !a.changed() || entries[0].AdminID != adminID || (entries[0].EventID == 0 && entries[0].VenueID == 0) {
			t.Fatalf("%s: changed %v, entries %+v; want the change and one entry by admin %d naming what it changed", a.action, a.changed(), entries, adminID)
		}
	}
	if e := auditOf(t, f.db, store.AuditVenueRename)[0]; e.Before["name"] != "Second" || e.After["name"] != "Renamed" {
		t.Errorf("rename: before %v, after %v; want the names", e.Before, e.After)
	}
	if e := auditOf(t, f.db, store.AuditEventUpdate)[0]; len(e.After) != 1 || fmt.Sprint(e.Before["title"]) != "map[en:Concert]" || fmt.Sprint(e.After["title"]) != "map[en:Encore]" {
		t.Errorf("update: before %v, after %v; want only the title, from Concert to Encore", e.Before, e.After)
	}
	if e := auditOf(t, f.db, store.AuditAdmission)[0]; e.Before["paused"] != false || e.After["paused"] != true {
		t.Errorf("admission: before %v, after %v; want paused false, then true", e.Before, e.After)
	}

	t.Run("RefusedWritesNone", func(t *testing.T) {
		before := auditOf(t, f.db, "")
		ev, err := f.es.CreateEvent(ctx, eventInput(f.venue.ID, "R", "S", "A"))
		if err != nil {
			t.Fatal(err)
		}
		long := string(make([]byte, boxoffice.MaxVenueNameLen+1))
		rate := 0
		for name, refused := range map[string]error{
			"rename to nothing":     second(f.vs.RenameVenue(ctx, f.venue.ID, " ")),
			"rename unknown":        second(f.vs.RenameVenue(ctx, 999999, "x")),
			"rename too long":       second(f.vs.RenameVenue(ctx, f.venue.ID, long)),
			"delete in use":         f.vs.DeleteVenue(ctx, f.venue.ID),
			"create without grades": second(f.es.CreateEvent(ctx, eventInput(f.venue.ID, "R"))),
			"close closed":          second(f.es.CloseEvent(ctx, auditLast(t, f.db, store.AuditEventClose).EventID)),
			"publish unknown":       second(f.es.PublishEvent(ctx, 999999)),
			"rate zero":             second(f.es.SetAdmission(ctx, ev.ID, nil, &rate)),
			"admission unknown":     second(f.es.SetAdmission(ctx, 999999, nil, new(int))),
		} {
			if refused == nil {
				t.Errorf("%s: no error", name)
			}
		}
		unchanged, err := f.es.UpdateEvent(ctx, ev.ID, ev.Input())
		if err != nil || unchanged.Title["en"] != "Concert" {
			t.Fatalf("save unchanged: %v", err)
		}
		if after := auditOf(t, f.db, ""); len(after) != len(before)+1 || after[len(after)-1].Action != store.AuditEventCreate {
			t.Errorf("%d entries after refused changes and a save without change, want %d (the create only)", len(after), len(before)+1)
		}
	})
}

func second[T any](_ T, err error) error { return err }

func auditLast(tb testing.TB, db *store.DB, action string) boxoffice.AuditEntry {
	tb.Helper()
	entries := auditOf(tb, db, action)
	if len(entries) == 0 {
		tb.Fatalf("no %s entry", action)
	}
	return entries[len(entries)-1]
}

// A change whose audit entry cannot be written does not happen: for every
// action, the audit log refuses that action (a CHECK constraint added for
// the test), and the change is absent with its entry.
func TestAudit_SameTransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, _ := asAdmin(t, f.db)
	for _, a := range auditActions(t, f) {
		if _, err := f.db.Pool.Exec(context.Background(), fmt.Sprintf(
			`ALTER TABLE audit_log ADD CONSTRAINT refuse CHECK (action <> '%s') NOT VALID`, a.action)); err != nil {
			t.Fatal(err)
		}
		if err := a.change(ctx); err == nil || a.changed() || len(auditOf(t, f.db, a.action)) != 0 {
			t.Fatalf("%s with its audit entry refused: err %v, changed %v; want an error and no change", a.action, err, a.changed())
		}
		if _, err := f.db.Pool.Exec(context.Background(), `ALTER TABLE audit_log DROP CONSTRAINT refuse`); err != nil {
			t.Fatal(err)
		}
		if err := a.change(ctx); err != nil || !a.changed() || len(auditOf(t, f.db, a.action)) != 1 {
			t.Fatalf("%s: err %v, changed %v, %d entries; want the change with one entry", a.action, err, a.changed(), len(auditOf(t, f.db, a.action)))
		}
	}
}

// Many admins at once: each change has exactly one audit entry, and the
// entries' befores and afters chain into the order the changes were made,
// ending at what the database holds.
func TestAudit_Concurrent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const admins = 50
	ctxs := make([]context.Context, admins)
	for i := range ctxs {
		ctxs[i], _ = asAdmin(t, f.db)
	}
	ev, err := f.es.CreateEvent(ctxs[0], eventInput(f.venue.ID, "R", "S", "A"))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		published := make([]error, admins)
		renamed := make([]error, admins)
		rated := make([]error, admins)
		storetest.AtOnce(admins, func(i int) {
			_, renamed[i] = f.vs.RenameVenue(ctxs[i], f.venue.ID, fmt.Sprintf("Hall %d-%d", round, i))
			rate := 1 + i + round*admins
			_, rated[i] = f.es.SetAdmission(ctxs[i], ev.ID, nil, &rate)
			if round == 0 {
				_, published[i] = f.es.PublishEvent(ctxs[i], ev.ID)
			}
		})
		for i := range admins {
			if renamed[i] != nil || rated[i] != nil {
				t.Fatalf("round %d admin %d: rename %v, rate %v", round, i, renamed[i], rated[i])
			}
		}
		if round == 0 {
			if n := len(slices.DeleteFunc(published, func(err error) bool { return err != nil })); n != 1 || len(auditOf(t, f.db, store.AuditEventPublish)) != 1 {
				t.Errorf("%d publishes succeeded with %d entries, want 1 and 1", n, len(auditOf(t, f.db, store.AuditEventPublish)))
			}
		}
	}
	v, err := f.vs.FindVenueByID(context.Background(), f.venue.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkChain(t, auditOf(t, f.db, store.AuditVenueRename), "name", "Hall", v.Name, 3*admins)
	live, err := f.es.FindEventByID(context.Background(), ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkChain(t, auditOf(t, f.db, store.AuditAdmission), "rate", float64(boxoffice.NewEventInput().AdmissionRate), float64(live.AdmissionRate), 3*admins)
}

// checkChain checks that entries (oldest first) are n changes of key, each
// starting where the one before ended, from first to last.
func checkChain(t *testing.T, entries []boxoffice.AuditEntry, key string, first, last any, n int) {
	t.Helper()
	if len(entries) != n {
		t.Fatalf("%d %s entries, want %d: one per change", len(entries), key, n)
	}
	prev := first
	for i, e := range entries {
		if e.Before[key] != prev {
			t.Fatalf("entry %d: %s before %v, want %v (where the one before ended)", i, key, e.Before[key], prev)
		}
		prev = e.After[key]
	}
	if prev != last {
		t.Errorf("the last entry ends at %v, the database holds %v", prev, last)
	}
}
