package handlers

import (
	"net/http"
	"net/url"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// langCookie keeps the language a visitor chose with the language switch
// (a base tag of views.Langs), for a year.
const (
	langCookie    = "boxoffice_lang"
	langCookieAge = 365 * 24 * time.Hour
)

// errBadLang refuses a language the site does not speak.
var errBadLang = boxoffice.NewError(boxoffice.EBADREQUEST, "err_bad_lang")

// language puts the request's language into its context
// (boxoffice.NewContextWithLang, read by views): the language cookie when
// it names one of views.Langs, else the best match of Accept-Language,
// else s.DefaultLang. An unknown or malformed value falls through to the
// next; nothing here fails a request, and it costs no round trip to Redis
// or PostgreSQL. The answer says which (Content-Language) and that it
// depends on them (Vary).
func (s *Server) language(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		lang := ""
		if v, ok := cookieValue(r, langCookie); ok && views.ValidLang(v) {
			lang = v
		} else {
			lang = views.MatchLang(r.Header.Get("Accept-Language"), s.defaultLang())
		}
		h := c.Response().Header()
		h["Content-Language"] = contentLanguage[lang]
		if len(h["Vary"]) == 0 {
			h["Vary"] = varyLanguage
		} else {
			addVary(h, varyLanguage...)
		}
		c.SetRequest(r.WithContext(boxoffice.NewContextWithLang(r.Context(), lang)))
		return next(c)
	}
}

// contentLanguage holds the Content-Language header's value for each of
// views.Langs, shared by every response as securityHeaders' values are.
var contentLanguage = func() map[string][]string {
	m := map[string][]string{}
	for _, l := range views.Langs {
		m[l] = []string{l}
	}
	return m
}()

// varyLanguage is the Vary line of an answer in the language chosen
// (language), shared as contentLanguage's values are: the language comes
// from the Accept-Language header and the language cookie.
var varyLanguage = []string{"Accept-Language, Cookie"}

// defaultLang is s.DefaultLang, or views.Korean when unset.
func (s *Server) defaultLang() string {
	if views.ValidLang(s.DefaultLang) {
		return s.DefaultLang
	}
	return views.Korean
}

// handleLang handles POST /lang (lang, next): the language switch. It keeps
// lang in the language cookie and, for a logged-in account, on the account
// (so that the next log-in, anywhere, brings it back), then answers 303 to
// next, a local path (the page the switch was on: the form's next, else the
// Referer's path, else /). A language the site does not speak: 400, and
// nothing changes.
func (s *Server) handleLang(c echo.Context) error {
	lang := c.FormValue("lang")
	if !views.ValidLang(lang) {
		return errBadLang
	}
	ctx := c.Request().Context()
	if a := boxoffice.AccountFromContext(ctx); a != nil {
		if err := s.Accounts.SetAccountLang(ctx, a.ID, lang); err != nil {
			return err
		}
	}
	s.setLangCookie(c, lang)
	next := c.FormValue("next")
	if next == "" {
		if u, err := url.Parse(c.Request().Referer()); err == nil {
			next = u.RequestURI()
		}
	}
	return c.Redirect(http.StatusSeeOther, localPath(next))
}

// setLangCookie sets the language cookie to lang.
func (s *Server) setLangCookie(c echo.Context, lang string) {
	c.SetCookie(&http.Cookie{
		Name:     langCookie,
		Value:    lang,
		Path:     "/",
		MaxAge:   int(langCookieAge / time.Second),
		HttpOnly: true,
		Secure:   s.Sessions.Cookie.Secure,
		SameSite: http.SameSiteLaxMode,
	})
}
