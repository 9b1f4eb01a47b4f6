package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/orchestrator/engine"
)

// RunRef names a run.
type RunRef struct {
	TenantID string
	RunID    string
}

// Leases share runs between orchestrator replicas. A replica that carries a
// run holds its lease (owner, lease_until) and renews it; when it dies the
// lease expires and another replica claims the run and resumes it. Only
// runs that have held a lease are taken over: a run started by praetor
// workflow run has none and stays the CLI's to resume.
//
// Two replicas that both believe they hold a run cannot corrupt it: every
// change checks the stored sequence number (Store.Save), so the second
// writer's change fails and its executor stops.
type Leases struct{ db store.DB }

// NewLeases returns the leases of db's runs.
func NewLeases(db store.DB) *Leases { return &Leases{db: db} }

// Renew extends to until the leases owner holds of the running runs refs,
// the runs it carries on (not every run it holds: one it stopped carrying,
// after an error, must expire for a replica to take it over), and returns
// how many it extended.
func (l *Leases) Renew(ctx context.Context, owner string, until time.Time, refs []RunRef) (int64, error) {
	var total int64
	for len(refs) > 0 {
		batch := refs[:min(len(refs), renewBatch)]
		refs = refs[len(batch):]
		args := []any{owner, until.UTC(), string(engine.RunRunning)}
		var in strings.Builder
		for i, r := range batch {
			if i > 0 {
				in.WriteString(", ")
			}
			fmt.Fprintf(&in, "($%d, $%d)", len(args)+1, len(args)+2)
			args = append(args, r.TenantID, r.RunID)
		}
		n, err := l.db.Exec(ctx, `UPDATE workflow_runs SET lease_until = $2 WHERE owner = $1 AND status = $3 AND lease_until IS NOT NULL
			AND (tenant_id, id) IN (`+in.String()+`)`, args...)
		if err != nil {
			return total, fmt.Errorf("sqlstore: renew leases of %s: %w", owner, err)
		}
		total += n
	}
	return total, nil
}

// renewBatch is how many runs one renewing statement names.
const renewBatch = 200

// Expired lists running runs whose lease ended before now, at most limit.
func (l *Leases) Expired(ctx context.Context, now time.Time, limit int) ([]RunRef, error) {
	rows, err := l.db.Query(ctx, `SELECT tenant_id, id FROM workflow_runs
		WHERE status = $1 AND lease_until IS NOT NULL AND lease_until < $2 ORDER BY lease_until LIMIT $3`,
		string(engine.RunRunning), now.UTC(), max(limit, 1))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: expired leases: %w", err)
	}
	defer rows.Close()
	var out []RunRef
	for rows.Next() {
		var r RunRef
		if err := rows.Scan(&r.TenantID, &r.RunID); err != nil {
			return nil, fmt.Errorf("sqlstore: expired leases: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Claim takes a running run whose lease ended before now; false when
// another replica was first (or the run is no longer running).
func (l *Leases) Claim(ctx context.Context, r RunRef, owner string, now, until time.Time) (bool, error) {
	n, err := l.db.Exec(ctx, `UPDATE workflow_runs SET owner = $3, lease_until = $4
		WHERE tenant_id = $1 AND id = $2 AND status = $5 AND lease_until IS NOT NULL AND lease_until < $6`,
		r.TenantID, r.RunID, owner, until.UTC(), string(engine.RunRunning), now.UTC())
	if err != nil {
		return false, fmt.Errorf("sqlstore: claim run %s: %w", r.RunID, err)
	}
	return n == 1, nil
}

// Release ends owner's lease of a run at now, so another replica may take
// it over at once (a run stopped by a drain).
func (l *Leases) Release(ctx context.Context, r RunRef, owner string, now time.Time) error {
	_, err := l.db.Exec(ctx, `UPDATE workflow_runs SET lease_until = $4 WHERE tenant_id = $1 AND id = $2 AND owner = $3 AND lease_until IS NOT NULL`,
		r.TenantID, r.RunID, owner, now.UTC())
	if err != nil {
		return fmt.Errorf("sqlstore: release run %s: %w", r.RunID, err)
	}
	return nil
}

// Holder is who holds a run's lease: Owner until Until. A run that never
// held one (praetor workflow run's) has a zero Holder.
type Holder struct {
	Owner string
	Until time.Time
}

// Held reports whether the lease is held at now.
func (h Holder) Held(now time.Time) bool { return !h.Until.IsZero() && h.Until.After(now) }

// Holder returns the lease of one of the store's runs, or an error wrapping
// store.ErrNotFound.
func (s *Store) Holder(ctx context.Context, runID string) (Holder, error) {
	var owner *string
	var until *time.Time
	err := s.cfg.DB.QueryRow(ctx, `SELECT owner, lease_until FROM workflow_runs WHERE tenant_id = $1 AND id = $2`,
		s.cfg.TenantID, runID).Scan(&owner, &until)
	if err != nil {
		return Holder{}, fmt.Errorf("sqlstore: lease of run %s of tenant %s: %w", runID, s.cfg.TenantID, err)
	}
	var h Holder
	if owner != nil {
		h.Owner = *owner
	}
	if until != nil {
		h.Until = until.UTC()
	}
	return h, nil
}
