package boxoffice_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

func TestParseOrderSearch(t *testing.T) {
	cursor := boxoffice.OrderCursor{CreatedAt: time.Date(2026, 3, 8, 7, 0, 0, 123456000, time.UTC), ID: "abcdef-ghijk_123"}
	s, q, err := boxoffice.ParseOrderSearch(url.Values{"event": {" 7 "}, "q": {" kim@ "}, "status": {"REFUNDED"}, "after": {cursor.String()}}.Encode())
	if q.Get("q") != " kim@ " {
		t.Errorf("ParseOrderSearch read q %q, want %q", q.Get("q"), " kim@ ")
	}
	if err != nil || s.EventID != 7 || s.Query != "kim@" || s.Status != boxoffice.OrderRefunded || s.After == nil || *s.After != cursor {
		t.Errorf("ParseOrderSearch = %+v, %v; want event 7, q kim@, REFUNDED, after %v", s, err, cursor)
	}
	_, _, err = boxoffice.ParseOrderSearch(url.Values{"event": {"seven"}, "status": {"refunded"}, "after": {"1.x"}}.Encode())
	var e *boxoffice.Error
	if boxoffice.ErrorCode(err) != boxoffice.EBADREQUEST || !errors.As(err, &e) || len(e.Fields) != 3 {
		t.Errorf("bad filters: %v, want bad_request naming event, status and after", err)
	}
}

func TestOrderLineWriter(t *testing.T) {
	var b bytes.Buffer
	seoul, _ := time.LoadLocation("Asia/Seoul")
	lw, err := boxoffice.NewOrderLineWriter(&b, seoul)
	if err != nil {
		t.Fatal(err)
	}
	paid := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	for _, buyer := range []string{"=1+2@x.com", "+a@x.com", "-a@x.com", "@a@x.com", "\tab@x.com", "\rcr@x.com", "kim@x.com"} {
		if err := lw.Write(boxoffice.OrderLine{OrderID: "o1", Status: boxoffice.OrderConfirmed, Buyer: buyer, Seat: "A-1-1", Grade: "R", Price: 150000, Currency: "KRW", PaidAt: &paid}); err != nil {
			t.Fatal(err)
		}
	}
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"'=1+2@x.com", "'+a@x.com", "'-a@x.com", "'@a@x.com", "'\tab@x.com", "'\rcr@x.com", "kim@x.com"}
	for i, w := range want {
		if got := rows[i+1][2]; got != w {
			t.Errorf("buyer %d written %q, want %q", i, got, w)
		}
	}
	if got := rows[1][7]; got != "2026-12-01T20:00:00+09:00" || rows[1][8] != "" {
		t.Errorf("paid_at %q refunded_at %q, want Seoul's 2026-12-01T20:00:00+09:00 and empty", got, rows[1][8])
	}
}
