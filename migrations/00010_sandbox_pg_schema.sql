-- +goose Up
-- The sandbox PG's tables leave the production schema: the sandbox
-- (payment/sandbox) now keeps them in a schema of its own, sandbox_pg, which
-- it creates at start-up, and only a deployment with PG_PROVIDER=sandbox
-- starts it. 00004_sandbox_pg.sql created them in every deployment.
--
-- A migration cannot know PG_PROVIDER, so it goes by what the tables hold:
--   * all three empty (a deployment that never used the sandbox, or a fresh
--     database): they are dropped; a sandbox deployment among these gets
--     them back, empty, in sandbox_pg when it starts;
--   * any row in any of them (a deployment that uses, or used, the sandbox):
--     the three tables move to sandbox_pg with their rows, indexes,
--     constraints and identity sequences (ALTER TABLE ... SET SCHEMA), so
--     that the sandbox finds its payments and pending webhooks there.
-- Nothing else of the production schema refers to these tables.
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('sandbox_pg_payment') IS NULL THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM sandbox_pg_payment) OR EXISTS (SELECT 1 FROM sandbox_pg_idempotency)
       OR EXISTS (SELECT 1 FROM sandbox_pg_webhook) THEN
        CREATE SCHEMA IF NOT EXISTS sandbox_pg;
        ALTER TABLE sandbox_pg_payment SET SCHEMA sandbox_pg;
        ALTER TABLE sandbox_pg_idempotency SET SCHEMA sandbox_pg;
        ALTER TABLE sandbox_pg_webhook SET SCHEMA sandbox_pg;
    ELSE
        DROP TABLE sandbox_pg_webhook, sandbox_pg_idempotency, sandbox_pg_payment;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- The tables come back to the production schema with their rows where the
-- sandbox keeps them; where it never ran there is nothing to bring back, and
-- 00004's Down drops only what exists.
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('sandbox_pg.sandbox_pg_payment') IS NOT NULL THEN
        EXECUTE format('ALTER TABLE sandbox_pg.sandbox_pg_payment SET SCHEMA %I', current_schema());
        EXECUTE format('ALTER TABLE sandbox_pg.sandbox_pg_idempotency SET SCHEMA %I', current_schema());
        EXECUTE format('ALTER TABLE sandbox_pg.sandbox_pg_webhook SET SCHEMA %I', current_schema());
    END IF;
END
$$;
-- +goose StatementEnd
