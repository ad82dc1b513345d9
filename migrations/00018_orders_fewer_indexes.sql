-- +goose Up
-- Fewer index entries per paid order. Every change of an order's status is
-- an update that cannot be HOT (status is indexed), so it adds an entry to
-- every index of orders whose predicate the new row matches: the order's
-- insert wrote 9 entries and its move to CONFIRMED 9 more.
--
-- ExpireOrders (status = 'PENDING_PAYMENT' AND expires_at <= now) and
-- UnsettledOrders (status IN ('PENDING_PAYMENT', 'EXPIRED') AND expires_at
-- > the look-back) are the only statements that read orders by expiry
-- (their generic plans used orders_status_expires and orders_open_expires
-- respectively); one partial index on both columns answers both with an
-- index condition, and a confirmed, failed, cancelled or refunded order
-- has no entry in it: the move to CONFIRMED no longer writes one.
CREATE INDEX orders_open_status_expires ON orders (status, expires_at) WHERE status IN ('PENDING_PAYMENT', 'EXPIRED');
DROP INDEX orders_status_expires;
DROP INDEX orders_open_expires;

-- FindOrders (account_id = $1 ORDER BY created_at DESC, id) sorted the
-- account's orders after reading them from orders_account_created (its
-- id tie-break is not in the index); orders_account_event_status starts
-- with account_id and serves it the same way.
DROP INDEX orders_account_created;

-- +goose Down
CREATE INDEX orders_account_created ON orders (account_id, created_at DESC);
CREATE INDEX orders_open_expires ON orders (expires_at) WHERE status IN ('PENDING_PAYMENT', 'EXPIRED');
CREATE INDEX orders_status_expires ON orders (status, expires_at);
DROP INDEX orders_open_status_expires;
