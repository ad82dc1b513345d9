package handlers

import (
	"cmp"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alexedwards/scs/v2"
	"github.com/boxoffice/boxoffice"
	"github.com/labstack/echo/v4"
)

// Session keys.
const (
	sessAccountID  = "account_id"
	sessEmail      = "email"
	sessName       = "name"
	sessRole       = "role"
	sessSessionKey = "sid"
)

// recover turns a panic into a 500 with a generic message, logging the stack
// for operators; no stack trace reaches a person.
func (s *Server) recover(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.Logger.Error("panic", "path", c.Request().URL.Path, "panic", r, "stack", string(debug.Stack()))
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}

// DefaultBodyTimeout is how long a request's body may take to arrive when
// Server.BodyTimeout is 0: ample for a form (64 KiB at most) on a poor
// mobile link and for an admin's seat-map upload (5 MiB at 4 Mbit/s), and
// shorter than the 15 s that a shutdown gives requests to finish, so a
// client that sends its body a byte at a time cannot hold the drain.
const DefaultBodyTimeout = 10 * time.Second

// bodyDeadline sets the connection's read deadline to BodyTimeout from now
// on a request that has a body, so that a body which stalls fails to read
// (the request is refused with 400) and the connection closes, instead of
// staying open for as long as the client likes. Requests without a body,
// such as the waiting room's SSE stream, get no deadline. net/http clears
// the deadline itself once the body was read to its end (before it starts
// watching the connection for the client going away), so a handler that
// runs long after reading its body is not cancelled by it, as it would be
// with http.Server.ReadTimeout. It runs first of every request's middleware,
// ahead of anything that reads a body. Where the ResponseWriter cannot set
// deadlines (httptest.ResponseRecorder), the body has none.
func (s *Server) bodyDeadline() echo.MiddlewareFunc {
	timeout := cmp.Or(s.BodyTimeout, DefaultBodyTimeout)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if r := c.Request(); r.Body != nil && r.Body != http.NoBody {
				_ = http.NewResponseController(c.Response().Writer).SetReadDeadline(time.Now().Add(timeout))
			}
			return next(c)
		}
	}
}

// securityHeaders sets on every response: no framing by any site
// (X-Frame-Options for old browsers, CSP frame-ancestors for the rest), no
// content-type sniffing, and no Referer sent to other sites.
// The values are shared by every response (header keys in canonical form),
// so that setting them allocates nothing; a later Set replaces a shared
// slice and an Add copies it (its capacity is its length), so no response
// can change another's.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h["X-Frame-Options"] = frameOptions
		h["Content-Security-Policy"] = frameAncestors
		h["X-Content-Type-Options"] = noSniff
		h["Referrer-Policy"] = sameOrigin
		return next(c)
	}
}

var (
	frameOptions   = []string{"DENY"}
	frameAncestors = []string{"frame-ancestors 'none'"}
	noSniff        = []string{"nosniff"}
	sameOrigin     = []string{"same-origin"}
)

// errCrossOrigin refuses a state-changing request from another site.
var errCrossOrigin = boxoffice.NewError(boxoffice.EFORBIDDEN, "err_cross_origin")

// crossOriginProtection refuses state-changing requests that a browser sends
// from another origin (Go's http.CrossOriginProtection: Sec-Fetch-Site, then
// Origin against Host). Requests without those headers, such as curl's, pass.
func crossOriginProtection() echo.MiddlewareFunc {
	cop := http.NewCrossOriginProtection()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := cop.Check(c.Request()); err != nil {
				return errCrossOrigin
			}
			return next(c)
		}
	}
}

// loadSession does what scs's LoadAndSave does, in echo's terms and without
// its per-request wrapping (a response writer, a handler and a copy of the
// request of its own): it loads the session of the session cookie into the
// request's context and, before the response's header is written (or once
// the handlers are done, when none wrote), commits a session that they
// changed and sets its cookie. It also puts the session's account and
// session key into the context. The account is read from the session (the
// instance's copy, or Redis), not PostgreSQL, so the hot paths of a sale
// cost no database query. A session store that cannot be read answers 503.
func (s *Server) loadSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r, res := c.Request(), c.Response()
		addVary(res.Header(), "Cookie")
		token, _ := cookieValue(r, s.Sessions.Cookie.Name)
		ctx, err := s.Sessions.Load(r.Context(), token)
		if err != nil {
			s.Sessions.ErrorFunc(res, r, err)
			return nil
		}
		var account *boxoffice.Account
		if id := s.Sessions.GetInt64(ctx, sessAccountID); id != 0 {
			account = &boxoffice.Account{
				ID:    id,
				Email: s.Sessions.GetString(ctx, sessEmail),
				Name:  s.Sessions.GetString(ctx, sessName),
				Role:  s.Sessions.GetString(ctx, sessRole),
			}
		}
		if key := s.Sessions.GetString(ctx, sessSessionKey); key != "" || account != nil {
			// a visitor's request carries no session value: a context
			// without one reads as no key and no account
			ctx = boxoffice.NewContextWithSession(ctx, key, account)
		}
		r = r.WithContext(ctx)
		c.SetRequest(r)
		res.Before(func() { s.saveSession(res.Writer, r) })
		err = next(c)
		if !res.Committed {
			s.saveSession(res.Writer, r)
		}
		return err
	}
}

// saveSession commits the session of r's context if the handlers changed it
// and sets its cookie, or sets the cookie that deletes it if they destroyed
// it, as scs's LoadAndSave does. The cookie is marked Secure here when the
// request came over https (overHTTPSOnly): its own mark, made before the
// header is written, may run before this one.
func (s *Server) saveSession(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	switch s.Sessions.Status(ctx) {
	case scs.Modified:
		token, expiry, err := s.Sessions.Commit(ctx)
		if err != nil {
			s.Sessions.ErrorFunc(w, r, err)
			return
		}
		s.Sessions.WriteSessionCookie(ctx, w, token, expiry)
	case scs.Destroyed:
		s.Sessions.WriteSessionCookie(ctx, w, "", time.Time{})
	default:
		return
	}
	if !s.Sessions.Cookie.Secure && s.overHTTPS(r) {
		markSecure(w.Header())
	}
}

// requireAccount answers visitors 401 (JSON); 401 with HX-Redirect to the
// log-in page (htmx: a redirect would be followed inside the request, and
// the log-in page swapped into the page); or a redirect to the log-in page
// (HTML). Log-in leads back to the page: the one asked for, or for a form
// or htmx request, the page it came from.
func requireAccount(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if boxoffice.AccountFromContext(c.Request().Context()) != nil {
			return next(c)
		}
		errLogIn := boxoffice.NewError(boxoffice.EUNAUTHORIZED, "err_log_in")
		switch r := c.Request(); {
		case wantsJSON(c):
			return errLogIn
		case isHTMX(c):
			c.Response().Header().Set("HX-Redirect", loginPath(r.Header.Get("HX-Current-URL")))
			return errLogIn
		case r.Method != http.MethodGet:
			return c.Redirect(http.StatusSeeOther, loginPath(r.Referer()))
		}
		return c.Redirect(http.StatusSeeOther, loginPath(c.Request().URL.RequestURI()))
	}
}

// loginPath is the log-in page that leads back to the page at back (a path,
// or a URL whose path and query are taken) if that is a path on this site
// (localPath), else to the home page.
func loginPath(back string) string {
	if u, err := url.Parse(back); err == nil && u.IsAbs() {
		back = u.RequestURI()
	}
	return "/login?next=" + url.QueryEscape(localPath(back))
}

// requireAdmin refuses fans with 403 and sends visitors to log in.
func requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return requireAccount(func(c echo.Context) error {
		if !boxoffice.AccountFromContext(c.Request().Context()).IsAdmin() {
			return boxoffice.NewError(boxoffice.EFORBIDDEN, "err_admins_only")
		}
		return next(c)
	})
}

// maxLocalPathLen is the longest redirect target (?next=) followed, in
// bytes: the site's longest links (the event form's reload) are far shorter.
const maxLocalPathLen = 2048

// localPath returns target if it is a path on this site of at most
// maxLocalPathLen bytes, and "/" otherwise, so that ?next= can never send a
// person to another site nor be echoed into a page or a Location header at
// any length. A redirect target is replaced, not refused: it comes from a
// link, and refusing it would keep a person from logging in.
func localPath(target string) string {
	u, err := url.Parse(target)
	if err != nil || target == "" || len(target) > maxLocalPathLen {
		return "/"
	}
	if u.IsAbs() || u.Host != "" || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(target, "//") || strings.Contains(target, "\\") {
		return "/"
	}
	return u.RequestURI()
}

// errUnreadable is the answer to input that is not text: PostgreSQL refuses
// NUL bytes and invalid UTF-8 in text columns, so such input never gets past
// the first middleware.
var errUnreadable = boxoffice.NewError(boxoffice.EBADREQUEST, "err_unreadable")

// MaxURIBytes is the longest request URI (path and query) accepted, in
// bytes: no input, in the address or the body (MaxBodyBytes), is longer.
// The site's longest address, the event form's reload, holds a few KiB.
const MaxURIBytes = MaxBodyBytes

// errLongURI is the answer to an address over MaxURIBytes.
var errLongURI = boxoffice.NewError(boxoffice.EBADREQUEST, "err_long_uri")

// readableInput refuses with 400 a request whose URI is over MaxURIBytes,
// or whose URL path, query, or urlencoded or multipart form (keys and
// values, not uploaded files) contains a NUL byte or invalid UTF-8. It
// parses the form itself, within the body limit in force, so handlers read
// the checked values. A form body that cannot be parsed is refused with 400
// as well (413 when too large).
func readableInput(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if len(r.RequestURI) > MaxURIBytes {
			return errLongURI
		}
		if !readable(r.URL.Path) {
			return errUnreadable
		}
		if r.URL.RawQuery != "" {
			query, _ := url.ParseQuery(r.URL.RawQuery)
			if !readableValues(query) {
				return errUnreadable
			}
		}
		var err error
		switch mediaType(r.Header.Get(echo.HeaderContentType)) {
		case echo.MIMEApplicationForm:
			if r.ContentLength == 0 && r.URL.RawQuery == "" {
				// An empty form, as a join's or a leave's post sends: what
				// ParseForm would find, without reading the body, parsing its
				// media type or two empty strings.
				r.PostForm, r.Form = url.Values{}, url.Values{}
				return next(c)
			}
			err = r.ParseForm()
		case echo.MIMEMultipartForm:
			err = r.ParseMultipartForm(multipartMemory)
		default:
			return next(c)
		}
		if err != nil {
			if he := (*echo.HTTPError)(nil); errors.As(err, &he) {
				return he
			}
			return errBadForm
		}
		if !readableValues(r.PostForm) {
			return errUnreadable
		}
		return next(c)
	}
}

// errNotAForm answers a body that is not a form sent to the site's routes.
var errNotAForm = boxoffice.NewError(boxoffice.EBADREQUEST, "err_send_form")

// formOnly refuses with 400 bad_request (err_send_form) a request to the
// site's routes whose body is neither an urlencoded nor a multipart form (a
// JSON body, say): their handlers read forms only, and would otherwise see
// every field empty and answer as if the person had left them blank. A
// request without a body is let through whatever its Content-Type. The PG's
// webhook and the sandbox PG, which read JSON, are not under it.
func formOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			return next(c)
		}
		switch mediaType(r.Header.Get(echo.HeaderContentType)) {
		case echo.MIMEApplicationForm, echo.MIMEMultipartForm:
			return next(c)
		}
		return errNotAForm
	}
}

// mediaType is the media type of a Content-Type header, lower case, or ""
// when it has none or it cannot be read; the plain form type that browsers
// send on every post is recognized without parsing.
func mediaType(contentType string) string {
	if contentType == echo.MIMEApplicationForm || contentType == "" {
		return contentType
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt
}

// multipartMemory is how much of a multipart form is held in memory (Go's
// default, as r.FormFile uses); larger files go to temporary files.
const multipartMemory = 32 << 20

// readable reports whether s is valid UTF-8 without NUL bytes.
func readable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

func readableValues(values url.Values) bool {
	for k, vs := range values {
		if !readable(k) {
			return false
		}
		for _, v := range vs {
			if !readable(v) {
				return false
			}
		}
	}
	return true
}

// addVary adds names to the response's one Vary header, a comma-separated
// list, leaving out the names it lists already: whichever middleware adds
// to it (the language, the session, the compression, a page of its own),
// the response carries one Vary line naming each header once. With no names
// it merges the lines others added (echo's gzip adds its own) into one.
// It never writes into a slice the header holds, which may be shared, and
// allocates nothing when the line lists every name already (the session's
// Cookie after the language's).
func addVary(h http.Header, names ...string) {
	lines := h["Vary"]
	switch {
	case len(lines) == 0 && len(names) == 1:
		h["Vary"] = []string{names[0]}
		return
	case len(lines) == 1 && varyListsAll(lines[0], names):
		return
	}
	var list []string
	for _, line := range append(slices.Clip(lines), names...) {
		for name := range strings.SplitSeq(line, ",") {
			if name = strings.TrimSpace(name); name != "" && !slices.ContainsFunc(list, func(n string) bool { return strings.EqualFold(n, name) }) {
				list = append(list, name)
			}
		}
	}
	h["Vary"] = []string{strings.Join(list, ", ")}
}

// varyListsAll reports whether the Vary line lists every name of names
// (each a comma-separated list), ignoring case.
func varyListsAll(line string, names []string) bool {
	for _, list := range names {
		for name := range strings.SplitSeq(list, ",") {
			if !varyLists(line, strings.TrimSpace(name)) {
				return false
			}
		}
	}
	return true
}

// varyLists reports whether the Vary line lists name, ignoring case.
func varyLists(line, name string) bool {
	for token := range strings.SplitSeq(line, ",") {
		if strings.EqualFold(strings.TrimSpace(token), name) {
			return true
		}
	}
	return false
}

// oneVary is mw (echo's gzip) with the Vary lines it adds merged into the
// one the response had (addVary) before the handler runs.
func oneVary(mw echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return mw(func(c echo.Context) error {
			addVary(c.Response().Header())
			return next(c)
		})
	}
}
