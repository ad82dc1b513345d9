-- +goose Up
-- Every sentence is in Korean and English (views/locales). An account keeps
-- the language it chose with the language switch ('' until it chooses).
ALTER TABLE account ADD COLUMN lang text NOT NULL DEFAULT '' CHECK (lang ~ '^([a-z]{2,3})?$');

-- An event's title and description and a grade's name are texts per
-- language: a JSON object keyed by base language tag, {"ko": "…", "en": "…"}.
-- Until now they were written in English. Lengths are checked per language
-- by boxoffice.EventInput.Validate.
ALTER TABLE event DROP CONSTRAINT event_title_check;
ALTER TABLE event DROP CONSTRAINT event_description_check;
ALTER TABLE event ALTER COLUMN description DROP DEFAULT;
ALTER TABLE event ALTER COLUMN title TYPE jsonb USING jsonb_build_object('en', title);
ALTER TABLE event ALTER COLUMN description TYPE jsonb
    USING CASE WHEN description = '' THEN '{}'::jsonb ELSE jsonb_build_object('en', description) END;
ALTER TABLE event ALTER COLUMN description SET DEFAULT '{}';
ALTER TABLE event ADD CONSTRAINT event_title_check CHECK (jsonb_typeof(title) = 'object' AND title <> '{}');
ALTER TABLE event ADD CONSTRAINT event_description_check CHECK (jsonb_typeof(description) = 'object');

ALTER TABLE grade DROP CONSTRAINT grade_name_check;
ALTER TABLE grade ALTER COLUMN name TYPE jsonb USING jsonb_build_object('en', name);
ALTER TABLE grade ADD CONSTRAINT grade_name_check CHECK (jsonb_typeof(name) = 'object' AND name <> '{}');

-- +goose Down
ALTER TABLE grade DROP CONSTRAINT grade_name_check;
ALTER TABLE grade ALTER COLUMN name TYPE text USING coalesce(name->>'en', name->>'ko', '?');
ALTER TABLE event DROP CONSTRAINT event_description_check;
ALTER TABLE event DROP CONSTRAINT event_title_check;
ALTER TABLE event ALTER COLUMN description DROP DEFAULT;
ALTER TABLE event ALTER COLUMN description TYPE text USING coalesce(description->>'en', description->>'ko', '');
ALTER TABLE event ALTER COLUMN description SET DEFAULT '';
ALTER TABLE event ALTER COLUMN title TYPE text USING coalesce(title->>'en', title->>'ko', '?');
ALTER TABLE account DROP COLUMN lang;
