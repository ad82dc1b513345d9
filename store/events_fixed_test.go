package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/jackc/pgx/v5"
)

// An event's seats are fixed once its queue opens or it has an order or a
// blocked seat: the UPDATE refuses a new venue then, and the opening of an
// opened queue cannot move later (which would make the seats changeable
// again under the copies kept in memory).
func TestEvents_UpdateEvent_SeatsFixed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	small := mustCreateVenue(t, f.vs, "Small", generate(t, section("Z", 1, 2, "R")))
	opened := func(t *testing.T) *boxoffice.Event {
		in := eventInput(f.venue.ID, "R", "S", "A")
		in.QueueOpensAt = fixtureNow.Add(-time.Hour)
		return mustCreateEvent(t, f.es, in)
	}

	t.Run("ErrNewVenueQueueOpen", func(t *testing.T) {
		ev := opened(t)
		in := ev.Input()
		in.VenueID, in.Grades = small.ID, in.Grades[:1]
		_, err := f.es.UpdateEvent(ctx, ev.ID, in)
		wantCode(t, err, boxoffice.ECONFLICT)
		if msg := messageOf(err); !strings.Contains(msg, "queue") {
			t.Errorf("message %q does not say the queue opened", msg)
		}
		if got, _ := f.es.FindEventByID(ctx, ev.ID); got.VenueID != f.venue.ID {
			t.Errorf("venue %d after the refusal, want %d", got.VenueID, f.venue.ID)
		}
	})

	t.Run("ErrQueueOpeningLater", func(t *testing.T) {
		ev := opened(t)
		in := ev.Input()
		in.QueueOpensAt = fixtureNow.Add(time.Hour)
		_, err := f.es.UpdateEvent(ctx, ev.ID, in)
		if got := fieldsOf(err)["queue_opens_at"]; got == "" {
			t.Fatalf("UpdateEvent = %v, want a reason for queue_opens_at", err)
		}
		in.QueueOpensAt = fixtureNow.Add(-2 * time.Hour) // earlier is fine
		if _, err := f.es.UpdateEvent(ctx, ev.ID, in); err != nil {
			t.Fatalf("moving an opened queue's opening earlier: %v", err)
		}
	})

	t.Run("ErrNewVenueBlocked", func(t *testing.T) {
		ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
		var admin int64
		if err := f.db.Pool.QueryRow(ctx, `INSERT INTO account (email, name, password_hash) VALUES ('blocker@example.com', 'Admin', 'x') RETURNING id`).Scan(&admin); err != nil {
			t.Fatal(err)
		}
		if _, err := f.db.Pool.Exec(ctx, `INSERT INTO blocked_seat (event_id, seat_label, blocked_by) VALUES ($1, 'A-1-1', $2)`, ev.ID, admin); err != nil {
			t.Fatal(err)
		}
		in := ev.Input()
		in.VenueID, in.Grades = small.ID, in.Grades[:1]
		_, err := f.es.UpdateEvent(ctx, ev.ID, in)
		wantCode(t, err, boxoffice.ECONFLICT)
	})
}

// Orders racing a venue change, over many rounds: either the venue changed
// and no order was made on the old seats, or an order was made and the
// venue stayed. Never both, never an error of another kind.
func TestEvents_UpdateEvent_VenueRacesOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	small := mustCreateVenue(t, f.vs, "Small", generate(t, section("Z", 1, 2, "R")))
	var buyer int64
	if err := f.db.Pool.QueryRow(ctx, `INSERT INTO account (email, name, password_hash) VALUES ('racer@example.com', 'Buyer', 'x') RETURNING id`).Scan(&buyer); err != nil {
		t.Fatal(err)
	}
	const rounds, buyers = 40, 2
	var changed, refused int
	for round := range rounds {
		ev := mustCreateEvent(t, f.es, eventInput(f.venue.ID, "R", "S", "A"))
		in := ev.Input()
		in.VenueID, in.Grades = small.ID, in.Grades[:1]
		var updateErr error
		var ordered atomic.Int64
		storetest.AtOnce(buyers+1, func(i int) {
			if i == buyers {
				_, updateErr = f.es.UpdateEvent(ctx, ev.ID, in)
				return
			}
			err := pgx.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
				id := fmt.Sprintf("race-%d-%d-%d", ev.ID, round, i)
				if _, err := tx.Exec(ctx, `INSERT INTO orders (id, event_id, account_id, amount, currency, order_name, expires_at)
					VALUES ($1, $2, $3, 100, 'KRW', 'Tickets', now() + interval '10 minutes')`, id, ev.ID, buyer); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO order_item (order_id, event_id, seat_label, grade, price) VALUES ($1, $2, $3, 'R', 100)`,
					id, ev.ID, fmt.Sprintf("A-%d-%d", i%2+1, i%5+1))
				return err
			})
			if err == nil {
				ordered.Add(1)
			}
		})
		got, err := f.es.FindEventByID(ctx, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		var orders int
		if err := f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE event_id = $1`, ev.ID).Scan(&orders); err != nil {
			t.Fatal(err)
		}
		switch boxoffice.ErrorCode(updateErr) {
		case "":
			changed++
			if got.VenueID != small.ID || orders != 0 {
				t.Fatalf("round %d: the venue changed with %d orders on the old seats (venue %d)", round, orders, got.VenueID)
			}
		case boxoffice.ECONFLICT:
			refused++
			if got.VenueID != f.venue.ID || orders == 0 {
				t.Fatalf("round %d: venue change refused, yet venue %d and %d orders", round, got.VenueID, orders)
			}
		default:
			t.Fatalf("round %d: UpdateEvent: %v", round, updateErr)
		}
		if int(ordered.Load()) != orders {
			t.Fatalf("round %d: %d orders committed, %d in the table", round, ordered.Load(), orders)
		}
	}
	t.Logf("%d venue changes applied before the orders, %d refused", changed, refused)
}
