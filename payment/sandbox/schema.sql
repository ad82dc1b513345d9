-- The sandbox PG's tables, in a schema of their own, sandbox_pg (PostgreSQL
-- keeps names beginning with pg_ for itself): New runs
-- this at start-up (idempotently, under an advisory lock), and only a
-- deployment with PG_PROVIDER=sandbox runs New. Nothing of boxoffice's own
-- reads these tables. The state lives in PostgreSQL, not in memory, so that
-- a payment the sandbox authenticated or confirmed outlives the process, as
-- a real PG's does. Until migrations/00010_sandbox_pg_schema.sql these
-- tables were in the production schema; that migration moves them here when
-- they hold rows and drops them when they do not.
CREATE SCHEMA IF NOT EXISTS sandbox_pg;

-- One row per payment the sandbox's checkout page authenticated.
CREATE TABLE IF NOT EXISTS sandbox_pg.sandbox_pg_payment (
    payment_key          text PRIMARY KEY,
    -- Creation order, so that the latest payment of an order can be found.
    seq                  bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    order_id             text NOT NULL CHECK (order_id ~ '^[A-Za-z0-9_-]{6,64}$'),
    order_name           text NOT NULL,
    status               text NOT NULL CHECK (status IN ('READY', 'IN_PROGRESS', 'WAITING_FOR_DEPOSIT', 'DONE',
                                                          'CANCELED', 'PARTIAL_CANCELED', 'ABORTED', 'EXPIRED')),
    total_amount         bigint NOT NULL CHECK (total_amount > 0),
    balance_amount       bigint NOT NULL CHECK (balance_amount >= 0),
    -- The test scenario chosen at checkout ('' for the default behaviour).
    scenario             text NOT NULL DEFAULT '',
    requested_at         timestamptz NOT NULL,
    approved_at          timestamptz,
    last_transaction_key text NOT NULL DEFAULT '',
    -- Toss's cancels array, as JSON.
    cancels              jsonb NOT NULL DEFAULT '[]',
    failure_code         text NOT NULL DEFAULT '',
    failure_message      text NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS sandbox_pg_payment_order ON sandbox_pg.sandbox_pg_payment (order_id, seq);

-- The first answer to each Idempotency-Key, replayed for repeats. The key is
-- claimed, the operation done and the answer stored in one transaction.
CREATE TABLE IF NOT EXISTS sandbox_pg.sandbox_pg_idempotency (
    idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 300),
    method          text NOT NULL,
    path            text NOT NULL,
    status          integer NOT NULL DEFAULT 0,
    body            bytea NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (idempotency_key, method, path)
);

-- Webhook deliveries, written in the transaction that changed the payment and
-- sent afterwards (with retries) by whichever sandbox instance holds the lease.
CREATE TABLE IF NOT EXISTS sandbox_pg.sandbox_pg_webhook (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payment_key  text NOT NULL REFERENCES sandbox_pg.sandbox_pg_payment (payment_key),
    body         bytea NOT NULL,
    next_at      timestamptz NOT NULL,
    attempts     integer NOT NULL DEFAULT 0,
    lease_owner  text NOT NULL DEFAULT '',
    lease_until  timestamptz,
    last_error   text NOT NULL DEFAULT '',
    delivered_at timestamptz,
    failed_at    timestamptz
);
CREATE INDEX IF NOT EXISTS sandbox_pg_webhook_pending ON sandbox_pg.sandbox_pg_webhook (id)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
