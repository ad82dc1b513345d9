package handlers_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// Two instances share PostgreSQL and Redis, each with its copy of the
// sessions it served: a fan logged in on one is logged in on the other
// (which then answers from its copy), and logging out on one ends the
// session on the other within a second.
func TestSessions_LogOutOnEveryInstance(t *testing.T) {
	t.Parallel()
	db, rdb := storetest.MustOpenDB(t), storetest.MustOpenRedis(t)
	a, b := newTestAppOn(t, db, rdb), newTestAppOn(t, db, rdb)
	waitFor(t, "both instances to copy sessions", func() bool { return a.Sessions.Copying() && b.Sessions.Copying() })
	fan, _ := a.newAccount(t, "both@example.com", boxoffice.RoleFan)
	cookie := "Cookie: boxoffice_session=" + a.session(t, fan)
	onB := b.newClient(t)
	loggedIn := func() bool {
		return testid(doc(t, onB.do("GET", "/login", nil, cookie)), "nav-account") == "both@example.com"
	}
	waitFor(t, "instance b to answer the session from its copy", func() bool {
		misses := b.metric(t, "boxoffice_session_copy_misses_total")
		return loggedIn() && b.metric(t, "boxoffice_session_copy_misses_total") == misses
	})

	wantStatus(t, fan.do("POST", "/logout", url.Values{}), http.StatusSeeOther)
	const bound = time.Second
	for deadline := time.Now().Add(bound); loggedIn(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("instance b still serves the session %v after the log-out on instance a", bound)
		}
	}
}
