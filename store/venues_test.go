package store_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/boxoffice/boxoffice/views"
)

// generate builds a seat map from sections "name:rows:seatsPerRow:grade".
func generate(tb testing.TB, sections ...boxoffice.SectionSpec) []boxoffice.Seat {
	tb.Helper()
	seats, err := boxoffice.GenerateSeats(sections)
	if err != nil {
		tb.Fatalf("GenerateSeats: %v", err)
	}
	return seats
}

func section(name string, rows, perRow int, grade string) boxoffice.SectionSpec {
	return boxoffice.SectionSpec{Name: name, Rows: rows, SeatsPerRow: perRow, Grade: grade}
}

func mustCreateVenue(tb testing.TB, vs *store.Venues, name string, seats []boxoffice.Seat) *boxoffice.Venue {
	tb.Helper()
	v, err := vs.CreateVenue(context.Background(), name, seats)
	if err != nil {
		tb.Fatalf("CreateVenue(%s): %v %q", name, err, boxoffice.ErrorProblems(err))
	}
	return v
}

func arenaSeats(tb testing.TB) []boxoffice.Seat {
	tb.Helper()
	data, err := os.ReadFile("../demo/venues/inspire_arena.csv")
	if err != nil {
		tb.Fatal(err)
	}
	seats, err := boxoffice.ParseSeatMap("inspire_arena.csv", data)
	if err != nil {
		tb.Fatal(err)
	}
	return seats
}

func count(tb testing.TB, db *store.DB, sql string, args ...any) int {
	tb.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
	return n
}

func wantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if got := boxoffice.ErrorCode(err); got != code {
		tb.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

func TestVenues_CreateVenue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.MustOpenDB(t)
	vs := &store.Venues{DB: db}

	t.Run("OK", func(t *testing.T) {
		seats := generate(t, section("B", 12, 2, "S"), section("A", 1, 11, "R"))
		v := mustCreateVenue(t, vs, "  Small Hall ", seats)
		if v.ID == 0 || v.Name != "Small Hall" || v.Seats != 35 || v.CreatedAt.IsZero() {
			t.Fatalf("CreateVenue = %+v, want an id, the trimmed name and 35 seats", v)
		}
		got, err := vs.FindVenueByID(ctx, v.ID)
		if err != nil || got.Seats != 35 || got.Events != 0 || got.Name != "Small Hall" {
			t.Fatalf("FindVenueByID = %+v, %v; want 35 seats and no events", got, err)
		}
		stored, err := vs.VenueSeats(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		var labels []string
		for _, s := range stored {
			labels = append(labels, s.Label)
		}
		// Sections by name, rows and numbers as numbers (10 after 9).
		if labels[0] != "A-1-1" || labels[1] != "A-1-2" || labels[10] != "A-1-11" || labels[11] != "B-1-1" || labels[29] != "B-10-1" || labels[34] != "B-12-2" {
			t.Fatalf("VenueSeats order = %v", labels)
		}
		want := seats[25] // A-1-2 at its generated position
		if s := stored[1]; s.Label != want.Label || s.Section != "A" || s.Row != "1" || s.Number != "2" || s.Grade != "R" || s.X != want.X || s.Y != want.Y {
			t.Fatalf("stored seat = %+v, want %+v", s, want)
		}
	})

	t.Run("Arena", func(t *testing.T) {
		v := mustCreateVenue(t, vs, "Inspire Arena", arenaSeats(t))
		if n := count(t, db, `SELECT count(*) FROM venue_seat WHERE venue_id = $1`, v.ID); n != 15000 || v.Seats != 15000 {
			t.Fatalf("arena: %d seats stored, %d reported; want 15000", n, v.Seats)
		}
	})

	t.Run("ErrInvalidSavesNothing", func(t *testing.T) {
		before := count(t, db, `SELECT count(*) FROM venue`)
		seats := generate(t, section("A", 1, 2, "R"))
		seats = append(seats, seats[0], boxoffice.Seat{Section: "A", Row: "x", Number: "9", Grade: "R"})
		_, err := vs.CreateVenue(ctx, " ", seats)
		var e *boxoffice.Error
		if !errors.As(err, &e) || e.Code != boxoffice.EINVALID || e.Fields["name"].ID == "" {
			t.Fatalf("CreateVenue = %v, want %s with Fields[name]", err, boxoffice.EINVALID)
		}
		want := []string{"seat 2: duplicate seat A-1-1 (also at seat 0)",
			`seat 3: row must be a whole number from 1 to 9999 without a leading zero, not "x"`}
		if got := views.SayAll(boxoffice.NewContextWithLang(ctx, views.English), boxoffice.ErrorProblems(err)); !slices.Equal(got, want) {
			t.Fatalf("problems = %q, want %q", got, want)
		}
		if after := count(t, db, `SELECT count(*) FROM venue`); after != before {
			t.Fatalf("venues %d -> %d, want no new venue", before, after)
		}
	})
}

func TestVenues_FindVenues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.MustOpenDB(t)
	vs, es := &store.Venues{DB: db}, &store.Events{DB: db}
	b := mustCreateVenue(t, vs, "Beta", generate(t, section("A", 2, 2, "R")))
	a := mustCreateVenue(t, vs, "Alpha", generate(t, section("A", 1, 3, "R")))
	mustCreateEvent(t, es, eventInput(b.ID, "R"))
	mustCreateEvent(t, es, eventInput(b.ID, "R"))
	got, err := vs.FindVenues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != a.ID || got[0].Seats != 3 || got[0].Events != 0 || got[1].ID != b.ID || got[1].Seats != 4 || got[1].Events != 2 {
		t.Fatalf("FindVenues = %+v %+v, want Alpha (3 seats, 0 events) then Beta (4 seats, 2 events)", got[0], got[1])
	}
	if _, err := vs.FindVenueByID(ctx, 999999); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		t.Fatalf("FindVenueByID(unknown) = %v, want %s", err, boxoffice.ENOTFOUND)
	}
	if _, err := vs.VenueSeats(ctx, 999999); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		t.Fatalf("VenueSeats(unknown) = %v, want %s", err, boxoffice.ENOTFOUND)
	}
}

func TestVenues_RenameVenue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.MustOpenDB(t)
	vs := &store.Venues{DB: db}
	v := mustCreateVenue(t, vs, "Old", generate(t, section("A", 1, 2, "R")))
	t.Run("OK", func(t *testing.T) {
		got, err := vs.RenameVenue(ctx, v.ID, " New ")
		if err != nil || got.Name != "New" || got.Seats != 2 {
			t.Fatalf("RenameVenue = %+v, %v; want New with 2 seats", got, err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		_, err := vs.RenameVenue(ctx, v.ID, "")
		wantCode(t, err, boxoffice.EINVALID)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := vs.RenameVenue(ctx, 999999, "X")
		wantCode(t, err, boxoffice.ENOTFOUND)
	})
}

func TestVenues_DeleteVenue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.MustOpenDB(t)
	vs, es := &store.Venues{DB: db}, &store.Events{DB: db}
	t.Run("OK", func(t *testing.T) {
		v := mustCreateVenue(t, vs, "Gone", generate(t, section("A", 1, 2, "R")))
		if err := vs.DeleteVenue(ctx, v.ID); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, `SELECT count(*) FROM venue_seat WHERE venue_id = $1`, v.ID); n != 0 {
			t.Fatalf("%d seats left of a deleted venue, want 0", n)
		}
		wantCode(t, vs.DeleteVenue(ctx, v.ID), boxoffice.ENOTFOUND)
	})
	t.Run("ErrConflictWhileUsed", func(t *testing.T) {
		v := mustCreateVenue(t, vs, "Used", generate(t, section("A", 1, 2, "R")))
		ev := mustCreateEvent(t, es, eventInput(v.ID, "R"))
		wantCode(t, vs.DeleteVenue(ctx, v.ID), boxoffice.ECONFLICT)
		if _, err := vs.FindVenueByID(ctx, v.ID); err != nil {
			t.Fatalf("venue after a refused delete: %v", err)
		}
		if _, err := db.Pool.Exec(ctx, `DELETE FROM event WHERE id = $1`, ev.ID); err != nil {
			t.Fatal(err)
		}
		if err := vs.DeleteVenue(ctx, v.ID); err != nil {
			t.Fatalf("DeleteVenue once no event uses it: %v", err)
		}
	})
}

// Deleting a venue while events are being created on it: the foreign key
// decides, so either the venue goes and no event was created, or it stays
// with every event created.
func TestVenues_DeleteVenue_Concurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.MustOpenDB(t)
	vs, es := &store.Venues{DB: db}, &store.Events{DB: db}
	for round := range 10 {
		v := mustCreateVenue(t, vs, fmt.Sprintf("Round %d", round), generate(t, section("A", 2, 5, "R")))
		var created, deleted, refused atomic.Int32
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				if i%10 == 0 {
					switch err := vs.DeleteVenue(ctx, v.ID); boxoffice.ErrorCode(err) {
					case "":
						deleted.Add(1)
					case boxoffice.ECONFLICT, boxoffice.ENOTFOUND:
					default:
						t.Errorf("DeleteVenue: %v", err)
					}
					return
				}
				_, err := es.CreateEvent(ctx, eventInput(v.ID, "R"))
				switch boxoffice.ErrorCode(err) {
				case "":
					created.Add(1)
				case boxoffice.EINVALID:
					refused.Add(1)
				default:
					t.Errorf("CreateEvent: %v", err)
				}
			})
		}
		wg.Wait()
		events := count(t, db, `SELECT count(*) FROM event WHERE venue_id = $1`, v.ID)
		venues := count(t, db, `SELECT count(*) FROM venue WHERE id = $1`, v.ID)
		if int(created.Load()) != events || (deleted.Load() == 1) != (venues == 0) || deleted.Load() > 1 || (venues == 0 && events != 0) {
			t.Fatalf("round %d: %d created (%d stored), %d refused, %d deletes, venue rows %d: inconsistent",
				round, created.Load(), events, refused.Load(), deleted.Load(), venues)
		}
		if created.Load()+refused.Load() != 90 {
			t.Fatalf("round %d: %d created + %d refused, want 90", round, created.Load(), refused.Load())
		}
	}
}

func BenchmarkVenues_CreateVenue15000(b *testing.B) {
	db := storetest.MustOpenDB(b)
	vs := &store.Venues{DB: db}
	seats := arenaSeats(b)
	for b.Loop() {
		if _, err := vs.CreateVenue(context.Background(), "Arena", seats); err != nil {
			b.Fatal(err)
		}
	}
}

// --- fixtures shared with events_test.go ---

// eventInput returns a valid input for an event on venueID with one grade
// per code (prices 100, 90, 80 ...), queue open from 2026-12-01 11:00 UTC.
func eventInput(venueID int64, codes ...string) boxoffice.EventInput {
	in := boxoffice.NewEventInput()
	in.VenueID = venueID
	in.Title = boxoffice.Text{"en": "Concert"}
	in.QueueOpensAt = time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	in.SaleEndsAt = in.QueueOpensAt.Add(48 * time.Hour)
	in.StartsAt = in.SaleEndsAt.Add(24 * time.Hour)
	for i, c := range codes {
		in.Grades = append(in.Grades, boxoffice.Grade{Code: c, Name: boxoffice.Text{"en": c + " seat"}, Price: int64(100 - 10*i), Color: "#112233"})
	}
	return in
}

func mustCreateEvent(tb testing.TB, es *store.Events, in boxoffice.EventInput) *boxoffice.Event {
	tb.Helper()
	ev, err := es.CreateEvent(context.Background(), in)
	if err != nil {
		tb.Fatalf("CreateEvent: %v %v", err, fieldsOf(err))
	}
	return ev
}

// fieldsOf returns an error's reasons by field, in English.
func fieldsOf(err error) map[string]string {
	return views.ErrorFields(boxoffice.NewContextWithLang(context.Background(), views.English), err)
}

// messageOf returns what an error says to people, in English.
func messageOf(err error) string {
	return views.ErrorText(boxoffice.NewContextWithLang(context.Background(), views.English), err)
}

// sell records seats of an event as sold, with raw SQL as the confirmation
// would: a fresh account, one confirmed order, and a sold_seat row per seat.
func sell(tb testing.TB, db *store.DB, eventID int64, labels ...string) string {
	tb.Helper()
	ctx := context.Background()
	orderID := "order-" + rand.Text()
	var accountID int64
	err := db.Pool.QueryRow(ctx, `INSERT INTO account (email, name, password_hash) VALUES ($1, 'Buyer', 'x') RETURNING id`,
		"buyer-"+strings.ToLower(rand.Text()[:10])+"@example.com").Scan(&accountID)
	if err != nil {
		tb.Fatal(err)
	}
	_, err = db.Pool.Exec(ctx, `INSERT INTO orders (id, event_id, account_id, status, amount, currency, order_name, expires_at)
		VALUES ($1, $2, $3, 'CONFIRMED', 1000, 'KRW', 'Tickets', now() + interval '10 minutes')`, orderID, eventID, accountID)
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range labels {
		if _, err := db.Pool.Exec(ctx, `INSERT INTO sold_seat (event_id, seat_label, order_id, account_id) VALUES ($1, $2, $3, $4)`,
			eventID, l, orderID, accountID); err != nil {
			tb.Fatalf("sell %s: %v", l, err)
		}
	}
	return orderID
}
