package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/jackc/pgx/v5"
)

var _ boxoffice.BlockService = (*Blocks)(nil)

var (
	holdBlockScript     = loadScript(holdLua, "lua/hold_block.lua")
	holdBlockDoneScript = loadScript(holdLua, "lua/hold_index.lua", "lua/hold_block_done.lua")
)

// blockChangeTTL bounds a change of blocked seats from its first Redis step
// to its commit: the block lock's TTL, and the age under which a load of the
// sold-seat copy keeps a block under way (hold_cache.lua's claim age).
const blockChangeTTL = loadTimeout + claimCommitMargin

// Blocks blocks and unblocks an event's seats for admins and implements
// boxoffice.BlockService. PostgreSQL's blocked_seat is the truth; Redis's
// copy blocked:{e} is what the hold scripts (hold.lua, hold_best.lua) and the
// confirmation's claim (hold_claim.lua) refuse, like a sold seat, and what
// the seat map shows as unavailable. A change runs in three steps:
//
//  1. one Lua script (hold_block.lua) takes the event's block lock (one
//     change of an event's blocked seats at a time) and, for a block,
//     refuses if any of the seats is held (a hand-picked or best-available
//     hold, one extended for an unpaid order, or a confirmation's claim);
//     otherwise the seats join blocked:{e} in that same script, so that no
//     hold or claim can take them from then on, and are recorded as a block
//     under way (blocking:{e});
//  2. one PostgreSQL transaction writes blocked_seat (one INSERT that
//     writes nothing, and names them, if any seat is sold or in a
//     PENDING_PAYMENT order, which a hold no longer covers) or deletes its
//     rows, and the audit log entry;
//  3. one Lua script (hold_block_done.lua) ends the change: an unblock's
//     seats, or those of a block that was refused or failed, leave
//     blocked:{e}, and the lock is released.
//
// Why this order: the Redis step comes first for a block so that no hold
// can slip in between the check of the holds and the block (step 1 is one
// script), and after the commit for an unblock so that a seat is never free
// in Redis while PostgreSQL still has it blocked. No Redis call is made
// while the transaction holds its locks.
//
// Failure modes: a process that dies after step 1, or a block whose
// transaction failed for another reason than a refusal (PostgreSQL
// unreachable: whether its seats were blocked before is not known), leaves
// the seats blocked in Redis (and, for the dead process, the lock taken); the lock expires after blockChangeTTL, and
// the next load of the sold-seat copy after that replaces blocked:{e} with
// PostgreSQL's rows (blocks under way are kept by a load only while younger
// than blockChangeTTL): an over-block that heals by itself, never a seat
// held or sold while blocked. A failed step 3 after an unblock leaves the
// seats blocked in Redis until that same load. A load that reads
// PostgreSQL before a block commits keeps the block from blocking:{e}; one
// that reads before an unblock commits writes nothing, since step 3 raises
// unblocks:{e} (hold_cache.lua). If Redis loses its data between step 1 and
// the commit, the copy rebuilt in between misses the block until the next
// load (at most SoldCacheTTL), during which a hold of the seat may be
// granted; the seat can still not be sold once the copy has it, and
// hold_claim.lua refuses it then.
type Blocks struct {
	DB    *DB
	Holds *Holds
	// Now returns the current time (time.Now when nil), for blocked_at and
	// the audit log.
	Now func() time.Time
}

// ChangeBlocks blocks or unblocks req.Seats of req.EventID as req.Action
// says, all seats or none, and writes the audit log entry (AuditBlock or
// AuditUnblock) in the same statement. Blocking a blocked seat or
// unblocking a free one changes nothing for that seat; a change that
// changes no seat at all writes no entry and says so (Changed false).
// Returns the seats asked for and the event's blocked seats after the
// change, both sorted.
//
// Errors (*boxoffice.Error), with nothing changed: EBADREQUEST for an
// action other than block or unblock; EBADSEAT for no seats, or with
// Details["seats"] every malformed, repeated or unknown label at once;
// ENOTFOUND for no such event; ECONFLICT for a block of seats that are
// sold, held or in an unpaid order (Details["seats"] names them all, and so
// does the sentence), or while another change of the event's blocked seats
// is under way.
func (b *Blocks) ChangeBlocks(ctx context.Context, req boxoffice.BlockRequest) (*boxoffice.BlockResult, error) {
	if req.Action != boxoffice.BlockActionBlock && req.Action != boxoffice.BlockActionUnblock {
		return nil, boxoffice.NewError(boxoffice.EBADREQUEST, "block_bad_action")
	}
	seats := slices.Clone(req.Seats)
	if err := b.checkSeats(ctx, req.EventID, seats); err != nil {
		return nil, err
	}
	slices.Sort(seats)
	token, err := randomToken()
	if err != nil {
		return nil, err
	}
	h, e := b.Holds, req.EventID
	keys := []string{h.blockLockKey(e), h.blockedKey(e), h.blockingKey(e)}
	args := []any{token, blockChangeTTL.Milliseconds(), req.Action}
	for _, l := range seats {
		if req.Action == boxoffice.BlockActionBlock {
			keys = append(keys, h.lockKey(e, l))
		}
		args = append(args, l)
	}
	res, err := holdBlockScript.Run(ctx, h.Redis.Client, keys, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("%s seats of event %d: %w", req.Action, e, err)
	}
	switch res[0] {
	case "busy":
		return nil, boxoffice.NewError(boxoffice.ECONFLICT, "block_busy")
	case "held":
		unavailable, err := b.unavailable(ctx, b.DB.Pool, e, seats)
		if err != nil {
			return nil, err
		}
		return nil, blockTaken(append(unavailable, stringsOf(res[1])...))
	}

	// The lock is the change's: step 2, then step 3 whatever happened.
	var already []string // a block's seats that were blocked before it
	var changed bool
	txCtx, cancel := context.WithTimeout(ctx, claimCommitMargin)
	err = pgx.BeginTxFunc(txCtx, b.DB.Pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var err error
		if req.Action == boxoffice.BlockActionBlock {
			already, changed, err = b.block(txCtx, tx, req.AdminID, e, seats)
		} else {
			changed, err = b.unblock(txCtx, tx, req.AdminID, e, seats)
		}
		return err
	})
	cancel()
	// Seats that leave Redis's copy: an unblock's once committed; a refused
	// block's that were not blocked before it. A block that failed otherwise
	// (PostgreSQL unreachable: whether its seats were blocked before is not
	// known) leaves them blocked in Redis until the next load.
	var remove []string
	switch {
	case err == nil && req.Action == boxoffice.BlockActionUnblock:
		remove = seats
	case req.Action == boxoffice.BlockActionBlock && boxoffice.ErrorCode(err) == boxoffice.ECONFLICT:
		remove = slices.DeleteFunc(slices.Clone(seats), func(l string) bool { return slices.Contains(already, l) })
	}
	doneKeys := []string{h.blockLockKey(e), h.blockedKey(e), h.blockingKey(e), h.unblocksKey(e)}
	doneArgs := []any{token, "0"}
	if len(remove) > 0 {
		doneArgs = []any{token, "1", len(remove)}
		for _, l := range remove {
			doneArgs = append(doneArgs, l)
		}
		indexKeys, indexArgs := h.reindexArgs(ctx, e, remove, len(doneKeys)+1)
		doneKeys, doneArgs = append(doneKeys, indexKeys...), append(doneArgs, indexArgs...)
	}
	doneErr := holdBlockDoneScript.Run(context.WithoutCancel(ctx), h.Redis.Client, doneKeys, doneArgs...).Err()
	if err != nil {
		return nil, err
	}
	if doneErr != nil {
		return nil, fmt.Errorf("%s seats of event %d: committed, but Redis's copy heals only at its next load: %w", req.Action, e, doneErr)
	}
	blocked, err := b.BlockedSeats(ctx, e)
	if err != nil {
		return nil, err
	}
	return &boxoffice.BlockResult{EventID: e, Action: req.Action, Seats: seats, Blocked: blocked, Changed: changed}, nil
}

// block writes the blocked_seat rows of seats in tx and, in the same
// statement, the audit entry unless every seat was blocked already (a block
// that changes nothing leaves no entry). If any seat is sold or in a
// PENDING_PAYMENT order, it writes nothing and returns ECONFLICT naming
// them (the caller rolls back). The seats it refuses and the rows it
// writes are decided in that one statement, on one snapshot: a refund (or
// an order's end) committing between two statements must not leave a seat
// that the INSERT passed over as sold looking free to a later check, and
// the block answered done with no row. Returns the seats that were
// blocked already, sorted, and whether any seat became blocked.
func (b *Blocks) block(ctx context.Context, tx pgx.Tx, adminID, eventID int64, seats []string) ([]string, bool, error) {
	var already, unavailable []string
	var changed bool
	err := tx.QueryRow(ctx, `
		WITH was AS (
			SELECT coalesce(array_agg(seat_label ORDER BY seat_label), '{}') AS seats
			FROM blocked_seat WHERE event_id = $1 AND seat_label = ANY($4)
		), taken AS (
			SELECT coalesce(array_agg(l ORDER BY l), '{}') AS seats FROM unnest($4::text[]) l
			WHERE EXISTS (SELECT 1 FROM sold_seat s WHERE s.event_id = $1 AND s.seat_label = l)
			   OR EXISTS (SELECT 1 FROM order_item i JOIN orders o ON o.id = i.order_id
			              WHERE i.event_id = $1 AND i.seat_label = l AND o.status = 'PENDING_PAYMENT')
		), ins AS (
			INSERT INTO blocked_seat (event_id, seat_label, blocked_by, blocked_at)
			SELECT $1, l, $2, $3 FROM unnest($4::text[]) l, taken
			WHERE cardinality(taken.seats) = 0
			ON CONFLICT (event_id, seat_label) DO NOTHING
			RETURNING seat_label
		), audit AS (
			INSERT INTO audit_log (admin_id, action, event_id, seats, before, after, created_at)
			SELECT $2, $5, $1, $4, jsonb_build_object('blocked', was.seats), jsonb_build_object('blocked', $4::text[]), $3
			FROM was WHERE EXISTS (SELECT 1 FROM ins)
		)
		SELECT was.seats, taken.seats, EXISTS (SELECT 1 FROM ins) FROM was, taken`,
		eventID, adminID, b.now(), seats, AuditBlock).Scan(&already, &unavailable, &changed)
	if err != nil {
		return nil, false, fmt.Errorf("block seats of event %d: %w", eventID, err)
	}
	if len(unavailable) > 0 {
		return already, false, blockTaken(unavailable)
	}
	return already, changed, nil
}

// unblock deletes the blocked_seat rows of seats in tx and, in the same
// statement, writes the audit entry unless none of them was blocked (an
// unblock that changes nothing leaves no entry). Reports whether any seat
// was unblocked.
func (b *Blocks) unblock(ctx context.Context, tx pgx.Tx, adminID, eventID int64, seats []string) (bool, error) {
	var changed bool
	err := tx.QueryRow(ctx, `
		WITH del AS (
			DELETE FROM blocked_seat WHERE event_id = $1 AND seat_label = ANY($4) RETURNING seat_label
		), audit AS (
			INSERT INTO audit_log (admin_id, action, event_id, seats, before, after, created_at)
			SELECT $2, $5, $1, $4, jsonb_build_object('blocked', array_agg(seat_label ORDER BY seat_label)),
			       jsonb_build_object('blocked', '{}'::text[]), $3
			FROM del HAVING count(*) > 0
		)
		SELECT EXISTS (SELECT 1 FROM del)`,
		eventID, adminID, b.now(), seats, AuditUnblock).Scan(&changed)
	if err != nil {
		return false, fmt.Errorf("unblock seats of event %d: %w", eventID, err)
	}
	return changed, nil
}

// unavailable returns those of seats that are sold or in a PENDING_PAYMENT
// order, sorted.
func (b *Blocks) unavailable(ctx context.Context, q querier, eventID int64, seats []string) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT l FROM unnest($2::text[]) l
		WHERE EXISTS (SELECT 1 FROM sold_seat s WHERE s.event_id = $1 AND s.seat_label = l)
		   OR EXISTS (SELECT 1 FROM order_item i JOIN orders o ON o.id = i.order_id
		              WHERE i.event_id = $1 AND i.seat_label = l AND o.status = 'PENDING_PAYMENT')
		ORDER BY l`, eventID, seats)
	if err != nil {
		return nil, fmt.Errorf("seats of event %d taken: %w", eventID, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("seats of event %d taken: %w", eventID, err)
	}
	return out, nil
}

// blockTaken is the ECONFLICT error of a block refused for seats (sorted,
// each once) that are sold, held or in an unpaid order.
func blockTaken(seats []string) error {
	slices.Sort(seats)
	seats = slices.Compact(seats)
	return &boxoffice.Error{
		Code:    boxoffice.ECONFLICT,
		Msg:     boxoffice.M("block_taken", "Seats", strings.Join(seats, ", ")),
		Details: map[string]any{"seats": seats},
	}
}

// checkSeats returns EBADSEAT unless seats name 1 or more distinct seats of
// the event, naming every bad label at once; ENOTFOUND for no such event.
func (b *Blocks) checkSeats(ctx context.Context, eventID int64, seats []string) error {
	if len(seats) == 0 {
		return boxoffice.NewError(boxoffice.EBADSEAT, "block_choose_one")
	}
	var bad, wellFormed []string
	seen := make(map[string]bool, len(seats))
	for _, l := range seats {
		switch {
		case !boxoffice.ValidSeatLabel(l):
			bad = append(bad, boxoffice.ClipInput(l, boxoffice.MaxSeatLabelLen))
		case seen[l]:
			bad = append(bad, l)
		default:
			wellFormed = append(wellFormed, l)
		}
		seen[l] = true
	}
	var exists bool
	var unknown []string
	err := b.DB.Pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM event WHERE id = $1),
		       coalesce(array_agg(l ORDER BY ord), '{}')
		FROM unnest($2::text[]) WITH ORDINALITY AS u(l, ord)
		WHERE NOT EXISTS (SELECT 1 FROM event_seat s WHERE s.event_id = $1 AND s.label = l)`,
		eventID, wellFormed).Scan(&exists, &unknown)
	if err != nil {
		return fmt.Errorf("seats of event %d: %w", eventID, err)
	}
	if !exists {
		return boxoffice.NewError(boxoffice.ENOTFOUND, "err_no_event")
	}
	if bad = append(bad, unknown...); len(bad) > 0 {
		return &boxoffice.Error{
			Code:    boxoffice.EBADSEAT,
			Msg:     boxoffice.M("block_unknown_seats", "Seats", strings.Join(bad, ", ")),
			Details: map[string]any{"seats": bad},
		}
	}
	return nil
}

// BlockedSeats returns the event's blocked seat labels (blocked_seat),
// sorted; none for no such event.
func (b *Blocks) BlockedSeats(ctx context.Context, eventID int64) ([]string, error) {
	rows, err := b.DB.Pool.Query(ctx, `SELECT seat_label FROM blocked_seat WHERE event_id = $1 ORDER BY seat_label`, eventID)
	if err != nil {
		return nil, fmt.Errorf("blocked seats of event %d: %w", eventID, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("blocked seats of event %d: %w", eventID, err)
	}
	return out, nil
}

func (b *Blocks) now() time.Time {
	if b.Now == nil {
		return time.Now()
	}
	return b.Now()
}
