-- The outbox holds only what is still to publish: the relay deletes what it
-- published (store.MarkSent), so every row but a handful is unsent and the
-- table itself, in id order, is the list of them. Its partial index of
-- unsent ids was a second copy, written on every enqueue and every mark: a
-- page of the write-ahead log each. (outbox_sent_at stays, for the few rows
-- marked sent rather than deleted; outbox_unsent_subject stays, for a
-- subject's unsent events.)
--
-- The inbox becomes a WITHOUT ROWID table: its rows lived in one b-tree and
-- their primary key in another, two pages written for every event handled;
-- now the key is the table.

-- +goose Up
DROP INDEX IF EXISTS outbox_unsent;

CREATE TABLE inbox_clustered (
    consumer   TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    tenant_id  TEXT NOT NULL,
    handled_at TIMESTAMP NOT NULL,
    PRIMARY KEY (consumer, event_id)
) WITHOUT ROWID;
INSERT INTO inbox_clustered (consumer, event_id, tenant_id, handled_at)
    SELECT consumer, event_id, tenant_id, handled_at FROM inbox;
DROP TABLE inbox;
ALTER TABLE inbox_clustered RENAME TO inbox;
