-- Tenants, their API tokens, and the inbox/outbox that make event handling
-- exactly-once in effect (see internal/store and ARCHITECTURE.md, Delivery).
-- Times are TIMESTAMP so the driver reads them back as time.Time.

-- +goose Up
-- A tenant row is its own tenant: id is the tenant_id of everything it owns.
CREATE TABLE tenants (
    id         TEXT PRIMARY KEY NOT NULL,
    name       TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);

-- token_hash is the SHA-256 (hex) of the secret; the secret itself is shown
-- once, at creation, and never stored.
CREATE TABLE api_tokens (
    id         TEXT PRIMARY KEY NOT NULL,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id),
    name       TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NULL,
    revoked_at TIMESTAMP NULL
);
CREATE INDEX api_tokens_tenant ON api_tokens (tenant_id, created_at);

-- One row per (consumer, event) handled; a redelivered event finds its row.
CREATE TABLE inbox (
    consumer   TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    tenant_id  TEXT NOT NULL,
    handled_at TIMESTAMP NOT NULL,
    PRIMARY KEY (consumer, event_id)
);
CREATE INDEX inbox_handled_at ON inbox (handled_at);

-- Events written in a handler's transaction, published later by the relay.
-- AUTOINCREMENT: ids are never reused, so a relay never mistakes a new row
-- for one it already handled after pruning.
CREATE TABLE outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id  TEXT NOT NULL,
    event_id   TEXT NOT NULL UNIQUE,
    subject    TEXT NOT NULL,
    header     TEXT NOT NULL,
    data       BLOB NOT NULL,
    created_at TIMESTAMP NOT NULL,
    sent_at    TIMESTAMP NULL
);
CREATE INDEX outbox_unsent ON outbox (id) WHERE sent_at IS NULL;
CREATE INDEX outbox_sent_at ON outbox (sent_at) WHERE sent_at IS NOT NULL;
