package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/PuerkitoBio/goquery"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/handlers"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// inKorean makes Korean the app's default language, as DEFAULT_LANG does
// (newTestApp's default is English, for the tests that read English).
func inKorean(s *handlers.Server) { s.DefaultLang = views.Korean }

// pageLang returns a page's <html lang> and the text of its Events link.
func pageLang(t *testing.T, resp *http.Response) (string, string) {
	t.Helper()
	d := doc(t, resp)
	return d.Find("html").AttrOr("lang", ""), strings.TrimSpace(d.Find(`nav a[href="/"]:not(.brand)`).First().Text())
}

// The language comes from the cookie, else Accept-Language, else the
// default; an unknown or malformed value falls through and never fails a
// request.
func TestLang_Choice(t *testing.T) {
	t.Parallel()
	ko := newTestApp(t, inKorean)
	en := newTestApp(t)
	for _, tt := range []struct {
		name    string
		app     *testApp
		headers []string
		want    string
	}{
		{"DefaultKorean", ko, nil, views.Korean},
		{"DefaultEnglish", en, nil, views.English},
		{"AcceptEnglish", ko, []string{"Accept-Language: en-US,en;q=0.9"}, views.English},
		{"AcceptKorean", en, []string{"Accept-Language: ko-KR,ko;q=0.9,en;q=0.8"}, views.Korean},
		{"AcceptUnknown", ko, []string{"Accept-Language: fr-FR,de;q=0.5"}, views.Korean},
		{"AcceptUnknownEnglishDefault", en, []string{"Accept-Language: fr-FR"}, views.English},
		{"AcceptMalformed", ko, []string{"Accept-Language: ;;en=;q=x,,\t"}, views.Korean},
		{"AcceptHuge", en, []string{"Accept-Language: " + strings.Repeat("ko-KR,", 2000)}, views.English},
		{"CookieWins", ko, []string{"Accept-Language: ko", "Cookie: boxoffice_lang=en"}, views.English},
		{"CookieUnknown", ko, []string{"Accept-Language: en", "Cookie: boxoffice_lang=xx"}, views.English},
		{"CookieMalformed", en, []string{"Cookie: boxoffice_lang=%ZZ<script>"}, views.English},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := tt.app.newClient(t).do("GET", "/", nil, tt.headers...)
			wantStatus(t, resp, http.StatusOK)
			if got := resp.Header.Get("Content-Language"); got != tt.want {
				t.Errorf("Content-Language %q, want %q", got, tt.want)
			}
			lang, events := pageLang(t, resp)
			if want := views.In(tt.want, boxoffice.M("nav_events")); lang != tt.want || events != want {
				t.Errorf("<html lang=%q>, Events link %q; want %q and %q", lang, events, tt.want, want)
			}
		})
	}
}

// The switch keeps the choice in a cookie and on the account, goes back to
// the page it was on (a local path only), and refuses a language the site
// does not speak, changing nothing. The next log-in brings the account's
// language back in a fresh browser.
func TestLang_Switch(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, inKorean)
	c, acct := app.newAccount(t, "switch@example.com", boxoffice.RoleFan)

	resp := c.do("POST", "/lang", url.Values{"lang": {"en"}, "next": {"/me/orders?x=1"}})
	wantStatus(t, resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/me/orders?x=1" {
		t.Errorf("the switch goes to %q, want back to /me/orders?x=1", loc)
	}
	if lang, _ := pageLang(t, c.do("GET", "/me/orders", nil)); lang != views.English {
		t.Errorf("after the switch the page is in %q, want en", lang)
	}
	if a, err := app.Srv.Accounts.FindAccountByID(context.Background(), acct.ID); err != nil || a.Lang != views.English {
		t.Errorf("the account's language is %+v, %v; want en", a, err)
	}

	// A fresh browser: Korean by default, English once logged in.
	fresh := app.newClient(t)
	if lang, _ := pageLang(t, fresh.do("GET", "/", nil)); lang != views.Korean {
		t.Errorf("a fresh browser gets %q, want ko", lang)
	}
	wantStatus(t, fresh.do("POST", "/login", url.Values{"email": {"switch@example.com"}, "password": {"correct horse"}}), http.StatusSeeOther)
	if lang, _ := pageLang(t, fresh.do("GET", "/", nil)); lang != views.English {
		t.Errorf("after log-in the page is in %q, want the account's en", lang)
	}

	t.Run("BackFromReferer", func(t *testing.T) {
		resp := app.newClient(t).do("POST", "/lang", url.Values{"lang": {"ko"}}, "Referer: "+app.URL+"/signup")
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/signup" {
			t.Errorf("%d to %q, want 303 back to /signup", resp.StatusCode, loc)
		}
	})
	t.Run("NeverOffSite", func(t *testing.T) {
		for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example"} {
			resp := app.newClient(t).do("POST", "/lang", url.Values{"lang": {"en"}, "next": {next}})
			if loc := resp.Header.Get("Location"); loc != "/" {
				t.Errorf("next=%q goes to %q, want /", next, loc)
			}
		}
	})
	t.Run("ErrUnknownLanguage", func(t *testing.T) {
		for _, lang := range []string{"", "fr", "ko-KR", "<script>", strings.Repeat("k", 5000)} {
			resp := c.do("POST", "/lang", url.Values{"lang": {lang}}, "Accept: application/json")
			wantErrorCode(t, resp, boxoffice.EBADREQUEST)
			for _, ck := range resp.Cookies() {
				if ck.Name == "boxoffice_lang" {
					t.Errorf("lang=%.20q set the cookie to %q", lang, ck.Value)
				}
			}
		}
		if a, _ := app.Srv.Accounts.FindAccountByID(context.Background(), acct.ID); a.Lang != views.English {
			t.Errorf("a refused switch changed the account's language to %q", a.Lang)
		}
	})
	t.Run("ErrCrossOrigin", func(t *testing.T) {
		resp := app.newClient(t).do("POST", "/lang", url.Values{"lang": {"en"}}, "Origin: https://evil.example", "Sec-Fetch-Site: cross-site")
		wantStatus(t, resp, http.StatusForbidden)
	})
}

// A JSON error's message follows the request's language; its code and
// members do not.
func TestLang_JSONErrors(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, inKorean)
	for _, tt := range []struct {
		name, method, path string
		form               url.Values
		code               string
		msg                boxoffice.Msg
		fields             map[string]boxoffice.Msg
	}{
		{"NotFound", "GET", "/events/999999", nil, boxoffice.ENOTFOUND, boxoffice.M("err_no_event"), nil},
		{"NoPage", "GET", "/nowhere", nil, boxoffice.ENOTFOUND, boxoffice.M("err_no_page"), nil},
		{"LogIn", "GET", "/me/orders", nil, boxoffice.EUNAUTHORIZED, boxoffice.M("err_log_in"), nil},
		{"Invalid", "POST", "/signup", url.Values{"email": {"x"}, "password": {"short"}, "name": {""}}, boxoffice.EINVALID, boxoffice.M("err_invalid_fields"),
			map[string]boxoffice.Msg{"email": boxoffice.M("val_email_malformed"), "password": boxoffice.M("val_password_short", "Min", 8), "name": boxoffice.M("val_name_empty")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, accept := range []string{"", "ko", "en-GB,en;q=0.8", "xx;;"} {
				want := views.Korean
				if strings.HasPrefix(accept, "en") {
					want = views.English
				}
				resp := app.newClient(t).do(tt.method, tt.path, tt.form, "Accept: application/json", "Accept-Language: "+accept)
				var body struct {
					Error   string
					Message string
					Fields  map[string]string
				}
				decodeJSON(t, resp, &body)
				if body.Error != tt.code || body.Message != views.In(want, tt.msg) {
					t.Errorf("Accept-Language %q: %q %q, want %q %q", accept, body.Error, body.Message, tt.code, views.In(want, tt.msg))
				}
				for k, m := range tt.fields {
					if got := body.Fields[k]; got != views.In(want, m) {
						t.Errorf("Accept-Language %q: field %s %q, want %q", accept, k, got, views.In(want, m))
					}
				}
			}
		})
	}
}

// placeholder is a value a catalog's template fills in.
var placeholder = regexp.MustCompile(`\{\{[^}]*\}\}`)

// sentences returns the fixed parts of a language's messages that are long
// enough to be a sentence of that language and nothing else: parts of 12
// or more characters with a space, between the values the templates fill
// in. A page in another language must contain none of them.
func sentences(lang string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range views.Catalogs[lang] {
		for _, form := range []string{m.One, m.Other} {
			for _, part := range placeholder.Split(form, -1) {
				part = strings.TrimSpace(part)
				if len([]rune(part)) >= 12 && strings.Contains(part, " ") && !seen[part] {
					seen[part] = true
					out = append(out, part)
				}
			}
		}
	}
	return out
}

// pageText is what a person reads on a page: its text and the attributes
// that are read out or shown (labels, titles, placeholders, alt texts).
func pageText(d *goquery.Document) string {
	var b strings.Builder
	b.WriteString(d.Text())
	d.Find("[aria-label], [title], [placeholder], [alt]").Each(func(_ int, s *goquery.Selection) {
		for _, a := range []string{"aria-label", "title", "placeholder", "alt"} {
			b.WriteString("\n" + s.AttrOr(a, ""))
		}
	})
	return b.String()
}

// Every page of the route table, rendered in Korean, holds no sentence of
// the English catalog, and the other way round: nothing is left in one
// language. Pages of a fan who paid (tickets), of an admin, of a visitor
// and of the sandbox PG are all walked.
func TestLang_EveryPageInOneLanguage(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, inKorean)
	fan, _, o := app.checkout(t, "walker@example.com", "A-1-1", "A-1-2")
	checkoutPath := strings.TrimPrefix(o.CheckoutURL, app.URL)
	success := app.payAtSandbox(t, fan, o, "pay", "")
	wantStatus(t, fan.do("GET", success, nil), http.StatusSeeOther)
	ev := o.eventID(t, app)
	admin, _ := app.newAccount(t, "walker-admin@example.com", boxoffice.RoleAdmin)
	venues, err := app.Srv.Venues.FindVenues(context.Background())
	if err != nil || len(venues) == 0 {
		t.Fatal(err)
	}

	skip := map[string]bool{ // not pages: files, JSON, streams, redirects, the PG's API
		"/healthz": true, "/readyz": true, "/metrics": true, "/favicon.ico": true, "/static/*": true,
		"/events/:id/seats/status": true, "/events/:id/queue/stream": true, "/payments/success": true,
		"/orders/:order/tickets/:ticket/qr.png": true, "/admin/venues/:id/seats.csv": true,
		"/admin/events/:id/orders.csv": true,
	}
	pages := 0
	for _, r := range app.Config.Handler.(*echo.Echo).Routes() {
		if r.Method != http.MethodGet || skip[r.Path] || strings.HasPrefix(r.Path, "/sandbox-pg/") {
			continue
		}
		id := fmt.Sprint(ev)
		c := fan
		switch {
		case strings.HasPrefix(r.Path, "/admin/venues/"):
			id, c = fmt.Sprint(venues[0].ID), admin
		case strings.HasPrefix(r.Path, "/admin"):
			c = admin
		case r.Path == "/signup" || r.Path == "/login":
			c = app.newClient(t)
		}
		path := strings.NewReplacer(":id", id, ":order", o.OrderID).Replace(r.Path)
		if r.Path == "/payments/fail" {
			path += "?code=PAY_PROCESS_CANCELED&orderId=" + o.OrderID
		}
		checkPageLangs(t, c, path)
		pages++
	}
	checkPageLangs(t, fan, checkoutPath)
	checkPageLangs(t, fan, "/sandbox-pg/checkout?orderId=x")
	checkPageLangs(t, fan, "/no-such-page")
	if pages < 15 {
		t.Errorf("walked %d pages of the route table, want every page (15 or more)", pages)
	}
}

// checkPageLangs gets path in Korean and in English and fails on a page
// whose language is not the one asked for or that holds a sentence of the
// other language.
func checkPageLangs(t *testing.T, c *client, path string) {
	t.Helper()
	for lang, other := range map[string]string{views.Korean: views.English, views.English: views.Korean} {
		resp := c.do("GET", path, nil, "Accept-Language: "+lang)
		// A redirect is no page: the page a person reads is where it leads
		// (a fan whose turn ended with the sale is sent from the entry to
		// the waiting room).
		for hops := 0; resp.StatusCode >= 300 && resp.StatusCode < 400 && hops < 5; hops++ {
			resp = c.do("GET", resp.Header.Get("Location"), nil, "Accept-Language: "+lang)
		}
		if resp.StatusCode >= 500 {
			t.Errorf("%s in %s: status %d", path, lang, resp.StatusCode)
			continue
		}
		d := doc(t, resp)
		if got := d.Find("html").AttrOr("lang", ""); got != "" && got != lang {
			t.Errorf("%s in %s: <html lang=%q>", path, lang, got)
		}
		text := pageText(d)
		for _, s := range sentences(other) {
			if strings.Contains(text, s) {
				t.Errorf("%s in %s holds %q, from the %s catalog", path, lang, s, other)
			}
		}
		if lang == views.Korean && !strings.ContainsFunc(text, func(r rune) bool { return unicode.Is(unicode.Hangul, r) }) {
			t.Errorf("%s in Korean holds no Korean at all", path)
		}
	}
}

// The waiting room's live fragments come in each fan's language: the hub
// renders a fragment once per distinct state and language, never one
// language for everyone. Fans admitted in one batch are in the same state
// at the same tick, so only the language tells their fragments apart; the
// two Korean fans get the same fragment.
func TestLang_StreamFragments(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, inKorean)
	ev := app.openEvent(t)
	path := fmt.Sprintf("/events/%d/queue", ev.ID)
	langs := []string{views.Korean, views.English, views.Korean}
	other := map[string]string{views.Korean: views.English, views.English: views.Korean}
	check := func(i int, e sseEvent, name string, id boxoffice.MsgID) {
		t.Helper()
		d := fragment(t, e)
		text := pageText(d)
		if want := views.In(langs[i], boxoffice.M(id)); e.name != name || !strings.Contains(text, want) {
			t.Errorf("fan %d (%s): %q fragment %q, want %q holding %q", i, langs[i], e.name, text, name, want)
		}
		for _, s := range sentences(other[langs[i]]) {
			if strings.Contains(text, s) {
				t.Errorf("fan %d (%s): fragment holds %q", i, langs[i], s)
			}
		}
	}
	streams := make([]<-chan sseEvent, len(langs))
	for i, lang := range langs {
		c, _ := app.newAccount(t, fmt.Sprintf("stream-%d@example.com", i), boxoffice.RoleFan)
		if lang == views.English {
			wantStatus(t, c.do("POST", "/lang", url.Values{"lang": {"en"}}), http.StatusSeeOther)
		}
		wantStatus(t, c.do("POST", path, url.Values{}), http.StatusSeeOther)
		_, streams[i] = stream(t, c, ev.ID)
		check(i, next(t, streams[i]), "position", "queue_position")
	}

	app.admit(t, boxoffice.AdmissionSettings{EventID: ev.ID, Rate: len(langs)})
	admitted := make([]string, len(langs))
	for i, ch := range streams {
		e := next(t, ch)
		for e.name == "position" {
			e = next(t, ch)
		}
		check(i, e, "admitted", "queue_admitted_lead")
		admitted[i] = e.data
	}
	if admitted[0] != admitted[2] {
		t.Errorf("two Korean fans admitted at one tick got different fragments:\n%s\n%s", admitted[0], admitted[2])
	}
}

// An account signed up in the language its sign-up page was shown in: the
// browser's Accept-Language, or the switch's cookie, over DEFAULT_LANG;
// logging in again in a fresh browser brings that language back.
func TestLang_Signup(t *testing.T) {
	t.Parallel()
	app := newTestApp(t, inKorean)
	for _, tt := range []struct {
		name    string
		headers []string
		want    string
	}{
		{"AcceptEnglish", []string{"Accept-Language: en-US,en;q=0.9"}, views.English},
		{"CookieEnglish", []string{"Accept-Language: ko", "Cookie: boxoffice_lang=en"}, views.English},
		{"AcceptKorean", []string{"Accept-Language: ko-KR"}, views.Korean},
		{"Default", nil, views.Korean},
	} {
		t.Run(tt.name, func(t *testing.T) {
			email := strings.ToLower(tt.name) + "@example.com"
			wantStatus(t, app.newClient(t).do("POST", "/signup", signupForm(email, "correct horse", "Signer"), tt.headers...), http.StatusSeeOther)
			a, err := app.Srv.Accounts.Authenticate(context.Background(), email, "correct horse")
			if err != nil || a.Lang != tt.want {
				t.Fatalf("account language %q (%v), want %q", a.Lang, err, tt.want)
			}
			fresh := app.newClient(t)
			wantStatus(t, fresh.do("POST", "/login", url.Values{"email": {email}, "password": {"correct horse"}}), http.StatusSeeOther)
			if got := fresh.do("GET", "/", nil).Header.Get("Content-Language"); got != tt.want {
				t.Errorf("after log-in in a fresh browser the site speaks %q, want %q", got, tt.want)
			}
		})
	}
}
