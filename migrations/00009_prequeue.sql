-- +goose Up
-- The pre-queue and its draw (README "The pre-queue and the draw"). An
-- event's pre-queue opens before its queue; NULL means none.
ALTER TABLE event ADD COLUMN prequeue_opens_at timestamptz
    CHECK (prequeue_opens_at IS NULL OR prequeue_opens_at < queue_opens_at);

-- The draw's secret seed, drawn once per event (the first to ask inserts
-- it; ON CONFLICT keeps the first), published after the draw.
CREATE TABLE event_draw (
    event_id   bigint PRIMARY KEY REFERENCES event (id) ON DELETE CASCADE,
    seed       bytea NOT NULL CHECK (length(seed) = 32),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE event_draw;
ALTER TABLE event DROP COLUMN prequeue_opens_at;
