// Package demo holds the demo venues, embedded in the binary (see
// venues/README.md for what in them is fact and what is estimated), and Seed,
// which fills an empty database with them, an event on sale at each, an admin
// and a few fans, so that a new clone opens on a working sale.
package demo

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/store"
	"github.com/boxoffice/boxoffice/views"
)

// Files holds the demo venues under venues/: the two CSV seat maps, the
// concert hall as a pretix seating plan, and their README.
//
//go:embed venues
var Files embed.FS

// The demo accounts' e-mail addresses.
const (
	AdminEmail = "admin@boxoffice.test"
	FanEmail   = "fan%d@boxoffice.test" // fan1 to fan<Fans>
	Fans       = 3
)

// The demo venues' names, as the hall names itself and in English.
const (
	HallName  = "예술의전당 콘서트홀 (Seoul Arts Center Concert Hall)"
	ArenaName = "인스파이어 아레나 (Inspire Arena)"
)

// venue is one demo venue and the event Seed puts on sale there, its
// title, description and grade names in Korean and English.
type venue struct {
	name, file         string
	title, description boxoffice.Text
	grades             []boxoffice.Grade // prices in KRW
}

// seatGrade is a grade of the demo: "R석" and "R seat".
func seatGrade(code string, price int64, color string) boxoffice.Grade {
	return boxoffice.Grade{Code: code, Name: boxoffice.Text{"ko": code + "석", "en": code + " seat"}, Price: price, Color: color}
}

var venues = []venue{
	{
		name: HallName, file: "venues/seoul_arts_center_concert_hall.csv",
		title: boxoffice.Text{"ko": "겨울 교향곡 갈라 (데모)", "en": "Winter Symphony Gala (demo)"},
		description: boxoffice.Text{
			"ko": "데모 공연입니다. 합창석을 포함해 3개 층 2,523석 규모의 콘서트홀에서 펼쳐지는 교향곡의 밤.",
			"en": "A demo event: an evening of symphonies in a 2,523-seat concert hall on three levels, choir seats included.",
		},
		grades: []boxoffice.Grade{
			seatGrade("R", 150000, "#c0392b"),
			seatGrade("S", 120000, "#e67e22"),
			seatGrade("A", 90000, "#f1c40f"),
			seatGrade("B", 60000, "#27ae60"),
			seatGrade("C", 40000, "#2980b9"),
		},
	},
	{
		name: ArenaName, file: "venues/inspire_arena.csv",
		title: boxoffice.Text{"ko": "아레나 라이브 투어 (데모)", "en": "Arena Live Tour (demo)"},
		description: boxoffice.Text{
			"ko": "데모 공연입니다. 플로어 블록과 3개 층 스탠드로 이루어진 15,000석 아레나의 매진 콘서트.",
			"en": "A demo event: a sell-out concert in a 15,000-seat arena, floor blocks and three tiers.",
		},
		grades: []boxoffice.Grade{
			seatGrade("VIP", 220000, "#8e44ad"),
			seatGrade("R", 176000, "#c0392b"),
			seatGrade("S", 154000, "#e67e22"),
			seatGrade("A", 132000, "#f1c40f"),
		},
	},
}

// Options tunes Seed.
type Options struct {
	// Password, if set, is every demo account's password (for scripts and
	// tests); otherwise each account gets a random one.
	Password string
	// BcryptCost is the accounts' bcrypt cost (bcrypt.DefaultCost when 0).
	BcryptCost int
}

// Login is a demo account to print. Password is "" when the account existed
// already and kept its password.
type Login struct {
	Email    string
	Password string
	Role     string
}

// Result is what Seed did.
type Result struct {
	// Skipped says why nothing was created (zero when Seed created the
	// demo), as a message of views' catalogs.
	Skipped boxoffice.Msg
	Logins  []Login
	Venues  []*boxoffice.Venue
	Events  []*boxoffice.Event
}

// seedLock is the PostgreSQL advisory lock key that keeps two seeds apart.
const seedLock = 4242003

// Seed fills a database that has no venues with the demo: an admin
// (AdminEmail) and Fans fan accounts (through store.Accounts, bcrypt), both
// demo venues, and on each a published event in Asia/Seoul, KRW, with
// default limits, whose queue opened a minute ago (times whole minutes, so
// that datetime-local inputs show them exactly), whose sale ends in 30 days
// and which starts in 31 days. An account that exists already is kept with
// its password.
//
// On a database that has a venue, or while another Seed holds the lock (a
// PostgreSQL advisory lock, so concurrent seeds create the demo once), it
// does nothing and says why in Result.Skipped. The steps are not one
// transaction: a seed that fails half-way leaves what it created, and a
// second seed then skips.
func Seed(ctx context.Context, db *store.DB, opt Options) (*Result, error) {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, seedLock).Scan(&locked); err != nil {
		return nil, fmt.Errorf("seed: lock: %w", err)
	}
	if !locked {
		return &Result{Skipped: boxoffice.M("demo_skip_running")}, nil
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, seedLock)
	var hasVenues bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM venue)`).Scan(&hasVenues); err != nil {
		return nil, fmt.Errorf("seed: look for venues: %w", err)
	}
	if hasVenues {
		return &Result{Skipped: boxoffice.M("demo_skip_venues")}, nil
	}

	res := &Result{}
	accounts := &store.Accounts{DB: db, Cost: opt.BcryptCost}
	signups := []boxoffice.Signup{{Email: AdminEmail, Name: "데모 관리자", Role: boxoffice.RoleAdmin}}
	for i := 1; i <= Fans; i++ {
		signups = append(signups, boxoffice.Signup{Email: fmt.Sprintf(FanEmail, i), Name: fmt.Sprintf("데모 팬 %d", i), Role: boxoffice.RoleFan})
	}
	for _, su := range signups {
		su.Password = opt.Password
		if su.Password == "" {
			su.Password = rand.Text()[:16] // 80 random bits
		}
		l := Login{Email: su.Email, Password: su.Password, Role: su.Role}
		_, err := accounts.CreateAccount(ctx, su)
		var e *boxoffice.Error
		if errors.As(err, &e) && e.Fields["email"].ID == "val_email_taken" && len(e.Fields) == 1 {
			l.Password = "" // the e-mail is taken: keep that account as it is
		} else if err != nil {
			return nil, fmt.Errorf("seed: account %s: %w", su.Email, err)
		}
		res.Logins = append(res.Logins, l)
	}

	vs, es := &store.Venues{DB: db}, &store.Events{DB: db}
	now := db.Now().UTC().Truncate(time.Minute)
	for _, v := range venues {
		f, err := Files.Open(v.file)
		if err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
		seats, err := boxoffice.ParseSeatCSV(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("seed: %s: %w (%v)", v.file, err, boxoffice.ErrorProblems(err))
		}
		venue, err := vs.CreateVenue(ctx, v.name, seats)
		if err != nil {
			return nil, fmt.Errorf("seed: venue %s: %w", v.name, err)
		}
		res.Venues = append(res.Venues, venue)
		in := boxoffice.NewEventInput()
		in.VenueID, in.Title, in.Description, in.Grades = venue.ID, v.title, v.description, v.grades
		in.QueueOpensAt = now.Add(-time.Minute)
		in.SaleEndsAt = now.AddDate(0, 0, 30)
		in.StartsAt = eveningAfter(in.SaleEndsAt, in.TimeZone)
		ev, err := es.CreateEvent(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("seed: event %s: %w", v.title.In("en"), err)
		}
		if ev, err = es.PublishEvent(ctx, ev.ID); err != nil {
			return nil, fmt.Errorf("seed: publish %s: %w", v.title.In("en"), err)
		}
		res.Events = append(res.Events, ev)
	}
	return res, nil
}

// Print writes the result for a person at a terminal in lang (a tag of
// views.Langs): the log-ins with their passwords, the venues and the
// events, or why nothing was done.
func (r *Result) Print(w io.Writer, lang string) error {
	ctx := boxoffice.NewContextWithLang(context.Background(), lang)
	if r.Skipped.ID != "" {
		_, err := fmt.Fprintln(w, views.T(ctx, "demo_nothing_to_do", "Why", r.Skipped))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, views.T(ctx, "demo_created"))
	for _, l := range r.Logins {
		pw := l.Password
		if pw == "" {
			pw = views.T(ctx, "demo_password_kept")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", l.Role, l.Email, pw)
	}
	for _, v := range r.Venues {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", views.T(ctx, "demo_venue", "ID", v.ID), v.Name,
			views.T(ctx, "seats_count", "Count", v.Seats, "N", views.Count(ctx, v.Seats)))
	}
	for _, e := range r.Events {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", views.T(ctx, "demo_event", "ID", e.ID), views.Title(ctx, e.Title),
			views.T(ctx, "demo_event_status", "Status", views.EventStatus(ctx, e.Status), "Time", views.LocalTime(ctx, e.QueueOpensAt, e.TimeZone)))
	}
	return tw.Flush()
}

// eveningAfter returns 19:00 in zone on the day after t: when concerts start.
func eveningAfter(t time.Time, zone string) time.Time {
	loc, err := boxoffice.LoadTimeZone(zone)
	if err != nil {
		loc = time.UTC
	}
	y, m, d := t.In(loc).AddDate(0, 0, 1).Date()
	return time.Date(y, m, d, 19, 0, 0, 0, loc)
}
