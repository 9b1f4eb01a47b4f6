-- On SQLite this migration rebuilds the outbox without AUTOINCREMENT.
-- PostgreSQL's ids come from a sequence, which costs nothing of the kind;
-- this file keeps the two dialects at the same version.

-- +goose Up
SELECT 1;
