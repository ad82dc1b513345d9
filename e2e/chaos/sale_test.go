package chaos

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// sale is an event on sale in a database and under a Redis key prefix of
// its own, for instances of the binary to serve.
type sale struct {
	DatabaseURL string
	DB          *store.DB
	Redis       *store.Redis // the shared Redis, under the sale's prefix
	Event       *boxoffice.Event
	Seats       []string // every seat's label, in the venue's order
}

// newSale creates a fresh database and Redis prefix (both removed when t
// ends, after the instances started later have stopped) and, through the
// store, a venue of two sections side by side, A (grade R) and B (grade
// S), each of rows rows of perRow seats, and an event on it: published, its
// queue open since a minute ago and its sale ending in a day, 5 tickets per
// account, holds of 5 minutes and entry tokens of 10 (longer than any
// test's sale), admitting rate fans per second. On a Redis Cluster with
// master set, the event's hash tag falls on that master (drafts whose ids
// fall elsewhere are left behind); "" takes the first event.
func newSale(t *testing.T, rows, perRow, rate int, master string) *sale {
	t.Helper()
	ctx := context.Background()
	s := &sale{DatabaseURL: storetest.NewDatabaseURL(t), Redis: storetest.MustOpenRedis(t)}
	db, err := store.OpenDB(ctx, s.DatabaseURL)
	if err != nil {
		t.Fatalf("open the sale's database: %v", err)
	}
	t.Cleanup(db.Close)
	s.DB = db
	seats, err := boxoffice.GenerateSeats([]boxoffice.SectionSpec{
		{Name: "A", Rows: rows, SeatsPerRow: perRow, Grade: "R"},
		{Name: "B", Rows: rows, SeatsPerRow: perRow, Grade: "S"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range seats {
		s.Seats = append(s.Seats, st.Label)
	}
	venue, err := (&store.Venues{DB: db}).CreateVenue(ctx, "Chaos Hall", seats)
	if err != nil {
		t.Fatal(err)
	}
	in := boxoffice.NewEventInput()
	in.VenueID, in.Title = venue.ID, boxoffice.Text{"en": "Chaos Night"}
	in.Grades = []boxoffice.Grade{{Code: "R", Name: boxoffice.Text{"en": "R seat"}, Price: 150000}, {Code: "S", Name: boxoffice.Text{"en": "S seat"}, Price: 90000}}
	now := time.Now().Truncate(time.Second)
	in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = now.Add(-time.Minute), now.Add(24*time.Hour), now.Add(48*time.Hour)
	in.MaxPerAccount, in.HoldTTL, in.TokenTTL, in.AdmissionRate = 5, 5*time.Minute, 10*time.Minute, rate
	events := &store.Events{DB: db}
	var ev *boxoffice.Event
	for tries := 0; ; tries++ {
		if ev, err = events.CreateEvent(ctx, in); err != nil {
			t.Fatalf("create the event: %v %v", err, boxoffice.ErrorProblems(err))
		}
		on, err := storetest.MasterOf(ctx, s.Redis, s.Redis.Key("queue:{%d}", ev.ID))
		if err != nil {
			t.Fatal(err)
		}
		if master == "" || on == master {
			break
		}
		if tries == 200 {
			t.Fatalf("no event id among the first 200 has its hash tag on master %s", master)
		}
	}
	if s.Event, err = events.PublishEvent(ctx, ev.ID); err != nil {
		t.Fatalf("publish the event: %v", err)
	}
	return s
}

// env is what an instance needs to serve the sale: DATABASE_URL, REDIS_URL
// and REDIS_PREFIX.
func (s *sale) env() []string {
	return []string{"DATABASE_URL=" + s.DatabaseURL, "REDIS_URL=" + storetest.RedisURL(), "REDIS_PREFIX=" + s.Redis.Prefix}
}

// published waits (as long as ctx lasts) until the instances' outbox relays
// have sent every outbox row, then reads the stream they publish to and
// counts its confirmed-order events by order id.
func (s *sale) published(ctx context.Context, t *testing.T) map[string]int {
	t.Helper()
	for {
		var unsent int
		if err := s.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE sent_at IS NULL`).Scan(&unsent); err != nil {
			t.Fatalf("outbox rows left to send: %v", err)
		}
		if unsent == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d outbox rows still unsent: %v", unsent, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	entries, err := s.Redis.Client.XRange(ctx, s.Redis.Key(store.DefaultOutboxStream), "-", "+").Result()
	if err != nil {
		t.Fatalf("read the outbox stream: %v", err)
	}
	out := map[string]int{}
	for _, e := range entries {
		var ev store.OrderConfirmedEvent
		if p, _ := e.Values["payload"].(string); e.Values["topic"] != store.OutboxTopicOrderConfirmed || json.Unmarshal([]byte(p), &ev) != nil {
			t.Errorf("outbox stream entry %s: %v, want a confirmed order's event", e.ID, e.Values)
			continue
		}
		out[ev.OrderID]++
	}
	return out
}
