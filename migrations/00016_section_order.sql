-- +goose Up
-- A venue's best-first order per section (best available, issue 18): the
-- section's rank (NULL: none), the order of its rows and where in a row to
-- start. A section without a row here has the default order (nearest the
-- stage). best_order_version grows with every change, so that each
-- instance's copy of an event's runs (store/holds_best.go) sees it.
ALTER TABLE venue ADD COLUMN best_order_version bigint NOT NULL DEFAULT 0;
CREATE TABLE venue_section_order (
    venue_id   bigint NOT NULL REFERENCES venue (id) ON DELETE CASCADE,
    section    text NOT NULL CHECK (length(section) BETWEEN 1 AND 40),
    rank       integer CHECK (rank BETWEEN 1 AND 999),
    row_order  text NOT NULL DEFAULT 'front' CHECK (row_order IN ('front', 'ascending', 'descending')),
    seat_order text NOT NULL DEFAULT 'stage' CHECK (seat_order IN ('stage', 'middle', 'low', 'high')),
    PRIMARY KEY (venue_id, section)
);

-- +goose Down
DROP TABLE venue_section_order;
ALTER TABLE venue DROP COLUMN best_order_version;
