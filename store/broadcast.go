package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

var _ boxoffice.BroadcastService = (*Broadcasts)(nil)

// DefaultBroadcastTTL is how long a broadcast is shown when no newer one
// replaces it.
const DefaultBroadcastTTL = 24 * time.Hour

// DefaultBroadcastMaxAge is how old Broadcasts lets its read of an event's
// broadcast be: a broadcast reaches every instance's fans within it.
const DefaultBroadcastMaxAge = time.Second

// Broadcasts keeps each event's broadcast in Redis, at broadcast:{e} (the
// event's hash tag, so on a Redis Cluster it lives in the event's slot), as
// JSON {"id", "message", "sent_at"} with a TTL: every instance reads the same
// key, so a broadcast sent through one instance reaches the fans of all.
// Each instance reads an event's key at most once per MaxAge, in the
// background, however many streams and seat maps show it. Safe for
// concurrent use.
type Broadcasts struct {
	DB    *DB
	Redis *Redis
	// TTL is how long a broadcast lives (DefaultBroadcastTTL when 0).
	TTL time.Duration
	// MaxAge is how old a read may be (DefaultBroadcastMaxAge when 0).
	MaxAge time.Duration

	mu   sync.Mutex
	last map[int64]broadcastRead
}

// broadcastRead is the process's copy of an event's broadcast: read (or
// set by Broadcast) at a time of the store's clock, whether a read is under
// way, and the last read's error.
type broadcastRead struct {
	at      time.Time
	b       boxoffice.Broadcast
	reading bool
	err     error
}

// broadcastJSON is a broadcast as Redis keeps it.
type broadcastJSON struct {
	ID      string    `json:"id"`
	Message string    `json:"message"`
	SentAt  time.Time `json:"sent_at"`
}

func (s *Broadcasts) key(eventID int64) string { return s.Redis.Key("broadcast:{%d}", eventID) }

// Broadcast implements boxoffice.BroadcastService. The audit row is
// committed first, then the message is set in Redis (no Redis call inside
// the transaction): should Redis fail in between, the attempt stays in the
// audit log and the error is returned, and the admin sends again.
func (s *Broadcasts) Broadcast(ctx context.Context, adminID, eventID int64, message string) (boxoffice.Broadcast, error) {
	message = strings.TrimSpace(message)
	switch n := utf8.RuneCountInString(message); {
	case n == 0:
		return boxoffice.Broadcast{}, boxoffice.NewError(boxoffice.EBADREQUEST, "err_broadcast_empty")
	case n > boxoffice.MaxBroadcastLen:
		return boxoffice.Broadcast{}, boxoffice.NewError(boxoffice.EBADREQUEST, "err_broadcast_long", "Max", boxoffice.MaxBroadcastLen, "Length", n)
	}
	id, err := randomToken()
	if err != nil {
		return boxoffice.Broadcast{}, err
	}
	b := boxoffice.Broadcast{ID: id, Message: message, SentAt: s.DB.Now()}
	err = pgx.BeginFunc(ctx, s.DB.Pool, func(tx pgx.Tx) error {
		var found bool
		if err := tx.QueryRow(ctx, `SELECT true FROM event WHERE id = $1`, eventID).Scan(&found); errors.Is(err, pgx.ErrNoRows) {
			return boxoffice.NewError(boxoffice.ENOTFOUND, "err_no_event")
		} else if err != nil {
			return err
		}
		return writeAudit(ctx, tx, auditEntry{AdminID: &adminID, Action: AuditBroadcast, EventID: eventID,
			After: map[string]any{"message": message, "id": id}}, b.SentAt)
	})
	if err != nil {
		return boxoffice.Broadcast{}, fmt.Errorf("broadcast to event %d: %w", eventID, err)
	}
	v, err := json.Marshal(broadcastJSON(b))
	if err != nil {
		return boxoffice.Broadcast{}, err
	}
	if err := s.Redis.Client.Set(ctx, s.key(eventID), v, orDefault(s.TTL, DefaultBroadcastTTL)).Err(); err != nil {
		return boxoffice.Broadcast{}, fmt.Errorf("broadcast to event %d: %w", eventID, err)
	}
	s.mu.Lock()
	if s.last == nil {
		s.last = map[int64]broadcastRead{}
	}
	s.last[eventID] = broadcastRead{at: s.DB.Now(), b: b}
	s.mu.Unlock()
	return b, nil
}

// LatestBroadcast implements boxoffice.BroadcastService without a Redis
// round trip of its own: it answers this process's latest read of
// broadcast:{e} and, once that read is MaxAge old (or there is none yet),
// starts one read in the background, so that a fan's request never waits
// for it; a broadcast sent through another instance thus shows here within
// MaxAge and a round trip (on the first request of an event after start-up,
// a moment later), and one sent through this instance at once. The error is
// the latest background read's, with the last message read.
func (s *Broadcasts) LatestBroadcast(ctx context.Context, eventID int64) (boxoffice.Broadcast, error) {
	now := s.DB.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[int64]broadcastRead{}
	}
	r, ok := s.last[eventID]
	if (!ok || now.Sub(r.at) >= orDefault(s.MaxAge, DefaultBroadcastMaxAge) || now.Before(r.at)) && !r.reading {
		r.reading = true
		s.last[eventID] = r
		go s.read(eventID, now)
	}
	return r.b, r.err
}

// read reads the event's broadcast from Redis into the process's copy,
// unless Broadcast replaced the copy since started.
func (s *Broadcasts) read(eventID int64, started time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var b boxoffice.Broadcast
	raw, err := s.Redis.Client.Get(ctx, s.key(eventID)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		err = nil
	case err != nil:
		err = fmt.Errorf("broadcast of event %d: %w", eventID, err)
	default:
		var j broadcastJSON
		if err = json.Unmarshal(raw, &j); err != nil {
			err = fmt.Errorf("broadcast of event %d: %w", eventID, err)
		}
		b = boxoffice.Broadcast(j)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.last[eventID]
	r.reading = false
	switch {
	case r.at.After(started): // Broadcast set a newer one meanwhile
	case err != nil:
		r.err = err // tried again at the next call
	default:
		r = broadcastRead{at: started, b: b}
	}
	s.last[eventID] = r
}
