package handlers

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/singleflight"
)

// seatMapPagesMax bounds the seat map pages an instance keeps: one per
// event, version of the event and language (the arena's is about 0.9 MB
// in all: the page, and its gzip and brotli forms); the least recently
// served go first.
const seatMapPagesMax = 32

// seatMapPages is the instance's cache of seat map pages (views.SeatMapPage):
// the page is the same for every fan of an event, so it is rendered and
// compressed once per event, version (the event's UpdatedAt: prices and
// names are in it) and language, and served to every fan whose entry the
// handler checked first. The zero value is ready; it is safe for
// concurrent use.
type seatMapPages struct {
	once  sync.Once
	pages *lru.Cache[seatMapPageKey, *seatMapPage]
	loads singleflight.Group
}

// seatMapPageKey is everything a seat map page depends on.
type seatMapPageKey struct {
	event     int64
	version   int64 // the event's UpdatedAt, Unix ns
	lang      string
	broadcast string // the admin's message to the event's fans, shown without JavaScript too
}

// seatMapPage is one rendered seat map page: its weak ETag (a hash of the
// page) and its bytes as they are, gzipped and in brotli.
type seatMapPage struct {
	etag             string
	etagHeader       []string // []string{etag}, shared by every answer as securityHeaders' values are
	plain, gzip, brz []byte
}

// page returns the seat map page of e in lang with the broadcast (the
// admin's current message, "" for none), rendering and compressing it on
// first use (callers for one key share one rendering): a new broadcast is
// a new page, rendered once per instance and language.
func (p *seatMapPages) page(e *boxoffice.Event, es *eventSeats, lang, broadcast string) (*seatMapPage, error) {
	p.once.Do(func() { p.pages, _ = lru.New[seatMapPageKey, *seatMapPage](seatMapPagesMax) })
	key := seatMapPageKey{event: e.ID, version: e.UpdatedAt.UnixNano(), lang: lang, broadcast: broadcast}
	if pg, ok := p.pages.Get(key); ok {
		return pg, nil
	}
	v, err, _ := p.loads.Do(fmt.Sprint(key), func() (any, error) {
		var buf bytes.Buffer
		page := views.SeatMapPage(views.SeatMapPageData{Event: e, Map: es.view(e), Broadcast: broadcast})
		if err := page.Render(views.WithShared(lang), &buf); err != nil {
			return nil, fmt.Errorf("seat map page of event %d: %w", e.ID, err)
		}
		pg, err := newSeatMapPage(buf.Bytes())
		if err != nil {
			return nil, fmt.Errorf("seat map page of event %d: %w", e.ID, err)
		}
		p.pages.Add(key, pg)
		return pg, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*seatMapPage), nil
}

// newSeatMapPage compresses a page with gzip and brotli at their best
// levels (once per page, so the bytes count, not the time) at the same time.
func newSeatMapPage(plain []byte) (*seatMapPage, error) {
	sum := sha256.Sum256(plain)
	etag := `W/"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
	pg := &seatMapPage{etag: etag, etagHeader: []string{etag}, plain: plain}
	var gzErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		if _, gzErr = w.Write(plain); gzErr == nil {
			gzErr = w.Close()
		}
		pg.gzip = b.Bytes()
	})
	var b bytes.Buffer
	w := brotli.NewWriterLevel(&b, brotliLevel)
	_, err := w.Write(plain)
	if err == nil {
		err = w.Close()
	}
	pg.brz = b.Bytes()
	wg.Wait()
	if err == nil {
		err = gzErr
	}
	return pg, err
}

// brotliLevel is the brotli quality of seat map pages: past 9 the arena's
// page takes seconds to compress for a few percent.
const brotliLevel = 9

// serve answers c with the page: 304 Not Modified when If-None-Match names
// its ETag, else the page in the best coding Accept-Encoding accepts. The
// browser keeps the page but asks again each time (no-cache), so that the
// entry, which the caller checked first, is checked on every load.
func (pg *seatMapPage) serve(c echo.Context) error {
	h := c.Response().Header()
	h[echo.HeaderCacheControl] = privateNoCache
	h["Etag"] = pg.etagHeader // the canonical form of ETag, which Set would allocate each time
	addVary(h, "Accept, Accept-Encoding, HX-Request")
	req := c.Request()
	if etagMatches(req.Header.Get("If-None-Match"), pg.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	body := pg.plain
	switch coding := contentCoding(req.Header.Get(echo.HeaderAcceptEncoding)); coding {
	case "br":
		body = pg.brz
		h.Set(echo.HeaderContentEncoding, coding)
	case "gzip":
		body = pg.gzip
		h.Set(echo.HeaderContentEncoding, coding)
	}
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
	return c.Blob(http.StatusOK, echo.MIMETextHTMLCharsetUTF8, body)
}

// privateNoCache is the seat map page's Cache-Control, shared by every answer.
var privateNoCache = []string{"private, no-cache"}

// etagMatches reports whether an If-None-Match header names etag, or is
// "*", comparing weakly (RFC 9110, 13.1.2).
func etagMatches(header, etag string) bool {
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}

// contentCoding returns the coding to send for an Accept-Encoding header:
// "br", else "gzip", when it accepts one (named, or by "*", with a q-value
// above 0), else "" (the page as it is).
func contentCoding(header string) string {
	q := map[string]float64{}
	for part := range strings.SplitSeq(header, ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.ToLower(strings.TrimSpace(name))
		weight := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			var err error
			if weight, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
				weight = 0
			}
		}
		if name != "" {
			q[name] = weight
		}
	}
	for _, coding := range []string{"br", "gzip"} {
		weight, named := q[coding]
		if !named {
			weight = q["*"]
		}
		if weight > 0 {
			return coding
		}
	}
	return ""
}

// sharesSeatMapPage reports whether GET /events/:id/seats asks for the seat
// map page that every fan shares (seatMapPages): HTML, not htmx's hold
// panel, not a section's list. That page comes compressed as it is kept, so
// the route's gzip middleware skips it.
func sharesSeatMapPage(c echo.Context) bool {
	return !wantsJSON(c) && !isHTMX(c) && queryParam(c, "section") == ""
}

// queryParam is c.QueryParam(name), without parsing the query into a map
// when the address has none (echo parses it on first use), as the seat map
// page's address has none.
func queryParam(c echo.Context, name string) string {
	if c.Request().URL.RawQuery == "" {
		return ""
	}
	return c.QueryParam(name)
}
