// Package altcha speaks the ALTCHA proof-of-work protocol
// (https://altcha.org/docs/server-integration/), as the widget vendored in
// static/altcha.min.js (npm altcha@1.5.1, MIT) expects it: a challenge is
// {"algorithm": "SHA-256", "challenge", "maxnumber", "salt", "signature"},
// where challenge is the lower-case hex SHA-256 of salt followed by a
// secret number from 0 to maxnumber in decimal, and signature the hex
// HMAC-SHA-256 of challenge under the server's key. The client finds the
// number by trying them all and answers a payload: base64 of the JSON
// {"algorithm", "challenge", "number", "salt", "signature"}.
//
// The protocol's own Go library (github.com/altcha-org/altcha-lib-go) is not
// served by the module proxy this project builds from, and the check is a
// few lines of the standard library, so the package does it itself. What a
// challenge is bound to (its expiry, and here the event and the account)
// travels as URL parameters after a "?" in the salt, which the hash and so
// the signature cover, as the reference libraries do.
package altcha

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Algorithm is the only hash the package speaks.
const Algorithm = "SHA-256"

// Challenge is what the server hands to a client to solve.
type Challenge struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"` // 64 lower-case hex characters
	MaxNumber int64  `json:"maxnumber"`
	Salt      string `json:"salt"`      // random hex, "?", then the bound parameters
	Signature string `json:"signature"` // 64 lower-case hex characters
}

// Solution is the payload a client sends back, decoded.
type Solution struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	Number    int64  `json:"number"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// ErrInvalid is returned by Verify for a payload that is malformed, solves
// nothing, carries a signature that is not the key's, or has expired.
var ErrInvalid = errors.New("altcha: invalid proof of work")

// NewChallenge returns a challenge whose number is drawn uniformly from 0
// to maxNumber (at least 1), signed with key, and bound to params and to
// expires (whole Unix seconds, the parameter "expires").
func NewChallenge(key []byte, maxNumber int64, params url.Values, expires time.Time) Challenge {
	maxNumber = max(maxNumber, 1)
	b := make([]byte, 12)
	rand.Read(b)
	p := url.Values{}
	for k, v := range params {
		p[k] = v
	}
	p.Set("expires", strconv.FormatInt(expires.Unix(), 10))
	salt := hex.EncodeToString(b) + "?" + p.Encode()
	n, _ := rand.Int(rand.Reader, big.NewInt(maxNumber+1))
	ch := hashHex(salt + n.String())
	return Challenge{Algorithm: Algorithm, Challenge: ch, MaxNumber: maxNumber, Salt: salt, Signature: sign(key, ch)}
}

// Verify decodes payload (standard or URL-safe base64 of the JSON
// Solution, as the widget sends it), checks that it solves its challenge,
// that key signed the challenge and that it has not expired at now, and
// returns it with the parameters bound in its salt. Errors: ErrInvalid.
// Verify does not know whether the solution was used before: the caller
// keeps that (store.Queue.Join does it in the join's script).
func Verify(key []byte, payload string, now time.Time) (Solution, url.Values, error) {
	var s Solution
	raw, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		if raw, err = base64.URLEncoding.DecodeString(payload); err != nil {
			return s, nil, ErrInvalid
		}
	}
	if json.Unmarshal(raw, &s) != nil || s.Algorithm != Algorithm || s.Number < 0 {
		return s, nil, ErrInvalid
	}
	if !hmac.Equal([]byte(hashHex(s.Salt+strconv.FormatInt(s.Number, 10))), []byte(s.Challenge)) ||
		!hmac.Equal([]byte(sign(key, s.Challenge)), []byte(s.Signature)) {
		return s, nil, ErrInvalid
	}
	_, query, ok := strings.Cut(s.Salt, "?")
	if !ok {
		return s, nil, ErrInvalid
	}
	params, err := url.ParseQuery(query)
	if err != nil {
		return s, nil, ErrInvalid
	}
	exp, err := strconv.ParseInt(params.Get("expires"), 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return s, nil, ErrInvalid
	}
	return s, params, nil
}

// Solve finds the number of c by trying 0 to c.MaxNumber, as the widget
// does, and returns the payload to send; ok is false if none matches.
// Clients and tests use it; a server never needs to.
func Solve(c Challenge) (payload string, ok bool) {
	for n := int64(0); n <= c.MaxNumber; n++ {
		if hashHex(c.Salt+strconv.FormatInt(n, 10)) == c.Challenge {
			b, _ := json.Marshal(Solution{Algorithm: c.Algorithm, Challenge: c.Challenge, Number: n, Salt: c.Salt, Signature: c.Signature})
			return base64.StdEncoding.EncodeToString(b), true
		}
	}
	return "", false
}

func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func sign(key []byte, challenge string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(challenge))
	return hex.EncodeToString(m.Sum(nil))
}
