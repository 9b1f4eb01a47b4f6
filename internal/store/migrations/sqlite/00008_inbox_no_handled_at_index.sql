-- The inbox's index of handling times served store.PruneInbox only, which
-- nothing runs on a schedule: an inbox row has to outlive every redelivery
-- and every redrive of its event, and the streams, the dead-letter stream
-- among them, keep events for ever by default. Every handled event paid for
-- the index all the same: in SQLite a page of the write-ahead log, two a
-- turn on the turn path. PruneInbox, an operator's tool, now reads the
-- table.

-- +goose Up
DROP INDEX IF EXISTS inbox_handled_at;
