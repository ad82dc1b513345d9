package handlers

import (
	"net/http"
	"testing"
)

// cookieValue must find what r.Cookie finds, for every header a browser or
// an attacker may send.
func TestCookieValue(t *testing.T) {
	headers := [][]string{
		nil,
		{""},
		{"a=1"},
		{"a=1; b=2"},
		{" a = 1 ;b=2"},
		{"b=2;a=1"},
		{`a="quoted"`},
		{`a="`},
		{`a=""`},
		{`a=bad\value; a=good`},
		{"a=bad value"},
		{"a=semi\x7f; a=next"},
		{"a"},
		{"a=1=2"},
		{"x=1", "a=2"},
		{"A=upper; a=lower"},
		{";;a=1;;"},
		{"aa=1; a=2"},
	}
	for _, h := range headers {
		r := &http.Request{Header: http.Header{}}
		if h != nil {
			r.Header["Cookie"] = h
		}
		want, err := r.Cookie("a")
		got, ok := cookieValue(r, "a")
		if ok != (err == nil) || ok && got != want.Value {
			t.Errorf("Cookie %q: cookieValue = %q, %v; r.Cookie = %v, %v", h, got, ok, want, err)
		}
	}
}

func TestCookieValue_Allocs(t *testing.T) {
	r := &http.Request{Header: http.Header{"Cookie": {"boxoffice_session=abc; boxoffice_lang=ko"}}}
	if n := testing.AllocsPerRun(100, func() { cookieValue(r, "boxoffice_lang") }); n != 0 {
		t.Errorf("cookieValue allocates %v times, want 0", n)
	}
}
