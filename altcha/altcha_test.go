package altcha_test

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/altcha"
)

var key = []byte("a key of at least thirty-two bytes, for tests")

func TestVerify(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c := altcha.NewChallenge(key, 50, url.Values{"event": {"7"}, "account": {"42"}}, now.Add(time.Minute))
	good, ok := altcha.Solve(c)
	if !ok {
		t.Fatalf("Solve found no number for %+v", c)
	}
	t.Run("OK", func(t *testing.T) {
		s, p, err := altcha.Verify(key, good, now)
		if err != nil {
			t.Fatalf("Verify = %v, want nil", err)
		}
		if s.Challenge != c.Challenge || p.Get("event") != "7" || p.Get("account") != "42" {
			t.Errorf("Verify = %+v %v, want the challenge %s bound to event 7, account 42", s, p, c.Challenge)
		}
	})
	tamper := func(f func(*altcha.Solution)) string {
		raw, _ := base64.StdEncoding.DecodeString(good)
		var s altcha.Solution
		json.Unmarshal(raw, &s)
		f(&s)
		b, _ := json.Marshal(s)
		return base64.StdEncoding.EncodeToString(b)
	}
	for name, tc := range map[string]struct {
		payload string
		at      time.Time
	}{
		"Expired":      {good, now.Add(time.Minute)},
		"WrongNumber":  {tamper(func(s *altcha.Solution) { s.Number = (s.Number + 1) % 51 }), now},
		"OtherAccount": {tamper(func(s *altcha.Solution) { s.Salt += "&account=43" }), now},
		"Forged":       {tamper(func(s *altcha.Solution) { s.Signature = s.Challenge }), now},
		"OtherHash":    {tamper(func(s *altcha.Solution) { s.Algorithm = "SHA-1" }), now},
		"NotBase64":    {"%%%", now},
		"NotJSON":      {base64.StdEncoding.EncodeToString([]byte("[1]")), now},
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := altcha.Verify(key, tc.payload, tc.at); err != altcha.ErrInvalid {
				t.Errorf("Verify = %v, want ErrInvalid", err)
			}
		})
	}
	t.Run("OtherKey", func(t *testing.T) {
		if _, _, err := altcha.Verify([]byte("another key"), good, now); err != altcha.ErrInvalid {
			t.Errorf("Verify = %v, want ErrInvalid", err)
		}
	})
}
