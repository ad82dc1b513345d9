-- +goose Up
-- The proof of work asked of a fan who joins an event's line (README "Bots
-- slowed at the door"): the ALTCHA challenge's maxnumber, 0 for none.
ALTER TABLE event ADD COLUMN pow_difficulty integer NOT NULL DEFAULT 0
    CHECK (pow_difficulty BETWEEN 0 AND 10000000);

-- +goose Down
ALTER TABLE event DROP COLUMN pow_difficulty;
