-- The outbox without AUTOINCREMENT, which wrote sqlite_sequence in every
-- transaction that enqueued: a page of the write-ahead log, three a turn on
-- the turn path. Ids are still never given twice: a new row takes the
-- highest id plus one, and no statement deletes the row with the highest id
-- (store.PruneSent, store.DeleteOutbox). SQLite cannot drop AUTOINCREMENT
-- in place: the table is rebuilt, with its indexes.

-- +goose Up
CREATE TABLE outbox_rebuilt (
    id         INTEGER PRIMARY KEY,
    tenant_id  TEXT NOT NULL,
    event_id   TEXT NOT NULL UNIQUE,
    subject    TEXT NOT NULL,
    header     TEXT NOT NULL,
    data       BLOB NOT NULL,
    created_at TIMESTAMP NOT NULL,
    sent_at    TIMESTAMP NULL
);
INSERT INTO outbox_rebuilt (id, tenant_id, event_id, subject, header, data, created_at, sent_at)
    SELECT id, tenant_id, event_id, subject, header, data, created_at, sent_at FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_rebuilt RENAME TO outbox;
CREATE INDEX outbox_unsent ON outbox (id) WHERE sent_at IS NULL;
CREATE INDEX outbox_sent_at ON outbox (sent_at) WHERE sent_at IS NOT NULL;
CREATE INDEX outbox_unsent_subject ON outbox (subject, id) WHERE sent_at IS NULL;
