-- The relational part of graph memory (seed 001, services/memory): the
-- governance tokens that authorize writes to a tenant's global memory scope,
-- and the memory writes waiting for the graph to come back. Every row
-- carries tenant_id. Times are TIMESTAMP so the driver reads them back as
-- time.Time; the PostgreSQL file has the same tables.

-- +goose Up
-- token_hash is the SHA-256 (hex) of the token; the token itself is shown
-- once, when issued, and never stored. Governance tokens always expire.
CREATE TABLE memory_governance_tokens (
    tenant_id  TEXT NOT NULL REFERENCES tenants (id),
    id         TEXT NOT NULL,
    name       TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    revoked_at TIMESTAMP NULL,
    PRIMARY KEY (tenant_id, id)
);

-- A write answered pending_retry, kept until it settles so that no restart
-- loses it. pending is the write engine's Pending as JSON (no credential:
-- the governance gate passed before the write was queued). owner and
-- lease_until say which process retries it until when; a row whose lease
-- ended (its process died) is taken over by another.
CREATE TABLE memory_pending_writes (
    tenant_id   TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    request_id  TEXT NOT NULL,
    pending     TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    next_at     TIMESTAMP NOT NULL,
    owner       TEXT NULL,
    lease_until TIMESTAMP NULL,
    created_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, node_id)
);
CREATE INDEX memory_pending_writes_owner ON memory_pending_writes (owner, next_at);
CREATE INDEX memory_pending_writes_lease ON memory_pending_writes (lease_until);
