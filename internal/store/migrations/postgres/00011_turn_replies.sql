-- A turn's reply gets a table of its own. The runner used to write it into
-- the row the gateway had inserted, an update that grows a row of a few
-- hundred bytes to about 2 kB (reply and sidebar): a new version of the row
-- and of its index entries, and a dead one to vacuum. A reply is now an
-- insert into turn_replies. (On SQLite, where the growing row cost 6-8 pages
-- of the write-ahead log a turn, this migration also drops the extraction
-- log's indexes by field and by project, which no query reads; PostgreSQL
-- keeps them for ad-hoc audit queries.)

-- +goose Up
CREATE TABLE turn_replies (
    turn_id      TEXT PRIMARY KEY NOT NULL REFERENCES turns (id),
    turn_number  INTEGER NOT NULL,
    reply        TEXT NOT NULL,
    phase        TEXT NOT NULL,
    completeness DOUBLE PRECISION NOT NULL,
    sidebar_json JSONB NULL,
    degraded     BOOLEAN NOT NULL DEFAULT false,
    responded_at TIMESTAMPTZ NOT NULL
);
INSERT INTO turn_replies (turn_id, turn_number, reply, phase, completeness, sidebar_json, degraded, responded_at)
    SELECT id, coalesce(turn_number, 0), coalesce(reply, ''), coalesce(phase, ''), coalesce(completeness, 0),
        sidebar_json, degraded, responded_at
    FROM turns WHERE responded_at IS NOT NULL;
ALTER TABLE turns DROP COLUMN turn_number, DROP COLUMN reply, DROP COLUMN phase, DROP COLUMN completeness,
    DROP COLUMN sidebar_json, DROP COLUMN degraded, DROP COLUMN responded_at;
