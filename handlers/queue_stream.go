package handlers

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// streamHeartbeat is how often an idle SSE stream gets a comment, so that
// proxies and browsers keep it open.
const streamHeartbeat = 15 * time.Second

// queueHub fans the waiting room's positions out to this instance's SSE
// clients. While an event has clients, one goroutine per event wakes each
// admission tick, reads every client's position with one Queue.Positions
// call (one Redis round trip, however many clients), renders each distinct
// fragment once per language (fans in the same state share it: the sold
// out or paused line, the admitted), and hands each client its fragment.
// The goroutine ends at the first tick without clients, or on s.Stopping.
type queueHub struct {
	s *Server

	mu     sync.Mutex
	events map[int64]map[*queueFan]struct{} // fans by event; an entry means its goroutine runs
}

// queueFan is one SSE client: an account, its session's place in line and
// its language, and the latest fragment not yet sent (a buffer of one: a
// slow client skips to the newest).
type queueFan struct {
	account int64
	place   queuePlace
	lang    string
	updates chan queueUpdate
}

// queueUpdate is a fan's fragment at a tick: the SSE event's name
// ("position" or "admitted"), the rendered state, and whether it is final.
type queueUpdate struct {
	name  string
	data  string
	final bool
}

// fragmentKey is what a waiting-room fragment depends on besides the event:
// fans with equal keys get the same fragment, rendered once.
type fragmentKey struct {
	lang            string
	status          string
	position, ahead int
	eta             time.Duration
	paused          bool
	progress        float64
}

func newQueueHub(s *Server) *queueHub {
	return &queueHub{s: s, events: map[int64]map[*queueFan]struct{}{}}
}

// join adds a client of the event, starting the event's goroutine if none
// runs.
func (h *queueHub) join(eventID, account int64, place queuePlace, lang string) *queueFan {
	f := &queueFan{account: account, place: place, lang: lang, updates: make(chan queueUpdate, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	fans, ok := h.events[eventID]
	if !ok {
		fans = map[*queueFan]struct{}{}
		h.events[eventID] = fans
		go h.run(eventID)
	}
	fans[f] = struct{}{}
	return f
}

// leave removes a client.
func (h *queueHub) leave(eventID int64, f *queueFan) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.events[eventID], f)
}

// tick returns the length of a tick.
func (h *queueHub) tick() time.Duration {
	if t := h.s.AdmissionTick.Truncate(time.Millisecond); t > 0 {
		return t
	}
	return boxoffice.DefaultAdmissionTick
}

// run pushes the event's positions once per tick, a quarter tick after the
// tick's start, when the admitter (which starts at the tick) has usually
// admitted its batch.
func (h *queueHub) run(eventID int64) {
	every := h.tick()
	stopping := h.s.Stopping
	for {
		now := time.Now()
		next := time.UnixMilli(boxoffice.TickIndex(now, every) * every.Milliseconds()).Add(every / 4)
		if !next.After(now) {
			next = next.Add(every)
		}
		t := time.NewTimer(next.Sub(now))
		select {
		case <-stopping.Done():
			t.Stop()
			h.mu.Lock()
			delete(h.events, eventID)
			h.mu.Unlock()
			return
		case <-t.C:
		}
		h.mu.Lock()
		fans := make([]*queueFan, 0, len(h.events[eventID]))
		for f := range h.events[eventID] {
			fans = append(fans, f)
		}
		if len(fans) == 0 {
			delete(h.events, eventID)
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		h.push(stopping, eventID, fans)
	}
}

// push reads the positions of fans (one Redis round trip), renders each
// distinct fragment once per language and hands each fan its own. A failed
// read is logged and skipped: the fans keep their last fragment and the
// next tick tries again.
func (h *queueHub) push(ctx context.Context, eventID int64, fans []*queueFan) {
	e, err := h.s.LiveEvents.Event(ctx, eventID)
	if err != nil {
		h.s.Logger.Warn("queue stream: read event", "event", eventID, "err", err)
		return
	}
	var positions map[int64]boxoffice.QueuePosition
	now := h.s.Now()
	closed := !e.QueueOpen(now)
	if !closed {
		epochs := make(map[int64]string, len(fans))
		for _, f := range fans {
			if epochs[f.account] == "" {
				epochs[f.account] = f.place.Epoch
			}
		}
		if positions, err = h.s.Queue.Positions(ctx, eventID, epochs); err != nil {
			if ctx.Err() == nil {
				h.s.Logger.Warn("queue stream: read positions", "event", eventID, "err", err)
			}
			return
		}
	}
	rendered := map[fragmentKey]queueUpdate{}
	for _, f := range fans {
		var v views.QueueView
		if closed {
			v, err = h.s.queueView(e, boxoffice.QueuePosition{}, queueNotOpen(e, now), f.place)
		} else {
			v, err = h.s.queueView(e, positions[f.account], nil, f.place)
		}
		if err != nil {
			continue
		}
		key := fragmentKey{f.lang, v.Status, v.Position, v.Ahead, v.ETA, v.Paused, v.Progress}
		u, ok := rendered[key]
		if !ok {
			if u, err = renderQueueUpdate(ctx, v, f.lang); err != nil {
				h.s.Logger.Error("queue stream: render", "event", eventID, "err", err)
				return
			}
			rendered[key] = u
		}
		f.send(u)
	}
}

// renderQueueUpdate renders the waiting room's state v in lang as an SSE
// event: "admitted" for an admitted fan, "position" otherwise.
func renderQueueUpdate(ctx context.Context, v views.QueueView, lang string) (queueUpdate, error) {
	var buf bytes.Buffer
	if err := views.QueueState(v).Render(boxoffice.NewContextWithLang(ctx, lang), &buf); err != nil {
		return queueUpdate{}, fmt.Errorf("render queue state: %w", err)
	}
	u := queueUpdate{name: "position", data: buf.String(), final: v.Final()}
	if v.Status == boxoffice.QueueAdmitted {
		u.name = "admitted"
	}
	return u, nil
}

// send replaces the fan's pending update with u. Only the event's
// goroutine sends, so the second attempt always finds room.
func (f *queueFan) send(u queueUpdate) {
	select {
	case f.updates <- u:
		return
	default:
	}
	select {
	case <-f.updates:
	default:
	}
	select {
	case f.updates <- u:
	default:
	}
}

// handleQueueStream handles GET /events/:id/queue/stream: a text/event-stream
// of the fan's waiting-room fragment, event "position" at every tick, then
// "admitted" (a fragment that leads to the seat map) or another final state,
// then "close" (the page's sse-close) and the end of the stream. It also ends
// when the client goes or the server shuts down (s.Stopping), and sends a
// comment every streamHeartbeat. It never writes to the session: the
// headers, and with them any session cookie, are sent first.
func (s *Server) handleQueueStream(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.liveEvent(ctx, id); err != nil {
		return err
	}
	fan := s.queueHub.join(id, boxoffice.AccountFromContext(ctx).ID, s.queuePlace(c), views.Lang(ctx))
	defer s.queueHub.leave(id, fan)

	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.Header().Set(echo.HeaderCacheControl, "no-cache")
	w.Header().Set("X-Accel-Buffering", "no") // no buffering in nginx
	w.WriteHeader(http.StatusOK)
	w.Flush()

	heartbeat := time.NewTicker(streamHeartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.Stopping.Done():
			// Shutting down: tell the browser to reconnect in a second
			// (EventSource does), to this instance's successor or another.
			io.WriteString(w, "retry: 1000\n\n")
			w.Flush()
			return nil
		case <-heartbeat.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return nil
			}
			w.Flush()
		case u := <-fan.updates:
			if err := writeEvent(w, u.name, u.data); err != nil {
				return nil
			}
			if u.final {
				writeEvent(w, "close", "end")
				return nil
			}
		}
	}
}

// writeEvent writes one server-sent event and flushes it: the event's
// name, then each line of data as a "data:" field (WHATWG HTML, "Server-sent
// events").
func writeEvent(w *echo.Response, name, data string) error {
	var b strings.Builder
	b.WriteString("event: " + name + "\n")
	for line := range strings.Lines(data) {
		b.WriteString("data: " + strings.TrimRight(line, "\r\n") + "\n")
	}
	b.WriteString("\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	w.Flush()
	return nil
}
