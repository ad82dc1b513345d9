-- +goose Up
-- The live page's figures read an event's orders by status (unpaid, FAILED)
-- and confirmation time (store.Holds.SaleFigures).
CREATE INDEX orders_event_status ON orders (event_id, status);

-- +goose Down
DROP INDEX orders_event_status;
