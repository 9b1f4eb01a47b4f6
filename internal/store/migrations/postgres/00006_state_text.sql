-- Working memories and what is built from them are stored as JSON, not
-- JSONB. JSONB reorders the keys of objects and rewrites spacing, so a
-- memory read back differed in bytes from the one written: values kept raw
-- in it (extracted fields, task results, the inbound handoff) then reached
-- the prompts of a live turn unlike those of a replay, which folds the
-- events as they were sent. JSON keeps the text as written (and is only
-- validated on write, not parsed into a tree).

-- +goose Up
ALTER TABLE elicitation_sessions ALTER COLUMN state_json TYPE JSON USING state_json::text::json;
ALTER TABLE eng_extraction_state ALTER COLUMN extraction_json TYPE JSON USING extraction_json::text::json;
ALTER TABLE eng_state_checkpoints ALTER COLUMN state_snapshot TYPE JSON USING state_snapshot::text::json;
ALTER TABLE eng_handoffs ALTER COLUMN handoff_payload TYPE JSON USING handoff_payload::text::json;

