-- +goose Up
-- The cap on live entry tokens is the number of shoppers at once: a place
-- frees when its fan's order is confirmed, when the fan leaves the sale or
-- logs out, and when the token expires.
ALTER TABLE event RENAME COLUMN max_admitted TO max_shoppers;

-- +goose Down
ALTER TABLE event RENAME COLUMN max_shoppers TO max_admitted;
