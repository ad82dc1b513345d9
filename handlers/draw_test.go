package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// The pre-queue through HTTP: fans who join before the opening get a draw
// ticket (one per fan, whatever the tabs) and see it with the commitment;
// GET /draw publishes the commitment, then after the opening the seed and
// the tickets, which verify, and each fan's place is their ticket's place.
func TestDraw(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.saleEvent(t)
	ctx := context.Background()
	if _, err := app.DB.Pool.Exec(ctx, `UPDATE event SET prequeue_opens_at = now() - interval '1 hour', queue_opens_at = now() + interval '1 hour' WHERE id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	join, draw := fmt.Sprintf("/events/%d/queue", ev.ID), fmt.Sprintf("/events/%d/draw", ev.ID)
	getJSON := func(c *client, path string) map[string]any {
		t.Helper()
		resp := c.do("GET", path, nil, "Accept: application/json")
		wantStatus(t, resp, http.StatusOK)
		return decode(t, resp)
	}

	const fans = 12
	clients := make([]*client, fans)
	tickets := make([]string, fans)
	for i := range clients {
		clients[i], _ = app.newAccount(t, fmt.Sprintf("early%d@example.com", i), boxoffice.RoleFan)
		for range 2 { // a second tab keeps the ticket
			resp := clients[i].do("POST", join, url.Values{}, "Accept: application/json")
			wantStatus(t, resp, http.StatusOK)
			m := decode(t, resp)
			tk, _ := m["ticket"].(string)
			if m["status"] != boxoffice.QueuePrequeue || !boxoffice.ValidDrawTicket(tk) || (tickets[i] != "" && tk != tickets[i]) {
				t.Fatalf("pre-queue join = %v, want status prequeue with one ticket per fan (had %q)", m, tickets[i])
			}
			tickets[i] = tk
		}
	}
	d := getJSON(app.newClient(t), draw)
	if _, seeded := d["seed"]; seeded || d["entrants"] != float64(fans) || len(fmt.Sprint(d["commitment"])) != 64 {
		t.Fatalf("draw before the opening = %v, want the commitment and %d entrants, no seed", d, fans)
	}
	page := clients[0].do("GET", join, nil)
	wantStatus(t, page, http.StatusOK)
	dp := doc(t, page)
	if testid(dp, "draw-ticket") != tickets[0] || testid(dp, "draw-commitment") != d["commitment"] {
		t.Fatalf("pre-queue page shows ticket %q and commitment %q, want %s and %s", testid(dp, "draw-ticket"), testid(dp, "draw-commitment"), tickets[0], d["commitment"])
	}

	// The opening.
	if _, err := app.DB.Pool.Exec(ctx, `UPDATE event SET queue_opens_at = now() - interval '1 second' WHERE id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	m := getJSON(clients[3], join+"/status")
	after := getJSON(app.newClient(t), draw)
	var published []string
	for _, v := range after["tickets"].([]any) {
		published = append(published, v.(string))
	}
	seed, _ := after["seed"].(string)
	if after["commitment"] != d["commitment"] || len(published) != fans {
		t.Fatalf("draw after the opening = %v, want the same commitment and %d tickets", after, fans)
	}
	if err := boxoffice.VerifyDraw(d["commitment"].(string), seed, published); err != nil {
		t.Fatalf("the published draw does not verify: %v", err)
	}
	if want := slices.Index(published, tickets[3]) + 1; m["status"] != "waiting" || m["position"] != float64(want) {
		t.Fatalf("fan 3's status after the opening = %v, want waiting at %d", m, want)
	}
	for i, c := range clients {
		want := slices.Index(published, tickets[i]) + 1
		if got := getJSON(c, join+"/status"); got["position"] != float64(want) {
			t.Errorf("fan %d at %v, want %d", i, got["position"], want)
		}
	}
	page = clients[5].do("GET", draw, nil)
	wantStatus(t, page, http.StatusOK)
	dp = doc(t, page)
	if testid(dp, "draw-place") != fmt.Sprint(slices.Index(published, tickets[5])+1) || testid(dp, "draw-seed") != seed {
		t.Errorf("draw page shows place %q and seed %q", testid(dp, "draw-place"), testid(dp, "draw-seed"))
	}
	// A fan who joins now queues behind every entrant.
	late, _ := app.newAccount(t, "late@example.com", boxoffice.RoleFan)
	resp := late.do("POST", join, url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	if m := decode(t, resp); m["position"] != float64(fans+1) {
		t.Errorf("late join = %v, want position %d", m, fans+1)
	}
	resp = app.newClient(t).do("GET", fmt.Sprintf("/events/%d/draw", app.saleEvent(t).ID), nil, "Accept: application/json")
	wantStatus(t, resp, http.StatusNotFound)
	var e map[string]any
	json.NewDecoder(resp.Body).Decode(&e)
	if e["error"] != "not_found" {
		t.Errorf("draw of an event without a pre-queue = %v", e)
	}
}

// Before the pre-queue opens, a join is refused naming the pre-queue's
// opening; once it runs, a pre-queue fan's waiting-room stream shows the
// fan's draw ticket as the page does (not "not in the queue"), and ends.
func TestDraw_PrequeueStream(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	ev := app.saleEvent(t)
	ctx := context.Background()
	if _, err := app.DB.Pool.Exec(ctx, `UPDATE event SET prequeue_opens_at = now() + interval '1 hour', queue_opens_at = now() + interval '2 hours' WHERE id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	join, stream := fmt.Sprintf("/events/%d/queue", ev.ID), fmt.Sprintf("/events/%d/queue/stream", ev.ID)
	fan, _ := app.newAccount(t, "prequeue-stream@example.com", boxoffice.RoleFan)
	for lang, want := range map[string]string{"en": "The pre-queue is not open yet.", "ko": "사전 대기열이 아직 열리지 않았습니다."} {
		resp := fan.do("POST", join, url.Values{}, "Accept: application/json", "Accept-Language: "+lang)
		wantStatus(t, resp, http.StatusConflict)
		m := decode(t, resp)
		if m["error"] != boxoffice.EQUEUENOTOPEN || !strings.HasPrefix(fmt.Sprint(m["message"]), want) || m["prequeue_opens_at"] == nil {
			t.Errorf("%s: join before the pre-queue opens = %v, want %s saying %q with prequeue_opens_at", lang, m, boxoffice.EQUEUENOTOPEN, want)
		}
	}

	if _, err := app.DB.Pool.Exec(ctx, `UPDATE event SET prequeue_opens_at = now() - interval '1 minute' WHERE id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	resp := fan.do("POST", join, url.Values{}, "Accept: application/json")
	wantStatus(t, resp, http.StatusOK)
	ticket, _ := decode(t, resp)["ticket"].(string)
	outsider, _ := app.newAccount(t, "not-in-prequeue@example.com", boxoffice.RoleFan)
	for _, tc := range []struct {
		who  *client
		want string
	}{{fan, `data-testid="queue-prequeue"`}, {outsider, `data-testid="queue-not-in"`}} {
		resp := tc.who.do("GET", stream, nil, "Accept: text/event-stream", "Accept-Language: ko")
		wantStatus(t, resp, http.StatusOK)
		body, err := io.ReadAll(resp.Body) // the stream ends after the final state
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := string(body)
		if !strings.Contains(got, tc.want) || !strings.Contains(got, "event: close") {
			t.Errorf("stream of %s: %q, want %s and the close event", tc.want, got, tc.want)
		}
		if tc.who == fan && (!strings.Contains(got, ticket) || !strings.Contains(got, "사전 대기열에 들어오셨습니다.")) {
			t.Errorf("pre-queue fan's stream %q does not show the ticket %s and the pre-queue's sentence", got, ticket)
		}
	}
}
