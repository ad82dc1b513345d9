package boxoffice_test

import (
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

func TestValidSeatLabel(t *testing.T) {
	tests := []struct {
		label string
		want  bool
	}{
		{"A-1-1", true},
		{"F103-25-7", true},
		{"Floor-A-12-9999", true}, // a section may contain "-"
		{"북측-3-14", true},
		{strings.Repeat("x", 40) + "-1-1", true},
		{strings.Repeat("x", 41) + "-1-1", false},
		{"", false},
		{"A", false},
		{"A-1", false},
		{"-1-1", false},
		{"A-0-1", false},
		{"A-1-0", false},
		{"A-01-1", false},
		{"A-1-10000", false},
		{"A-1-1a", false},
		{"A-1-", false},
		{"A--1", false},
		{"A\n-1-1", false},
		{"A\x00-1-1", false},
		{"\xff-1-1", false},
		{"A-1-1 ", false},
	}
	for _, tt := range tests {
		if got := boxoffice.ValidSeatLabel(tt.label); got != tt.want {
			t.Errorf("ValidSeatLabel(%q) = %v, want %v", tt.label, got, tt.want)
		}
	}
}

func TestSeatMapState(t *testing.T) {
	s := boxoffice.SeatMapState{
		Statuses: map[string]boxoffice.SeatStatus{"A-1-1": boxoffice.SeatMine, "A-1-2": boxoffice.SeatSold},
		Mine:     []string{"A-1-1"},
		HoldsTTL: 90 * time.Second,
		Owned:    2,
	}
	for label, want := range map[string]boxoffice.SeatStatus{
		"A-1-1": boxoffice.SeatMine, "A-1-2": boxoffice.SeatSold, "A-1-3": boxoffice.SeatFree,
	} {
		if got := s.Status(label); got != want {
			t.Errorf("Status(%q) = %q, want %q", label, got, want)
		}
	}
	for limit, want := range map[int]int{5: 2, 3: 0, 2: 0, 1: 0} {
		if got := s.Left(limit); got != want {
			t.Errorf("Left(%d) = %d, want %d", limit, got, want)
		}
	}
}
