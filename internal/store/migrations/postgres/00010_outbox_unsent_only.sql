-- The outbox holds only what is still to publish: the relay deletes what it
-- published (store.MarkSent), so every row but a handful is unsent, and the
-- primary key, in id order, lists them. Its partial index of unsent ids was
-- a second copy, written on every enqueue and every mark. (On SQLite this
-- migration also makes the inbox a WITHOUT ROWID table; PostgreSQL's inbox
-- is a heap and its key, as before.)

-- +goose Up
DROP INDEX IF EXISTS outbox_unsent;
