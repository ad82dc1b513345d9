package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Stream is one fan's waiting-room stream (GET /events/{id}/queue/stream)
// and when its events arrived.
type Stream struct {
	Fan       int
	Connected time.Time // the answer's headers arrived
	First     time.Time // the first event arrived
	Admitted  time.Time // the "admitted" event arrived
	Positions int       // "position" events received
	Err       string    // why the stream failed, "" if it did not
}

// streamClient returns a client for many long-lived streams: no overall
// timeout, no connection cap, and connections spread over ips source
// addresses 127.0.0.2, 127.0.0.3, ... (each source address has its own
// range of ephemeral ports).
func streamClient(ips int) *http.Client {
	var next atomic.Uint64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		n := next.Add(1) % uint64(max(ips, 1))
		d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second,
			LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+n))}}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{
		Transport: &http.Transport{
			DialContext:           dial,
			ResponseHeaderTimeout: 60 * time.Second,
			DisableCompression:    true,
			MaxIdleConnsPerHost:   -1,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// follow opens the fan's stream and reads it until the "admitted" event,
// the end of the stream or ctx's end. connected is called once the stream is
// open (or failed to open).
func follow(ctx context.Context, c *http.Client, url string, f *Fan, s *Stream, connected func()) {
	var once sync.Once
	defer once.Do(connected)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		s.Err = err.Error()
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cookie", f.cookies(req.URL))
	resp, err := c.Do(req)
	if err != nil {
		s.Err = errKind(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		s.Err = fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		return
	}
	s.Connected = time.Now()
	once.Do(connected)
	r := bufio.NewReaderSize(resp.Body, 4096)
	event := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if ctx.Err() == nil && s.Admitted.IsZero() {
				s.Err = "stream ended before admission: " + errKind(err)
			}
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case line == "" && event != "": // the end of an event
			now := time.Now()
			if s.First.IsZero() {
				s.First = now
			}
			switch event {
			case "position":
				s.Positions++
			case "admitted":
				s.Admitted = now
				return
			}
			event = ""
		}
	}
}
