-- +goose Up
CREATE TABLE venue (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- A venue's seat map. The label is section-row-number and unique per venue.
CREATE TABLE venue_seat (
    venue_id  bigint NOT NULL REFERENCES venue (id) ON DELETE CASCADE,
    label     text NOT NULL CHECK (label = section || '-' || row_label || '-' || number),
    section   text NOT NULL CHECK (length(section) BETWEEN 1 AND 40),
    row_label text NOT NULL CHECK (row_label ~ '^[1-9][0-9]{0,3}$'),
    number    text NOT NULL CHECK (number ~ '^[1-9][0-9]{0,3}$'),
    grade     text NOT NULL CHECK (grade ~ '^[A-Za-z0-9]{1,8}$'),
    x         double precision NOT NULL,
    y         double precision NOT NULL,
    PRIMARY KEY (venue_id, label)
);

CREATE TABLE event (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    venue_id          bigint NOT NULL REFERENCES venue (id) ON DELETE RESTRICT,
    title             text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    description       text NOT NULL DEFAULT '' CHECK (length(description) <= 5000),
    time_zone         text NOT NULL DEFAULT 'Asia/Seoul',
    starts_at         timestamptz NOT NULL,
    queue_opens_at    timestamptz NOT NULL,
    sale_ends_at      timestamptz NOT NULL,
    currency          text NOT NULL DEFAULT 'KRW' CHECK (currency ~ '^[A-Z]{3}$'),
    max_per_account   integer NOT NULL DEFAULT 5 CHECK (max_per_account BETWEEN 1 AND 20),
    hold_ttl_seconds  integer NOT NULL DEFAULT 300 CHECK (hold_ttl_seconds BETWEEN 1 AND 3600),
    token_ttl_seconds integer NOT NULL DEFAULT 600 CHECK (token_ttl_seconds BETWEEN 1 AND 7200),
    admission_rate    integer NOT NULL DEFAULT 100 CHECK (admission_rate BETWEEN 1 AND 100000),
    max_admitted      integer CHECK (max_admitted IS NULL OR max_admitted > 0),
    admission_paused  boolean NOT NULL DEFAULT false,
    status            text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'on_sale', 'closed')),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CHECK (queue_opens_at < sale_ends_at)
);
CREATE INDEX event_venue_id ON event (venue_id);

CREATE TABLE grade (
    event_id bigint NOT NULL REFERENCES event (id) ON DELETE CASCADE,
    code     text NOT NULL CHECK (code ~ '^[A-Za-z0-9]{1,8}$'),
    name     text NOT NULL CHECK (length(name) BETWEEN 1 AND 60),
    price    bigint NOT NULL CHECK (price > 0),
    color    text NOT NULL DEFAULT '#888888' CHECK (color ~ '^#[0-9a-fA-F]{6}$'),
    PRIMARY KEY (event_id, code)
);

-- The event's own seats, copied from the venue when the event is created.
-- Every seat has a grade of its event (the foreign key).
CREATE TABLE event_seat (
    event_id  bigint NOT NULL REFERENCES event (id) ON DELETE CASCADE,
    label     text NOT NULL CHECK (label = section || '-' || row_label || '-' || number),
    section   text NOT NULL,
    row_label text NOT NULL,
    number    text NOT NULL,
    grade     text NOT NULL,
    x         double precision NOT NULL,
    y         double precision NOT NULL,
    PRIMARY KEY (event_id, label),
    FOREIGN KEY (event_id, grade) REFERENCES grade (event_id, code) ON UPDATE CASCADE
);

-- +goose Down
DROP TABLE event_seat;
DROP TABLE grade;
DROP TABLE event;
DROP TABLE venue_seat;
DROP TABLE venue;
