package handlers

import (
	"io"
	"os"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
)

// arena returns the demo arena's 15,000 seats and an event with its grades,
// with every tenth seat held or sold.
func arena(b *testing.B) (*boxoffice.Event, *eventSeats, boxoffice.SeatMapState) {
	b.Helper()
	f, err := os.Open("../demo/venues/inspire_arena.csv")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	seats, err := boxoffice.ParseSeatCSV(f)
	if err != nil {
		b.Fatal(err)
	}
	e := &boxoffice.Event{ID: 1, Title: boxoffice.Text{"en": "Arena"}, Currency: "KRW", TimeZone: "Asia/Seoul", MaxPerAccount: 5, Grades: []boxoffice.Grade{
		{Code: "VIP", Name: boxoffice.Text{"en": "VIP seat"}, Price: 220000, Color: "#8e44ad"},
		{Code: "R", Name: boxoffice.Text{"en": "R seat"}, Price: 176000, Color: "#c0392b"},
		{Code: "S", Name: boxoffice.Text{"en": "S seat"}, Price: 154000, Color: "#e67e22"},
		{Code: "A", Name: boxoffice.Text{"en": "A seat"}, Price: 132000, Color: "#f1c40f"},
	}}
	st := boxoffice.SeatMapState{Statuses: map[string]boxoffice.SeatStatus{}}
	for i, s := range seats {
		switch i % 20 {
		case 0:
			st.Statuses[s.Label] = boxoffice.SeatHeld
		case 10:
			st.Statuses[s.Label] = boxoffice.SeatSold
		}
	}
	return e, newEventSeats(seats), st
}

// BenchmarkSeatMap_JSON builds GET /events/{id}/seats as JSON for 15,000 seats.
func BenchmarkSeatMap_JSON(b *testing.B) {
	e, es, st := arena(b)
	b.ReportAllocs()
	for b.Loop() {
		b.SetBytes(int64(len(es.seatMapJSON(e, st))))
	}
}

// BenchmarkSeatMap_Status builds the refresh's JSON (1,500 seats not free).
func BenchmarkSeatMap_Status(b *testing.B) {
	e, es, st := arena(b)
	b.ReportAllocs()
	for b.Loop() {
		es.seatStatusJSON(e, st, "")
	}
}

// BenchmarkSeatMap_Page renders the seat map page of 15,000 seats (once
// per event, version and language: seatMapPages), and reports its size as
// it is and compressed.
func BenchmarkSeatMap_Page(b *testing.B) {
	e, es, _ := arena(b)
	m := es.view(e)
	page := views.SeatMapPage(views.SeatMapPageData{Event: e, Map: m})
	b.ReportAllocs()
	for b.Loop() {
		if err := page.Render(views.WithShared(views.Korean), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	pg, err := (&seatMapPages{}).page(e, es, views.Korean, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(pg.plain))/1024, "KB")
	b.ReportMetric(float64(len(pg.gzip))/1024, "KB-gzip")
	b.ReportMetric(float64(len(pg.brz))/1024, "KB-br")
}

// BenchmarkSeatMap_Build lays out the arena's map (once per event and
// version of its grades).
func BenchmarkSeatMap_Build(b *testing.B) {
	e, es, _ := arena(b)
	b.ReportAllocs()
	for b.Loop() {
		views.NewSeatMap(e, es.seats)
	}
}
