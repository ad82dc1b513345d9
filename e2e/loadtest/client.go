package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxoffice/boxoffice/handlers"
)

// sessionCookie is the name of boxoffice's session cookie.
const sessionCookie = handlers.SessionCookie

// Fan is one bench account and its logged-in session.
type Fan struct {
	ID     int64
	Email  string
	Cookie string // "boxoffice_session=<token>"
	// kept holds the other cookies the server sets for the fan (the queue's
	// place cookie from a join), sent back where their Path says, as a
	// browser does: a waiting fan's poll with its place cookie is answered
	// from the instance's figures, without it from Redis. A fan talks to
	// one host, so a cookie is known by its name and path (RFC 6265 5.3);
	// this replaces net/http/cookiejar, whose host keys, sorting and
	// allocations cost the generator about 3 µs a request.
	mu   sync.Mutex
	kept []keptCookie
}

// keptCookie is a cookie the fan keeps. header is the fan's Cookie header
// when it is the only kept cookie that goes to a request, built once.
type keptCookie struct {
	name, value, path string
	expires           time.Time // zero: until the run ends
	header            string
}

// cookies returns the Cookie header of the fan's request to u: the session
// cookie and the kept cookies that go to u, longer paths first.
func (f *Fan) cookies(u *url.URL) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.kept) == 0 {
		return f.Cookie
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	var now time.Time
	var b strings.Builder
	only, n := "", 0
	for i := range f.kept {
		c := &f.kept[i]
		if !pathMatch(c.path, path) {
			continue
		}
		if !c.expires.IsZero() {
			if now.IsZero() {
				now = time.Now()
			}
			if !now.Before(c.expires) {
				continue
			}
		}
		if n++; n == 1 {
			only = c.header
			b.WriteString(f.Cookie)
		}
		b.WriteString("; ")
		b.WriteString(c.name)
		b.WriteByte('=')
		b.WriteString(c.value)
	}
	switch n {
	case 0:
		return f.Cookie
	case 1:
		return only
	}
	return b.String()
}

// keep keeps the cookies of the answer to a request to u, except the session
// cookie, which the fan holds from set-up: a cookie replaces the kept one
// of its name and path, and one that has expired (Max-Age 0 or less, an
// Expires in the past) removes it.
func (f *Fan) keep(u *url.URL, h http.Header) {
	lines := h["Set-Cookie"]
	if len(lines) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	for _, line := range lines {
		c, err := http.ParseSetCookie(line)
		if err != nil || c.Name == sessionCookie {
			continue
		}
		k := keptCookie{name: c.Name, value: c.Value, path: c.Path}
		if k.path == "" || k.path[0] != '/' {
			k.path = defaultPath(u.Path)
		}
		switch {
		case c.MaxAge < 0:
			k.expires = now
		case c.MaxAge > 0:
			k.expires = now.Add(time.Duration(c.MaxAge) * time.Second)
		case !c.Expires.IsZero():
			k.expires = c.Expires
		}
		k.header = f.Cookie + "; " + k.name + "=" + k.value
		f.kept = slices.DeleteFunc(f.kept, func(o keptCookie) bool { return o.name == k.name && o.path == k.path })
		if !k.expires.IsZero() && !now.Before(k.expires) {
			continue
		}
		// Longer paths first, then the older cookie first (RFC 6265 5.4).
		i := slices.IndexFunc(f.kept, func(o keptCookie) bool { return len(o.path) < len(k.path) })
		if i < 0 {
			i = len(f.kept)
		}
		f.kept = slices.Insert(f.kept, i, k)
	}
}

// pathMatch reports whether a cookie of path cookiePath goes to a request
// of path reqPath (RFC 6265 5.1.4).
func pathMatch(cookiePath, reqPath string) bool {
	if !strings.HasPrefix(reqPath, cookiePath) {
		return false
	}
	return len(reqPath) == len(cookiePath) || cookiePath[len(cookiePath)-1] == '/' || reqPath[len(cookiePath)] == '/'
}

// defaultPath is the path of a cookie set without one by the answer to a
// request of path reqPath (RFC 6265 5.1.4): its directory.
func defaultPath(reqPath string) string {
	i := strings.LastIndexByte(reqPath, '/')
	if i <= 0 {
		return "/"
	}
	return reqPath[:i]
}

// newClient returns an HTTP/1.1 client with at most conns connections to
// each host, that does not follow redirects (the bench follows the ones it
// wants, to time each step) and asks for gzip as browsers do.
func newClient(conns int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxConnsPerHost:     conns,
			MaxIdleConnsPerHost: conns,
			MaxIdleConns:        conns,
			IdleConnTimeout:     90 * time.Second,
		},
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// answer is an HTTP answer, read whole.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// call sends one request as the fan (no fan: anonymous) asking for JSON,
// with form as an application/x-www-form-urlencoded body when not nil.
func call(ctx context.Context, c *http.Client, method, rawURL string, f *Fan, form url.Values) (answer, error) {
	return send(ctx, c, method, rawURL, f, form, "application/json")
}

// browse sends one request as a browser would: asking for HTML, as when a
// person presses a form's button or a PG redirects the browser back.
func browse(ctx context.Context, c *http.Client, method, rawURL string, f *Fan, form url.Values) (answer, error) {
	return send(ctx, c, method, rawURL, f, form, "text/html,application/xhtml+xml")
}

// pageEncodings is the Accept-Encoding Chromium sends with a page's GET
// over plain HTTP on loopback (brotli and zstd included: Chromium offers
// them to localhost as to HTTPS sites).
const pageEncodings = "gzip, deflate, br, zstd"

// revalidate sends a browser's GET of a page it holds a copy of: with
// If-None-Match etag, to which the server may answer 304 Not Modified, and
// Chromium's Accept-Encoding (a body is read as sent).
func revalidate(ctx context.Context, c *http.Client, rawURL string, f *Fan, etag string) (answer, error) {
	return send(ctx, c, http.MethodGet, rawURL, f, nil, "text/html,application/xhtml+xml", "If-None-Match: "+etag, "Accept-Encoding: "+pageEncodings)
}

func send(ctx context.Context, c *http.Client, method, rawURL string, f *Fan, form url.Values, accept string, headers ...string) (answer, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Accept", accept)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if f != nil {
		req.Header.Set("Cookie", f.cookies(req.URL))
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	if f != nil {
		f.keep(req.URL, resp.Header)
	}
	b, err := readBody(resp.Body, resp.ContentLength)
	if err != nil {
		return answer{}, err
	}
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// readBody reads an answer's body whole, as io.ReadAll does, into one
// buffer of the size the answer announced (size < 0: unknown), so that a
// seat map page of 84 KB is not copied through the growing buffers of
// io.ReadAll.
func readBody(r io.Reader, size int64) ([]byte, error) {
	hint := 512
	if size >= 0 && size < 1<<24 {
		hint = int(size) + 1 // room for the read that sees the end
	}
	b := make([]byte, 0, hint)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// kind names an answer that is not the one wanted, or a transport error:
// "409 seat_taken" (the status and the contract's error code), "404",
// "timeout", "connection refused", ...
func kind(a answer, err error, want int) string {
	if err != nil {
		return errKind(err)
	}
	if a.Status == want {
		return kindOK
	}
	if code := errorCode(a.Body); code != "" {
		return fmt.Sprintf("%d %s", a.Status, code)
	}
	return fmt.Sprint(a.Status)
}

// errorCode returns the "error" member of a JSON error body, or "".
func errorCode(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Error
}

// errKind classifies a transport error.
func errKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no local port left"
	case errors.Is(err, syscall.EMFILE):
		return "too many open files"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	}
	return "transport: " + err.Error()
}

// missing reports whether an answer says that the route does not exist on
// this binary (echo's unknown route or wrong method, as the error handler
// maps them), as opposed to a contract answer such as 404 not_in_queue.
func missing(a answer) bool {
	return a.Status == http.StatusNotFound && errorCode(a.Body) == "not_found" || a.Status == http.StatusMethodNotAllowed
}
