package boxoffice_test

import (
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
