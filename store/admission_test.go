package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
)

func TestEvents_OpenQueues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	mk := func(title string, opens, ends time.Time, publish bool) *boxoffice.Event {
		in := eventInput(f.venue.ID, "R", "S", "A")
		in.Title, in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = boxoffice.Text{"en": title}, opens, ends, ends.Add(time.Hour)
		ev := mustCreateEvent(t, f.es, in)
		if publish {
			if _, err := f.es.PublishEvent(ctx, ev.ID); err != nil {
				t.Fatal(err)
			}
		}
		return ev
	}
	running := mk("Running", now.Add(-time.Hour), now.Add(time.Hour), true)
	opensNow := mk("Opens now", now, now.Add(time.Hour), true)
	mk("Ends now", now.Add(-time.Hour), now, true)
	mk("Later", now.Add(time.Second), now.Add(time.Hour), true)
	mk("Draft", now.Add(-time.Hour), now.Add(time.Hour), false)
	closed := mk("Closed", now.Add(-time.Hour), now.Add(time.Hour), true)
	if _, err := f.es.CloseEvent(ctx, closed.ID); err != nil {
		t.Fatal(err)
	}
	in := eventInput(f.venue.ID, "R", "S", "A")
	in.Title, in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = boxoffice.Text{"en": "Tuned"}, now.Add(-time.Hour), now.Add(time.Hour), now.Add(2*time.Hour)
	in.AdmissionRate, in.MaxShoppers, in.HoldTTL, in.TokenTTL = 7, 3, 60*time.Second, 90*time.Second
	tuned := mustCreateEvent(t, f.es, in)
	if _, err := f.es.PublishEvent(ctx, tuned.ID); err != nil {
		t.Fatal(err)
	}
	paused := true
	if _, err := f.es.SetAdmission(ctx, tuned.ID, &paused, nil); err != nil {
		t.Fatal(err)
	}

	// Every seat of "Running" but one is sold or blocked: not sold out; then
	// the last is sold: sold out, as the event's page says; then the blocked
	// seat is unblocked: not sold out again.
	seats, err := f.es.EventSeats(ctx, running.ID)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, s := range seats {
		labels = append(labels, s.Label)
	}
	buyer := newHoldAccount(t, f.db)
	sellSeats(t, f.db, running.ID, buyer, labels[2:]...)
	if _, err := f.db.Pool.Exec(ctx, `INSERT INTO blocked_seat (event_id, seat_label, blocked_by) VALUES ($1, $2, $3)`, running.ID, labels[1], buyer); err != nil {
		t.Fatal(err)
	}

	want := []boxoffice.AdmissionSettings{
		{EventID: running.ID, Rate: boxoffice.DefaultAdmissionRate, TokenTTL: boxoffice.DefaultTokenTTL},
		{EventID: opensNow.ID, Rate: boxoffice.DefaultAdmissionRate, TokenTTL: boxoffice.DefaultTokenTTL},
		{EventID: tuned.ID, Rate: 7, MaxShoppers: 3, Paused: true, TokenTTL: 90 * time.Second},
	}
	got, err := f.es.OpenQueues(ctx, now)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("OpenQueues = %+v, %v;\nwant %+v", got, err, want)
	}

	sellSeats(t, f.db, running.ID, buyer, labels[0])
	want[0].SoldOut = true
	if got, err = f.es.OpenQueues(ctx, now); err != nil || !slices.Equal(got, want) {
		t.Fatalf("OpenQueues after the last seat sold = %+v, %v;\nwant %+v", got, err, want)
	}

	if _, err := f.db.Pool.Exec(ctx, `DELETE FROM blocked_seat WHERE event_id = $1`, running.ID); err != nil {
		t.Fatal(err)
	}
	want[0].SoldOut = false
	if got, err = f.es.OpenQueues(ctx, now); err != nil || !slices.Equal(got, want) {
		t.Fatalf("OpenQueues after the blocked seat was unblocked = %+v, %v;\nwant %+v", got, err, want)
	}
}

// The admitter, reading the open queues from PostgreSQL, admits the fans of
// an open event at its rate and none of a closed one, and stops admitting
// once the event sells out.
func TestAdmitter_EventsSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	q := &store.Queue{Redis: storetest.MustOpenRedis(t)}
	now := time.Now()
	mk := func(title string, opens time.Time) *boxoffice.Event {
		in := eventInput(f.venue.ID, "R", "S", "A")
		in.Title, in.QueueOpensAt, in.SaleEndsAt, in.StartsAt = boxoffice.Text{"en": title}, opens, opens.Add(2*time.Hour), opens.Add(3*time.Hour)
		in.AdmissionRate = 2
		ev := mustCreateEvent(t, f.es, in)
		if _, err := f.es.PublishEvent(ctx, ev.ID); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	open, later := mk("Open", now.Add(-time.Hour)), mk("Later", now.Add(time.Hour))
	for _, ev := range []*boxoffice.Event{open, later} {
		for acct := int64(1); acct <= 5; acct++ {
			if _, err := q.Join(ctx, boxoffice.JoinRequest{EventID: ev.ID, AccountID: acct, SessionKey: sess(acct)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := &store.Admitter{Queue: q, Source: f.es, Tick: time.Second}
	tick := boxoffice.TickIndex(now, time.Second)
	res, err := a.AdmitTick(ctx, tick)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Events[open.ID].Admitted; !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("tick admitted %v of the open event, want [1 2]", got)
	}
	if _, ok := res.Events[later.ID]; ok {
		t.Errorf("the tick admitted from an event whose queue opens later: %+v", res.Events[later.ID])
	}

	seats, err := f.es.EventSeats(ctx, open.ID)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, s := range seats {
		labels = append(labels, s.Label)
	}
	sellSeats(t, f.db, open.ID, newHoldAccount(t, f.db), labels...)
	if res, err = a.AdmitTick(ctx, tick+1); err != nil {
		t.Fatal(err)
	}
	if got := res.Events[open.ID].Admitted; len(got) != 0 {
		t.Errorf("after the sell-out the tick admitted %v, want nobody", got)
	}
	p, err := q.Position(ctx, open.ID, 3, boxoffice.QueuePlace{})
	if err != nil || p.Status != boxoffice.QueueSoldOut {
		t.Errorf("a waiting fan after the sell-out: %+v, %v; want sold_out", p, err)
	}
}
