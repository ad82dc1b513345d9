package store_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The pool's counters and connections are on the registry, labelled with
// the pool's name, as the pool has them at the scrape.
func TestRegisterPoolMetrics(t *testing.T) {
	ctx := context.Background()
	pool, err := store.OpenPool(ctx, withPoolSize(t, storetest.NewDatabaseURL(t), 1))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	reg := prometheus.NewRegistry()
	if err := store.RegisterPoolMetrics(reg, &store.DB{Pool: pool}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := pool.Exec(ctx, `SELECT 1`); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// The ping of OpenPool, three statements and the connection held.
	want := `
# HELP boxoffice_pg_pool_acquires_total Connections acquired from the PostgreSQL pool.
# TYPE boxoffice_pg_pool_acquires_total counter
boxoffice_pg_pool_acquires_total{pool="primary"} 5
# HELP boxoffice_pg_pool_connections The pool's connections now, by state.
# TYPE boxoffice_pg_pool_connections gauge
boxoffice_pg_pool_connections{pool="primary",state="acquired"} 1
boxoffice_pg_pool_connections{pool="primary",state="constructing"} 0
boxoffice_pg_pool_connections{pool="primary",state="idle"} 0
# HELP boxoffice_pg_pool_max_connections The most connections the pool opens.
# TYPE boxoffice_pg_pool_max_connections gauge
boxoffice_pg_pool_max_connections{pool="primary"} 1
`
	err = testutil.GatherAndCompare(reg, strings.NewReader(want),
		"boxoffice_pg_pool_acquires_total", "boxoffice_pg_pool_connections", "boxoffice_pg_pool_max_connections")
	if err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 9 {
		t.Errorf("%d series (%v), want 9: five counters, three states and the maximum", n, err)
	}
}

// withPoolSize returns dsn with pool_max_conns set to n.
func withPoolSize(t *testing.T, dsn string, n int) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String()
}
