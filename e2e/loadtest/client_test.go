package main

import (
	"net/http"
	"net/url"
	"testing"
)

// A fan sends back the cookies the server set, where their Path says, as a
// browser does (the join's place cookie goes to the queue's addresses
// only), and never a second session cookie.
func TestFan_KeepsCookies(t *testing.T) {
	f := &Fan{Cookie: sessionCookie + "=tok"}
	join, _ := url.Parse("http://127.0.0.1:8080/events/7/queue")
	h := http.Header{}
	h.Add("Set-Cookie", "boxoffice_queue_epoch=e1.5.3.3; Path=/events/7/queue; Max-Age=3600; HttpOnly; SameSite=Lax")
	h.Add("Set-Cookie", sessionCookie+"=other; Path=/; HttpOnly")
	f.keep(join, h)
	for _, tt := range []struct{ path, want string }{
		{"/events/7/queue/status", sessionCookie + "=tok; boxoffice_queue_epoch=e1.5.3.3"},
		{"/events/7/queue", sessionCookie + "=tok; boxoffice_queue_epoch=e1.5.3.3"},
		{"/events/7/seats", sessionCookie + "=tok"},
		{"/events/8/queue/status", sessionCookie + "=tok"},
	} {
		u, _ := url.Parse("http://127.0.0.1:8080" + tt.path)
		if got := f.cookies(u); got != tt.want {
			t.Errorf("Cookie to %s = %q, want %q", tt.path, got, tt.want)
		}
	}
	// A later answer that replaces the place cookie replaces it.
	h = http.Header{"Set-Cookie": {"boxoffice_queue_epoch=e1.5.3.9; Path=/events/7/queue"}}
	f.keep(join, h)
	u, _ := url.Parse("http://127.0.0.1:8080/events/7/queue/status")
	if got, want := f.cookies(u), sessionCookie+"=tok; boxoffice_queue_epoch=e1.5.3.9"; got != want {
		t.Errorf("after a second join: Cookie = %q, want %q", got, want)
	}
}
