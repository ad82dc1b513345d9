-- +goose Up
CREATE TABLE account (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email         text NOT NULL UNIQUE CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254),
    name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    password_hash text NOT NULL,
    role          text NOT NULL DEFAULT 'fan' CHECK (role IN ('fan', 'admin')),
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE account;
