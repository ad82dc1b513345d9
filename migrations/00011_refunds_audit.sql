-- +goose Up
-- A refund of some or all of a confirmed order's tickets. id names the
-- refund at the PG: its Idempotency-Key is "cancel:<paymentKey>:<id>", its cancel
-- reason starts with "boxoffice refund <id>:", so that a cancel the PG
-- reports is told apart from one made elsewhere (its dashboard), which is
-- recorded with id "pg:<transactionKey>" (the PRIMARY KEY applies each once).
-- pending: reserved, the PG not yet (surely) asked; done: applied; failed:
-- the PG refused, nothing changed.
CREATE TABLE refund (
    id              text PRIMARY KEY,
    order_id        text NOT NULL REFERENCES orders (id),
    payment_key     text NOT NULL REFERENCES payment (payment_key),
    amount          bigint NOT NULL CHECK (amount > 0),
    reason          text NOT NULL CHECK (length(reason) BETWEEN 1 AND 200),
    source          text NOT NULL CHECK (source IN ('admin', 'pg')),
    admin_id        bigint REFERENCES account (id),
    status          text NOT NULL CHECK (status IN ('pending', 'done', 'failed')),
    failure         text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    done_at         timestamptz
);
CREATE INDEX refund_order_id ON refund (order_id);
CREATE INDEX refund_pending ON refund (created_at) WHERE status = 'pending';

-- The seats of a refund. A seat is in at most one refund that is pending or
-- done: a failed refund's rows are deleted with its failure.
CREATE TABLE refund_item (
    refund_id  text NOT NULL REFERENCES refund (id),
    order_id   text NOT NULL,
    seat_label text NOT NULL,
    price      bigint NOT NULL CHECK (price > 0),
    PRIMARY KEY (refund_id, seat_label),
    UNIQUE (order_id, seat_label),
    FOREIGN KEY (order_id, seat_label) REFERENCES order_item (order_id, seat_label)
);

-- A refunded ticket stays, marked, for the order's history; its seat's
-- sold_seat row goes, so that the seat can be sold again and get a new ticket.
ALTER TABLE ticket ADD COLUMN refunded_at timestamptz;
ALTER TABLE ticket DROP CONSTRAINT ticket_event_id_seat_label_fkey;
ALTER TABLE ticket DROP CONSTRAINT ticket_event_id_seat_label_key;
CREATE UNIQUE INDEX ticket_live_seat ON ticket (event_id, seat_label) WHERE refunded_at IS NULL;

-- Every admin action, written in the transaction of the change: who, when,
-- what, on which order, event or seats, and the before and after that matter.
CREATE TABLE audit_log (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    admin_id   bigint REFERENCES account (id),
    action     text NOT NULL,
    event_id   bigint,
    order_id   text,
    seats      text[] NOT NULL DEFAULT '{}',
    before     jsonb NOT NULL DEFAULT '{}',
    after      jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_created ON audit_log (created_at DESC, id DESC);

-- +goose Down
DROP TABLE audit_log;
DROP INDEX ticket_live_seat;
DELETE FROM ticket WHERE refunded_at IS NOT NULL;
ALTER TABLE ticket ADD CONSTRAINT ticket_event_id_seat_label_key UNIQUE (event_id, seat_label);
ALTER TABLE ticket ADD CONSTRAINT ticket_event_id_seat_label_fkey FOREIGN KEY (event_id, seat_label) REFERENCES sold_seat (event_id, seat_label);
ALTER TABLE ticket DROP COLUMN refunded_at;
DROP TABLE refund_item;
DROP TABLE refund;
