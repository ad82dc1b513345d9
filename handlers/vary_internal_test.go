package handlers

import (
	"net/http"
	"testing"
)

// addVary merges every Vary line into one, names each header once, and
// costs nothing on the hot path where the session adds the Cookie the
// language listed already.
func TestAddVary(t *testing.T) {
	h := http.Header{}
	addVary(h, "Accept-Language, Cookie")
	shared := h["Vary"]
	if n := testing.AllocsPerRun(100, func() { addVary(h, "Cookie") }); n != 0 {
		t.Errorf("adding a listed name allocates %v times, want 0", n)
	}
	h.Add("Vary", "Accept-Encoding")
	addVary(h)
	addVary(h, "accept, Accept-Encoding, HX-Request")
	if got, want := h["Vary"], []string{"Accept-Language, Cookie, Accept-Encoding, accept, HX-Request"}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("Vary %q, want %q", got, want)
	}
	if shared[0] != "Accept-Language, Cookie" {
		t.Errorf("the first line was changed in place: %q", shared)
	}
}
