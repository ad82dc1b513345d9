package handlers

import (
	"bytes"
	"encoding/json"
	"math"
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
