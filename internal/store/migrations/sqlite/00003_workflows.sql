-- Workflow runs of the orchestrator (seeds 002 and 004): each run's state
-- snapshot, its event log, the outputs of its tasks, and the agent results
-- received for its dispatches. Every row carries tenant_id.
--
-- Times are TIMESTAMP so the driver reads them back as time.Time; JSON is
-- TEXT, kept byte for byte (states and events are hashed). The PostgreSQL
-- file has the same tables.

-- +goose Up
-- state_json is the snapshot of the run's state after event snapshot_seq;
-- the events after it (up to seq) are folded onto it when the run is loaded.
-- source says where the run's definition came from (workflow and registry
-- files), so it can be loaded again to resume the run; owner and
-- lease_until say which orchestrator carries the run on, and until when, so
-- another takes over a run whose orchestrator died.
CREATE TABLE workflow_runs (
    tenant_id    TEXT NOT NULL,
    id           TEXT NOT NULL,
    workflow     TEXT NOT NULL,
    project      TEXT NOT NULL,
    status       TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    snapshot_seq INTEGER NOT NULL,
    state_json   TEXT NOT NULL,
    state_hash   TEXT NOT NULL,
    error        TEXT NULL,
    definition   TEXT NULL,
    source       TEXT NULL,
    owner        TEXT NULL,
    lease_until  TIMESTAMP NULL,
    started_at   TIMESTAMP NOT NULL,
    finished_at  TIMESTAMP NULL,
    updated_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX workflow_runs_started ON workflow_runs (tenant_id, started_at);
CREATE INDEX workflow_runs_running ON workflow_runs (status, lease_until);

-- One row per engine event; a run's rows have consecutive seq from 1.
CREATE TABLE workflow_events (
    tenant_id  TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    type       TEXT NOT NULL,
    task_id    TEXT NULL,
    event_json TEXT NOT NULL,
    at         TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, run_id, seq)
);

-- The outputs of tasks, by path (run/task/name), checked against sha256
-- when read.
CREATE TABLE workflow_artifacts (
    tenant_id  TEXT NOT NULL,
    path       TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    task_id    TEXT NOT NULL,
    name       TEXT NOT NULL,
    sha256     TEXT NOT NULL,
    size       INTEGER NOT NULL,
    content    BLOB NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, path)
);
CREATE INDEX workflow_artifacts_run ON workflow_artifacts (tenant_id, run_id);

-- Agent results (task.completed / task.failed) by dispatch id, kept so an
-- orchestrator that restarts finds a result that arrived before it died
-- instead of dispatching the attempt again.
CREATE TABLE workflow_task_results (
    tenant_id   TEXT NOT NULL,
    dispatch_id TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    ok          BOOLEAN NOT NULL,
    result_json TEXT NOT NULL,
    received_at TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, dispatch_id)
);
CREATE INDEX workflow_task_results_run ON workflow_task_results (tenant_id, run_id);
