package handlers

import (
	"net/url"
	"strconv"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
)

// FuzzForms feeds arbitrary form bodies to the parsers of the site's forms
// (sign-up, the admin's event and venue-generator forms, the admission
// controls): they never panic, and whatever they refuse is refused as
// invalid input with its reasons, never as another kind of error.
func FuzzForms(f *testing.F) {
	for _, seed := range []string{
		"email=fan%40example.com&password=correct+horse&name=Kim",
		"title=Gala&venue_id=1&time_zone=Asia%2FSeoul&starts_at=2030-12-31T19%3A00&queue_opens_at=2030-12-01T20%3A00" +
			"&sale_ends_at=2030-12-30T18%3A00&currency=KRW&max_per_account=5&hold_ttl=300&token_ttl=600&admission_rate=100" +
			"&grade_rows=2&grades%5B0%5D.code=R&grades%5B0%5D.name=R+seat&grades%5B0%5D.price=150000&grades%5B0%5D.color=%23c0392b",
		"time_zone=Europe%2FBerlin&queue_opens_at=2026-03-29T02%3A30&hold_ttl=-1&max_shoppers=99999999999999999999",
		"name=Hall&section_rows=2&sections%5B0%5D.name=A&sections%5B0%5D.rows=3&sections%5B0%5D.seats_per_row=6&sections%5B0%5D.grade=R",
		"sections%5B1%5D.rows=200&sections%5B1%5D.seats_per_row=200&sections%5B1%5D.name=B&sections%5B1%5D.grade=S",
		"paused=true&rate=50", "paused=maybe&rate=-3", "rate=1e9",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		form, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		wantInvalid := func(what string, err error) {
			if code := boxoffice.ErrorCode(err); err != nil && code != boxoffice.EINVALID {
				t.Fatalf("%s of %q: error %v with code %q, want nil or %s", what, body, err, code, boxoffice.EINVALID)
			}
		}

		in := boxoffice.Signup{Email: form.Get("email"), Password: form.Get("password"), Name: form.Get("name")}
		in.Normalize()
		wantInvalid("sign-up", in.Validate())

		ef := views.EventForm{}
		overlayEventForm(&ef, form)
		fields := map[string]boxoffice.Msg{}
		ev, _ := eventInput(ef, nil, fields)
		ev.Normalize()
		wantInvalid("event form", ev.Validate())

		rows := padSections(formSections(form), len(form))
		specs := make([]boxoffice.SectionSpec, len(rows))
		for i, r := range rows {
			specs[i] = boxoffice.SectionSpec{Name: r.Name, Grade: r.Grade,
				Rows:        formInt(r.Rows, "rows"+strconv.Itoa(i), fields),
				SeatsPerRow: formInt(r.SeatsPerRow, "seats"+strconv.Itoa(i), fields)}
		}
		seats, err := boxoffice.GenerateSeats(specs)
		wantInvalid("venue generator", err)
		if err == nil && len(seats) > boxoffice.MaxSeats {
			t.Fatalf("the generator made %d seats, over the limit of %d", len(seats), boxoffice.MaxSeats)
		}

		_, _, err = parseAdmission(form.Get("paused"), form.Get("rate"))
		wantInvalid("admission", err)
	})
}
