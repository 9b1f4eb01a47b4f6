package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
)

// Result is an agent's answer to one dispatch, as received.
type Result struct {
	TenantID   string
	DispatchID string
	RunID      string
	// EventID is the id of the task.completed or task.failed event.
	EventID string
	OK      bool
	// JSON is the result as the dispatcher encodes it.
	JSON       []byte
	ReceivedAt time.Time
}

// Results keeps the agent results the JetStream dispatcher receives, so one
// that arrived before an orchestrator died is found after its restart.
type Results struct{ db store.DB }

// NewResults returns the result table of db.
func NewResults(db store.DB) *Results { return &Results{db: db} }

// Save records a result; a second result for the same dispatch (a
// redelivery, or a late duplicate) keeps the first. It reports whether this
// one was new.
func (r *Results) Save(ctx context.Context, res Result) (bool, error) {
	if res.TenantID == "" || res.DispatchID == "" || res.RunID == "" || res.EventID == "" {
		return false, errors.New("sqlstore: a result needs tenant, dispatch, run and event ids")
	}
	n, err := r.db.Exec(ctx, `INSERT INTO workflow_task_results (tenant_id, dispatch_id, run_id, event_id, ok, result_json, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant_id, dispatch_id) DO NOTHING`,
		res.TenantID, res.DispatchID, res.RunID, res.EventID, res.OK, string(res.JSON), res.ReceivedAt.UTC())
	if err != nil {
		return false, fmt.Errorf("sqlstore: save result of %s: %w", res.DispatchID, err)
	}
	return n == 1, nil
}

// SaveAll records several results in one statement (a group commit of the
// answers that arrived together) and reports which were new.
func (r *Results) SaveAll(ctx context.Context, results []Result) ([]bool, error) {
	fresh := make([]bool, len(results))
	for start := 0; start < len(results); start += maxRowsPerInsert {
		batch := results[start:min(len(results), start+maxRowsPerInsert)]
		var b strings.Builder
		b.WriteString(`INSERT INTO workflow_task_results (tenant_id, dispatch_id, run_id, event_id, ok, result_json, received_at) VALUES `)
		args := make([]any, 0, 7*len(batch))
		for i, res := range batch {
			if res.TenantID == "" || res.DispatchID == "" || res.RunID == "" || res.EventID == "" {
				return nil, errors.New("sqlstore: a result needs tenant, dispatch, run and event ids")
			}
			if i > 0 {
				b.WriteString(", ")
			}
			p := 1 + 7*i
			fmt.Fprintf(&b, "($%d, $%d, $%d, $%d, $%d, $%d, $%d)", p, p+1, p+2, p+3, p+4, p+5, p+6)
			args = append(args, res.TenantID, res.DispatchID, res.RunID, res.EventID, res.OK, string(res.JSON), res.ReceivedAt.UTC())
		}
		b.WriteString(` ON CONFLICT (tenant_id, dispatch_id) DO NOTHING RETURNING tenant_id, dispatch_id`)
		rows, err := r.db.Query(ctx, b.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: save results: %w", err)
		}
		inserted := map[[2]string]bool{}
		for rows.Next() {
			var k [2]string
			if err := rows.Scan(&k[0], &k[1]); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlstore: save results: %w", err)
			}
			inserted[k] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("sqlstore: save results: %w", err)
		}
		for i, res := range batch {
			k := [2]string{res.TenantID, res.DispatchID}
			fresh[start+i] = inserted[k]
			delete(inserted, k) // the same dispatch twice in one batch: the first is new
		}
	}
	return fresh, nil
}

// Load returns the result of a dispatch, or an error wrapping
// store.ErrNotFound when none has arrived.
func (r *Results) Load(ctx context.Context, tenantID, dispatchID string) (Result, error) {
	res := Result{TenantID: tenantID, DispatchID: dispatchID}
	var raw string
	err := r.db.QueryRow(ctx, `SELECT run_id, event_id, ok, result_json, received_at FROM workflow_task_results
		WHERE tenant_id = $1 AND dispatch_id = $2`, tenantID, dispatchID).Scan(&res.RunID, &res.EventID, &res.OK, &raw, &res.ReceivedAt)
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, fmt.Errorf("result of %s: %w", dispatchID, store.ErrNotFound)
	}
	if err != nil {
		return Result{}, fmt.Errorf("sqlstore: load result of %s: %w", dispatchID, err)
	}
	res.JSON = []byte(raw)
	return res, nil
}

// PruneRun deletes the results of a finished run.
func (r *Results) PruneRun(ctx context.Context, tenantID, runID string) error {
	if _, err := r.db.Exec(ctx, `DELETE FROM workflow_task_results WHERE tenant_id = $1 AND run_id = $2`, tenantID, runID); err != nil {
		return fmt.Errorf("sqlstore: prune results of run %s: %w", runID, err)
	}
	return nil
}

// PruneSettled deletes the results received before a time whose run is not
// running (finished, or gone), and returns how many went: the answers that
// came after their run's own prune (a timed-out attempt's, a duplicate's),
// which PruneRun, at the run's end, could not see.
func (r *Results) PruneSettled(ctx context.Context, before time.Time) (int64, error) {
	n, err := r.db.Exec(ctx, `DELETE FROM workflow_task_results WHERE received_at < $1 AND NOT EXISTS (
		SELECT 1 FROM workflow_runs WHERE workflow_runs.tenant_id = workflow_task_results.tenant_id
			AND workflow_runs.id = workflow_task_results.run_id AND workflow_runs.status = $2)`,
		before.UTC(), string(engine.RunRunning))
	if err != nil {
		return 0, fmt.Errorf("sqlstore: prune settled results: %w", err)
	}
	return n, nil
}
