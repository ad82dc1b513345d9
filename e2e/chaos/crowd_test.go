package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/store"
)

// fanPassword is every fan's password.
const fanPassword = "chaos-fan-password"

// crowd drives fans through a sale over real HTTP as browsers would, each
// request to one of the instances at random, and keeps what they saw. Its
// counters are safe for concurrent use.
type crowd struct {
	t         *testing.T
	sale      *sale
	instances []*instance
	transport *http.Transport
	// forwardedFor, when not nil, gives fan n's X-Forwarded-For, as a load
	// balancer in front of the instances (or a proxy in front of it) adds.
	forwardedFor func(n int) string

	// races are the seat races of the first admitted fans; reserved are
	// their seats, which the other fans leave alone until the race.
	races    []*race
	reserved map[string]bool
	// probed is closed when the first admitted fan has probed the limit
	// with a seat of the first race, which then may run.
	probed chan struct{}

	admitted    atomic.Int64 // fans the queue admitted, numbered in the order they saw it
	soldOutLine atomic.Int64 // fans the queue told it was sold out
	noSeatLeft  atomic.Int64 // admitted fans who found no free seat
	racesLost   atomic.Int64 // holds refused with 409 seat_taken, outside the races
	// limitHolding counts the holds refused with 422 limit_exceeded to fans
	// holding 5 seats; limitOwning the fans owning 5 whose turn ended with
	// their order (a hold refused with 403 no_entry_token, reason done) and
	// who were refused a new turn (409 limit_reached).
	limitHolding, limitOwning atomic.Int64

	mu        sync.Mutex
	confirmed map[string]int  // order id -> seats, of the orders fans saw CONFIRMED
	expired   map[string]bool // orders the fans left unpaid and saw EXPIRED
	gaveUp    []giveUp        // the fans who found no free seat, for explainUnsold
}

// giveUp is a fan that found no free seat: when, and what its last seat
// map showed of the seats that were not sold (held, mine, or free but
// refused it as taken).
type giveUp struct {
	fan int
	at  time.Time
	saw map[string]string
}

// race is a group of fans, admitted one after the other, who try to hold
// the same seats at the same moment through instances at random: exactly
// one of them may win.
type race struct {
	seats           []string
	mu              sync.Mutex
	arrived         int
	start           chan struct{} // closed when the last member arrives
	winners, losers atomic.Int64
}

// raceSize is how many fans run each race.
const raceSize = 4

// newCrowd returns a crowd for the sale on the instances with races races
// of raceSize fans: the fans admitted 1st to 4th (counting from 0), 21st
// to 24th, and so on, each group racing for two seats at the end of the
// venue once the 0th fan has probed the limit with the first of them. The
// sale cannot sell out before every race is run (their seats wait for
// them), so it needs at least 20 × (races-1) + 5 fans.
func newCrowd(t *testing.T, s *sale, instances []*instance, races int) *crowd {
	c := &crowd{
		t: t, sale: s, instances: instances,
		// Idle connections close well before the instances' 10 s
		// ReadHeaderTimeout (web/serve.go), which also ends a connection
		// that was dialed and never used: otherwise a request could take
		// one from the pool as the instance closes it, and get an EOF.
		transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 5 * time.Second},
		reserved:  map[string]bool{}, probed: make(chan struct{}), confirmed: map[string]int{}, expired: map[string]bool{},
	}
	t.Cleanup(c.transport.CloseIdleConnections)
	for g := range races {
		end := len(s.Seats) - 2*g
		r := &race{seats: s.Seats[end-2 : end], start: make(chan struct{})}
		for _, l := range r.seats {
			c.reserved[l] = true
		}
		c.races = append(c.races, r)
	}
	return c
}

// raceOf returns the race of the fan admitted k-th (from 0), or nil.
func (c *crowd) raceOf(k int64) *race {
	g, i := k/20, k%20
	if g < int64(len(c.races)) && i >= 1 && i <= raceSize {
		return c.races[g]
	}
	return nil
}

// signUpWorkers is how many fans sign up at a time: a sale's fans signed
// up before it opened, not all in its first second (each costs a bcrypt).
const signUpWorkers = 4

// run signs n fans up, a few at a time, then sends them all through the
// sale at once, as a sale opens, and returns when each is done: it has
// joined the queue and either been told the sale sold out, found no free
// seat, or bought its seats. A fan that meets anything else (a 5xx, an
// unexpected answer, ctx's end) fails the test.
func (c *crowd) run(ctx context.Context, n int) {
	fans := make([]*fan, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range signUpWorkers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				jar, _ := cookiejar.New(nil)
				f := &fan{c: c, n: i, taken: map[string]bool{}, client: &http.Client{
					Jar: jar, Transport: c.transport, Timeout: time.Minute,
					CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
				}}
				if c.forwardedFor != nil {
					f.forwardedFor = c.forwardedFor(i)
				}
				if err := f.signUp(ctx); err != nil {
					c.t.Errorf("fan %d: %v", i, err)
					continue
				}
				fans[i] = f
			}
		})
	}
	wg.Wait()
	for _, f := range fans {
		if f == nil {
			continue
		}
		wg.Go(func() {
			if err := f.journey(ctx); err != nil {
				c.t.Errorf("fan %d: %v", f.n, err)
			}
		})
	}
	wg.Wait()
}

// pick returns an instance at random.
func (c *crowd) pick() *instance { return c.instances[rand.IntN(len(c.instances))] }

// other returns an instance that is not in (in itself when it is alone).
func (c *crowd) other(in *instance) *instance {
	i := slices.Index(c.instances, in)
	return c.instances[(i+1)%len(c.instances)]
}

// note records that fan n found no free seat in the seat map saw, having
// been told that taken were taken.
func (c *crowd) note(n int, saw map[string]string, taken map[string]bool) {
	g := giveUp{fan: n, at: time.Now(), saw: map[string]string{}}
	for l, st := range saw {
		if st != "sold" {
			g.saw[l] = st
		}
	}
	for l := range taken {
		if _, ok := g.saw[l]; !ok {
			g.saw[l] = "free, refused as taken"
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gaveUp = append(c.gaveUp, g)
}

func (c *crowd) confirm(order string, seats int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.confirmed[order] = seats
}

// fan is one fan's browser: a cookie jar of its own (Go's jar ignores the
// port, so the session cookie of one instance goes to every instance, as
// behind a balancer) and no redirect followed unasked.
type fan struct {
	c      *crowd
	n      int
	client *http.Client
	// forwardedFor is the X-Forwarded-For of every request ("" for none).
	forwardedFor string
	// taken are the seats that holds refused as taken, which the fan
	// leaves alone: the seat map it reads may be a moment old.
	taken map[string]bool
	// lastMap is the statuses of the seat map it read last.
	lastMap map[string]string
}

// answer is an HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// code returns the "error" member of a JSON error answer, or "".
func (a answer) code() string {
	var e struct {
		Error string `json:"error"`
	}
	json.Unmarshal(a.body, &e)
	return e.Error
}

func (a answer) String() string {
	return fmt.Sprintf("%d %s", a.status, strings.TrimSpace(string(a.body[:min(len(a.body), 300)])))
}

// do sends one request as the fan to in (nil: an instance at random),
// asking for JSON (HTML when html, as a browser following a redirect or
// posting a form), with form as the urlencoded body when not nil. A 5xx
// answer is an error: no request of a sale may meet one.
func (f *fan) do(ctx context.Context, in *instance, method, path string, form url.Values, html bool) (answer, error) {
	if in == nil {
		in = f.c.pick()
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, in.URL+path, body)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Accept", "application/json")
	if html {
		req.Header.Set("Accept", "text/html")
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if f.forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", f.forwardedFor)
	}
	in.requests.Add(1)
	resp, err := f.client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s on instance %s: %w", method, path, in.Name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s on instance %s: %w", method, path, in.Name, err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: b}
	if a.status >= 500 {
		return a, fmt.Errorf("%s %s on instance %s: %v, want no 5xx", method, path, in.Name, a)
	}
	return a, nil
}

// expect sends a request as do does and returns an error unless the answer
// has status want; into, if not nil, receives its JSON body.
func (f *fan) expect(ctx context.Context, in *instance, method, path string, form url.Values, html bool, want int, into any) (answer, error) {
	a, err := f.do(ctx, in, method, path, form, html)
	if err != nil {
		return a, err
	}
	if a.status != want {
		return a, fmt.Errorf("%s %s: %v, want %d", method, path, a, want)
	}
	if into != nil {
		if err := json.Unmarshal(a.body, into); err != nil {
			return a, fmt.Errorf("%s %s: %w in %v", method, path, err, a)
		}
	}
	return a, nil
}

// signUp signs the fan up on one instance and checks that its session
// is valid on the other: its orders, a page that needs the log-in.
func (f *fan) signUp(ctx context.Context) error {
	first := f.c.pick()
	form := url.Values{"email": {fmt.Sprintf("fan%d@chaos.boxoffice.test", f.n)}, "password": {fanPassword}, "name": {fmt.Sprintf("Fan %d", f.n)}}
	if _, err := f.expect(ctx, first, http.MethodPost, "/signup", form, true, http.StatusSeeOther, nil); err != nil {
		return err
	}
	var mine struct {
		Orders []json.RawMessage `json:"orders"`
	}
	if _, err := f.expect(ctx, f.c.other(first), http.MethodGet, "/me/orders", nil, false, http.StatusOK, &mine); err != nil {
		return fmt.Errorf("signed up on instance %s, the session on the other: %w", first.Name, err)
	}
	return nil
}

// journey is the fan's sale: join the queue, wait to be admitted, then
// buy as its admission number k (from 0, in the order the fans saw their
// admission) says: in a race (then 1 to 4 seats more if it lost), over
// the limit (k = 0, 10, 20...: hold 5 seats, try a sixth, buy, try
// another; the 0th tries a seat of the first race, which waits for it),
// after an abandoned order (k = 5, 15...), or 1 to 4 seats.
func (f *fan) journey(ctx context.Context) error {
	id := f.c.sale.Event.ID
	var p struct {
		Status     string `json:"status"`
		ETASeconds int    `json:"eta_seconds"`
	}
	if _, err := f.expect(ctx, nil, http.MethodPost, fmt.Sprintf("/events/%d/queue", id), url.Values{}, false, http.StatusOK, &p); err != nil {
		return err
	}
	for p.Status == "waiting" {
		// Poll about twice per expected wait: often near the head of the
		// line, seldom far back, as the waiting room's page does.
		wait := min(max(time.Duration(p.ETASeconds)*time.Second/2, 250*time.Millisecond), 2*time.Second)
		select {
		case <-ctx.Done():
			return fmt.Errorf("still waiting in the queue: %w", ctx.Err())
		case <-time.After(wait + rand.N(250*time.Millisecond)):
		}
		if _, err := f.expect(ctx, nil, http.MethodGet, fmt.Sprintf("/events/%d/queue/status", id), nil, false, http.StatusOK, &p); err != nil {
			return err
		}
	}
	switch p.Status {
	case "sold_out":
		f.c.soldOutLine.Add(1)
		return nil
	case "admitted":
	default:
		return fmt.Errorf("queue status %q, want waiting, admitted or sold_out", p.Status)
	}
	k := f.c.admitted.Add(1) - 1
	switch r := f.c.raceOf(k); {
	case r != nil:
		won, err := f.race(ctx, r)
		if err != nil || won {
			return err
		}
	case k == 0 && len(f.c.races) > 0:
		defer close(f.c.probed)
		return f.overTheLimit(ctx, f.c.races[0].seats[0])
	case k%10 == 0:
		return f.overTheLimit(ctx, "")
	case k%10 == 5:
		return f.abandon(ctx)
	}
	return f.buy(ctx, 1+rand.IntN(4))
}

// buy holds want seats (fewer if fewer are free, none if none is) and pays
// for them.
func (f *fan) buy(ctx context.Context, want int) error {
	held, err := f.hold(ctx, want)
	if err != nil || len(held) == 0 {
		return err
	}
	return f.pay(ctx, held)
}

// freeSeats returns the seats that the seat map's refresh shows free,
// the races' seats and those the fan was told are taken left out.
func (f *fan) freeSeats(ctx context.Context) ([]string, error) {
	var st struct {
		Statuses map[string]string `json:"statuses"`
	}
	if _, err := f.expect(ctx, nil, http.MethodGet, fmt.Sprintf("/events/%d/seats/status", f.c.sale.Event.ID), nil, false, http.StatusOK, &st); err != nil {
		return nil, err
	}
	f.lastMap = st.Statuses
	var free []string
	for _, l := range f.c.sale.Seats {
		if _, taken := st.Statuses[l]; !taken && !f.c.reserved[l] && !f.taken[l] {
			free = append(free, l)
		}
	}
	return free, nil
}

// settle is how long a fan whose seat map shows fewer free seats than it
// wants waits before it looks again and settles for those (or for none):
// the map an instance serves is shared by its callers and may show another
// fan's release up to store.DefaultMapMaxAge (plus a round trip) late
// (Holds.SeatStatuses), so one look can show seats held that are free. A
// fan that settled on such a look would leave them unsold when it is the
// last one buying, as the fans whose unpaid orders expired are.
const settle = 2 * store.DefaultMapMaxAge

// hold holds want free seats chosen at random, reading the seat map again
// after each lost race (409 seat_taken). When the map shows fewer free
// seats than want, it looks again settle later, and then holds all that are
// free. It returns the seats held, none when no seat was free.
func (f *fan) hold(ctx context.Context, want int) ([]string, error) {
	clear(f.taken) // what earlier holds were told may have changed since
	// short is when the fan first saw too few free seats since its last
	// lost race.
	var short time.Time
	for range 100 {
		looked := time.Now()
		free, err := f.freeSeats(ctx)
		if err != nil {
			return nil, err
		}
		if len(free) < want {
			if short.IsZero() {
				short = looked
			}
			if wait := short.Add(settle).Sub(looked); wait > 0 {
				select {
				case <-ctx.Done():
					return nil, fmt.Errorf("waiting to look at the seat map again: %w", ctx.Err())
				case <-time.After(wait):
				}
				continue
			}
		}
		if len(free) == 0 {
			f.c.noSeatLeft.Add(1)
			f.c.note(f.n, f.lastMap, f.taken)
			return nil, nil
		}
		rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		seats := free[:min(want, len(free))]
		a, err := f.do(ctx, nil, http.MethodPost, fmt.Sprintf("/events/%d/holds", f.c.sale.Event.ID), url.Values{"seat": seats}, false)
		switch {
		case err != nil:
			return nil, err
		case a.status == http.StatusOK:
			return seats, nil
		case a.status == http.StatusConflict && a.code() == "seat_taken":
			f.c.racesLost.Add(1)
			f.noteTaken(a, seats)
			short = time.Time{}
		default:
			return nil, fmt.Errorf("hold %v: %v, want 200 or 409 seat_taken", seats, a)
		}
	}
	return nil, fmt.Errorf("lost the race for seats 100 times in a row")
}

// noteTaken remembers the seats of a 409 seat_taken answer (all of tried
// when it names none) as taken.
func (f *fan) noteTaken(a answer, tried []string) {
	var taken struct {
		Seats []string `json:"seats"`
	}
	if json.Unmarshal(a.body, &taken); len(taken.Seats) == 0 {
		taken.Seats = tried
	}
	for _, l := range taken.Seats {
		f.taken[l] = true
	}
}

// race runs the fan's part in r: it waits for the other members and for
// the first fan's probes of the limit (as long as ctx lasts), then holds
// r's seats; the winner pays. A loser must be told seat_taken for r's
// seats.
func (f *fan) race(ctx context.Context, r *race) (won bool, err error) {
	r.mu.Lock()
	if r.arrived++; r.arrived == raceSize {
		close(r.start)
	}
	r.mu.Unlock()
	for _, ready := range []chan struct{}{r.start, f.c.probed} {
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("waiting for the other racers and the limit's probes: %w", ctx.Err())
		case <-ready:
		}
	}
	a, err := f.do(ctx, nil, http.MethodPost, fmt.Sprintf("/events/%d/holds", f.c.sale.Event.ID), url.Values{"seat": r.seats}, false)
	if err != nil {
		return false, err
	}
	switch {
	case a.status == http.StatusOK:
		r.winners.Add(1)
		return true, f.pay(ctx, r.seats)
	case a.status == http.StatusConflict && a.code() == "seat_taken":
		var taken struct {
			Seats []string `json:"seats"`
		}
		json.Unmarshal(a.body, &taken)
		if len(taken.Seats) == 0 || slices.ContainsFunc(taken.Seats, func(l string) bool { return !slices.Contains(r.seats, l) }) {
			return false, fmt.Errorf("lost the race for %v, told %v were taken", r.seats, taken.Seats)
		}
		r.losers.Add(1)
		return false, nil
	}
	return false, fmt.Errorf("race for %v: %v, want 200 or 409 seat_taken", r.seats, a)
}

// overTheLimit holds 5 seats, the limit, tries one more (422
// limit_exceeded, owned 0 and held 5), buys the 5 and tries one more again
// by every path (ownsTheLimit). With probe "", it tries free seats at
// random and, when fewer than 5 seats are free, buys what it holds and
// tries nothing more. Otherwise it tries probe, a seat that nobody else
// takes meanwhile, and fails unless both tries are refused.
func (f *fan) overTheLimit(ctx context.Context, probe string) error {
	held, err := f.hold(ctx, 5)
	switch {
	case err != nil || len(held) == 0 && probe == "":
		return err
	case len(held) < 5 && probe != "":
		return fmt.Errorf("held %v, want 5 seats to probe the limit with", held)
	case len(held) < 5:
		return f.pay(ctx, held)
	}
	if refused, err := f.oneMore(ctx, probe); err != nil {
		return fmt.Errorf("holding 5: %w", err)
	} else if refused {
		f.c.limitHolding.Add(1)
	}
	if err := f.pay(ctx, held); err != nil {
		return err
	}
	seat := probe
	if seat == "" {
		seat = held[0]
	}
	if err := f.ownsTheLimit(ctx, seat); err != nil {
		return fmt.Errorf("owning 5: %w", err)
	}
	f.c.limitOwning.Add(1)
	return nil
}

// ownsTheLimit checks that a fan who bought the limit has no way to a
// sixth seat: its turn ended with its order, so a hold of seat is refused
// with 403 no_entry_token saying so (reason done), and joining the queue
// again gives no new turn (409 limit_reached).
func (f *fan) ownsTheLimit(ctx context.Context, seat string) error {
	id := f.c.sale.Event.ID
	a, err := f.do(ctx, nil, http.MethodPost, fmt.Sprintf("/events/%d/holds", id), url.Values{"seat": {seat}}, false)
	if err != nil {
		return err
	}
	var refusal struct{ Reason string }
	json.Unmarshal(a.body, &refusal)
	if a.status != http.StatusForbidden || a.code() != "no_entry_token" || refusal.Reason != "done" {
		return fmt.Errorf("hold of one more seat %s: %v, want 403 no_entry_token for reason done", seat, a)
	}
	a, err = f.do(ctx, nil, http.MethodPost, fmt.Sprintf("/events/%d/queue", id), url.Values{}, false)
	if err != nil {
		return err
	}
	if a.status != http.StatusConflict || a.code() != "limit_reached" {
		return fmt.Errorf("joining the queue again: %v, want 409 limit_reached", a)
	}
	return nil
}

// oneMore tries to hold one more seat, seat or (when "") a free one at
// random, and reports whether it was refused with 422 limit_exceeded
// counting 5 held and none owned. At random, it tries other seats after a lost
// race and gives up (false) when no seat is free; seat must be refused.
func (f *fan) oneMore(ctx context.Context, seat string) (bool, error) {
	for range 20 {
		try := seat
		if try == "" {
			free, err := f.freeSeats(ctx)
			if err != nil || len(free) == 0 {
				return false, err
			}
			try = free[rand.IntN(len(free))]
		}
		a, err := f.do(ctx, nil, http.MethodPost, fmt.Sprintf("/events/%d/holds", f.c.sale.Event.ID), url.Values{"seat": {try}}, false)
		if err != nil {
			return false, err
		}
		switch {
		case a.status == http.StatusUnprocessableEntity && a.code() == "limit_exceeded":
			var got struct{ Limit, Owned, Held int }
			if err := json.Unmarshal(a.body, &got); err != nil || got.Limit != 5 || got.Owned != 0 || got.Held != 5 {
				return false, fmt.Errorf("refused one more seat with %v, want limit 5, owned 0, held 5", a)
			}
			return true, nil
		case a.status == http.StatusConflict && a.code() == "seat_taken" && seat == "":
			f.noteTaken(a, []string{try})
			continue
		}
		return false, fmt.Errorf("hold of one more seat %s: %v, want 422 limit_exceeded", try, a)
	}
	return false, nil
}

// abandon holds 1 to 4 seats and orders them, but never pays: it waits
// (as long as ctx lasts) until an instance's expiry worker has expired the
// order after the payment window, checks that it holds none of the order's
// seats any more, then buys as many seats again.
func (f *fan) abandon(ctx context.Context) error {
	held, err := f.hold(ctx, 1+rand.IntN(4))
	if err != nil || len(held) == 0 {
		return err
	}
	order, err := f.order(ctx)
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for order %s to expire: %w", order.OrderID, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
		var got struct {
			Status string `json:"status"`
		}
		if _, err := f.expect(ctx, nil, http.MethodGet, "/orders/"+order.OrderID, nil, false, http.StatusOK, &got); err != nil {
			return err
		}
		if got.Status == "EXPIRED" {
			break
		}
		if got.Status != "PENDING_PAYMENT" {
			return fmt.Errorf("unpaid order %s is %s, want PENDING_PAYMENT, then EXPIRED", order.OrderID, got.Status)
		}
	}
	// The expiry ended the order's holds before the order read EXPIRED
	// (Orders.ExpireOrders): none of its seats is the fan's any more.
	if _, err := f.freeSeats(ctx); err != nil {
		return err
	}
	if mine := slices.DeleteFunc(slices.Clone(held), func(l string) bool { return f.lastMap[l] != "mine" }); len(mine) > 0 {
		return fmt.Errorf("order %s is EXPIRED while the fan still holds its seats %v, want them released first", order.OrderID, mine)
	}
	f.c.mu.Lock()
	f.c.expired[order.OrderID] = true
	f.c.mu.Unlock()
	return f.buy(ctx, len(held))
}

// checkout is the answer to an order's creation.
type checkout struct {
	OrderID     string `json:"order_id"`
	CheckoutURL string `json:"checkout_url"`
}

// order creates the order of the fan's holds (JSON).
func (f *fan) order(ctx context.Context) (checkout, error) {
	var o checkout
	if _, err := f.expect(ctx, nil, http.MethodPost, fmt.Sprintf("/events/%d/orders", f.c.sale.Event.ID), url.Values{}, false, http.StatusCreated, &o); err != nil {
		return o, err
	}
	if o.OrderID == "" {
		return o, fmt.Errorf("created an order without an order_id, checkout_url %q", o.CheckoutURL)
	}
	return o, nil
}

// pay checks out the fan's holds, seats: the order (JSON), Pay in the
// sandbox PG (its form, posted as its page does), the PG's redirect back
// (the confirmation) and the order, which must be CONFIRMED with exactly
// those seats. Each request goes to an instance at random, whichever
// instance's address the PG's URLs name.
func (f *fan) pay(ctx context.Context, seats []string) error {
	order, err := f.order(ctx)
	if err != nil {
		return err
	}
	checkout, err := url.Parse(order.CheckoutURL)
	if err != nil {
		return fmt.Errorf("order %s: checkout_url %q: %w", order.OrderID, order.CheckoutURL, err)
	}
	form := checkout.Query()
	form.Set("action", "pay")
	a, err := f.expect(ctx, nil, http.MethodPost, checkout.Path, form, true, http.StatusSeeOther, nil)
	if err != nil {
		return fmt.Errorf("pay order %s: %w", order.OrderID, err)
	}
	success, err := url.Parse(a.header.Get("Location"))
	if err != nil || success.Path != "/payments/success" {
		return fmt.Errorf("pay order %s: redirected to %q, want /payments/success", order.OrderID, a.header.Get("Location"))
	}
	if a, err = f.expect(ctx, nil, http.MethodGet, success.RequestURI(), nil, true, http.StatusSeeOther, nil); err != nil {
		return fmt.Errorf("confirm order %s: %w", order.OrderID, err)
	}
	if loc, want := a.header.Get("Location"), "/orders/"+order.OrderID; loc != want {
		return fmt.Errorf("confirm order %s: redirected to %q, want %q", order.OrderID, loc, want)
	}
	var got struct {
		Status  string   `json:"status"`
		Failure string   `json:"failure"`
		Seats   []string `json:"seats"`
	}
	if _, err := f.expect(ctx, nil, http.MethodGet, "/orders/"+order.OrderID, nil, false, http.StatusOK, &got); err != nil {
		return err
	}
	if got.Status != "CONFIRMED" || !sameSet(got.Seats, seats) {
		return fmt.Errorf("order %s is %s (failure %q) with seats %v, want CONFIRMED with %v", order.OrderID, got.Status, got.Failure, got.Seats, seats)
	}
	f.c.confirm(order.OrderID, len(seats))
	return nil
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(s string) bool { return !slices.Contains(b, s) })
}
