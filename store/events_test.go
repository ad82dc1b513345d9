package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// fixture is a database with a venue of three grades: section A (2 rows of
// 5, grade R), B (1 row of 4, grade S), C (1 row of 3, grade A).
type fixture struct {
	db    *store.DB
	vs    *store.Venues
	es    *store.Events
	venue *boxoffice.Venue
}

// fixtureNow is the fixture's clock: before eventInput's sale, whatever the
// day the tests run, so that its events can be published.
var fixtureNow = time.Date(2026, 11, 15, 12, 0, 0, 0, time.UTC)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db := storetest.MustOpenDB(t)
	db.Now = func() time.Time { return fixtureNow }
	f := &fixture{db: db, vs: &store.Venues{DB: db}, es: &store.Events{DB: db}}
	f.venue = mustCreateVenue(t, f.vs, "Hall", generate(t, section("A", 2, 5, "R"), section("B", 1, 4, "S"), section("C", 1, 3, "A")))
	return f
}

func gradeSummary(ev *boxoffice.Event) string {
	var parts []string
	for _, g := range ev.Grades {
		parts = append(parts, fmt.Sprintf("%s %d %d/%d", g.Code, g.Price, g.SeatsLeft, g.SeatsTotal))
	}
	return strings.Join(parts, ", ")
}

func TestEvents_CreateEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)

	t.Run("OK", func(t *testing.T) {
		in := eventInput(f.venue.ID, "R", "S", "A")
		in.Title, in.Description, in.MaxShoppers = boxoffice.Text{"en": " Gala ", "ko": " 갈라 "}, boxoffice.Text{"en": "An evening"}, 500
		in.PowDifficulty = 50000
		ev := mustCreateEvent(t, f.es, in)
		if ev.ID == 0 || ev.Title.In("en") != "Gala" || ev.Title.In("ko") != "갈라" || ev.Description.In("ko") != "An evening" || ev.Status != boxoffice.EventDraft || ev.VenueName != "Hall" ||
			ev.MaxShoppers != 500 || ev.PowDifficulty != 50000 || ev.HoldTTL != 300*time.Second || ev.TokenTTL != 600*time.Second || ev.AdmissionRate != 100 ||
			ev.MaxPerAccount != 5 || ev.Currency != "KRW" || ev.TimeZone != "Asia/Seoul" || ev.Paused {
			t.Fatalf("CreateEvent = %+v", ev)
		}
		if !ev.QueueOpensAt.Equal(in.QueueOpensAt) || !ev.SaleEndsAt.Equal(in.SaleEndsAt) || !ev.StartsAt.Equal(in.StartsAt) {
			t.Fatalf("times %v %v %v, want %v %v %v", ev.QueueOpensAt, ev.SaleEndsAt, ev.StartsAt, in.QueueOpensAt, in.SaleEndsAt, in.StartsAt)
		}
		if got, want := gradeSummary(ev), "R 100 10/10, S 90 4/4, A 80 3/3"; got != want {
			t.Fatalf("grades = %s, want %s", got, want)
		}
		seats, err := f.es.EventSeats(ctx, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(seats) != 17 || seats[0].Label != "A-1-1" || seats[0].Price != 100 || seats[0].EventID != ev.ID ||
			seats[16].Label != "C-1-3" || seats[16].Price != 80 || seats[10].Label != "B-1-1" || seats[10].Grade != "S" {
			t.Fatalf("EventSeats = %d seats, first %+v, last %+v", len(seats), seats[0], seats[len(seats)-1])
		}
	})

	t.Run("ErrMissingGrades", func(t *testing.T) {
		before := count(t, f.db, `SELECT count(*) FROM event`)
		_, err := f.es.CreateEvent(ctx, eventInput(f.venue.ID, "R", "VIP"))
		wantCode(t, err, boxoffice.EINVALID)
		if got := fieldsOf(err)["grades"]; !strings.Contains(got, "grade A, S:") {
			t.Fatalf("Fields[grades] = %q, want it to name A and S", got)
		}
		if after := count(t, f.db, `SELECT count(*) FROM event`); after != before {
			t.Fatalf("events %d -> %d, want nothing saved", before, after)
		}
	})

	t.Run("ErrUnknownVenue", func(t *testing.T) {
		_, err := f.es.CreateEvent(ctx, eventInput(999999, "R"))
		if fieldsOf(err)["venue_id"] == "" {
			t.Fatalf("CreateEvent(unknown venue) = %v %v, want Fields[venue_id]", err, fieldsOf(err))
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		in := eventInput(f.venue.ID, "R", "S", "A")
		in.Title, in.Grades[1].Price = nil, 0
		_, err := f.es.CreateEvent(ctx, in)
		if fe := fieldsOf(err); fe["title"] == "" || fe["grades[1].price"] == "" {
			t.Fatalf("CreateEvent = %v %v, want title and grades[1].price", err, fe)
		}
	})

	// The event keeps its copy of the seats: renaming the venue shows in the
	// event, but changes to the venue's seats never reach it.
	t.Run("VenueEditsLeaveSeats", func(t *testing.T) {
		ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A", "VIP"))
		before, err := f.es.EventSeats(ctx, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.vs.RenameVenue(ctx, f.venue.ID, "Renamed Hall"); err != nil {
			t.Fatal(err)
		}
		for _, sql := range []string{
			`UPDATE venue_seat SET grade = 'VIP', x = x + 1000 WHERE venue_id = $1 AND section = 'A'`,
			`DELETE FROM venue_seat WHERE venue_id = $1 AND section = 'C'`,
			`INSERT INTO venue_seat (venue_id, label, section, row_label, number, grade, x, y) VALUES ($1, 'D-1-1', 'D', '1', '1', 'S', 0, 0)`,
		} {
			if _, err := f.db.Pool.Exec(ctx, sql, f.venue.ID); err != nil {
				t.Fatal(err)
			}
		}
		after, err := f.es.EventSeats(ctx, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(before, after) {
			t.Fatalf("event seats changed with the venue:\n before %v\n after  %v", before, after)
		}
		got, err := f.es.FindEventByID(ctx, ev.ID)
		if err != nil || got.VenueName != "Renamed Hall" {
			t.Fatalf("event venue name = %q (%v), want Renamed Hall", got.VenueName, err)
		}
		if s := gradeSummary(got); s != "R 100 10/10, S 90 4/4, A 80 3/3, VIP 70 0/0" {
			t.Fatalf("grades = %s", s)
		}
	})
}

// The schema refuses bad rows even when SQL bypasses the store.
func TestEvents_SchemaConstraints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
	tests := []struct {
		name, sql, sqlstate string
		args                []any
	}{
		{"NegativePrice", `INSERT INTO grade (event_id, code, name, price) VALUES ($1, 'Z', '{"en": "Z"}', -1)`, "23514", []any{ev.ID}},
		{"ZeroPrice", `UPDATE grade SET price = 0 WHERE event_id = $1 AND code = 'R'`, "23514", []any{ev.ID}},
		{"SeatWithoutGrade", `INSERT INTO event_seat (event_id, label, section, row_label, number, grade, x, y) VALUES ($1, 'Z-1-1', 'Z', '1', '1', 'VIP', 0, 0)`, "23503", []any{ev.ID}},
		{"GradeInUse", `DELETE FROM grade WHERE event_id = $1 AND code = 'S'`, "23503", []any{ev.ID}},
		{"QueueAfterSaleEnd", `UPDATE event SET queue_opens_at = sale_ends_at WHERE id = $1`, "23514", []any{ev.ID}},
		{"DuplicateVenueSeat", `INSERT INTO venue_seat (venue_id, label, section, row_label, number, grade, x, y) VALUES ($1, 'A-1-1', 'A', '1', '1', 'R', 0, 0)`, "23505", []any{f.venue.ID}},
		{"DuplicateEventSeat", `INSERT INTO event_seat (event_id, label, section, row_label, number, grade, x, y) VALUES ($1, 'A-1-1', 'A', '1', '1', 'R', 0, 0)`, "23505", []any{ev.ID}},
		{"RowWithLeadingZero", `INSERT INTO venue_seat (venue_id, label, section, row_label, number, grade, x, y) VALUES ($1, 'A-01-1', 'A', '01', '1', 'R', 0, 0)`, "23514", []any{f.venue.ID}},
		{"LabelMismatch", `INSERT INTO venue_seat (venue_id, label, section, row_label, number, grade, x, y) VALUES ($1, 'A-9-9', 'A', '9', '8', 'R', 0, 0)`, "23514", []any{f.venue.ID}},
		{"VenueInUse", `DELETE FROM venue WHERE id = $1`, "23503", []any{f.venue.ID}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.db.Pool.Exec(ctx, tt.sql, tt.args...)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != tt.sqlstate {
				t.Fatalf("%s: error %v, want SQLSTATE %s", tt.sql, err, tt.sqlstate)
			}
		})
	}
}

// Seats left per grade are the grade's seats minus its sold_seat rows.
func TestEvents_FindEventByID_SeatsLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
	other := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
	sell(t, f.db, ev.ID, "A-1-1", "A-1-2", "A-2-5")
	sell(t, f.db, ev.ID, "B-1-4")
	sell(t, f.db, ev.ID, "C-1-1", "C-1-2", "C-1-3")
	sell(t, f.db, other.ID, "B-1-1", "B-1-2") // another event's sales do not count
	got, err := f.es.FindEventByID(ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s, want := gradeSummary(got), "R 100 7/10, S 90 3/4, A 80 0/3"; s != want {
		t.Fatalf("grades = %s, want %s", s, want)
	}
	if _, err := f.es.FindEventByID(ctx, 999999); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		t.Fatalf("FindEventByID(unknown) = %v, want %s", err, boxoffice.ENOTFOUND)
	}
	if _, err := f.es.EventSeats(ctx, 999999); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		t.Fatalf("EventSeats(unknown) = %v, want %s", err, boxoffice.ENOTFOUND)
	}
}

func TestEvents_UpdateEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	small := mustCreateVenue(t, f.vs, "Small", generate(t, section("Z", 1, 2, "R")))

	t.Run("OK", func(t *testing.T) {
		ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A", "VIP"))
		in := ev.Input()
		in.Title, in.MaxPerAccount, in.HoldTTL = boxoffice.Text{"en": "New title"}, 2, 120*time.Second
		in.Grades[0].Price = 150                   // R
		in.Grades = slices.Delete(in.Grades, 3, 4) // VIP has no seats: it may go
		got, err := f.es.UpdateEvent(ctx, ev.ID, in)
		if err != nil {
			t.Fatalf("UpdateEvent: %v %v", err, fieldsOf(err))
		}
		if got.Title.In("en") != "New title" || got.MaxPerAccount != 2 || got.HoldTTL != 120*time.Second || gradeSummary(got) != "R 150 10/10, S 90 4/4, A 80 3/3" {
			t.Fatalf("UpdateEvent = %+v (%s)", got, gradeSummary(got))
		}
		if !got.UpdatedAt.After(ev.UpdatedAt) && !got.UpdatedAt.Equal(ev.UpdatedAt) {
			t.Fatalf("updated_at went back: %v -> %v", ev.UpdatedAt, got.UpdatedAt)
		}
	})

	// An event in Asia/Seoul saved three times from its edit form, as a
	// browser anywhere posts the local strings it was shown, keeps its
	// instants (seconds included, through ReparseLocalTime).
	t.Run("SavedThreeTimes", func(t *testing.T) {
		in := eventInput(f.venue.ID, "R", "S", "A")
		in.QueueOpensAt = time.Date(2026, 12, 1, 11, 0, 42, 0, time.UTC)
		ev := mustCreateEvent(t, f.es, in)
		for save := 1; save <= 3; save++ {
			form := ev.Input()
			for _, p := range []*time.Time{&form.StartsAt, &form.QueueOpensAt, &form.SaleEndsAt} {
				shown := boxoffice.FormatLocalTime(*p, ev.TimeZone)
				var err error
				if *p, err = boxoffice.ReparseLocalTime(shown, form.TimeZone, "", *p); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			if ev, err = f.es.UpdateEvent(ctx, ev.ID, form); err != nil {
				t.Fatal(err)
			}
			if !ev.QueueOpensAt.Equal(in.QueueOpensAt) || !ev.SaleEndsAt.Equal(in.SaleEndsAt) || !ev.StartsAt.Equal(in.StartsAt) {
				t.Fatalf("save %d moved the times: %v %v %v, want %v %v %v", save,
					ev.QueueOpensAt, ev.SaleEndsAt, ev.StartsAt, in.QueueOpensAt, in.SaleEndsAt, in.StartsAt)
			}
		}
	})

	t.Run("NewVenueBeforeOrders", func(t *testing.T) {
		ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
		in := ev.Input()
		in.VenueID = small.ID
		in.Grades = in.Grades[:1]
		got, err := f.es.UpdateEvent(ctx, ev.ID, in)
		if err != nil {
			t.Fatalf("UpdateEvent: %v %v", err, fieldsOf(err))
		}
		seats, err := f.es.EventSeats(ctx, ev.ID)
		if err != nil || got.VenueName != "Small" || len(seats) != 2 || seats[0].Label != "Z-1-1" || gradeSummary(got) != "R 100 2/2" {
			t.Fatalf("after the venue change: %+v (%s), seats %v, %v", got, gradeSummary(got), seats, err)
		}
	})

	t.Run("ErrNewVenueMissingGrades", func(t *testing.T) {
		ev := mustCreateEvent(t, f.es, eventInput(small.ID, "R"))
		in := ev.Input()
		in.VenueID = f.venue.ID
		_, err := f.es.UpdateEvent(ctx, ev.ID, in)
		if got := fieldsOf(err)["grades"]; !strings.Contains(got, "grade A, S:") {
			t.Fatalf("UpdateEvent = %v, Fields[grades] %q; want A and S named", err, got)
		}
	})

	t.Run("ErrNewVenueAfterOrders", func(t *testing.T) {
		ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
		sell(t, f.db, ev.ID, "A-1-1")
		in := ev.Input()
		in.VenueID = small.ID
		_, err := f.es.UpdateEvent(ctx, ev.ID, in)
		wantCode(t, err, boxoffice.ECONFLICT)
		if msg := messageOf(err); !strings.Contains(msg, "venue") {
			t.Fatalf("message %q does not name the venue", msg)
		}
	})

	t.Run("ErrSoldGradePrice", func(t *testing.T) {
		ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
		sell(t, f.db, ev.ID, "A-1-1", "C-1-1")
		in := ev.Input()
		in.Grades[0].Price, in.Grades[1].Price, in.Grades[2].Price = 101, 91, 81
		_, err := f.es.UpdateEvent(ctx, ev.ID, in)
		wantCode(t, err, boxoffice.ECONFLICT)
		var e *boxoffice.Error
		if !errors.As(err, &e) || !slices.Equal(e.Details["grades"].([]string), []string{"A", "R"}) {
			t.Fatalf("Details[grades] = %v, want [A R]", e.Details["grades"])
		}
		// Unsold grades' prices, and names and colours of any grade, may change.
		in = ev.Input()
		in.Grades[0].Name, in.Grades[0].Color, in.Grades[1].Price = boxoffice.Text{"en": "Royal"}, "#abcdef", 95
		got, err := f.es.UpdateEvent(ctx, ev.ID, in)
		if err != nil || gradeSummary(got) != "R 100 9/10, S 95 4/4, A 80 2/3" || got.Grades[0].Name.In("en") != "Royal" || got.Grades[0].Color != "#abcdef" {
			t.Fatalf("UpdateEvent(unsold price) = %s, %v", gradeSummary(got), err)
		}
	})

	t.Run("ErrGradeOfSeatsRemoved", func(t *testing.T) {
		ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
		in := ev.Input()
		in.Grades = in.Grades[:2]
		_, err := f.es.UpdateEvent(ctx, ev.ID, in)
		if got := fieldsOf(err)["grades"]; !strings.Contains(got, "grade A:") {
			t.Fatalf("UpdateEvent = %v, Fields[grades] %q; want A named", err, got)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := f.es.UpdateEvent(ctx, 999999, eventInput(f.venue.ID, "R", "S", "A"))
		wantCode(t, err, boxoffice.ENOTFOUND)
	})
}

// A price change racing with sales of that grade: every sale that commits
// sees, right after taking its seat, the price the grade ends with. Either
// the update sees a sale and is refused, or the sales wait for it.
func TestEvents_UpdateEvent_ConcurrentSales(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	var refused, applied int
	for round := range 20 {
		ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
		orderID := sell(t, f.db, ev.ID)
		var accountID int64
		if err := f.db.Pool.QueryRow(ctx, `SELECT account_id FROM orders WHERE id = $1`, orderID).Scan(&accountID); err != nil {
			t.Fatal(err)
		}
		in := ev.Input()
		in.Grades[0].Price = 555
		seen := make([]int64, 10)
		var updateErr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			_, updateErr = f.es.UpdateEvent(ctx, ev.ID, in)
		})
		for i := range 10 {
			wg.Go(func() {
				<-start
				err := pgx.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
					label := fmt.Sprintf("A-%d-%d", i/5+1, i%5+1)
					if _, err := tx.Exec(ctx, `INSERT INTO sold_seat (event_id, seat_label, order_id, account_id) VALUES ($1, $2, $3, $4)`,
						ev.ID, label, orderID, accountID); err != nil {
						return err
					}
					return tx.QueryRow(ctx, `SELECT price FROM grade WHERE event_id = $1 AND code = 'R'`, ev.ID).Scan(&seen[i])
				})
				if err != nil {
					t.Errorf("sale: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		var final int64
		if err := f.db.Pool.QueryRow(ctx, `SELECT price FROM grade WHERE event_id = $1 AND code = 'R'`, ev.ID).Scan(&final); err != nil {
			t.Fatal(err)
		}
		switch boxoffice.ErrorCode(updateErr) {
		case "":
			applied++
		case boxoffice.ECONFLICT:
			refused++
		default:
			t.Fatalf("round %d: UpdateEvent: %v", round, updateErr)
		}
		for i, p := range seen {
			if p != final {
				t.Fatalf("round %d: sale %d saw price %d, the grade ended at %d (update error %v)", round, i, p, final, updateErr)
			}
		}
	}
	t.Logf("%d updates applied before the sales, %d refused after them", applied, refused)
}

// Many admins publish one draft at once: exactly one succeeds, the rest are
// told it is on sale already.
func TestEvents_PublishEvent_Concurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	for round := range 5 {
		ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
		var ok, conflict atomic.Int32
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				got, err := f.es.PublishEvent(ctx, ev.ID)
				switch boxoffice.ErrorCode(err) {
				case "":
					if got.Status != boxoffice.EventOnSale {
						t.Errorf("PublishEvent = status %s, want on_sale", got.Status)
					}
					ok.Add(1)
				case boxoffice.ECONFLICT:
					conflict.Add(1)
				default:
					t.Errorf("PublishEvent: %v", err)
				}
			})
		}
		wg.Wait()
		if ok.Load() != 1 || conflict.Load() != 199 {
			t.Fatalf("round %d: %d published, %d conflicts; want 1 and 199", round, ok.Load(), conflict.Load())
		}
	}
}

func TestEvents_Status(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
	if got, err := f.es.PublishEvent(ctx, ev.ID); err != nil || got.Status != boxoffice.EventOnSale {
		t.Fatalf("PublishEvent = %v, %v", got, err)
	}
	if got, err := f.es.CloseEvent(ctx, ev.ID); err != nil || got.Status != boxoffice.EventClosed {
		t.Fatalf("CloseEvent = %v, %v", got, err)
	}
	_, err := f.es.CloseEvent(ctx, ev.ID)
	wantCode(t, err, boxoffice.ECONFLICT)
	_, err = f.es.PublishEvent(ctx, ev.ID)
	wantCode(t, err, boxoffice.ECONFLICT)
	draft := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
	if got, err := f.es.CloseEvent(ctx, draft.ID); err != nil || got.Status != boxoffice.EventClosed {
		t.Fatalf("CloseEvent(draft) = %v, %v", got, err)
	}
	_, err = f.es.PublishEvent(ctx, 999999)
	wantCode(t, err, boxoffice.ENOTFOUND)
	_, err = f.es.CloseEvent(ctx, 999999)
	wantCode(t, err, boxoffice.ENOTFOUND)
}

// An event whose sale has ended cannot be put on sale: nobody could buy.
func TestEvents_PublishEvent_SaleEnded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f.db.Now = func() time.Time { return now }
	tests := []struct {
		name     string
		saleEnds time.Time
		want     string
	}{
		{"Ended", now.Add(-time.Hour), boxoffice.ECONFLICT},
		{"EndsNow", now, boxoffice.ECONFLICT},
		{"EndsLater", now.Add(time.Second), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := eventInput(f.venue.ID, "R", "S", "A")
			in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = tt.saleEnds.Add(-48*time.Hour), tt.saleEnds, tt.saleEnds.Add(time.Hour)
			ev := mustCreateEvent(t, f.es, in)
			got, err := f.es.PublishEvent(ctx, ev.ID)
			wantCode(t, err, tt.want)
			if tt.want != "" {
				if !strings.Contains(messageOf(err), "already ended") {
					t.Errorf("message %q, want it to say the sale has ended", messageOf(err))
				}
				if got, err = f.es.FindEventByID(ctx, ev.ID); err != nil || got.Status != boxoffice.EventDraft {
					t.Errorf("after the refusal: %v, %v; want the draft unchanged", got, err)
				}
			} else if got.Status != boxoffice.EventOnSale {
				t.Errorf("PublishEvent = status %s, want on_sale", got.Status)
			}
		})
	}
}

func TestEvents_SetAdmission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
	paused, rate := true, 25
	got, err := f.es.SetAdmission(ctx, ev.ID, &paused, nil)
	if err != nil || !got.Paused || got.AdmissionRate != 100 {
		t.Fatalf("SetAdmission(pause) = %+v, %v; want paused at rate 100", got, err)
	}
	got, err = f.es.SetAdmission(ctx, ev.ID, nil, &rate)
	if err != nil || !got.Paused || got.AdmissionRate != 25 {
		t.Fatalf("SetAdmission(rate) = %+v, %v; want paused at rate 25", got, err)
	}
	paused = false
	if got, err = f.es.SetAdmission(ctx, ev.ID, &paused, nil); err != nil || got.Paused {
		t.Fatalf("SetAdmission(resume) = %+v, %v", got, err)
	}
	for _, bad := range []int{0, boxoffice.MaxAdmissionRate + 1} {
		_, err := f.es.SetAdmission(ctx, ev.ID, nil, &bad)
		if fieldsOf(err)["rate"] == "" {
			t.Errorf("SetAdmission(rate %d) = %v, want Fields[rate]", bad, err)
		}
	}
	if _, err := f.es.SetAdmission(ctx, ev.ID, nil, nil); fieldsOf(err)["paused"] == "" {
		t.Errorf("SetAdmission(nothing) = %v, want Fields[paused]", err)
	}
	_, err = f.es.SetAdmission(ctx, 999999, &paused, nil)
	wantCode(t, err, boxoffice.ENOTFOUND)
}

func TestEvents_FindEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	f.db.Now = func() time.Time { return now }
	mk := func(title string, opens time.Time) *boxoffice.Event {
		in := eventInput(f.venue.ID, "R", "S", "A")
		in.Title, in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = boxoffice.Text{"en": title}, opens, opens.Add(48*time.Hour), opens.Add(72*time.Hour)
		return mustCreateEvent(t, f.es, in)
	}
	ended := mk("Ended", now.Add(-72*time.Hour))                    // sale ended a day ago
	later := mk("Later", now.Add(24*time.Hour))                     // on sale, queue opens tomorrow
	running := mk("Running", now.Add(-time.Hour))                   // on sale, queue open
	draft := mk("Draft", now.Add(-2*time.Hour))                     // stays a draft
	f.db.Now = func() time.Time { return now.Add(-72 * time.Hour) } // publish before any sale ended
	for _, e := range []*boxoffice.Event{ended, later, running} {
		if _, err := f.es.PublishEvent(ctx, e.ID); err != nil {
			t.Fatal(err)
		}
	}
	f.db.Now = func() time.Time { return now }
	titles := func(filter boxoffice.EventFilter) []string {
		events, err := f.es.FindEvents(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range events {
			if e.VenueName != "Hall" || e.Grades != nil {
				t.Fatalf("FindEvents row %+v: want the venue name and no grades", e)
			}
			got = append(got, e.Title.In("en"))
		}
		return got
	}
	for _, tt := range []struct {
		filter boxoffice.EventFilter
		want   []string
	}{
		{boxoffice.EventFilter{}, []string{"Ended", "Draft", "Running", "Later"}},
		{boxoffice.EventFilter{Statuses: []string{boxoffice.EventOnSale}, Upcoming: true}, []string{"Running", "Later"}},
		{boxoffice.EventFilter{Statuses: []string{boxoffice.EventDraft}}, []string{draft.Title.In("en")}},
		{boxoffice.EventFilter{Upcoming: true}, []string{"Draft", "Running", "Later"}},
	} {
		if got := titles(tt.filter); !slices.Equal(got, tt.want) {
			t.Errorf("FindEvents(%+v) = %v, want %v", tt.filter, got, tt.want)
		}
	}
}

// A sale opening at 10:00 Berlin time on the spring-forward day is stored
// and read back as the right instant.
func TestEvents_BerlinDSTOpening(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	in := eventInput(f.venue.ID, "R", "S", "A")
	in.TimeZone = "Europe/Berlin"
	var err error
	if in.QueueOpensAt, err = boxoffice.ParseLocalTime("2026-03-29T10:00", in.TimeZone); err != nil {
		t.Fatal(err)
	}
	in.SaleEndsAt, in.StartsAt = in.QueueOpensAt.Add(24*time.Hour), in.QueueOpensAt.Add(48*time.Hour)
	f.db.Now = func() time.Time { return in.QueueOpensAt } // published while the sale ran
	ev := mustCreateEvent(t, f.es, in)
	if ev, err = f.es.PublishEvent(ctx, ev.ID); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 29, 8, 0, 0, 0, time.UTC)
	if ev.QueueOpen(at.Add(-time.Second)) || !ev.QueueOpen(at) {
		t.Fatalf("queue opening %v: open a second before 08:00 UTC = %v, at it = %v; want false, true", ev.QueueOpensAt, ev.QueueOpen(at.Add(-time.Second)), ev.QueueOpen(at))
	}
	if got := boxoffice.FormatLocalTime(ev.QueueOpensAt, ev.TimeZone); got != "2026-03-29T10:00" {
		t.Fatalf("shown as %q, want 2026-03-29T10:00", got)
	}
}

// The pre-queue's time is stored, may change until the pre-queue opens,
// and is fixed after (fans hold draw tickets under it).
func TestEvents_UpdateEvent_Prequeue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	in := eventInput(f.venue.ID, "R", "S", "A")
	in.QueueOpensAt = fixtureNow.Add(time.Hour)
	in.SaleEndsAt, in.StartsAt = in.QueueOpensAt.Add(time.Hour), in.QueueOpensAt.Add(2*time.Hour)
	in.PrequeueOpensAt = in.QueueOpensAt.Add(-10 * time.Minute)
	ev := mustCreateEvent(t, f.es, in)
	if !ev.PrequeueOpensAt.Equal(in.PrequeueOpensAt) {
		t.Fatalf("pre-queue opens at %v, want %v", ev.PrequeueOpensAt, in.PrequeueOpensAt)
	}
	in = ev.Input()
	in.PrequeueOpensAt = fixtureNow.Add(-time.Minute) // opened a minute ago: allowed, as it had not opened
	if ev, err := f.es.UpdateEvent(ctx, ev.ID, in); err != nil || !ev.PrequeueOpensAt.Equal(in.PrequeueOpensAt) {
		t.Fatalf("UpdateEvent before the pre-queue opened = %+v, %v", ev, err)
	}
	in.PrequeueOpensAt = in.PrequeueOpensAt.Add(-time.Minute)
	_, err := f.es.UpdateEvent(ctx, ev.ID, in)
	if _, bad := fieldsOf(err)["prequeue_opens_at"]; !bad {
		t.Fatalf("UpdateEvent of an opened pre-queue's time = %v %v, want refused on prequeue_opens_at", err, fieldsOf(err))
	}
	in.PrequeueOpensAt = in.PrequeueOpensAt.Add(time.Minute)
	in.Title = boxoffice.Text{"en": "Renamed"}
	if _, err := f.es.UpdateEvent(ctx, ev.ID, in); err != nil {
		t.Fatalf("UpdateEvent keeping the pre-queue's time: %v %v", err, fieldsOf(err))
	}
}
