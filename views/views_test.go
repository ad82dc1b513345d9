package views

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// in returns a context whose language is lang.
func in(lang string) context.Context {
	return boxoffice.NewContextWithLang(context.Background(), lang)
}

func TestMoney(t *testing.T) {
	tests := []struct {
		amount   int64
		currency string
		en, ko   string
	}{
		{220000, "KRW", "₩220,000", "220,000원"},
		{0, "KRW", "₩0", "0원"},
		{1234567, "KRW", "₩1,234,567", "1,234,567원"},
		{1250, "USD", "$12.50", "12.50 USD"},
		{5, "EUR", "€0.05", "0.05 EUR"},
		{-1250, "USD", "$-12.50", "-12.50 USD"},
		{100, "XYZ", "XYZ 100", "100 XYZ"},
	}
	for _, tt := range tests {
		if got := Money(in(English), tt.amount, tt.currency); got != tt.en {
			t.Errorf("Money(en, %d, %s) = %q, want %q", tt.amount, tt.currency, got, tt.en)
		}
		if got := Money(in(Korean), tt.amount, tt.currency); got != tt.ko {
			t.Errorf("Money(ko, %d, %s) = %q, want %q", tt.amount, tt.currency, got, tt.ko)
		}
	}
}

func TestLocalTime(t *testing.T) {
	at := time.Date(2027, 1, 1, 10, 0, 0, 0, time.UTC) // 19:00 in Seoul
	for _, tt := range []struct {
		lang, zone, want string
	}{
		{English, "Asia/Seoul", "Fri 1 Jan 2027, 19:00 KST"},
		{Korean, "Asia/Seoul", "2027년 1월 1일 (금) 오후 7:00"},
		{Korean, "Europe/London", "2027년 1월 1일 (금) 오전 10:00 (GMT)"},
		{English, "Europe/London", "Fri 1 Jan 2027, 10:00 GMT"},
	} {
		if got := LocalTime(in(tt.lang), at, tt.zone); got != tt.want {
			t.Errorf("LocalTime(%s, %s) = %q, want %q", tt.lang, tt.zone, got, tt.want)
		}
	}
	noon := time.Date(2027, 1, 1, 3, 5, 0, 0, time.UTC) // 12:05 in Seoul
	if got, want := LocalTime(in(Korean), noon, "Asia/Seoul"), "2027년 1월 1일 (금) 오후 12:05"; got != want {
		t.Errorf("LocalTime(ko, noon) = %q, want %q", got, want)
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		d      time.Duration
		en, ko string
	}{
		{-time.Second, "0 s", "0초"},
		{12 * time.Second, "12 s", "12초"},
		{4*time.Minute + 9*time.Second, "4 min 09 s", "4분 09초"},
		{2*time.Hour + 5*time.Minute + 30*time.Second, "2 h 05 min", "2시간 05분"},
	}
	for _, tt := range tests {
		if got := Duration(in(English), tt.d); got != tt.en {
			t.Errorf("Duration(en, %v) = %q, want %q", tt.d, got, tt.en)
		}
		if got := Duration(in(Korean), tt.d); got != tt.ko {
			t.Errorf("Duration(ko, %v) = %q, want %q", tt.d, got, tt.ko)
		}
	}
}

// Counts pick English's plural form; Korean has one form.
func TestT_Plural(t *testing.T) {
	for _, tt := range []struct {
		lang  string
		count int
		want  string
	}{
		{English, 1, "You hold 1 seat for 5 min 00 s. Pay before the time runs out."},
		{English, 2, "You hold 2 seats for 5 min 00 s. Pay before the time runs out."},
		{Korean, 1, "좌석 1석을 5분 00초 동안 선점했습니다. 시간 안에 결제해 주세요."},
	} {
		if got := HeldNotice(tt.count).Text(in(tt.lang), nil, heldFor(tt.count, 5*time.Minute)); got != tt.want {
			t.Errorf("HeldNotice(%s, %d) = %q, want %q", tt.lang, tt.count, got, tt.want)
		}
	}
}

// An unknown, empty or malformed Accept-Language, and one for a language
// the site does not speak, gives the default; a known one wins by quality.
// Each header is asked about twice in a row, so that the second answer
// comes from the copy of the first and must be the same.
func TestMatchLang(t *testing.T) {
	for _, tt := range []struct{ header, def, want string }{
		{"", Korean, Korean},
		{"", English, English},
		{"en-US,en;q=0.9", Korean, English},
		{"ko-KR,ko;q=0.9,en;q=0.8", English, Korean},
		{"fr-FR,fr;q=0.9", Korean, Korean},
		{"fr-FR,fr;q=0.9", English, English},
		{"de;q=0.9,en;q=0.5", Korean, English},
		{"en;q=0.2,ko;q=0.8", English, Korean},
		{"zz-ZZ", English, English},
		{";;;,=q=,,\x00", Korean, Korean},
		{"en;q=abc", Korean, Korean},
		{string(make([]byte, 5000)), English, English},
	} {
		for range 2 {
			if got := MatchLang(tt.header, tt.def); got != tt.want {
				t.Errorf("MatchLang(%q, %s) = %s, want %s", tt.header, tt.def, got, tt.want)
			}
		}
	}
}

// Past maxMatchedLangs headers, MatchLang keeps no more and still answers
// each by parsing it, from any number of goroutines at once.
func TestMatchLang_Full(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range maxMatchedLangs {
				header := fmt.Sprintf("en-x-%d%d,ko;q=0.%d", g, i, 1+i%8)
				if got := MatchLang(header, Korean); got != English {
					t.Errorf("MatchLang(%q, ko) = %s, want en", header, got)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := matchedCount.Load(); n > maxMatchedLangs+8 {
		t.Errorf("%d headers kept, want at most %d and one per goroutine racing to the last place", n, maxMatchedLangs)
	}
	if got := MatchLang("ko;q=0.3,en;q=0.9", Korean); got != English {
		t.Errorf("MatchLang of a new header with the copy full = %s, want en", got)
	}
}

// A message without arguments, asked for again in each language, is its
// catalog's sentence in that language every time (the second from the
// copy kept by the first), and the copy of one language never answers for
// the other.
func TestIn_Plain(t *testing.T) {
	for range 2 {
		for _, lang := range []string{Korean, English} {
			m := Catalogs[lang]["err_log_in"]
			if got := In(lang, boxoffice.M("err_log_in")); got != m.Other || got == "" {
				t.Errorf("%s: %q, want %q", lang, got, m.Other)
			}
		}
	}
	if In(Korean, boxoffice.M("err_log_in")) == In(English, boxoffice.M("err_log_in")) {
		t.Error("err_log_in is the same sentence in Korean and English")
	}
}

// A message's Msg and At arguments are put into the same language.
func TestIn_NestedArgs(t *testing.T) {
	at := boxoffice.At{Time: time.Date(2027, 1, 1, 10, 0, 0, 0, time.UTC), Zone: "Asia/Seoul"}
	m := boxoffice.M("queue_not_open_yet", "Time", at)
	if got, want := In(Korean, m), "대기열이 아직 열리지 않았습니다. 2027년 1월 1일 (금) 오후 7:00에 열립니다."; got != want {
		t.Errorf("ko: %q, want %q", got, want)
	}
	if got, want := In(English, m), "The queue is not open yet. It opens Fri 1 Jan 2027, 19:00 KST."; got != want {
		t.Errorf("en: %q, want %q", got, want)
	}
}

// An order failed for its payment's amount speaks of a refund only when a
// payment of it was charged.
func TestOrderFailureText_Amount(t *testing.T) {
	for _, tt := range []struct {
		charged bool
		want    boxoffice.MsgID
	}{{true, "order_fail_amount"}, {false, "order_fail_amount_uncharged"}} {
		o := &boxoffice.Order{Status: boxoffice.OrderFailed, FailureCode: boxoffice.ReasonAmountMismatch, Charged: tt.charged}
		for _, lang := range []string{English, Korean} {
			if got, want := OrderFailureText(in(lang), o), T(in(lang), tt.want); got != want {
				t.Errorf("OrderFailureText(%s, charged %v) = %q, want %q", lang, tt.charged, got, want)
			}
		}
	}
}
