// Package views holds boxoffice's templ components and its message
// catalogs: one file per page or feature, each with its page and the htmx
// fragments cut from it, and every sentence a person reads, in Korean and
// English (locales/ko.toml, locales/en.toml).
//
// How a sentence reaches a person: a template calls T(ctx, "message_id",
// "Name", value, ...) and gets it in the request's language (Lang(ctx), set
// by the handlers' language middleware); an error carries a boxoffice.Msg
// (an id and its arguments, never text) that the one error handler puts
// into words with Say; code outside a request uses In(lang, msg). Ids are
// snake_case and constant; a new sentence goes into every catalog under
// the same id, and views/catalog_test.go fails on an id that a catalog
// lacks or that no code uses. Times are shown in the event's time zone in
// each language's form (LocalTime), money in the event's currency (Money),
// counts with grouping (Count).
package views

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/boxoffice/boxoffice"
	"golang.org/x/text/currency"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/number"
)

// printers format numbers for each language (grouping, decimal mark).
var printers = map[string]*message.Printer{}

func printer(lang string) *message.Printer {
	if p, ok := printers[lang]; ok {
		return p
	}
	return printers[Korean]
}

func init() {
	for _, l := range Langs {
		printers[l] = message.NewPrinter(language.MustParse(l))
	}
}

// Money formats an amount in the minor unit of an ISO 4217 currency for
// people in ctx's language, with the currency's standard number of
// decimals and grouping (golang.org/x/text/currency): 220000 KRW is
// "220,000원" in Korean and "₩220,000" in English (KRW has no minor unit);
// other currencies as the catalogs' money_other has them ("$12.50",
// "12.50 USD"). An unknown code is written with the plain number.
func Money(ctx context.Context, amount int64, code string) string {
	lang := Lang(ctx)
	unit, err := currency.ParseISO(code)
	if err != nil {
		return In(lang, boxoffice.M("money_other", "Amount", strconv.FormatInt(amount, 10), "Code", code, "Symbol", code+" "))
	}
	scale, _ := currency.Standard.Rounding(unit)
	n := printer(lang).Sprint(number.Decimal(float64(amount)/math.Pow10(scale), number.Scale(scale)))
	if code == "KRW" {
		return In(lang, boxoffice.M("money_krw", "Amount", n))
	}
	symbol := printer(lang).Sprint(currency.NarrowSymbol(unit))
	return In(lang, boxoffice.M("money_other", "Amount", n, "Code", code, "Symbol", symbol))
}

// Count writes a count for people with grouping in ctx's language:
// "15,000".
func Count(ctx context.Context, n int) string { return printer(Lang(ctx)).Sprint(n) }

var (
	weekdays = [7]boxoffice.MsgID{"day_sun", "day_mon", "day_tue", "day_wed", "day_thu", "day_fri", "day_sat"}
	months   = [12]boxoffice.MsgID{"month_jan", "month_feb", "month_mar", "month_apr", "month_may", "month_jun",
		"month_jul", "month_aug", "month_sep", "month_oct", "month_nov", "month_dec"}
)

// homeZone is the zone the Korean form leaves unnamed: a time there needs
// no zone for a Korean reader.
const homeZone = "Asia/Seoul"

// LocalTime formats t in the IANA zone for people in ctx's language, as
// the catalogs' datetime has it: "2027년 1월 1일 (금) 오후 7:00" and
// "Fri 1 Jan 2027, 19:00 KST". Zone is the zone's abbreviation; Abroad
// says the zone is not Asia/Seoul (the Korean form names it only then).
func LocalTime(ctx context.Context, t time.Time, zone string) string {
	return localTime(Lang(ctx), t, zone)
}

func localTime(lang string, t time.Time, zone string) string {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		loc = time.UTC
	}
	t = t.In(loc)
	h12 := t.Hour() % 12
	if h12 == 0 {
		h12 = 12
	}
	period := boxoffice.MsgID("time_am")
	if t.Hour() >= 12 {
		period = "time_pm"
	}
	return In(lang, boxoffice.M("datetime",
		"Year", t.Year(), "Month", int(t.Month()), "MonthName", boxoffice.M(months[t.Month()-1]),
		"Day", t.Day(), "Weekday", boxoffice.M(weekdays[t.Weekday()]),
		"Hour", fmt.Sprintf("%02d", t.Hour()), "Hour12", h12, "Minute", fmt.Sprintf("%02d", t.Minute()),
		"Period", boxoffice.M(period), "Zone", t.Format("MST"), "Abroad", loc.String() != homeZone))
}

// LocalDate formats t's day in UTC for people in ctx's language
// ("2026년 3월 1일", "1 Mar 2026").
func LocalDate(ctx context.Context, t time.Time) string {
	t = t.UTC()
	return T(ctx, "date", "Year", t.Year(), "Month", int(t.Month()), "MonthName", boxoffice.M(months[t.Month()-1]), "Day", t.Day())
}

// Duration writes a wait for people in ctx's language: "2시간 05분",
// "4 min 09 s", "12초".
func Duration(ctx context.Context, d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s >= 3600:
		return T(ctx, "duration_h", "H", s/3600, "M", fmt.Sprintf("%02d", s%3600/60))
	case s >= 60:
		return T(ctx, "duration_m", "M", s/60, "S", fmt.Sprintf("%02d", s%60))
	}
	return T(ctx, "duration_s", "S", s)
}

// durationFormats are Duration's three forms with {h}, {m} and {s} in
// place of the numbers, for the countdowns in static/*.js, which format
// what the page gives them: data-fmt-h, data-fmt-m, data-fmt-s.
func durationFormats(ctx context.Context) templ.Attributes {
	return templ.Attributes{
		"data-fmt-h": T(ctx, "duration_h", "H", "{h}", "M", "{m}"),
		"data-fmt-m": T(ctx, "duration_m", "M", "{m}", "S", "{s}"),
		"data-fmt-s": T(ctx, "duration_s", "S", "{s}"),
	}
}

// Title returns a per-language text (an event's title, a grade's name) in
// ctx's language, or another language's when it has none.
func Title(ctx context.Context, t boxoffice.Text) string { return t.In(Lang(ctx)) }

// sharedKey marks a context for a page rendered once and served to every
// signed-in visitor who may see it (WithShared).
type sharedKey struct{}

// WithShared returns a context in lang for rendering a page that is the
// same for every signed-in visitor, such as the seat map page: the
// navigation shows a signed-in visitor's links, without an account's name.
func WithShared(lang string) context.Context {
	return context.WithValue(boxoffice.NewContextWithLang(context.Background(), lang), sharedKey{}, true)
}

func isShared(ctx context.Context) bool {
	shared, _ := ctx.Value(sharedKey{}).(bool)
	return shared
}
