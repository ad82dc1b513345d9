package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/mxschmitt/playwright-go"
)

// An admin sets up a sale entirely in the browser: imports a venue from a
// CSV file, generates another from sections, creates an event with two
// grades and publishes it; a fan then sees it with its prices and seats.
func TestAdmin_SetUpAndPublishSale(t *testing.T) {
	a := startApp(t)
	cmd := exec.Command(binary, "create-admin", "--email", "boss@example.com", "--password", "correct horse", "--name", "Boss")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+a.DatabaseURL, "REDIS_URL="+storetest.RedisURL(), "LOG_LEVEL=warn")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("create-admin: %v\n%s", err, out)
	}
	csv := filepath.Join(t.TempDir(), "studio.csv")
	var rows []byte
	rows = append(rows, "section,row,number,grade\n"...)
	for r := 1; r <= 2; r++ {
		for n := 1; n <= 5; n++ {
			rows = append(rows, []byte("A,"+strconv.Itoa(r)+","+strconv.Itoa(n)+",R\n")...)
		}
	}
	for n := 1; n <= 4; n++ {
		rows = append(rows, []byte("B,1,"+strconv.Itoa(n)+",S\n")...)
	}
	must(t, "write CSV", os.WriteFile(csv, rows, 0o644))
	bad := filepath.Join(t.TempDir(), "bad.csv")
	must(t, "write bad CSV", os.WriteFile(bad, []byte("A,1,1,R\nA,x,2,R\nA,1,1,S\nA,1,3,\n"), 0o644))

	admin := newPage(t)
	_, err := admin.Goto(a.URL + "/admin")
	must(t, "open admin", err)
	must(t, "fill e-mail", admin.GetByLabel("E-mail").Fill("boss@example.com"))
	must(t, "fill password", admin.GetByLabel("Password").Fill("correct horse"))
	must(t, "log in", admin.GetByTestId("login-submit").Click())
	waitForURL(t, admin, "wait for the dashboard", a.URL+"/admin")
	screenshot(t, admin, "admin-dashboard-empty")

	// Import: first a file with problems, then a good one.
	must(t, "open venues", admin.GetByTestId("admin-nav-venues").Click())
	must(t, "wait for venues", admin.GetByTestId("no-venues").WaitFor())
	screenshot(t, admin, "admin-venues-empty")
	must(t, "new venue", admin.GetByTestId("new-venue").Click())
	must(t, "fill name", admin.GetByTestId("import-name").Fill("Studio Hall"))
	must(t, "choose bad file", admin.GetByTestId("import-file").SetInputFiles(bad))
	must(t, "import", admin.GetByTestId("import-submit").Click())
	must(t, "wait for problems", admin.GetByTestId("import-problems").WaitFor())
	if n, err := admin.GetByTestId("import-problem").Count(); err != nil || n != 3 {
		t.Errorf("%d problems listed (%v), want 3", n, err)
	}
	screenshot(t, admin, "admin-venue-import-errors")
	must(t, "choose file", admin.GetByTestId("import-file").SetInputFiles(csv))
	must(t, "import", admin.GetByTestId("import-submit").Click())
	waitForURL(t, admin, "wait for the venue", regexp.MustCompile(`/admin/venues/\d+$`))
	if r, s := count(t, admin, "grade-seats-R"), count(t, admin, "grade-seats-S"); r != "10" || s != "4" {
		t.Errorf("imported venue counts R %q S %q, want 10 and 4", r, s)
	}
	screenshot(t, admin, "admin-venue")
	venueURL := admin.URL()

	// Generate a second venue, adding a section row without JavaScript's help.
	_, err = admin.Goto(a.URL + "/admin/venues/new")
	must(t, "open new venue", err)
	must(t, "add a section", admin.GetByTestId("add-section").Click())
	must(t, "wait for 4 rows", admin.Locator(`input[name="sections[3].name"]`).WaitFor())
	must(t, "fill name", admin.GetByTestId("generate-name").Fill("Generated Hall"))
	for i, s := range [][4]string{{"Floor", "10", "20", "VIP"}, {"Left", "8", "6", "R"}, {"Right", "8", "6", "R"}, {"Balcony", "5", "24", "S"}} {
		for j, field := range []string{"name", "rows", "seats_per_row", "grade"} {
			must(t, "fill section", admin.Locator(`input[name="sections[`+strconv.Itoa(i)+`].`+field+`"]`).Fill(s[j]))
		}
	}
	screenshot(t, admin, "admin-venue-new")
	must(t, "generate", admin.GetByTestId("generate-submit").Click())
	waitForURL(t, admin, "wait for the venue", regexp.MustCompile(`/admin/venues/\d+$`))
	if got := count(t, admin, "venue-seat-count"); got != "416" {
		t.Errorf("generated venue has %q seats, want 416", got)
	}
	screenshot(t, admin, "admin-venue-generated")
	must(t, "open venues", admin.GetByTestId("admin-nav-venues").Click())
	must(t, "wait for the list", admin.GetByTestId("venues").WaitFor())
	screenshot(t, admin, "admin-venues")

	// The event, from the imported venue's page: its grades are pre-filled.
	_, err = admin.Goto(venueURL)
	must(t, "back to the venue", err)
	must(t, "new event", admin.GetByTestId("venue-new-event").Click())
	must(t, "wait for the form", admin.GetByTestId("event-form").WaitFor())
	if c0, c1 := inputValue(t, admin, "grades[0].code"), inputValue(t, admin, "grades[1].code"); c0 != "R" || c1 != "S" {
		t.Fatalf("grade rows pre-filled with %q and %q, want R and S", c0, c1)
	}
	seoul, _ := time.LoadLocation("Asia/Seoul")
	day := time.Now().In(seoul).AddDate(0, 0, 7)
	at := func(d time.Time, clock string) string { return d.Format("2006-01-02") + "T" + clock }
	must(t, "fill title", admin.GetByTestId("title.en").Fill("Studio Session"))
	must(t, "fill Korean title", admin.GetByTestId("title.ko").Fill("스튜디오 세션"))
	must(t, "fill description", admin.GetByTestId("description.en").Fill("An evening in the studio."))
	must(t, "fill queue opens", admin.GetByTestId("queue-opens-at").Fill(at(day, "20:00")))
	must(t, "fill sale ends", admin.GetByTestId("sale-ends-at").Fill(at(day.AddDate(0, 0, 6), "18:00")))
	must(t, "fill starts", admin.GetByTestId("starts-at").Fill(at(day.AddDate(0, 0, 7), "19:30")))
	for i, g := range [][3]string{{"R seat", "R석", "150000"}, {"S seat", "S석", "90000"}} {
		must(t, "fill grade name", admin.Locator(`input[name="grades[`+strconv.Itoa(i)+`].name.en"]`).Fill(g[0]))
		must(t, "fill Korean grade name", admin.Locator(`input[name="grades[`+strconv.Itoa(i)+`].name.ko"]`).Fill(g[1]))
		must(t, "fill grade price", admin.Locator(`input[name="grades[`+strconv.Itoa(i)+`].price"]`).Fill(g[2]))
	}
	screenshot(t, admin, "admin-event-new")
	must(t, "create the event", admin.GetByTestId("event-submit").Click())
	waitForURL(t, admin, "wait for the edit page", regexp.MustCompile(`/admin/events/\d+/edit$`))
	if got := text(t, admin, "event-status"); got != "Draft" {
		t.Errorf("new event status %q, want Draft", got)
	}
	if got := inputValue(t, admin, "queue_opens_at"); got != at(day, "20:00") {
		t.Errorf("queue opens shown as %q, want %q", got, at(day, "20:00"))
	}
	must(t, "publish", admin.GetByTestId("publish").Click())
	must(t, "wait for on sale", admin.GetByText("On sale").First().WaitFor())
	screenshot(t, admin, "admin-event-edit")
	// On a phone, in both languages, the header and the edit page fit the screen.
	must(t, "resize", admin.SetViewportSize(390, 844))
	fitsPhone(t, admin, "the event's edit page")
	screenshot(t, admin, "admin-event-edit-phone-en")
	korean(t, a, admin)
	fitsPhone(t, admin, "the event's edit page, in Korean")
	screenshot(t, admin, "admin-event-edit-phone-ko")
	_, err = admin.Goto(a.URL + "/admin/events")
	must(t, "open events on a phone", err)
	fitsPhone(t, admin, "the admin header, in Korean")
	must(t, "back to English", admin.Context().AddCookies([]playwright.OptionalCookie{{Name: "boxoffice_lang", Value: "en", URL: playwright.String(a.URL)}}))
	_, err = admin.Reload()
	must(t, "reload in English", err)
	fitsPhone(t, admin, "the admin header")
	must(t, "resize back", admin.SetViewportSize(1280, 800))
	_, err = admin.GoBack()
	must(t, "back to the edit page", err)
	must(t, "open events", admin.GetByTestId("admin-nav-events").Click())
	must(t, "wait for the list", admin.GetByTestId("events").WaitFor())
	screenshot(t, admin, "admin-events")
	_, err = admin.Goto(a.URL + "/admin")
	must(t, "open dashboard", err)
	if got := count(t, admin, "events-on-sale"); got != "1" {
		t.Errorf("dashboard counts %q events on sale, want 1", got)
	}
	screenshot(t, admin, "admin-dashboard")
	// On a phone the dashboard (its links wrap), the venues and the audit log
	// (their tables scroll in their own box) fit the screen in both languages.
	must(t, "resize for the lists", admin.SetViewportSize(390, 844))
	for _, lang := range []string{"en", "ko"} {
		must(t, "set the language to "+lang, admin.Context().AddCookies([]playwright.OptionalCookie{{Name: "boxoffice_lang", Value: lang, URL: playwright.String(a.URL)}}))
		for _, p := range []struct{ path, testID, name string }{
			{"/admin", "events-on-sale", "admin-dashboard"},
			{"/admin/venues", "venues", "admin-venues"},
			{"/admin/audit", "audit", "admin-audit"},
		} {
			_, err = admin.Goto(a.URL + p.path)
			must(t, "open "+p.path+" on a phone", err)
			must(t, "wait for "+p.testID, admin.GetByTestId(p.testID).WaitFor())
			fitsPhone(t, admin, p.path+" in "+lang)
			screenshot(t, admin, p.name+"-phone-"+lang)
		}
	}
	must(t, "back to English", admin.Context().AddCookies([]playwright.OptionalCookie{{Name: "boxoffice_lang", Value: "en", URL: playwright.String(a.URL)}}))

	// A fan in another browser finds it on the home page.
	fan := newPage(t)
	_, err = fan.Goto(a.URL + "/signup")
	must(t, "open sign-up", err)
	must(t, "fill name", fan.GetByLabel("Name").Fill("Fan"))
	must(t, "fill e-mail", fan.GetByLabel("E-mail").Fill("fan@example.com"))
	must(t, "fill password", fan.GetByLabel("Password").Fill("correct horse"))
	must(t, "sign up", fan.GetByTestId("signup-submit").Click())
	waitForURL(t, fan, "wait for home", a.URL+"/")
	must(t, "open the event", fan.GetByTestId("event-link").GetByText("Studio Session").Click())
	must(t, "wait for the event", fan.GetByTestId("grades").WaitFor())
	for id, want := range map[string]string{
		"event-title": "Studio Session", "event-venue": "Studio Hall",
		"price-R": "₩150,000", "left-R": "10 of 10", "price-S": "₩90,000", "left-S": "4 of 4",
	} {
		if got := text(t, fan, id); got != want {
			t.Errorf("fan's event page %s = %q, want %q", id, got, want)
		}
	}
	screenshot(t, fan, "fan-event-from-admin")
}

// inputValue returns the current value of the input named name.
func inputValue(t *testing.T, page playwright.Page, name string) string {
	t.Helper()
	v, err := page.Locator(`[name="` + name + `"]`).InputValue()
	must(t, "read "+name, err)
	return v
}
