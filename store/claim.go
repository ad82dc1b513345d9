package store

import (
	"context"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice"
)

var holdClaimScript = loadScript(holdLua, "lua/hold_claim.lua")

// claimCommitMargin is how long after its claim a confirmation transaction
// may take to commit with the claim still covering its seats until the
// sold-seat cache surely has them, and with its record in claimed:{e} kept
// until a load surely read the sale (see claimSeats). The transaction's work
// after the claim is a few statements; the margin is generous because a
// longer claim costs nothing unless MarkSold fails.
const claimCommitMargin = time.Minute

// claimTTL is how long a claim lasts: the sold-seat cache's marker TTL,
// plus a load's timeout, plus claimCommitMargin (6.5 minutes by default).
func (h *Holds) claimTTL() time.Duration {
	return h.soldCacheTTL() + loadTimeout + claimCommitMargin
}

// soldCacheTTL is how long cache:ready:{e} lives: SoldCacheTTL, or
// DefaultSoldCacheTTL when that is 0 or less.
func (h *Holds) soldCacheTTL() time.Duration {
	if h.SoldCacheTTL > 0 {
		return h.SoldCacheTTL
	}
	return DefaultSoldCacheTTL
}

// claimSeats claims labels for the buyer (accountID) of an order (orderID)
// whose confirmation transaction is deciding, in one Lua script (hold_claim.lua),
// all or nothing: if another account holds any of the seats, an admin
// blocked it (Blocks), or it is in the sold-seat copy sold:{e}, nothing
// changes and those labels come back as taken; otherwise every seat becomes
// a hold of the buyer until claimTTL from now on Redis's clock (or later, if
// the buyer's hold on it already ended later), written as Hold writes one
// (the lock key, the buyer's zset, the map's indexes), so that the seat map
// shows it held to others and mine to the buyer, it counts towards the
// buyer's limit until MarkSold turns it into bought tickets, and Hold by the
// buyer keeps it as it is. The labels that no hold of the buyer covered come
// back as claimed: those the caller ends (releaseSeats) if nothing is sold.
//
// The claim replaces a read of the holds: from the claim on, no other
// account can hold the seats (hold.lua refuses a seat whose key is another
// account's), so that a seat being sold is never held by a rival. After
// the commit, MarkSold puts the seats in sold:{e} and ends the claim. If
// MarkSold fails (Redis briefly unreachable), the claim must last until
// sold:{e} has the sale by another way: the next load of the sold-seat
// cache that reads PostgreSQL after the commit. hold.lua holds nothing
// without the marker cache:ready:{e}, and a load sets the marker only while
// its cache:loading key lives (loadTimeout from before its read); so a load
// that read before the commit (and missed the sale) set its marker, if at
// all, less than loadTimeout after the commit, and that marker ends
// SoldCacheTTL later. From commit + loadTimeout + SoldCacheTTL on, every
// marker comes from a load that has the sale. A claim of claimTTL covers
// that whenever the transaction commits within claimCommitMargin of the
// claim (all durations on Redis's clock; every instance must use the same
// SoldCacheTTL). While PostgreSQL cannot be reached, hold.lua may run on a
// copy past its marker's TTL (see Holds), which no claim outlasts: so the
// script also records each claimed seat in claimed:{e}, which MarkSold
// clears and a load drops once the claim is older than loadTimeout plus
// claimCommitMargin (the sale then committed before the load's read), and
// hold.lua refuses a recorded seat on such a copy.
//
// A seat whose hold is in an order awaiting payment (ExtendHolds: its
// seat:order:{e}:<label> key expires with the hold) stays so with the
// claim's expiry, so that the buyer cannot release a seat being paid for
// (Release).
//
// The claim also sets the order's marker (orderID's order:holds:{e}), so that
// the order's expiry, which may have read the order as due just before the
// transaction locked it, does not end the claim afterwards (releaseOrder);
// the marker outlives the transaction, which commits within
// claimCommitMargin, by far more than expireTimeout.
//
// A seat in sold:{e} is taken even when this order bought it: MarkSold
// ended its hold keys as it added it there, and a claim that wrote one
// again would leave a sold seat held (until a repeat's own MarkSold, or
// for claimTTL if that repeat failed first). A repeat that read the order
// before it was paid claims after the sale was marked; its transaction
// finds the payment recorded and looks at nothing the claim found. A seat
// sold since the copy was read is not in sold:{e}: PostgreSQL's UNIQUE
// sold_seat decides those.
// Errors: Redis's (the script may have run: a claim made then expires by
// itself).
func (h *Holds) claimSeats(ctx context.Context, eventID, accountID int64, orderID string, labels []string) (claimed, taken []string, err error) {
	keys := []string{
		h.holdKey(eventID, accountID),
		h.Redis.Key("held:{%d}", eventID),
		h.Redis.Key("holder:{%d}", eventID),
		h.Redis.Key("claimed:{%d}", eventID),
		h.orderKey(eventID, orderID),
		h.blockedKey(eventID),
		h.Redis.Key("sold:{%d}", eventID),
	}
	keys = append(keys, h.seatKeys(eventID, labels)...)
	args := []any{accountID, h.claimTTL().Milliseconds(), orderMarkerTTL.Milliseconds()}
	for _, l := range labels {
		args = append(args, l)
	}
	res, err := holdClaimScript.Run(ctx, h.Redis.Client, keys, args...).Slice()
	if err != nil {
		return nil, nil, fmt.Errorf("claim seats of event %d for account %d: %w", eventID, accountID, err)
	}
	if res[0] == "taken" {
		return nil, stringsOf(res[1]), nil
	}
	return stringsOf(res[1]), nil, nil
}

// releaseSeats ends the account's own holds on labels (Release each),
// skipping the seats it does not hold (ENOTFOUND). It stops at the first
// other error.
func (h *Holds) releaseSeats(ctx context.Context, eventID, accountID int64, labels []string) error {
	for _, l := range labels {
		shopper := boxoffice.Shopper{EventID: eventID, AccountID: accountID} // the box office acts: no entry check
		if _, err := h.Release(ctx, shopper, l); err != nil && boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
			return err
		}
	}
	return nil
}
