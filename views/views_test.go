package views

import (
	"testing"
	"time"
)

func TestMoney(t *testing.T) {
	tests := []struct {
		amount   int64
		currency string
		want     string
	}{
		{150000, "KRW", "₩ 150,000"},
		{0, "KRW", "₩ 0"},
		{999, "KRW", "₩ 999"},
		{1234567, "KRW", "₩ 1,234,567"},
		{1250, "USD", "$ 12.50"},
		{5, "EUR", "€ 0.05"},
		{-1250, "USD", "$ -12.50"},
		{100, "XYZ", "XYZ 100"},
	}
	for _, tt := range tests {
		if got := Money(tt.amount, tt.currency); got != tt.want {
			t.Errorf("Money(%d, %s) = %q, want %q", tt.amount, tt.currency, got, tt.want)
		}
	}
}

func TestLocalTime(t *testing.T) {
	at := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	if got, want := LocalTime(at, "Asia/Seoul"), "Tue 1 Dec 2026, 20:00 KST"; got != want {
		t.Errorf("LocalTime(Seoul) = %q, want %q", got, want)
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0 s"},
		{12 * time.Second, "12 s"},
		{4*time.Minute + 9*time.Second, "4 min 09 s"},
		{2*time.Hour + 5*time.Minute + 30*time.Second, "2 h 05 min"},
	}
	for _, tt := range tests {
		if got := Duration(tt.d); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
