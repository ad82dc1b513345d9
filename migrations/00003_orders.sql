-- +goose Up
CREATE TABLE orders (
    id              text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{6,64}$'),
    event_id        bigint NOT NULL REFERENCES event (id),
    account_id      bigint NOT NULL REFERENCES account (id),
    status          text NOT NULL DEFAULT 'PENDING_PAYMENT'
                    CHECK (status IN ('PENDING_PAYMENT', 'CONFIRMED', 'FAILED', 'EXPIRED', 'CANCELLED', 'REFUNDED')),
    amount          bigint NOT NULL CHECK (amount > 0),
    currency        text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    order_name      text NOT NULL,
    expires_at      timestamptz NOT NULL,
    failure_code    text NOT NULL DEFAULT '',
    failure_message text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    confirmed_at    timestamptz
);
CREATE INDEX orders_account_event ON orders (account_id, event_id);
CREATE INDEX orders_status_expires ON orders (status, expires_at);

-- The seats of an order, with the price the server charged for each.
CREATE TABLE order_item (
    order_id   text NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    event_id   bigint NOT NULL,
    seat_label text NOT NULL,
    grade      text NOT NULL,
    price      bigint NOT NULL CHECK (price > 0),
    PRIMARY KEY (order_id, seat_label),
    FOREIGN KEY (event_id, seat_label) REFERENCES event_seat (event_id, label)
);

-- One row per payment the PG reported for one of our orders. payment_key is
-- the PG's payment id: UNIQUE, so a payment is counted once (DESIGN rule 3).
-- outcome records what the confirmation routine decided, so that every repeat
-- returns the first result.
CREATE TABLE payment (
    payment_key text PRIMARY KEY CHECK (length(payment_key) BETWEEN 1 AND 200),
    order_id    text NOT NULL REFERENCES orders (id),
    amount      bigint NOT NULL,
    status      text NOT NULL,
    outcome     text NOT NULL CHECK (outcome IN ('confirmed', 'refunded', 'refund_pending', 'rejected')),
    reason      text NOT NULL DEFAULT '',
    approved_at timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_order_id ON payment (order_id);
-- At most one payment confirms an order.
CREATE UNIQUE INDEX payment_one_confirmed ON payment (order_id) WHERE outcome = 'confirmed';

-- A seat of an event is sold at most once (DESIGN rule 1).
CREATE TABLE sold_seat (
    event_id   bigint NOT NULL,
    seat_label text NOT NULL,
    order_id   text NOT NULL REFERENCES orders (id),
    account_id bigint NOT NULL REFERENCES account (id),
    sold_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, seat_label),
    FOREIGN KEY (event_id, seat_label) REFERENCES event_seat (event_id, label)
);
CREATE INDEX sold_seat_account ON sold_seat (event_id, account_id);

-- One row per account and event that bought: the confirmation transaction
-- locks it to serialise an account's purchases and checks the limit on it.
CREATE TABLE purchase_count (
    event_id   bigint NOT NULL REFERENCES event (id),
    account_id bigint NOT NULL REFERENCES account (id),
    tickets    integer NOT NULL DEFAULT 0 CHECK (tickets >= 0),
    PRIMARY KEY (event_id, account_id)
);

CREATE TABLE ticket (
    id         uuid PRIMARY KEY,
    order_id   text NOT NULL REFERENCES orders (id),
    event_id   bigint NOT NULL,
    seat_label text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (event_id, seat_label),
    FOREIGN KEY (event_id, seat_label) REFERENCES sold_seat (event_id, seat_label)
);

-- Events to publish after commit (the transactional outbox), relayed in id order.
CREATE TABLE outbox (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic      text NOT NULL,
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    sent_at    timestamptz
);
CREATE INDEX outbox_unsent ON outbox (id) WHERE sent_at IS NULL;

-- +goose Down
DROP TABLE outbox;
DROP TABLE ticket;
DROP TABLE purchase_count;
DROP TABLE sold_seat;
DROP TABLE payment;
DROP TABLE order_item;
DROP TABLE orders;
