package handlers

import (
	"net"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/labstack/echo/v4"
)

// overHTTPSOnly does what a response needs when the request came over https
// (overHTTPS): it asks the browser to reach the site over https only from
// now on (Strict-Transport-Security, RFC 6797, for a year, this host only:
// the site may share its domain with others), and marks every cookie of the
// response Secure (the session cookie, which scs writes, the language
// cookie, the queue's place cookie). With an https BASE_URL the cookies are
// Secure already, whatever the request says (NewSessions). A response to a
// request over plain http gets neither: RFC 6797 (section 7.2) forbids the
// header there, and a browser would ignore it. The cookies' mark is made
// just before the response's header is written, by which time every cookie
// is in it, or once the handlers are done when none wrote.
func (s *Server) overHTTPSOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.overHTTPS(c.Request()) {
			return next(c)
		}
		res := c.Response()
		res.Header()["Strict-Transport-Security"] = strictTransport
		if s.Sessions.Cookie.Secure {
			return next(c)
		}
		res.Before(func() { markSecure(res.Header()) })
		err := next(c)
		if !res.Committed {
			markSecure(res.Header())
		}
		return err
	}
}

// strictTransport is the Strict-Transport-Security line of a response over
// https: max-age in seconds (365 days), shared by every such response.
var strictTransport = []string{"max-age=31536000"}

// markSecure adds the Secure attribute to each Set-Cookie of h that lacks it.
func markSecure(h http.Header) {
	cookies := h["Set-Cookie"]
	for i, v := range cookies {
		if k, err := http.ParseSetCookie(v); err == nil && !k.Secure {
			cookies[i] = v + "; Secure"
		}
	}
}

// overHTTPS reports whether r reached the site over https: TLS on the
// connection, or, from a peer in TrustedProxies, an X-Forwarded-Proto of
// https (its last value: the scheme the balancer itself was reached by).
// Anyone else's X-Forwarded-Proto is ignored (unlike echo's Context.Scheme,
// which believes it from any peer).
func (s *Server) overHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	proto := r.Header.Values(echo.HeaderXForwardedProto)
	if len(proto) == 0 || !s.trustedPeer(r) {
		return false
	}
	last := proto[len(proto)-1]
	last = last[strings.LastIndexByte(last, ',')+1:]
	return strings.EqualFold(strings.TrimSpace(last), "https")
}

// trustedPeer reports whether the connection of r comes from one of
// TrustedProxies.
func (s *Server) trustedPeer(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	for _, n := range s.TrustedProxies {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// maxCookies is the most cookies a request may send for any to be read,
// net/http's default (GODEBUG httpcookiemaxnum).
const maxCookies = 3000

// cookieValue returns the value of r's first valid cookie named name, as
// r.Cookie(name) finds it (quotes removed), without allocating: net/http
// parses every cookie of the request into a new slice on each call.
func cookieValue(r *http.Request, name string) (string, bool) {
	lines := r.Header["Cookie"]
	n := 0
	for _, line := range lines {
		n += strings.Count(line, ";") + 1
	}
	if n > maxCookies {
		return "", false
	}
	for _, line := range lines {
		for line != "" {
			var part string
			part, line, _ = strings.Cut(line, ";")
			k, v, _ := strings.Cut(textproto.TrimString(part), "=")
			if textproto.TrimString(k) != name {
				continue
			}
			if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			if validCookieValue(v) {
				return v, true
			}
		}
	}
	return "", false
}

// validCookieValue reports whether v has only the bytes net/http accepts in
// a cookie's value.
func validCookieValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < 0x20 || b >= 0x7f || b == '"' || b == ';' || b == '\\' {
			return false
		}
	}
	return true
}
