package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// answerPosition's hand-appended answer must be the bytes encoding/json's
// Encoder writes for the same position, for every status and any figures.
func TestPositionAppendJSON(t *testing.T) {
	statuses := []string{boxoffice.QueueWaiting, boxoffice.QueueAdmitted, boxoffice.QueueSoldOut, boxoffice.QueueReset,
		boxoffice.QueueExpired, boxoffice.QueueDone, boxoffice.QueueLeft, boxoffice.QueueOtherSession, boxoffice.QueueNotInQueue}
	numbers := []int{0, 1, -1, 9, 10, 99, 100, 12345, math.MaxInt32, math.MinInt32, math.MaxInt, math.MinInt}
	etas := []time.Duration{0, time.Millisecond, 999 * time.Millisecond, time.Second, 90 * time.Minute, -time.Second, math.MaxInt64}
	n := 0
	for _, status := range statuses {
		if !plainStatus(status) {
			t.Fatalf("plainStatus(%q) = false", status)
		}
		for i, pos := range numbers {
			for j, eta := range etas {
				p := boxoffice.QueuePosition{Status: status, Position: pos, Ahead: numbers[(i+j)%len(numbers)], ETA: eta, Paused: (i+j)%2 == 0}
				a := positionJSON(p)
				var want bytes.Buffer
				if err := json.NewEncoder(&want).Encode(a); err != nil {
					t.Fatal(err)
				}
				if got := a.appendJSON(nil); !bytes.Equal(got, want.Bytes()) {
					t.Errorf("appendJSON(%+v) = %s, want %s", p, got, want.Bytes())
				}
				n++
			}
		}
	}
	for _, s := range []string{"", "Waiting", "wait\"ing", "대기", "a\\b", "x<y"} {
		if s != "" && plainStatus(s) {
			t.Errorf("plainStatus(%q) = true", s)
		}
	}
	t.Logf("%d positions compared", n)
}

// keepQueuePlace's hand-appended Set-Cookie line must be the line that
// net/http's Cookie.String writes for the same cookie, for any figures and
// epoch alphabet, Secure or not.
func TestQueuePlaceCookieLine(t *testing.T) {
	epochs := []string{"AAAAAAAAAAAAAAAAAAAAAA", "az09-_AZaz09-_AZaz09-_", "__________------------"}
	numbers := []int64{0, 1, 9, 10, 12345, math.MaxInt32, math.MaxInt64}
	for _, epoch := range epochs {
		for _, n := range numbers {
			for _, secure := range []bool{false, true} {
				start, maxAge := int(n%math.MaxInt32), max(n%86401, 1)
				value := fmt.Sprintf("%s.%d.%d.%d", epoch, n, n/2, start)
				want := (&http.Cookie{Name: queuePlaceCookie, Value: value, Path: fmt.Sprintf("/events/%d/queue", n),
					MaxAge: int(maxAge), HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode}).String()
				if got := string(appendQueuePlaceCookie(nil, epoch, n, n/2, start, n, maxAge, secure)); got != want {
					t.Errorf("got  %s\nwant %s", got, want)
				}
			}
		}
	}
}
