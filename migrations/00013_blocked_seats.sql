-- +goose Up
-- Seats of an event that an admin held back (production, cameras, guests):
-- they cannot be held or sold, show as unavailable, and count as neither
-- free nor sold. PostgreSQL is their truth; Redis keeps a copy (blocked:{e})
-- loaded with the sold-seat copy (store.Holds).
CREATE TABLE blocked_seat (
    event_id   bigint NOT NULL,
    seat_label text NOT NULL,
    blocked_by bigint NOT NULL REFERENCES account (id),
    blocked_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, seat_label),
    FOREIGN KEY (event_id, seat_label) REFERENCES event_seat (event_id, label)
);

-- +goose Down
DROP TABLE blocked_seat;
