package main

import (
	"sync"
	"testing"
	"time"
)

// The sell-out through the measurement steps splits into the steps that ran one after the other:
// the time before the phase, the hold step from its first step's start to
// its last step's end, the fans holding, the fans paying, and the rest.
func TestSellOutParts(t *testing.T) {
	first := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	p := &Phase{start: first.Add(30 * time.Second), Steps: []Stats{
		{Name: holdStepName, Offset: 0.5, Seconds: 1},
		{Name: releaseStepName, Offset: 1.5, Seconds: 2},
		{Name: "fans holding seats, closed loop, 256 connections", Offset: 4, Seconds: 20},
		{Name: "POST /events/{id}/holds", Offset: 4, Seconds: 19},
		{Name: "fans paying, closed loop, 256 connections", Offset: 24.5, Seconds: 60},
	}}
	got := sellOutParts(p, first, 115*time.Second)
	want := "the sell-out through the measurement steps, 115.0 s, step by step: 30.0 s after the first admission before this phase (the waiting phase's steps: position polls and seat map pages), 3.0 s the hold step (every seat held and released, measured on its own), 20.0 s fans holding, 60.0 s fans paying, 2.0 s between the steps"
	if got != want {
		t.Errorf("sellOutParts:\n got %s\nwant %s", got, want)
	}
}

// A fan's first and last successful hold are the earliest and the latest
// answer, whatever the order in which concurrent fans record them.
func TestBuyTotals_SawHold(t *testing.T) {
	var tot buyTotals
	base := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range 500 {
		wg.Go(func() { tot.sawHold(base.Add(time.Duration((i*7919)%500) * time.Millisecond)) })
	}
	wg.Wait()
	if got := unixTime(tot.firstHeld.Load()); !got.Equal(base) {
		t.Errorf("first hold at %v, want %v", got, base)
	}
	if got, want := unixTime(tot.lastHeld.Load()), base.Add(499*time.Millisecond); !got.Equal(want) {
		t.Errorf("last hold at %v, want %v", got, want)
	}
}
