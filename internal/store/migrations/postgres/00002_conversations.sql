-- Conversations (seed 000, "Database Schema"): sessions with their working
-- memory, the turns the gateway receives and the runner answers, the
-- extractor's own extraction state, the extraction audit log, state
-- checkpoints, and engine handoffs. Every row carries tenant_id.

-- +goose Up
-- state_json holds the session's working memory (engine id and version,
-- extraction state, handoff ids); phase, completeness and turn_count are
-- copies kept for listing without decoding it.
CREATE TABLE elicitation_sessions (
    id                  TEXT PRIMARY KEY NOT NULL,
    tenant_id          TEXT NOT NULL,
    project_id         TEXT NOT NULL,
    engine_id          TEXT NOT NULL,
    engine_version     TEXT NOT NULL,
    status             TEXT NOT NULL,
    phase              TEXT NOT NULL,
    completeness        DOUBLE PRECISION NOT NULL DEFAULT 0,
    turn_count          INTEGER NOT NULL DEFAULT 0,
    state_json          JSONB NOT NULL,
    state_hash         TEXT NOT NULL DEFAULT '',
    sidebar_json        JSONB NULL,
    inbound_handoff_id TEXT NULL,
    outbound_handoff_id TEXT NULL,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL
);
CREATE INDEX elicitation_sessions_tenant ON elicitation_sessions (tenant_id, created_at);
CREATE INDEX elicitation_sessions_project ON elicitation_sessions (tenant_id, project_id);

-- One row per user message: written by the gateway when it arrives, completed
-- by the runner with the reply.
CREATE TABLE turns (
    id           TEXT PRIMARY KEY NOT NULL,
    tenant_id   TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    message     TEXT NOT NULL,
    turn_number  INTEGER NULL,
    reply       TEXT NULL,
    phase       TEXT NULL,
    completeness DOUBLE PRECISION NULL,
    sidebar_json JSONB NULL,
    degraded     BOOLEAN NOT NULL DEFAULT false,
    received_at  TIMESTAMPTZ NOT NULL,
    responded_at TIMESTAMPTZ NULL
);
CREATE INDEX turns_session ON turns (session_id, received_at);

-- The extractor's state per session: the turn count it has reached and the
-- extraction after that turn.
CREATE TABLE eng_extraction_state (
    session_id      TEXT PRIMARY KEY NOT NULL,
    tenant_id      TEXT NOT NULL,
    turn_number     INTEGER NOT NULL,
    extraction_json JSONB NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);

-- Every extraction, as new, update or supersede; superseded_by points at the
-- later row that replaced this value.
CREATE TABLE eng_extractions_log (
    id              TEXT PRIMARY KEY NOT NULL,
    tenant_id      TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    project_id     TEXT NOT NULL,
    message_id     TEXT NOT NULL,
    engine_id      TEXT NOT NULL,
    field_path     TEXT NOT NULL,
    extracted_value JSONB NULL,
    confidence      DOUBLE PRECISION NOT NULL,
    extraction_type TEXT NOT NULL CHECK (extraction_type IN ('new', 'update', 'supersede')),
    reasoning      TEXT NULL,
    superseded_by  TEXT NULL REFERENCES eng_extractions_log (id),
    turn_number     INTEGER NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX eng_extractions_session ON eng_extractions_log (session_id, turn_number);
CREATE INDEX eng_extractions_project ON eng_extractions_log (project_id);
CREATE INDEX eng_extractions_field ON eng_extractions_log (session_id, field_path);

CREATE TABLE eng_state_checkpoints (
    id                           TEXT PRIMARY KEY NOT NULL,
    tenant_id                   TEXT NOT NULL,
    session_id                  TEXT NOT NULL,
    at_turn                      INTEGER NOT NULL,
    reason                      TEXT NOT NULL,
    state_snapshot               JSONB NOT NULL,
    context_tokens_at_checkpoint INTEGER NULL,
    created_at                   TIMESTAMPTZ NOT NULL
);
CREATE INDEX eng_checkpoints_session ON eng_state_checkpoints (session_id, at_turn);

CREATE TABLE eng_handoffs (
    id                  TEXT PRIMARY KEY NOT NULL,
    tenant_id          TEXT NOT NULL,
    project_id         TEXT NOT NULL,
    source_engine_id   TEXT NOT NULL,
    source_session_id  TEXT NOT NULL,
    target_engine_id   TEXT NOT NULL,
    target_session_id  TEXT NULL,
    handoff_payload     JSONB NOT NULL,
    verified            BOOLEAN NOT NULL DEFAULT false,
    verification_result JSONB NULL,
    transition_reason  TEXT NULL,
    created_at          TIMESTAMPTZ NOT NULL
);
CREATE INDEX eng_handoffs_project ON eng_handoffs (tenant_id, project_id);
CREATE INDEX eng_handoffs_source_session ON eng_handoffs (source_session_id);
CREATE INDEX eng_handoffs_target_session ON eng_handoffs (target_session_id);
