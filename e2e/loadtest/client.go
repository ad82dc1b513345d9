package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	// jar keeps the other cookies the server sets for the fan (the queue's
	// place cookie from a join), sent back where their Path says, as a
	// browser does: a waiting fan's poll with its place cookie is answered
	// from the instance's figures, without it from Redis.
	jar     *cookiejar.Jar
	jarOnce sync.Once
	// paths are the Path attributes of the cookies kept in jar ("/" for
	// one without), each once, replaced whole on a change: a request
	// whose path none of them path-matches gets no kept cookie, so it
	// needs no lookup in the jar (most of the generator's requests).
	paths atomic.Pointer[[]string]
	// lastSet is the answer whose cookies keep kept last.
	lastSet atomic.Pointer[setCookies]
}

// setCookies are the Set-Cookie lines of an answer to a request to host
// and path (a cookie without a Path takes its path from the request's, RFC
// 6265 section 5.1.4).
type setCookies struct {
	host, path string
	lines      []string
}

// cookies returns the Cookie header of the fan's request to u: the session
// cookie and the kept cookies that go to u.
func (f *Fan) cookies(u *url.URL) string {
	if !f.mayKeep(u.Path) {
		return f.Cookie
	}
	f.jarOnce.Do(f.newJar)
	kept := f.jar.Cookies(u)
	if len(kept) == 0 {
		return f.Cookie
	}
	var b strings.Builder
	b.WriteString(f.Cookie)
	for _, c := range kept {
		b.WriteString("; ")
		b.WriteString(c.Name)
		b.WriteByte('=')
		b.WriteString(c.Value)
	}
	return b.String()
}

// keep keeps the cookies of the answer to a request to u, except the session
// cookie, which the fan holds from set-up.
//
// Set-Cookie lines equal to the last ones kept, from the same address, are
// not parsed again (a repeat join sets the same place cookie): the jar
// holds them already, and their expiry, counted from when they were first
// kept, stays put: a Max-Age (the place cookie's is up to a day) outlasts
// the run.
func (f *Fan) keep(u *url.URL, h http.Header) {
	lines := h["Set-Cookie"]
	if len(lines) == 0 {
		return
	}
	if last := f.lastSet.Load(); last != nil && last.host == u.Host && last.path == u.Path && slices.Equal(last.lines, lines) {
		return
	}
	f.jarOnce.Do(f.newJar)
	set := (&http.Response{Header: h}).Cookies()
	set = slices.DeleteFunc(set, func(c *http.Cookie) bool { return c.Name == sessionCookie })
	f.jar.SetCookies(u, set)
	f.keepPaths(set)
	f.lastSet.Store(&setCookies{host: u.Host, path: u.Path, lines: slices.Clone(lines)})
}

// keepPaths adds the Path attributes of the cookies set to the fan's paths:
// "/" for a cookie without one (whose path the jar takes from the request's,
// RFC 6265 section 5.1.4), which path-matches every request. It is called
// after the jar holds them, so that mayKeep never misses a kept cookie.
func (f *Fan) keepPaths(set []*http.Cookie) {
	for {
		old := f.paths.Load()
		var paths []string
		if old != nil {
			paths = *old
		}
		grown := paths
		for _, c := range set {
			p := c.Path
			if p == "" || p[0] != '/' {
				p = "/"
			}
			if !slices.Contains(grown, p) {
				grown = append(slices.Clip(grown), p)
			}
		}
		if len(grown) == len(paths) || f.paths.CompareAndSwap(old, &grown) {
			return
		}
	}
}

// mayKeep reports whether a kept cookie's path path-matches the request
// path reqPath (RFC 6265 section 5.1.4): the same path, or a prefix of it
// that ends with '/' or is followed by '/' in it.
func (f *Fan) mayKeep(reqPath string) bool {
	paths := f.paths.Load()
	if paths == nil {
		return false
	}
	if reqPath == "" {
		reqPath = "/"
	}
	for _, p := range *paths {
		if rest, ok := strings.CutPrefix(reqPath, p); ok && (rest == "" || strings.HasSuffix(p, "/") || rest[0] == '/') {
			return true
		}
	}
	return false
}

func (f *Fan) newJar() { f.jar, _ = cookiejar.New(nil) }

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
