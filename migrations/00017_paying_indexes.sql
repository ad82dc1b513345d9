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

-- +goose Down
CREATE INDEX orders_account_event ON orders (account_id, event_id);
DROP INDEX orders_account_event_status;
