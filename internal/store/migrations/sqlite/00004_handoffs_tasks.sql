-- Handoffs and background tasks (seed 000, "Handoff Protocol" and
-- "Background Task Manager").
--
-- A session's working memory now changes between turns too (background
-- task results merge into it), so each session row carries a version: every
-- write names the version it read and bumps it, and a write that finds
-- another version rolls back and its work is done again on the fresh row.
--
-- A session hands off at most once: its exit transition fires once, and
-- the handoff row's id is derived from the turn that fired it.

-- +goose Up
ALTER TABLE elicitation_sessions ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX eng_handoffs_source_once ON eng_handoffs (tenant_id, source_session_id);
CREATE INDEX eng_handoffs_tenant_target ON eng_handoffs (tenant_id, target_session_id);
