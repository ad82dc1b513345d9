package handlers_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/brotli"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/payment/sandbox"
)

// rawGet sends GET path as c with the headers and returns the answer with
// its body as sent (a body Go's transport did not decode).
func rawGet(t *testing.T, c *client, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	resp := c.do("GET", path, nil, headers...)
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return resp, body
}

// decoded returns body decoded from coding ("br", "gzip" or "").
func decoded(t *testing.T, coding string, body []byte) []byte {
	t.Helper()
	var r io.Reader = bytes.NewReader(body)
	switch coding {
	case "br":
		r = brotli.NewReader(r)
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		r = zr
	}
	plain, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decode %s: %v", coding, err)
	}
	return plain
}

// TestSeatMap_SharedPage checks the seat map page that the instance keeps
// rendered and compressed for every fan: one page in every coding, an ETag
// and 304 to a browser that has it, but only after the entry is checked;
// a page per language; and the fan's own part (statuses, holds) still
// right after seats are sold, from the statuses and the list of a section.
func TestSeatMap_SharedPage(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	e := app.newSeatEvent(t)
	fan, _ := app.newFan(t, "fan@example.com", e.ID)
	buyer, _ := app.newFan(t, "buyer@example.com", e.ID)
	path := seatsPath(e.ID)
	const en, ko = "Accept-Language: en", "Accept-Language: ko"

	resp, plain := rawGet(t, fan, path, en, "Accept-Encoding: identity")
	wantStatus(t, resp, http.StatusOK)
	etag := resp.Header.Get("ETag")
	if !strings.HasPrefix(etag, `W/"`) || resp.Header.Get("Cache-Control") != "private, no-cache" || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("ETag %q, Cache-Control %q, Content-Encoding %q; want a weak ETag, private, no-cache and none",
			etag, resp.Header.Get("Cache-Control"), resp.Header.Get("Content-Encoding"))
	}
	if !bytes.Contains(plain, []byte(`data-testid="seatmap"`)) || !bytes.Contains(plain, []byte("Section A, row &lt;r&gt;, seat &lt;n&gt;")) {
		t.Fatal("the page is not the English seat map")
	}

	t.Run("Codings", func(t *testing.T) {
		for _, tt := range []struct{ accept, coding string }{
			{"gzip", "gzip"},
			{"gzip, deflate, br, zstd", "br"},
			{"br;q=0, gzip;q=0.5", "gzip"},
			{"*", "br"},
			{"deflate", ""},
		} {
			resp, body := rawGet(t, fan, path, en, "Accept-Encoding: "+tt.accept)
			wantStatus(t, resp, http.StatusOK)
			if got := resp.Header.Get("Content-Encoding"); got != tt.coding {
				t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", tt.accept, got, tt.coding)
				continue
			}
			if tt.coding != "" && len(body) >= len(plain)/3 {
				t.Errorf("Accept-Encoding %q: %d bytes of %s for a page of %d", tt.accept, len(body), tt.coding, len(plain))
			}
			if !bytes.Equal(decoded(t, tt.coding, body), plain) {
				t.Errorf("Accept-Encoding %q: the %s body does not decode to the page", tt.accept, tt.coding)
			}
			if resp.Header.Get("ETag") != etag || !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Accept-Encoding") {
				t.Errorf("Accept-Encoding %q: ETag %q (want %q), Vary %q", tt.accept, resp.Header.Get("ETag"), etag, resp.Header.Values("Vary"))
			}
		}
	})

	t.Run("NotModified", func(t *testing.T) {
		for _, inm := range []string{etag, strings.TrimPrefix(etag, "W/"), `"other", ` + etag, "*"} {
			resp, body := rawGet(t, fan, path, en, "If-None-Match: "+inm)
			wantStatus(t, resp, http.StatusNotModified)
			if len(body) != 0 || resp.Header.Get("ETag") != etag {
				t.Errorf("If-None-Match %s: 304 with %d bytes and ETag %q", inm, len(body), resp.Header.Get("ETag"))
			}
		}
		resp, _ := rawGet(t, fan, path, en, `If-None-Match: W/"stale"`)
		wantStatus(t, resp, http.StatusOK)
	})

	t.Run("Korean", func(t *testing.T) {
		resp, body := rawGet(t, fan, path, ko, "Accept-Encoding: identity")
		wantStatus(t, resp, http.StatusOK)
		if !bytes.Contains(body, []byte("A구역 &lt;r&gt;열 &lt;n&gt;번")) || !bytes.Contains(body, []byte(`<html lang="ko"`)) || bytes.Contains(body, []byte("Section A")) {
			t.Error("the Korean page is not in Korean")
		}
		if resp.Header.Get("ETag") == etag {
			t.Error("the Korean page has the English page's ETag")
		}
		resp, _ = rawGet(t, fan, path, ko, "If-None-Match: "+etag)
		wantStatus(t, resp, http.StatusOK)
		if _, body := rawGet(t, fan, path, en, "Accept-Encoding: identity"); !bytes.Equal(body, plain) {
			t.Error("the English page changed after the Korean one was rendered")
		}
	})

	t.Run("ErrNoEntryToken", func(t *testing.T) {
		stranger, _ := app.newAccount(t, "stranger@example.com", boxoffice.RoleFan)
		for _, h := range []string{"If-None-Match: " + etag, "Accept-Encoding: br"} {
			resp, body := rawGet(t, stranger, path, en, h)
			wantStatus(t, resp, http.StatusForbidden)
			if resp.Header.Get("ETag") != "" || bytes.Contains(body, []byte("data-id=")) {
				t.Errorf("%s: a fan without an entry got an ETag or the map", h)
			}
		}
	})

	t.Run("SoldSeat", func(t *testing.T) {
		hold(t, buyer, e.ID, "A-1-1", "A-1-2")
		resp := buyer.do("POST", fmt.Sprintf("/events/%d/orders", e.ID), url.Values{}, "Accept: application/json")
		wantStatus(t, resp, http.StatusCreated)
		var o orderAnswer
		decodeJSON(t, resp, &o)
		wantStatus(t, buyer.do("GET", app.payAtSandbox(t, buyer, o, "pay", sandbox.ScenarioDefault), nil, "Accept: application/json"), http.StatusOK)

		resp, _ = rawGet(t, fan, path, en, "If-None-Match: "+etag)
		wantStatus(t, resp, http.StatusNotModified) // the map is the same for every fan, sale or not
		waitFor(t, "the sale in the fan's seat statuses", func() bool {
			return getSeatMap(t, fan, e.ID).statuses()["A-1-1"] == "sold"
		})
		var st struct{ Statuses map[string]string }
		decodeJSON(t, fan.do("GET", path+"/status", nil, "Accept: application/json"), &st)
		if st.Statuses["A-1-1"] != "sold" || st.Statuses["A-1-2"] != "sold" {
			t.Errorf("the statuses say %v, want A-1-1 and A-1-2 sold", st.Statuses)
		}
		d := doc(t, fan.do("GET", path+"?section=A", nil, en))
		if _, disabled := d.Find(`[data-testid="list-A-1-1"]`).Attr("disabled"); !disabled || !strings.Contains(d.Find(`[data-testid="list-A-1-1"]`).Parent().Text(), "sold") {
			t.Errorf("the list of section A shows sold seat A-1-1 as %q, want it sold and not to be chosen", d.Find(`[data-testid="list-A-1-1"]`).Parent().Text())
		}
	})

	t.Run("HoldWithoutJavaScript", func(t *testing.T) {
		_, page := rawGet(t, fan, path, en)
		d, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
		if err != nil {
			t.Fatal(err)
		}
		link, _ := d.Find(`[data-testid=section-A]`).Attr("href")
		if !bytes.Contains(page, []byte(`data-testid="seats-noscript"`)) || link == "" {
			t.Fatal("the page does not lead a fan without JavaScript to a section's list")
		}
		d = doc(t, fan.do("GET", link, nil, en))
		form := d.Find(`[data-testid=list-form]`)
		action, _ := form.Attr("action")
		section, _ := form.Find(`input[name=section]`).Attr("value")
		resp := fan.do("POST", action, url.Values{"section": {section}, "seat": {"A-3-3", "A-3-4"}})
		wantStatus(t, resp, http.StatusSeeOther)
		d = doc(t, fan.do("GET", resp.Header.Get("Location"), nil, en))
		if got := testid(d, "hold-notice"); !strings.Contains(got, "You hold 2 seats") {
			t.Errorf("notice = %q, want that 2 seats are held", got)
		}
		if got := testid(d, "held-seats"); !strings.Contains(got, "Section A, row 3, seat 3") || d.Find(`[data-testid=checkout]`).Length() != 1 {
			t.Errorf("held seats = %q, want A-3-3 with the check-out button", got)
		}
		if _, disabled := d.Find(`[data-testid="list-A-3-4"]`).Attr("disabled"); !disabled {
			t.Error("a seat the fan holds can be chosen again in the list")
		}
	})
}
