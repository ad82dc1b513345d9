-- +goose Up
-- The live page's figures read an event's orders by status (unpaid, FAILED)
-- and confirmation time (store.Holds.SaleFigures).
CREATE INDEX orders_event_status ON orders (event_id, status);
-- The reconciler looks up the payments of orders confirmed in the last days
-- for cancels made at the PG (store.Orders.Reconcile).
CREATE INDEX orders_confirmed_at ON orders (confirmed_at) WHERE status = 'CONFIRMED';

-- +goose Down
DROP INDEX orders_confirmed_at;
DROP INDEX orders_event_status;
