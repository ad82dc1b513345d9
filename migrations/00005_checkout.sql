-- +goose Up
-- When the reconciler last asked the PG about an order (GetPaymentByOrderID),
-- so that each abandoned order is asked about now and then, not every run.
ALTER TABLE orders ADD COLUMN pg_checked_at timestamptz;

-- The reconciler's and the admin list's look-ups.
CREATE INDEX payment_refund_pending ON payment (created_at) WHERE outcome = 'refund_pending';
CREATE INDEX orders_open_expires ON orders (expires_at) WHERE status IN ('PENDING_PAYMENT', 'EXPIRED');
CREATE INDEX ticket_order_id ON ticket (order_id);
CREATE INDEX orders_account_created ON orders (account_id, created_at DESC);

-- +goose Down
DROP INDEX orders_account_created;
DROP INDEX ticket_order_id;
DROP INDEX orders_open_expires;
DROP INDEX payment_refund_pending;
ALTER TABLE orders DROP COLUMN pg_checked_at;
