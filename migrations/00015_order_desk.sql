-- +goose Up
-- The order desk's search (GET /admin/orders), newest first by keyset
-- (created_at, id): over all events, within one event, or by status; by
-- buyer e-mail prefix (LIKE 'x%' needs text_pattern_ops); by seat label.
CREATE INDEX orders_created ON orders (created_at DESC, id DESC);
CREATE INDEX orders_event_created ON orders (event_id, created_at DESC, id DESC);
CREATE INDEX orders_status_created ON orders (status, created_at DESC, id DESC);
CREATE INDEX account_email_prefix ON account (email text_pattern_ops);
CREATE INDEX order_item_seat ON order_item (seat_label, event_id);

-- The audit log names the venue of a venue's action, and is read newest
-- first within an event, an admin or an action (GET /admin/audit).
ALTER TABLE audit_log ADD COLUMN venue_id bigint;
CREATE INDEX audit_log_event ON audit_log (event_id, id DESC) WHERE event_id IS NOT NULL;
CREATE INDEX audit_log_admin ON audit_log (admin_id, id DESC) WHERE admin_id IS NOT NULL;
CREATE INDEX audit_log_action ON audit_log (action, id DESC);

-- +goose Down
DROP INDEX audit_log_action;
DROP INDEX audit_log_admin;
DROP INDEX audit_log_event;
ALTER TABLE audit_log DROP COLUMN venue_id;
DROP INDEX order_item_seat;
DROP INDEX account_email_prefix;
DROP INDEX orders_status_created;
DROP INDEX orders_event_created;
DROP INDEX orders_created;
