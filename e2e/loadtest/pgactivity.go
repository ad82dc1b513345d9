package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// pgActivityEvery is how often sampleActivity reads pg_stat_activity.
const pgActivityEvery = 100 * time.Millisecond

// sampleActivity samples, every pgActivityEvery until the returned function
// is called, the bench database's backends that are running a statement
// (pg_stat_activity, state active, the sampler's own left out) by what
// they wait on; the returned function stops it and says how busy
// PostgreSQL was (activityText).
func (b *Bench) sampleActivity(ctx context.Context) func() string {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan string, 1)
	go func() {
		counts, samples := map[string]int{}, 0
		t := time.NewTicker(pgActivityEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				done <- activityText(counts, samples)
				return
			case <-t.C:
			}
			seen, err := b.activity(ctx)
			if ctx.Err() != nil {
				continue
			}
			if err != nil {
				done <- "not measured: " + err.Error()
				return
			}
			samples++
			for k, n := range seen {
				counts[k] += n
			}
		}
	}()
	return func() string {
		cancel()
		return <-done
	}
}

// activity reads the bench database's active backends by what they wait
// on ("Lock: transactionid", "running" for nothing).
func (b *Bench) activity(ctx context.Context) (map[string]int, error) {
	rows, err := b.db.Pool.Query(ctx, `SELECT coalesce(wait_event_type || ': ' || wait_event, 'running'), count(*)
		FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
		GROUP BY 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var wait string
		var n int
		if err := rows.Scan(&wait, &n); err != nil {
			return nil, err
		}
		out[wait] = n
	}
	return out, rows.Err()
}

// activityText summarises samples of pg_stat_activity: counts are the
// active backends seen, in all samples, by what they waited on ("running"
// for none: on the CPU, or in a call PostgreSQL does not instrument).
// "2.4 backends running statements on average over 50 samples: running
// 1.1, Lock: transactionid 0.9, ..." (the three largest, then the rest).
func activityText(counts map[string]int, samples int) string {
	if samples == 0 {
		return "no sample taken"
	}
	total := 0
	type kv struct {
		k string
		n int
	}
	var xs []kv
	for k, n := range counts {
		total += n
		xs = append(xs, kv{k, n})
	}
	slices.SortFunc(xs, func(a, b kv) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.k, b.k)
	})
	s := float64(samples)
	text := fmt.Sprintf("%.1f backends running statements on average over %d samples", float64(total)/s, samples)
	var parts []string
	rest := 0
	for i, x := range xs {
		if i < 3 {
			parts = append(parts, fmt.Sprintf("%s %.1f", x.k, float64(x.n)/s))
		} else {
			rest += x.n
		}
	}
	if rest > 0 {
		parts = append(parts, fmt.Sprintf("others %.1f", float64(rest)/s))
	}
	if len(parts) > 0 {
		text += ": " + strings.Join(parts, ", ")
	}
	return text
}
