// Package views holds boxoffice's templ components: one file per page or
// feature, each with its page and the htmx fragments cut from it. Every
// sentence a person reads lives here, so that another language can join
// without a hunt through handlers and stores. Times are shown in the event's
// time zone and money in the event's currency.
package views

import (
	"math"
	"strconv"
	"time"

	"golang.org/x/text/currency"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Money formats an amount in the minor unit of an ISO 4217 currency for
// people, with the currency's symbol, its standard number of decimals and
// thousands separators (golang.org/x/text/currency): 150000 KRW is
// "₩ 150,000" (KRW has no minor unit), 1250 USD is "$ 12.50". An unknown code
// is written before the plain number.
func Money(amount int64, code string) string {
	unit, err := currency.ParseISO(code)
	if err != nil {
		return code + " " + strconv.FormatInt(amount, 10)
	}
	scale, _ := currency.Standard.Rounding(unit)
	return moneyPrinter.Sprint(currency.Symbol(unit.Amount(float64(amount) / math.Pow10(scale))))
}

var moneyPrinter = message.NewPrinter(language.English)

// LocalTime formats t in the IANA zone for people, naming the zone
// ("Mon 1 Dec 2026, 20:00 KST").
func LocalTime(t time.Time, zone string) string {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		loc = time.UTC
	}
	return t.In(loc).Format("Mon 2 Jan 2006, 15:04 MST")
}
