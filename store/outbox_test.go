package store_test

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/boxoffice/boxoffice/checkout/checkouttest"
	"github.com/boxoffice/boxoffice/payment/sandbox"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/redis/go-redis/v9"
)

// insertOutbox writes n outbox rows as confirmations would.
func insertOutbox(tb testing.TB, db *store.DB, n int) {
	tb.Helper()
	_, err := db.Pool.Exec(context.Background(), `INSERT INTO outbox (topic, payload)
		SELECT 'order.confirmed', jsonb_build_object('order_id', 'order-' || i) FROM generate_series(1, $1) AS i`, n)
	if err != nil {
		tb.Fatal(err)
	}
}

// streamIDs reads the outbox ids of the stream's entries, in stream order.
func streamIDs(tb testing.TB, r *store.Redis, key string) []int64 {
	tb.Helper()
	entries, err := r.Client.XRange(context.Background(), key, "-", "+").Result()
	if err != nil {
		tb.Fatal(err)
	}
	ids := make([]int64, len(entries))
	for i, e := range entries {
		if ids[i], err = strconv.ParseInt(e.Values["outbox_id"].(string), 10, 64); err != nil {
			tb.Fatalf("entry %v: %v", e.Values, err)
		}
	}
	return ids
}

// Several relays at once, while rows keep coming: every row is published in
// id order, and marked sent.
func TestOutboxRelay_InOrder(t *testing.T) {
	t.Parallel()
	db, r := storetest.MustOpenDB(t), storetest.MustOpenRedis(t)
	ctx := context.Background()
	relays := make([]*store.OutboxRelay, 4)
	for i := range relays {
		relays[i] = &store.OutboxRelay{DB: db, Redis: r, Batch: 7}
	}
	const total = 300
	insertOutbox(t, db, total/2)
	var published atomic.Int64
	storetest.AtOnce(len(relays)+1, func(i int) {
		if i == len(relays) {
			insertOutbox(t, db, total/2) // a second burst while the relays run
			return
		}
		for range 200 {
			n, err := relays[i].RelayOnce(ctx)
			if err != nil {
				t.Errorf("RelayOnce: %v", err)
				return
			}
			published.Add(int64(n))
		}
	})
	for { // whatever the burst left
		n, err := relays[0].RelayOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		published.Add(int64(n))
	}
	ids := streamIDs(t, r, relays[0].StreamKey())
	if len(ids) != total || published.Load() != total {
		t.Fatalf("%d entries in the stream, %d reported published; want %d", len(ids), published.Load(), total)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("entry %d has outbox id %d after %d, want increasing ids", i, ids[i], ids[i-1])
		}
	}
	var unsent int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE sent_at IS NULL`).Scan(&unsent); err != nil || unsent != 0 {
		t.Errorf("%d rows unsent (%v), want 0", unsent, err)
	}
}

// With Redis unreachable nothing is marked sent; the next relay sends it all.
func TestOutboxRelay_RedisDown(t *testing.T) {
	t.Parallel()
	db, r := storetest.MustOpenDB(t), storetest.MustOpenRedis(t)
	ctx := context.Background()
	insertOutbox(t, db, 5)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := ln.Addr().String()
	ln.Close()
	dead := &store.Redis{Client: redis.NewClient(&redis.Options{Addr: deadAddr, MaxRetries: -1}), Prefix: r.Prefix}
	defer dead.Close()
	if n, err := (&store.OutboxRelay{DB: db, Redis: dead}).RelayOnce(ctx); err == nil || n != 0 {
		t.Fatalf("RelayOnce with Redis down = %d, %v; want an error", n, err)
	}
	relay := &store.OutboxRelay{DB: db, Redis: r}
	if n, err := relay.RelayOnce(ctx); err != nil || n != 5 {
		t.Fatalf("RelayOnce after = %d, %v; want 5", n, err)
	}
	if ids := streamIDs(t, r, relay.StreamKey()); len(ids) != 5 {
		t.Errorf("%d entries, want 5", len(ids))
	}
}

// A confirmation's outbox row reaches the stream with the order's payload.
func TestOutboxRelay_Confirmation(t *testing.T) {
	t.Parallel()
	env := checkouttest.New(t, 10)
	o := env.Order(t, env.Account(t), env.Event.R[0], env.Event.R[1])
	key, amount := env.Pay(t, o, sandbox.ScenarioWebhookNever)
	env.MustRedirect(t, o.ID, key, amount)
	relay := &store.OutboxRelay{DB: env.DB, Redis: env.R}
	if n, err := relay.RelayOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("RelayOnce = %d, %v; want 1", n, err)
	}
	entries, err := env.R.Client.XRange(context.Background(), relay.StreamKey(), "-", "+").Result()
	if err != nil || len(entries) != 1 {
		t.Fatalf("stream %v (%v), want one entry", entries, err)
	}
	var ev store.OrderConfirmedEvent
	if err := json.Unmarshal([]byte(entries[0].Values["payload"].(string)), &ev); err != nil {
		t.Fatal(err)
	}
	if entries[0].Values["topic"] != store.OutboxTopicOrderConfirmed || ev.OrderID != o.ID || ev.Amount != 300000 ||
		ev.PaymentKey != key || len(ev.Tickets) != 2 || len(ev.Seats) != 2 {
		t.Errorf("entry %v, payload %+v; want order %s, 300000, 2 tickets", entries[0].Values, ev, o.ID)
	}
}
