-- Tenants, their API tokens, and the inbox/outbox that make event handling
-- exactly-once in effect (see internal/store and ARCHITECTURE.md, Delivery).

-- +goose Up
-- A tenant row is its own tenant: id is the tenant_id of everything it owns.
CREATE TABLE tenants (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

-- token_hash is the SHA-256 (hex) of the secret; the secret itself is shown
-- once, at creation, and never stored.
CREATE TABLE api_tokens (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id),
    name       TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NULL,
    revoked_at TIMESTAMPTZ NULL
);
CREATE INDEX api_tokens_tenant ON api_tokens (tenant_id, created_at);

-- One row per (consumer, event) handled; a redelivered event finds its row.
CREATE TABLE inbox (
    consumer   TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    tenant_id  TEXT NOT NULL,
    handled_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (consumer, event_id)
);
CREATE INDEX inbox_handled_at ON inbox (handled_at);

-- Events written in a handler's transaction, published later by the relay.
CREATE TABLE outbox (
    id         BIGSERIAL PRIMARY KEY,
    tenant_id  TEXT NOT NULL,
    event_id   TEXT NOT NULL UNIQUE,
    subject    TEXT NOT NULL,
    header     JSONB NOT NULL,
    data       BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    sent_at    TIMESTAMPTZ NULL
);
CREATE INDEX outbox_unsent ON outbox (id) WHERE sent_at IS NULL;
CREATE INDEX outbox_sent_at ON outbox (sent_at) WHERE sent_at IS NOT NULL;
