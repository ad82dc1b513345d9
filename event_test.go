package boxoffice_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

func TestEvent_QueueOpen(t *testing.T) {
	opens := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	ends := opens.Add(2 * time.Hour)
	tests := []struct {
		name   string
		status string
		now    time.Time
		want   bool
	}{
		{"BeforeOpening", boxoffice.EventOnSale, opens.Add(-time.Nanosecond), false},
		{"AtOpening", boxoffice.EventOnSale, opens, true},
		{"BeforeEnd", boxoffice.EventOnSale, ends.Add(-time.Nanosecond), true},
		{"AtEnd", boxoffice.EventOnSale, ends, false},
		{"Draft", boxoffice.EventDraft, opens.Add(time.Minute), false},
		{"Closed", boxoffice.EventClosed, opens.Add(time.Minute), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := boxoffice.Event{Status: tt.status, QueueOpensAt: opens, SaleEndsAt: ends}
			if got := e.QueueOpen(tt.now); got != tt.want {
				t.Errorf("QueueOpen(%v) = %v, want %v", tt.now, got, tt.want)
			}
		})
	}
}

func TestEvent_Location(t *testing.T) {
	e := boxoffice.Event{TimeZone: "Asia/Seoul"}
	if got := e.Location().String(); got != "Asia/Seoul" {
		t.Errorf("Location() = %s, want Asia/Seoul", got)
	}
	e.TimeZone = "Mars/Olympus"
	if got := e.Location(); got != time.UTC {
		t.Errorf("Location() for an unknown zone = %s, want UTC", got)
	}
}

func validInput(t *testing.T) boxoffice.EventInput {
	t.Helper()
	in := boxoffice.NewEventInput()
	in.VenueID = 1
	in.Title = boxoffice.Text{"en": " Winter Gala ", "ko": "  "}
	in.QueueOpensAt = mustUTC(t, "2026-12-01T11:00:00Z")
	in.SaleEndsAt = in.QueueOpensAt.Add(24 * time.Hour)
	in.StartsAt = in.SaleEndsAt
	in.Currency = "krw"
	in.Grades = []boxoffice.Grade{{Code: "R", Price: 150000, Color: "#c0392b"}, {Code: "S", Name: boxoffice.Text{"en": "S seat"}, Price: 120000}}
	return in
}

func TestEventInput_Normalize(t *testing.T) {
	in := validInput(t)
	in.Normalize()
	if !maps.Equal(in.Title, boxoffice.Text{"en": "Winter Gala"}) || in.Currency != "KRW" || in.Grades[0].Name.In("ko") != "R" || in.Grades[1].Color != boxoffice.DefaultGradeColor {
		t.Fatalf("Normalize() = %+v, want a trimmed title, KRW, grade R named R and S with the default colour", in)
	}
	if in.TimeZone != "Asia/Seoul" || in.MaxPerAccount != 5 || in.HoldTTL != 300*time.Second || in.TokenTTL != 600*time.Second || in.AdmissionRate != 100 {
		t.Fatalf("NewEventInput defaults = %+v", in)
	}
}

func TestEventInput_Validate(t *testing.T) {
	tests := []struct {
		name   string
		change func(in *boxoffice.EventInput)
		fields []string
	}{
		{"OK", func(in *boxoffice.EventInput) {}, nil},
		{"OKStartsAtOpening", func(in *boxoffice.EventInput) { in.StartsAt = in.QueueOpensAt }, nil},
		{"Empty", func(in *boxoffice.EventInput) { *in = boxoffice.EventInput{} }, []string{
			"venue_id", "title", "time_zone", "starts_at", "queue_opens_at", "sale_ends_at", "currency",
			"max_per_account", "hold_ttl", "token_ttl", "admission_rate", "grades"}},
		{"TitleTooLong", func(in *boxoffice.EventInput) {
			in.Title = boxoffice.Text{"ko": strings.Repeat("가", 201), "en": "ok"}
		}, []string{"title"}},
		{"DescriptionTooLong", func(in *boxoffice.EventInput) { in.Description = boxoffice.Text{"en": strings.Repeat("d", 5001)} }, []string{"description"}},
		{"UnknownZone", func(in *boxoffice.EventInput) { in.TimeZone = "Asia/Busan" }, []string{"time_zone"}},
		{"QueueOpensAtSaleEnd", func(in *boxoffice.EventInput) { in.SaleEndsAt = in.QueueOpensAt }, []string{"sale_ends_at"}},
		{"StartBeforeQueue", func(in *boxoffice.EventInput) { in.StartsAt = in.QueueOpensAt.Add(-time.Minute) }, []string{"starts_at"}},
		{"Limits", func(in *boxoffice.EventInput) {
			in.MaxPerAccount, in.HoldTTL, in.TokenTTL, in.AdmissionRate, in.MaxShoppers = 21, 1500*time.Millisecond, 7201*time.Second, 100001, -1
			in.PowDifficulty = boxoffice.MaxPowDifficulty + 1
		}, []string{"max_per_account", "hold_ttl", "token_ttl", "admission_rate", "max_shoppers", "pow_difficulty"}},
		{"NegativeProofOfWork", func(in *boxoffice.EventInput) { in.PowDifficulty = -1 }, []string{"pow_difficulty"}},
		{"Currency", func(in *boxoffice.EventInput) { in.Currency = "WON!" }, []string{"currency"}},
		{"CurrencyNotISO", func(in *boxoffice.EventInput) { in.Currency = "ABC" }, []string{"currency"}},
		{"CurrencyTooLong", func(in *boxoffice.EventInput) { in.Currency = "KRWX" }, []string{"currency"}},
		{"OKCurrencyEUR", func(in *boxoffice.EventInput) { in.Currency = "EUR" }, nil},
		{"TokenShorterThanHold", func(in *boxoffice.EventInput) { in.HoldTTL, in.TokenTTL = 300*time.Second, 299*time.Second }, []string{"token_ttl"}},
		{"OKTokenAsLongAsHold", func(in *boxoffice.EventInput) { in.HoldTTL, in.TokenTTL = 300*time.Second, 300*time.Second }, nil},
		{"Grades", func(in *boxoffice.EventInput) {
			in.Grades = []boxoffice.Grade{
				{Code: "R S", Name: boxoffice.Text{"en": "R"}, Price: 1, Color: "#000000"},
				{Code: "A", Name: boxoffice.Text{"en": strings.Repeat("n", 61)}, Price: 0, Color: "red"},
				{Code: "A", Name: boxoffice.Text{"en": "A"}, Price: -5, Color: "#000000"},
			}
		}, []string{"grades[0].code", "grades[1].name", "grades[1].price", "grades[1].color", "grades[2].code", "grades[2].price"}},
		{"TooManyGrades", func(in *boxoffice.EventInput) {
			in.Grades = nil
			for i := range 21 {
				in.Grades = append(in.Grades, boxoffice.Grade{Code: fmt.Sprintf("G%d", i), Name: boxoffice.Text{"en": "G"}, Price: 1, Color: "#000000"})
			}
		}, []string{"grades"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := validInput(t)
			in.Normalize()
			tt.change(&in)
			err := in.Validate()
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("Validate() = %v %v, want nil", err, err.(*boxoffice.Error).Fields)
				}
				return
			}
			var e *boxoffice.Error
			if !errorsAs(err, &e) || e.Code != boxoffice.EINVALID {
				t.Fatalf("Validate() = %v, want %s", err, boxoffice.EINVALID)
			}
			got := slices.Sorted(maps.Keys(e.Fields))
			if want := slices.Sorted(slices.Values(tt.fields)); !slices.Equal(got, want) {
				t.Fatalf("fields = %v\nwant %v\n(%v)", got, want, e.Fields)
			}
		})
	}
}

// Input gives back what saves the event unchanged.
func TestEvent_Input(t *testing.T) {
	in := validInput(t)
	in.Normalize()
	e := boxoffice.Event{
		VenueID: in.VenueID, Title: in.Title, Description: in.Description, TimeZone: in.TimeZone, StartsAt: in.StartsAt, QueueOpensAt: in.QueueOpensAt,
		SaleEndsAt: in.SaleEndsAt, Currency: in.Currency, MaxPerAccount: in.MaxPerAccount, HoldTTL: in.HoldTTL,
		TokenTTL: in.TokenTTL, AdmissionRate: in.AdmissionRate, Status: boxoffice.EventOnSale,
	}
	for _, g := range in.Grades {
		g.SeatsTotal, g.SeatsLeft = 10, 3
		e.Grades = append(e.Grades, g)
	}
	if got := e.Input(); !reflect.DeepEqual(got, in) {
		t.Fatalf("Input() = %+v\nwant %+v", got, in)
	}
}

func TestEventInput_Validate_Prequeue(t *testing.T) {
	in := boxoffice.NewEventInput()
	opens := time.Date(2030, 3, 1, 11, 0, 0, 0, time.UTC)
	in.VenueID, in.Title = 1, boxoffice.Text{"en": "Gala"}
	in.StartsAt, in.QueueOpensAt, in.SaleEndsAt = opens.Add(48*time.Hour), opens, opens.Add(24*time.Hour)
	in.Grades = []boxoffice.Grade{{Code: "R", Name: boxoffice.Text{"en": "R"}, Price: 1000}}
	for _, tt := range []struct {
		prequeue time.Time
		bad      bool
	}{{time.Time{}, false}, {opens.Add(-time.Hour), false}, {opens, true}, {opens.Add(time.Minute), true}} {
		in.PrequeueOpensAt = tt.prequeue
		var e *boxoffice.Error
		err := in.Validate()
		got := false
		if errorsAs(err, &e) {
			_, got = e.Fields["prequeue_opens_at"]
		}
		if got != tt.bad {
			t.Errorf("pre-queue at %v: Validate() = %v, want a prequeue_opens_at reason %v", tt.prequeue, err, tt.bad)
		}
	}
}
