-- A turn's reply gets a table of its own, and the extraction log loses the two
-- indexes that no query reads.
--
-- The runner used to write a turn's reply into the row the gateway had
-- inserted, so the row grew from a message (a few hundred bytes) to a message,
-- a reply and a sidebar (about 2 kB). To make room SQLite moved cells between
-- up to three sibling leaves: 6-8 pages of the write-ahead log a turn, a
-- fifth of all it wrote. A reply is now an insert into turn_replies. That
-- insert lands near the end of its b-tree, as the turn's own does: turn ids
-- are UUIDv7, and turns are answered in about the order they came.
--
-- eng_extractions_field and eng_extractions_project cost a page each for
-- every extraction, and praetor reads the log only by session
-- (eng_extractions_session) and by id. This store is the embedded one, with
-- a single node's sessions; PostgreSQL keeps both indexes for ad-hoc audit
-- queries over many.

-- +goose Up
DROP INDEX IF EXISTS eng_extractions_field;
DROP INDEX IF EXISTS eng_extractions_project;

CREATE TABLE turns_received (
    id          TEXT PRIMARY KEY NOT NULL,
    tenant_id   TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    message     TEXT NOT NULL,
    received_at TIMESTAMP NOT NULL
);
INSERT INTO turns_received (id, tenant_id, session_id, message, received_at)
    SELECT id, tenant_id, session_id, message, received_at FROM turns;

-- It references the new table, which takes the old one's name below.
CREATE TABLE turn_replies (
    turn_id      TEXT PRIMARY KEY NOT NULL REFERENCES turns_received (id),
    turn_number  INTEGER NOT NULL,
    reply        TEXT NOT NULL,
    phase        TEXT NOT NULL,
    completeness REAL NOT NULL,
    sidebar_json TEXT NULL,
    degraded     INTEGER NOT NULL DEFAULT 0,
    responded_at TIMESTAMP NOT NULL
);
INSERT INTO turn_replies (turn_id, turn_number, reply, phase, completeness, sidebar_json, degraded, responded_at)
    SELECT id, coalesce(turn_number, 0), coalesce(reply, ''), coalesce(phase, ''), coalesce(completeness, 0),
        sidebar_json, degraded, responded_at
    FROM turns WHERE responded_at IS NOT NULL;

DROP TABLE turns;
ALTER TABLE turns_received RENAME TO turns;
CREATE INDEX turns_session ON turns (session_id, received_at);
