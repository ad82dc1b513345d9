package handlers

import (
	"crypto/sha256"
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/boxoffice/boxoffice"
	"github.com/labstack/echo/v4"
)

// limitRule is one allowance: perMinute requests a minute per key, where
// key returns "" when the rule does not apply (a visitor for a per-account
// rule).
type limitRule struct {
	name      string
	perMinute int
	key       func(c echo.Context) string
}

// The allowances, sized so that a real fan never meets them (CGNAT puts
// many fans behind one address) while a script is slowed to a crawl.
//
// Log-in is limited per address (60 a minute, whatever the e-mail) and per
// e-mail typed from that address (10 a minute, byEmailAndAddress), never per
// e-mail alone: a stranger who knows a fan's e-mail could otherwise keep the
// fan from logging in by failing on purpose. The price is that guessing one
// account's password from many addresses is bounded by the addresses, not
// by the account: at most 10 guesses a minute per address, each one a
// bcrypt comparison at store.Accounts.Cost, which also bounds how fast the
// server checks them. A
// stranger behind the fan's own address (the same CGNAT or office) can
// still spend the fan's allowance there.
var (
	signupLimits = []limitRule{{"signup:ip", 20, byAddress}}
	loginLimits  = []limitRule{{"login:ip", 60, byAddress}, {"login:email+ip", 10, byEmailAndAddress}}
	joinLimits   = []limitRule{{"join:account", 30, byAccount}, {"join:ip", 1200, byAddress}}
)

// byAddress keys a rule by the client's address: the connection's peer, or
// behind a trusted load balancer the address it forwarded
// (Server.TrustedProxies).
func byAddress(c echo.Context) string { return c.RealIP() }

// byEmailAndAddress keys a rule by the e-mail address typed (its
// boxoffice.EmailKey, so that spellings of one mailbox share a count; the
// address trimmed and lower-cased if it has no key) together with the client's address (byAddress), as 43 characters:
// the unpadded base64url SHA-256 of the pair, so that the Redis key has the
// same short length whatever the e-mail. An e-mail too long to be an
// account's (boxoffice.MaxEmailLen) is not counted: the log-in refuses it
// before any look-up.
func byEmailAndAddress(c echo.Context) string {
	email := strings.ToLower(strings.TrimSpace(c.FormValue("email")))
	if utf8.RuneCountInString(email) > boxoffice.MaxEmailLen {
		return ""
	}
	if key, err := boxoffice.EmailKey(email); err == nil {
		email = key
	}
	sum := sha256.Sum256([]byte(email + "\x00" + byAddress(c)))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func byAccount(c echo.Context) string {
	if a := boxoffice.AccountFromContext(c.Request().Context()); a != nil {
		return strconv.FormatInt(a.ID, 10)
	}
	return ""
}

// rateLimit refuses a request over any of the rules' allowances with 429
// and Retry-After (whole seconds). Without a limiter (RATE_LIMITS=off) it
// lets everything through. When the limiter cannot ask Redis it fails
// closed: the request is answered 503 (errServiceDown) and the failure is
// logged at error level, never taken as a pass, so that a Redis that
// refuses the limiter's commands (a cluster's MOVED, an engine without Lua)
// cannot switch the limits off unseen.
func (s *Server) rateLimit(rules []limitRule) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if s.Limiter == nil {
			return next
		}
		return func(c echo.Context) error {
			for _, r := range rules {
				key := r.key(c)
				if key == "" {
					continue
				}
				wait, err := s.Limiter.Allow(c.Request().Context(), r.name+":"+key, r.perMinute)
				if err != nil {
					s.Logger.Error("rate limiter unavailable: request refused", "rule", r.name, "err", err)
					return errServiceDown
				}
				if wait > 0 {
					c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
					return boxoffice.NewError(boxoffice.ERATELIMITED, "err_rate_limited")
				}
			}
			return next(c)
		}
	}
}
