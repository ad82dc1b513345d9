package handlers_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
)

// newAdmin returns a client logged in as a new admin.
func (a *testApp) newAdmin(t *testing.T) *client {
	t.Helper()
	c, _ := a.newAccount(t, fmt.Sprintf("admin-%s@example.com", strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")), boxoffice.RoleAdmin)
	return c
}

// count returns the number of rows of a table.
func (a *testApp) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := a.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// uploadForm returns the multipart form, and its Content-Type, with a name
// and, if filename is not "", a file, as the import form sends them.
func uploadForm(t *testing.T, name, filename string, content []byte) ([]byte, string) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	if err := w.WriteField("name", name); err != nil {
		t.Fatal(err)
	}
	if filename != "" {
		fw, err := w.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(content)
	}
	w.Close()
	return body.Bytes(), w.FormDataContentType()
}

// upload posts uploadForm's form.
func (c *client) upload(path, name, filename string, content []byte) *http.Response {
	c.t.Helper()
	body, contentType := uploadForm(c.t, name, filename, content)
	req, err := http.NewRequest("POST", c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := c.Do(req)
	if err != nil {
		c.t.Fatalf("POST %s: %v", path, err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// formValues returns what a browser sends for the form matched by sel: its
// named inputs (not buttons or files), selected options and text areas.
func formValues(t *testing.T, d *goquery.Document, sel string) url.Values {
	t.Helper()
	form := d.Find(sel)
	if form.Length() != 1 {
		t.Fatalf("%d forms match %s, want 1", form.Length(), sel)
	}
	v := url.Values{}
	form.Find("input, select, textarea").Each(func(_ int, s *goquery.Selection) {
		name, ok := s.Attr("name")
		if !ok {
			return
		}
		switch goquery.NodeName(s) {
		case "input":
			switch s.AttrOr("type", "text") {
			case "submit", "button", "reset", "file":
				return
			case "checkbox", "radio":
				if _, checked := s.Attr("checked"); !checked {
					return
				}
			}
			v.Add(name, s.AttrOr("value", ""))
		case "select":
			opt := s.Find("option[selected]").First()
			if opt.Length() == 0 {
				opt = s.Find("option").First()
			}
			v.Add(name, opt.AttrOr("value", opt.Text()))
		case "textarea":
			v.Add(name, s.Text())
		}
	})
	return v
}

// wantRedirect checks a 303 to a path with the prefix and returns the path.
func wantRedirect(t *testing.T, resp *http.Response, prefix string) string {
	t.Helper()
	wantStatus(t, resp, http.StatusSeeOther)
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, prefix) {
		t.Fatalf("Location = %q, want a path starting %q", loc, prefix)
	}
	return loc
}

func TestAdmin_Access(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	fan, _ := app.newAccount(t, "fan@example.com", boxoffice.RoleFan)
	visitor := app.newClient(t)
	admin := app.newAdmin(t)
	v, err := app.Srv.Venues.CreateVenue(context.Background(), "Hall", generate(t, boxoffice.SectionSpec{Name: "A", Rows: 1, SeatsPerRow: 2, Grade: "R"}))
	if err != nil {
		t.Fatal(err)
	}
	venue := fmt.Sprintf("/admin/venues/%d", v.ID)
	gets := []string{"/admin", "/admin/venues", "/admin/venues/new", venue, venue + "/seats.csv", "/admin/events", "/admin/events/new"}
	posts := []string{"/admin/venues", "/admin/venues/import", venue + "/name", venue + "/delete", "/admin/events"}

	for _, path := range gets {
		wantStatus(t, fan.do("GET", path, nil), http.StatusForbidden)
		resp := visitor.do("GET", path, nil)
		if loc := wantRedirect(t, resp, "/login?next="); loc != "/login?next="+url.QueryEscape(path) {
			t.Errorf("GET %s as a visitor: Location %q, want the log-in page coming back here", path, loc)
		}
		wantStatus(t, admin.do("GET", path, nil), http.StatusOK)
	}
	for _, path := range posts {
		form := url.Values{"name": {"Taken over"}}
		wantStatus(t, fan.do("POST", path, form), http.StatusForbidden)
		wantRedirect(t, visitor.do("POST", path, form), "/login")
	}
	if got := app.count(t, "venue"); got != 1 {
		t.Errorf("%d venues after refused posts, want 1", got)
	}
	if got, err := app.Srv.Venues.FindVenueByID(context.Background(), v.ID); err != nil || got.Name != "Hall" {
		t.Errorf("venue after refused posts = %+v, %v; want it unchanged", got, err)
	}
	if d := doc(t, fan.do("GET", "/admin", nil)); testid(d, "error-message") != "This page is for administrators." {
		t.Errorf("403 page says %q", testid(d, "error-message"))
	}
}

func generate(t *testing.T, sections ...boxoffice.SectionSpec) []boxoffice.Seat {
	t.Helper()
	seats, err := boxoffice.GenerateSeats(sections)
	if err != nil {
		t.Fatal(err)
	}
	return seats
}

func TestAdminVenues_Generate(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)

	t.Run("OK", func(t *testing.T) {
		form := url.Values{"name": {" Small hall "}, "section_rows": {"3"}, "action": {"generate"},
			"sections[0].name": {"A"}, "sections[0].rows": {"3"}, "sections[0].seats_per_row": {"4"}, "sections[0].grade": {"R"},
			"sections[1].name": {""}, "sections[1].rows": {""}, "sections[1].seats_per_row": {""}, "sections[1].grade": {""},
			"sections[2].name": {"B"}, "sections[2].rows": {"2"}, "sections[2].seats_per_row": {"5"}, "sections[2].grade": {"S"}}
		loc := wantRedirect(t, admin.do("POST", "/admin/venues", form), "/admin/venues/")
		d := doc(t, admin.do("GET", loc, nil))
		if got := testid(d, "venue-name"); got != "Small hall" {
			t.Errorf("venue name %q, want Small hall", got)
		}
		if got := testid(d, "flash"); got != "The venue was created." {
			t.Errorf("flash %q", got)
		}
		if got := count(d, "venue-seat-count"); got != "22" {
			t.Errorf("seat count %q, want 22", got)
		}
		if r, s := count(d, "grade-seats-R"), count(d, "grade-seats-S"); r != "12" || s != "10" {
			t.Errorf("grade counts R %q S %q, want 12 and 10", r, s)
		}
		paths := d.Find(`[data-testid="seat-map"] svg path`)
		if paths.Length() != 2 || strings.Count(paths.First().AttrOr("d", ""), "M") != 12 {
			t.Errorf("the preview has %d paths (first with %d seats), want one per grade, R with 12 seats", paths.Length(), strings.Count(paths.First().AttrOr("d", ""), "M"))
		}
		if paths.First().AttrOr("fill", "") == paths.Last().AttrOr("fill", "x") {
			t.Error("both grades have the same colour")
		}
		csv := admin.do("GET", loc+"/seats.csv", nil)
		wantStatus(t, csv, http.StatusOK)
		if ct := csv.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
			t.Errorf("export Content-Type %q, want text/csv", ct)
		}
		seats, err := boxoffice.ParseSeatCSV(csv.Body)
		if err != nil || len(seats) != 22 || seats[0].Label != "A-1-1" {
			t.Errorf("export reads back as %d seats (%v), want 22 from A-1-1", len(seats), err)
		}
	})

	t.Run("AddSection", func(t *testing.T) {
		form := url.Values{"name": {"Growing hall"}, "section_rows": {"3"}, "action": {"add_section"},
			"sections[0].name": {"A"}, "sections[0].rows": {"3"}, "sections[0].seats_per_row": {"4"}, "sections[0].grade": {"R"}}
		before := app.count(t, "venue")
		resp := admin.do("POST", "/admin/venues", form)
		wantStatus(t, resp, http.StatusOK)
		d := doc(t, resp)
		if n := d.Find(`[data-testid="section-row"]`).Length(); n != 4 {
			t.Errorf("%d section rows after adding one to 3, want 4", n)
		}
		if got := d.Find(`input[name="sections[0].name"]`).AttrOr("value", ""); got != "A" {
			t.Errorf("section 0 name %q after adding a row, want the typed A", got)
		}
		if got := d.Find(`[data-testid="generate-name"]`).AttrOr("value", ""); got != "Growing hall" {
			t.Errorf("venue name %q after adding a row, want the typed one", got)
		}
		if testid(d, "form-error") != "" {
			t.Error("adding a row shows an error")
		}
		if after := app.count(t, "venue"); after != before {
			t.Error("adding a row saved a venue")
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		form := url.Values{"name": {"   "}, "section_rows": {"3"},
			"sections[0].name": {"A"}, "sections[0].rows": {"0"}, "sections[0].seats_per_row": {"4"}, "sections[0].grade": {"R!"},
			"sections[1].name": {"A"}, "sections[1].rows": {"x"}, "sections[1].seats_per_row": {"500"}, "sections[1].grade": {"S"}}
		venues, seats := app.count(t, "venue"), app.count(t, "venue_seat")
		resp := admin.do("POST", "/admin/venues", form)
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		d := doc(t, resp)
		for _, f := range []string{"name", "sections[0].rows", "sections[0].grade", "sections[1].name", "sections[1].rows", "sections[1].seats_per_row"} {
			if testid(d, "error-"+f) == "" {
				t.Errorf("no reason shown for %s", f)
			}
		}
		if got := testid(d, "error-sections[1].rows"); got != "Enter a whole number." {
			t.Errorf("reason for rows x = %q, want the malformed-number one", got)
		}
		if got := d.Find(`input[name="sections[1].rows"]`).AttrOr("value", ""); got != "x" {
			t.Errorf("rows field %q, want what was typed", got)
		}
		if app.count(t, "venue") != venues || app.count(t, "venue_seat") != seats {
			t.Error("a refused venue wrote rows")
		}
	})

	t.Run("ErrNoSections", func(t *testing.T) {
		resp := admin.do("POST", "/admin/venues", url.Values{"name": {"Empty hall"}, "section_rows": {"3"}})
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		d := doc(t, resp)
		if testid(d, "error-sections") == "" || testid(d, "error-name") != "" {
			t.Errorf("reasons: sections %q, name %q; want only sections", testid(d, "error-sections"), testid(d, "error-name"))
		}
		if got := d.Find(`[data-testid="generate-name"]`).AttrOr("value", ""); got != "Empty hall" {
			t.Errorf("name field %q, want the typed name kept", got)
		}
	})
}

// pretixPlan is a small pretix seating plan: zone A with one row of two R
// seats and zone B with one S seat.
const pretixPlan = `{"name": "Studio", "categories": [{"name": "R", "color": "#ff0000"}, {"name": "S"}],
 "zones": [
  {"name": "A", "position": {"x": 0, "y": 0}, "rows": [{"row_number": "1", "position": {"x": 0, "y": 0}, "seats": [
    {"seat_guid": "a1", "seat_number": "1", "position": {"x": 10, "y": 20}, "category": "R"},
    {"seat_guid": "a2", "seat_number": "2", "position": {"x": 22, "y": 20}, "category": "R"}]}]},
  {"name": "B", "position": {"x": 100, "y": 0}, "rows": [{"row_number": "1", "position": {"x": 0, "y": 0}, "seats": [
    {"seat_guid": "b1", "seat_number": "1", "position": {"x": 10, "y": 20}, "category": "S"}]}]}]}`

func TestAdminVenues_Import(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)

	t.Run("CSV", func(t *testing.T) {
		loc := wantRedirect(t, admin.upload("/admin/venues/import", "CSV hall", "hall.csv",
			[]byte("section,row,number,grade\nA,1,1,R\nA,1,2,R\nA,2,1,S\n")), "/admin/venues/")
		d := doc(t, admin.do("GET", loc, nil))
		if count(d, "venue-seat-count") != "3" || count(d, "grade-seats-R") != "2" || count(d, "grade-seats-S") != "1" {
			t.Errorf("imported venue shows %q seats, R %q, S %q; want 3, 2, 1", count(d, "venue-seat-count"), count(d, "grade-seats-R"), count(d, "grade-seats-S"))
		}
	})

	t.Run("Pretix", func(t *testing.T) {
		loc := wantRedirect(t, admin.upload("/admin/venues/import", "Studio", "studio.json", []byte(pretixPlan)), "/admin/venues/")
		csv := admin.do("GET", loc+"/seats.csv", nil)
		wantStatus(t, csv, http.StatusOK)
		seats, err := boxoffice.ParseSeatCSV(csv.Body)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range seats {
			got = append(got, fmt.Sprintf("%s %s %g,%g", s.Label, s.Grade, s.X, s.Y))
		}
		want := []string{"A-1-1 R 10,20", "A-1-2 R 22,20", "B-1-1 S 110,20"}
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("pretix seats %q, want %q", got, want)
		}
	})

	big := bytes.Repeat([]byte("A,1,1,R\n"), boxoffice.MaxSeatMapBytes/8+1)
	tests := []struct {
		name, filename, content string
		problems                []string // each a problem listed, in order
	}{
		{"DuplicateSeat", "dup.csv", "section,row,number,grade\nA,1,1,R\nA,1,2,R\nA,1,1,S\n", []string{"line 4: duplicate seat A-1-1 (also at line 2)"}},
		{"UnknownGrade", "plan.json", strings.Replace(pretixPlan, `"category": "S"`, `"category": "VIP"`, 1),
			[]string{`zones[1].rows[0].seats[0].category: unknown grade "VIP" (not among the plan's categories)`}},
		{"EmptyField", "empty.csv", "A,1,1,R\nA,1,,R\n", []string{"line 2: number is empty"}},
		{"RowNotANumber", "rows.csv", "A,1,1,R\nA,B,2,R\n", []string{`line 2: row must be a whole number from 1 to 9999 without a leading zero, not "B"`}},
		{"TooLarge", "big.csv", string(big), []string{"the file is larger than 4 MiB"}},
		{"NotASeatMap", "photo.png", "\x89PNG\r\n\x1a\n\x00\x00\x00", []string{"the file is neither CSV (section,row,number,grade[,x,y]) nor a pretix seating plan (JSON)"}},
		{"BadJSON", "plan.json", `{"zones": [}`, []string{"the file is not valid JSON: line 1, column 12"}},
		// Labels with markup in them are refused, not just drawn as text
		// (TestHTMLInData_RendersAsText): no hall names a section so.
		{"SectionMarkupCSV", "xss.csv", "A,1,1,R\n\"\"\"><svg onload=alert(1)>\",1,1,R\n", []string{"line 2: section may not contain the characters < > \" ` \\"}},
		{"SectionMarkupPretix", "plan.json", strings.Replace(pretixPlan, `"name": "B"`, `"name": "<img src=x onerror=alert(1)>"`, 1),
			[]string{"zones[1].name: may not contain the characters < > \" ` \\"}},
		{"EveryProblem", "many.csv", "A,1,1,R\nA,0,1,R\nA,1,1,S\nA,1,2,\n", []string{
			`line 2: row must be a whole number`, "line 3: duplicate seat A-1-1 (also at line 1)", "line 4: grade is empty"}},
	}
	for _, tt := range tests {
		t.Run("Err"+tt.name, func(t *testing.T) {
			venues, seats := app.count(t, "venue"), app.count(t, "venue_seat")
			resp := admin.upload("/admin/venues/import", "Hall "+tt.name, tt.filename, []byte(tt.content))
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			d := doc(t, resp)
			items := d.Find(`[data-testid="import-problem"]`)
			if items.Length() != len(tt.problems) {
				t.Errorf("%d problems listed, want %d: %q", items.Length(), len(tt.problems), items.Text())
			}
			items.Each(func(i int, s *goquery.Selection) {
				if i < len(tt.problems) && !strings.HasPrefix(s.Text(), tt.problems[i]) {
					t.Errorf("problem %d = %q, want it to start %q", i, s.Text(), tt.problems[i])
				}
			})
			if got := d.Find(`[data-testid="import-name"]`).AttrOr("value", ""); got != "Hall "+tt.name {
				t.Errorf("name field %q, want the typed name kept", got)
			}
			if testid(d, "form-error") == "" {
				t.Error("no notice that nothing was saved")
			}
			if app.count(t, "venue") != venues || app.count(t, "venue_seat") != seats {
				t.Error("a refused import wrote rows")
			}
		})
	}

	t.Run("ErrNoFileNoName", func(t *testing.T) {
		resp := admin.upload("/admin/venues/import", "", "", nil)
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		d := doc(t, resp)
		if testid(d, "error-file") == "" || testid(d, "error-name") == "" {
			t.Errorf("reasons: file %q, name %q; want both", testid(d, "error-file"), testid(d, "error-name"))
		}
	})

	t.Run("ErrNotMultipart", func(t *testing.T) {
		resp := admin.do("POST", "/admin/venues/import", url.Values{"name": {"Form hall"}})
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		d := doc(t, resp)
		if testid(d, "error-file") == "" || d.Find(`[data-testid="import-name"]`).AttrOr("value", "") != "Form hall" {
			t.Errorf("a post without a file: reason %q, name %q", testid(d, "error-file"), d.Find(`[data-testid="import-name"]`).AttrOr("value", ""))
		}
	})

	t.Run("ErrFarTooLarge", func(t *testing.T) {
		venues := app.count(t, "venue")
		resp := admin.upload("/admin/venues/import", "Huge", "huge.csv", bytes.Repeat(big, 3))
		wantStatus(t, resp, http.StatusRequestEntityTooLarge)
		if app.count(t, "venue") != venues {
			t.Error("a refused upload wrote a venue")
		}
	})

	t.Run("ErrOtherRoutesKeepTheirLimit", func(t *testing.T) {
		resp := admin.do("POST", "/admin/venues", url.Values{"name": {strings.Repeat("a", 100<<10)}})
		wantStatus(t, resp, http.StatusRequestEntityTooLarge)
	})
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// The seat-map import's large body limit is for admins alone: a visitor's
// or a fan's upload is refused before any of its body is read, so neither
// can make the server take in megabytes; an admin's seat map of over 1 MiB
// is imported.
func TestAdminVenues_ImportBodyReadAfterAdminCheck(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	fan, _ := app.newAccount(t, "fan@example.com", "fan")
	var csv bytes.Buffer
	for row := 1; row <= 200; row++ {
		for seat := 1; seat <= 100; seat++ {
			fmt.Fprintf(&csv, "Grand tier left side upper rows,%d,%d,R,%d.25,%d.75\n", row, seat, 100000+seat, 100000+row)
		}
	}
	body, contentType := uploadForm(t, "Grand hall", "hall.csv", csv.Bytes())
	if len(body) < 1<<20 {
		t.Fatalf("upload of %d bytes, want over 1 MiB", len(body))
	}

	for _, tt := range []struct {
		name string
		c    *client
		want int
	}{{"Visitor", app.newClient(t), http.StatusSeeOther}, {"Fan", fan, http.StatusForbidden}} {
		t.Run(tt.name, func(t *testing.T) {
			read := &countingReader{r: bytes.NewReader(body)}
			req := httptest.NewRequest("POST", "/admin/venues/import", read)
			req.Header.Set("Content-Type", contentType)
			u, _ := url.Parse(app.URL)
			for _, cookie := range tt.c.Jar.Cookies(u) {
				req.AddCookie(cookie)
			}
			rec := httptest.NewRecorder()
			app.Config.Handler.ServeHTTP(rec, req)
			if rec.Code != tt.want || read.n.Load() != 0 {
				t.Errorf("status %d after reading %d of %d bytes, want %d with the body unread", rec.Code, read.n.Load(), len(body), tt.want)
			}
		})
	}
	if n := app.count(t, "venue"); n != 0 {
		t.Fatalf("%d venues after refused uploads, want 0", n)
	}

	loc := wantRedirect(t, app.newAdmin(t).upload("/admin/venues/import", "Grand hall", "hall.csv", csv.Bytes()), "/admin/venues/")
	if n := app.count(t, "venue_seat"); n != 20000 {
		t.Errorf("%d seats after the admin's import (%s), want 20000", n, loc)
	}
}

func TestAdminVenues_RenameDelete(t *testing.T) {
	t.Parallel()
	app := newTestApp(t)
	admin := app.newAdmin(t)
	ctx := context.Background()
	seats := generate(t, boxoffice.SectionSpec{Name: "A", Rows: 2, SeatsPerRow: 3, Grade: "R"})
	used, err := app.Srv.Venues.CreateVenue(ctx, "Used hall", seats)
	if err != nil {
		t.Fatal(err)
	}
	free, err := app.Srv.Venues.CreateVenue(ctx, "Free hall", seats)
	if err != nil {
		t.Fatal(err)
	}
	adminEvent(t, app, used.ID, "Concert")

	t.Run("Rename", func(t *testing.T) {
		path := fmt.Sprintf("/admin/venues/%d", free.ID)
		wantRedirect(t, admin.do("POST", path+"/name", url.Values{"name": {"Renamed hall"}}), path)
		if got := testid(doc(t, admin.do("GET", path, nil)), "venue-name"); got != "Renamed hall" {
			t.Errorf("name %q after rename", got)
		}
		resp := admin.do("POST", path+"/name", url.Values{"name": {"  "}})
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		if testid(doc(t, resp), "error-name") == "" {
			t.Error("an empty name shows no reason")
		}
	})

	t.Run("ErrDeleteUsed", func(t *testing.T) {
		resp := admin.do("POST", fmt.Sprintf("/admin/venues/%d/delete", used.ID), url.Values{})
		wantStatus(t, resp, http.StatusConflict)
		d := doc(t, resp)
		if got := testid(d, "form-error"); got != "Events use this venue, so it cannot be deleted." {
			t.Errorf("refusal says %q", got)
		}
		if !strings.Contains(testid(d, "venue-event-list"), "Concert") {
			t.Error("the page does not list the event that uses the venue")
		}
		if _, err := app.Srv.Venues.FindVenueByID(ctx, used.ID); err != nil {
			t.Errorf("the used venue is gone: %v", err)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		wantRedirect(t, admin.do("POST", fmt.Sprintf("/admin/venues/%d/delete", free.ID), url.Values{}), "/admin/venues")
		if _, err := app.Srv.Venues.FindVenueByID(ctx, free.ID); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
			t.Errorf("after delete: %v, want not found", err)
		}
		wantStatus(t, admin.do("GET", fmt.Sprintf("/admin/venues/%d", free.ID), nil), http.StatusNotFound)
		wantStatus(t, admin.do("GET", "/admin/venues/nope", nil), http.StatusNotFound)
	})
}
