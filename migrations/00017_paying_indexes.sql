-- +goose Up
-- An account's orders of an event by status, newest first. It serves
-- checkout's look-up of a payable order of the same seats (store
-- checkoutLocked: account, event, PENDING_PAYMENT, newest first, LIMIT 1) and
-- its replacement of the account's older unpaid orders of the event
-- (queueInsertOrder: UPDATE ... WHERE account_id, event_id, status = ANY),
-- and ExpireOrders' look for the same seats in another payable order of
-- the account. Without it their cached (generic) plans walked the indexes
-- of every order of the event or status (orders_event_created,
-- orders_status_created) and filtered the account out: hundreds of rows
-- per checkout. It takes the place of orders_account_event, of which it
-- is a prefix.
CREATE INDEX orders_account_event_status ON orders (account_id, event_id, status, created_at DESC);
DROP INDEX orders_account_event;

-- An order's live tickets: the tickets read of every order read
-- (store queueDetails: order_id = ANY, refunded_at IS NULL; three times per
-- paid order) and the refund's UPDATE of an order's live tickets. Their
-- generic plans preferred ticket_live_seat, whose predicate matches, and
-- read every live ticket of the sale for each order (ticket_order_id,
-- kept for the checks that count an order's tickets refunded or not, was
-- left aside).
CREATE INDEX ticket_live_order ON ticket (order_id) WHERE refunded_at IS NULL;

-- +goose Down
DROP INDEX ticket_live_order;
CREATE INDEX orders_account_event ON orders (account_id, event_id);
DROP INDEX orders_account_event_status;
