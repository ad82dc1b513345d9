package handlers

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// streamHeartbeat is how often an idle SSE stream gets a comment, so that
// proxies and browsers keep it open, and so that a stream whose browser
// went away is noticed (the write fails) and let go.
const streamHeartbeat = 15 * time.Second

// streamWriteTimeout bounds each write to a stream: a browser that reads
// nothing for that long is let go (EventSource reconnects by itself).
const streamWriteTimeout = time.Second

// queueHub serves the waiting room's streams of this instance. A stream's
// request takes over its connection (http.Hijacker) once the fan is known,
// hands it to the hub and returns, so that an open stream costs no
// goroutine and none of net/http's per-connection buffers: only the
// connection and a small queueFan (issue 12: at most 20 KB per stream at
// 10,000 streams). While an event has streams, one goroutine per event wakes
// each admission tick, reads every fan's position with one Queue.Positions
// call (one Redis round trip, however many fans), renders each distinct
// fragment once per language (fans in the same state and language share its
// bytes: the sold out or paused line, the admitted), and writes it to the
// fans it belongs to. The goroutine ends
// at the first tick without streams; on s.Stopping it tells every browser
// to reconnect in a second and closes the streams.
type queueHub struct {
	s *Server

	mu     sync.Mutex
	events map[int64]map[*queueFan]struct{} // fans by event; an entry means its goroutine runs
	// open streams of this instance by session key and by address, capped
	// by Server.StreamsPerSession and StreamsPerAddress
	bySession, byAddress map[string]int
}

// queueFan is one open stream: the fan's account, its place as the place
// cookie had it, its language (one of views.Langs), the session key and
// address it counts against, and the connection.
type queueFan struct {
	account       int64
	place         queuePlace
	lang          string
	session, addr string
	conn          net.Conn
}

// fragmentKey is what a waiting-room fragment depends on besides the event
// (the same for every fan of one push): fans with equal keys get the same
// bytes, rendered once.
type fragmentKey struct {
	lang            string
	status          string
	position, ahead int
	eta             time.Duration
	paused          bool
	progress        float64
	broadcast       string
}

func newQueueHub(s *Server) *queueHub {
	return &queueHub{s: s, events: map[int64]map[*queueFan]struct{}{}, bySession: map[string]int{}, byAddress: map[string]int{}}
}

// reserve counts a stream of f's session and address, unless either
// already has its cap of open streams (a cap of 0 or less is none): then it
// returns false and counts nothing. Each reserve that returned true is
// undone once by release.
func (h *queueHub) reserve(f *queueFan) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.s.StreamsPerSession; n > 0 && h.bySession[f.session] >= n {
		return false
	}
	if n := h.s.StreamsPerAddress; n > 0 && h.byAddress[f.addr] >= n {
		return false
	}
	h.bySession[f.session]++
	h.byAddress[f.addr]++
	return true
}

// release undoes reserve.
func (h *queueHub) release(f *queueFan) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range []struct {
		counts map[string]int
		key    string
	}{{h.bySession, f.session}, {h.byAddress, f.addr}} {
		if m.counts[m.key]--; m.counts[m.key] <= 0 {
			delete(m.counts, m.key)
		}
	}
}

// join adds a stream of the event, starting the event's goroutine if none
// runs. It returns false when the server is stopping (the stream is not
// taken).
func (h *queueHub) join(eventID int64, f *queueFan) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s.Stopping.Err() != nil {
		return false
	}
	fans, ok := h.events[eventID]
	if !ok {
		fans = map[*queueFan]struct{}{}
		h.events[eventID] = fans
		go h.run(eventID)
	}
	fans[f] = struct{}{}
	return true
}

// leave removes a stream, closes its connection and releases its place
// under the caps.
func (h *queueHub) leave(eventID int64, f *queueFan) {
	h.mu.Lock()
	delete(h.events[eventID], f)
	h.mu.Unlock()
	f.conn.Close()
	h.release(f)
}

// tick returns the length of a tick.
func (h *queueHub) tick() time.Duration {
	if t := h.s.AdmissionTick.Truncate(time.Millisecond); t > 0 {
		return t
	}
	return boxoffice.DefaultAdmissionTick
}

// fans returns the event's streams, or nil (and forgets the event, whose
// goroutine then ends) when there are none.
func (h *queueHub) fans(eventID int64) []*queueFan {
	h.mu.Lock()
	defer h.mu.Unlock()
	fans := make([]*queueFan, 0, len(h.events[eventID]))
	for f := range h.events[eventID] {
		fans = append(fans, f)
	}
	if len(fans) == 0 {
		delete(h.events, eventID)
	}
	return fans
}

// run pushes the event's positions once per tick, a quarter tick after the
// tick's start, when the admitter (which starts at the tick) has usually
// admitted its batch, and a heartbeat to every stream every
// streamHeartbeat.
func (h *queueHub) run(eventID int64) {
	every := h.tick()
	stopping := h.s.Stopping
	beat := time.Now().Add(streamHeartbeat)
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
			h.stop(eventID)
			return
		case <-t.C:
		}
		fans := h.fans(eventID)
		if len(fans) == 0 {
			return
		}
		if time.Now().After(beat) {
			for _, f := range fans {
				h.write(eventID, f, []byte(": keep-alive\n\n"))
			}
			beat = time.Now().Add(streamHeartbeat)
		}
		h.push(stopping, eventID, fans)
	}
}

// stop tells the event's browsers to reconnect in a second (EventSource
// does), to this instance's successor or another, and closes the streams.
func (h *queueHub) stop(eventID int64) {
	h.mu.Lock()
	fans := h.events[eventID]
	delete(h.events, eventID)
	h.mu.Unlock()
	for f := range fans {
		f.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		io.WriteString(f.conn, "retry: 1000\n\n")
		f.conn.Close()
	}
}

// push reads the positions of fans (one Redis round trip) and writes each
// fan its fragment, rendering each distinct one once per language. A
// failed read is
// logged and skipped: the fans keep their last fragment and the next
// tick tries again.
func (h *queueHub) push(ctx context.Context, eventID int64, fans []*queueFan) {
	e, err := h.s.LiveEvents.Event(ctx, eventID)
	if err != nil {
		h.s.Logger.Warn("queue stream: read event", "event", eventID, "err", err)
		return
	}
	var positions map[int64]boxoffice.QueuePosition
	closed := error(nil)
	if now := h.s.Now(); !e.QueueOpen(now) {
		closed = queueNotOpen(e, now)
	} else {
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
	bound, err := h.entrySessions(ctx, eventID, positions)
	if err != nil {
		if ctx.Err() == nil {
			h.s.Logger.Warn("queue stream: read entry tokens", "event", eventID, "err", err)
		}
		return
	}
	rendered := map[fragmentKey][]byte{}
	for _, f := range fans {
		p, perr := positions[f.account], closed
		if s, ok := bound[f.account]; ok && s != "" && s != f.session {
			p, perr = boxoffice.QueuePosition{}, otherSession
		}
		v, err := h.s.queueView(ctx, e, p, perr, f.place)
		if err != nil {
			h.leave(eventID, f)
			continue
		}
		key := fragmentKey{f.lang, v.Status, v.Position, v.Ahead, v.ETA, v.Paused, v.Progress, v.Broadcast}
		msg, ok := rendered[key]
		if !ok {
			if msg, err = fragmentEvent(ctx, v, f.lang); err != nil {
				h.s.Logger.Error("queue stream: render", "event", eventID, "err", err)
				return
			}
			rendered[key] = msg
		}
		if h.write(eventID, f, msg) && v.Final() {
			h.leave(eventID, f)
		}
	}
}

// otherSession is the answer, to a stream, of an account admitted in
// another of its sessions, as a poll gets it (store.Queue.Position).
var otherSession = &boxoffice.Error{Code: boxoffice.ENOTINQUEUE, Details: map[string]any{"reason": boxoffice.ReasonOtherSession}}

// entrySessions reads the session each admitted account of positions has
// its entry token bound to (store.Queue.EntrySessions), one round trip,
// only in a tick that shows some account admitted: an admitted fan's
// stream ends with that tick's fragment, so a stream costs it once. An
// account absent from the result is not admitted.
func (h *queueHub) entrySessions(ctx context.Context, eventID int64, positions map[int64]boxoffice.QueuePosition) (map[int64]string, error) {
	var admitted []int64
	for acct, p := range positions {
		if p.Status == boxoffice.QueueAdmitted {
			admitted = append(admitted, acct)
		}
	}
	if len(admitted) == 0 {
		return nil, nil
	}
	return h.s.Queue.EntrySessions(ctx, eventID, admitted)
}

// write writes msg to the fan's stream, and lets the stream go when that
// fails (the browser went away, or reads nothing). It reports whether the
// write succeeded.
func (h *queueHub) write(eventID int64, f *queueFan, msg []byte) bool {
	f.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := f.conn.Write(msg); err != nil {
		h.leave(eventID, f)
		return false
	}
	return true
}

// fragmentEvent renders the waiting room's state fragment of v in lang as
// a server-sent event: "position", or "admitted" (a fragment that leads to
// the seat map), and after a final state the "close" event (the page's
// sse-close), each line of data as a "data:" field (WHATWG HTML,
// "Server-sent events").
func fragmentEvent(ctx context.Context, v views.QueueView, lang string) ([]byte, error) {
	var frag bytes.Buffer
	if err := views.QueueState(v).Render(boxoffice.NewContextWithLang(ctx, lang), &frag); err != nil {
		return nil, fmt.Errorf("render queue state: %w", err)
	}
	name := "position"
	if v.Status == boxoffice.QueueAdmitted {
		name = "admitted"
	}
	var b bytes.Buffer
	b.WriteString("event: " + name + "\n")
	for line := range strings.Lines(frag.String()) {
		b.WriteString("data: " + strings.TrimRight(line, "\r\n") + "\n")
	}
	b.WriteString("\n")
	if v.Final() {
		b.WriteString("event: close\ndata: end\n\n")
	}
	return b.Bytes(), nil
}

// prequeueStream answers the stream of a fan while the event's pre-queue
// runs, on the connection it took over: the waiting room's state as the
// page shows it (the fan's draw ticket, or not in the pre-queue), a final
// state that closes the stream, since nothing changes before the draw and
// the page reloads itself then. It closes the connection and releases the
// fan's place among the streams.
func (s *Server) prequeueStream(ctx context.Context, e *boxoffice.Event, fan *queueFan) {
	defer s.queueHub.release(fan)
	defer fan.conn.Close()
	p, err := s.position(ctx, e, fan.place)
	v, err := s.queueView(ctx, e, p, err, fan.place)
	if err != nil {
		s.Logger.Warn("queue stream: pre-queue position", "event", e.ID, "err", err)
		io.WriteString(fan.conn, "retry: 1000\n\n")
		return
	}
	msg, err := fragmentEvent(ctx, v, fan.lang)
	if err != nil {
		s.Logger.Error("queue stream: render", "event", e.ID, "err", err)
		return
	}
	fan.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	fan.conn.Write(msg)
}

// streamRetryAfter is the Retry-After (seconds) of a stream refused over a
// cap (STREAMS_PER_SESSION, STREAMS_PER_ADDRESS): a place frees only when
// another of the session's or address's streams ends, and the waiting room
// polls the status meanwhile, so a client gains nothing by retrying sooner.
const streamRetryAfter = 5

// handleQueueStream handles GET /events/:id/queue/stream: a text/event-stream
// of the fan's waiting-room fragment, event "position" at every tick, then
// "admitted" (a fragment that leads to the seat map) or another final state,
// then "close" (the page's sse-close) and the end of the stream (queueHub).
// It answers the headers itself on the connection it takes over, with
// Connection: close (the stream ends with the connection), and never writes
// to the session. Opening a stream costs no Redis round trip in the steady
// state: the positions are read once per tick for all of an instance's
// fans.
func (s *Server) handleQueueStream(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	e, err := s.liveEvent(ctx, id)
	if err != nil {
		return err
	}
	// the language as views.Langs spells it: the request's may be cut from
	// its Cookie header, which the fan would then keep for the stream's life
	lang := views.Langs[slices.Index(views.Langs, views.Lang(ctx))]
	if c.Request().Method == http.MethodHead {
		// a HEAD learns what a stream would be, and opens none
		c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
		return c.Blob(http.StatusOK, "text/event-stream", nil)
	}
	fan := &queueFan{account: boxoffice.AccountFromContext(ctx).ID, place: s.queuePlace(c), lang: lang,
		session: boxoffice.SessionKeyFromContext(ctx), addr: byAddress(c)}
	if !s.queueHub.reserve(fan) {
		c.Response().Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
		return boxoffice.NewError(boxoffice.ERATELIMITED, "err_too_many_streams")
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("X-Accel-Buffering", "no") // no buffering in nginx
	h.Set(echo.HeaderConnection, "close")
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	h.Write(&head)
	head.WriteString("\r\n")

	conn, _, err := http.NewResponseController(c.Response().Writer).Hijack()
	if err != nil {
		s.queueHub.release(fan)
		return fmt.Errorf("queue stream: take over the connection: %w", err)
	}
	conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := conn.Write(head.Bytes()); err != nil {
		conn.Close()
		s.queueHub.release(fan)
		return nil
	}
	fan.conn = conn
	if e.InPrequeue(s.Now()) {
		s.prequeueStream(ctx, e, fan)
		return nil
	}
	if !s.queueHub.join(id, fan) {
		io.WriteString(conn, "retry: 1000\n\n")
		conn.Close()
		s.queueHub.release(fan)
	}
	return nil
}
