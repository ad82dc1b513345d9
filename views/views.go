// Package views holds boxoffice's templ components: one file per page or
// feature, each with its page and the htmx fragments cut from it. Every
// sentence a person reads lives here, so that another language can join
// without a hunt through handlers and stores. Times are shown in the event's
// time zone and money in the event's currency.
package views

import (
	"strconv"
	"strings"
	"time"
)

// Money formats an amount in the currency's minor unit for people: KRW and
// JPY have no minor unit ("150,000원"-style grouping, shown as "₩150,000"),
// others have two decimals ("USD 12.50").
func Money(amount int64, currency string) string {
	switch currency {
	case "KRW":
		return "₩" + group(amount)
	case "JPY":
		return "¥" + group(amount)
	}
	sign := ""
	if amount < 0 {
		sign, amount = "-", -amount
	}
	return currency + " " + sign + group(amount/100) + "." + leftPad(strconv.FormatInt(amount%100, 10), 2)
}

// group writes n with a comma between each group of three digits.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func leftPad(s string, n int) string {
	for len(s) < n {
		s = "0" + s
	}
	return s
}

// LocalTime formats t in the IANA zone for people, naming the zone
// ("Mon 1 Dec 2026, 20:00 KST").
func LocalTime(t time.Time, zone string) string {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		loc = time.UTC
	}
	return t.In(loc).Format("Mon 2 Jan 2006, 15:04 MST")
}
