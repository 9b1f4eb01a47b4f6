-- On PostgreSQL this migration makes working memories JSON instead of JSONB,
-- which keeps their text as written. SQLite keeps text as written already;
-- this file keeps the two dialects at the same version.

-- +goose Up
SELECT 1;

