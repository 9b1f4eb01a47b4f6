package sqlmemory

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/memory/write"
)

// QueueConfig configures a Queue.
type QueueConfig struct {
	// DB holds memory_pending_writes. Required.
	DB store.DB
	// Owner names this process in the leases it takes. Default: host name,
	// process id and random bytes, unique per Queue.
	Owner string
	// Lease is how long this process holds the rows it lists or puts
	// before another may take them over; every List and Put renews it.
	// Default 2m: well above the write engine's longest wait between two
	// looks at the queue (RetryMaxBackoff plus an attempt), so a live
	// process keeps its rows, and short enough that a dead one's are
	// retried soon.
	Lease time.Duration
	// OnDone, when set, runs in the transaction that removes a settled row,
	// for the settlement to be recorded exactly when the row leaves (the
	// memory service writes memory.written to the outbox there). It runs
	// only when this call removed the row, so a settlement another process
	// already recorded is not recorded twice. Its error rolls the removal
	// back: the write stays pending and is retried (idempotently).
	OnDone func(ctx context.Context, tx store.Querier, p write.Pending, s write.Settlement) error
	// Now is the clock of leases. Default time.Now.
	Now func() time.Time
	// Logger receives rows that cannot be read. Default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with zero fields set to their defaults.
func (c QueueConfig) WithDefaults() QueueConfig {
	if c.Owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		c.Owner = fmt.Sprintf("%s-%d-%s", cmp.Or(host, "praetor"), os.Getpid(), hex.EncodeToString(b[:]))
	}
	c.Lease = cmp.Or(c.Lease, 2*time.Minute)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c QueueConfig) validate() error {
	switch {
	case c.DB == nil:
		return errors.New("sqlmemory: QueueConfig.DB is required")
	case c.Lease < time.Second:
		return fmt.Errorf("sqlmemory: queue lease %s is under 1s", c.Lease)
	}
	return nil
}

// Queue is the write engine's durable Queue: pending writes are rows of
// memory_pending_writes, which every replica of the memory service shares.
//
// A row belongs to the process that last listed or put it, until its lease
// ends. List takes the rows without a live lease and returns this process's
// rows, so replicas retry disjoint sets; a process that stops releases its
// rows (Release), and one that dies leaves them to be taken over when
// their lease ends. Should two processes still retry one write (a lease
// that ran out during a long pass), the write is idempotent and only the
// first to remove the row reports it.
//
// List scans across tenants: the retry loop serves the whole service, as the
// outbox relay does. Every other statement names the row's tenant.
type Queue struct {
	cfg QueueConfig
}

var _ write.Queue = (*Queue)(nil)

// NewQueue returns the durable queue of cfg.DB.
func NewQueue(cfg QueueConfig) (*Queue, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Queue{cfg: cfg}, nil
}

// Owner is the name this queue holds leases under.
func (q *Queue) Owner() string { return q.cfg.Owner }

// Put implements write.Queue. A new pending write (Attempts 0 or 1, from
// the engine's Save) is inserted, held by this process. A later one (a
// retry that failed) only updates the row this process still holds: a row
// that settled meanwhile, or that another process took over, is that
// process's to finish, and is neither brought back nor taken back.
func (q *Queue) Put(ctx context.Context, p write.Pending) error {
	if p.Request.TenantID == "" || p.NodeID == "" {
		return errors.New("sqlmemory: a pending write needs a tenant and a node id")
	}
	if p.Request.GovernanceToken != "" || p.Request.Authorize != nil {
		// The engine strips them; a credential must never reach a table.
		return errors.New("sqlmemory: a pending write must not carry a governance credential")
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("sqlmemory: encode pending write %s: %w", p.NodeID, err)
	}
	now := q.cfg.Now().UTC()
	if p.Attempts > 1 {
		_, err = q.cfg.DB.Exec(ctx, `UPDATE memory_pending_writes SET pending = $3, attempts = $4, next_at = $5, lease_until = $6
			WHERE tenant_id = $1 AND node_id = $2 AND owner = $7`,
			p.Request.TenantID, p.NodeID, string(b), p.Attempts, p.NextAt.UTC(), now.Add(q.cfg.Lease), q.cfg.Owner)
	} else {
		_, err = q.cfg.DB.Exec(ctx, `INSERT INTO memory_pending_writes
			(tenant_id, node_id, request_id, pending, attempts, next_at, owner, lease_until, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (tenant_id, node_id) DO UPDATE SET request_id = excluded.request_id, pending = excluded.pending,
				attempts = excluded.attempts, next_at = excluded.next_at, owner = excluded.owner, lease_until = excluded.lease_until`,
			p.Request.TenantID, p.NodeID, p.Request.RequestID, string(b), p.Attempts, p.NextAt.UTC(), q.cfg.Owner,
			now.Add(q.cfg.Lease), now)
	}
	if err != nil {
		return fmt.Errorf("sqlmemory: keep pending write %s: %w", p.NodeID, err)
	}
	return nil
}

// Done implements write.Queue: it removes the row and, when this call
// removed it, runs OnDone in the same transaction.
func (q *Queue) Done(ctx context.Context, p write.Pending, s write.Settlement) error {
	err := q.cfg.DB.Tx(ctx, func(tx store.Querier) error {
		n, err := tx.Exec(ctx, `DELETE FROM memory_pending_writes WHERE tenant_id = $1 AND node_id = $2`,
			p.Request.TenantID, p.NodeID)
		if err != nil || n == 0 || q.cfg.OnDone == nil {
			return err
		}
		return q.cfg.OnDone(ctx, tx, p, s)
	})
	if err != nil {
		return fmt.Errorf("sqlmemory: settle pending write %s: %w", p.NodeID, err)
	}
	return nil
}

// List implements write.Queue: it takes the rows whose lease ended (or that
// no process holds), renews this process's leases, and returns this
// process's rows, earliest next_at first.
func (q *Queue) List(ctx context.Context) ([]write.Pending, error) {
	var out []write.Pending
	err := q.cfg.DB.Tx(ctx, func(tx store.Querier) error {
		out = out[:0] // Tx may run fn again
		now := q.cfg.Now().UTC()
		if _, err := tx.Exec(ctx, `UPDATE memory_pending_writes SET owner = $1, lease_until = $2
			WHERE owner = $1 OR owner IS NULL OR lease_until IS NULL OR lease_until < $3`,
			q.cfg.Owner, now.Add(q.cfg.Lease), now); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT tenant_id, node_id, pending FROM memory_pending_writes
			WHERE owner = $1 ORDER BY next_at, created_at, node_id`, q.cfg.Owner)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var tenant, node string
			var raw []byte
			if err := rows.Scan(&tenant, &node, &raw); err != nil {
				return err
			}
			var p write.Pending
			err := json.Unmarshal(raw, &p)
			if err == nil && (p.Request.TenantID != tenant || p.NodeID != node) {
				err = errors.New("its JSON names another tenant or node than its key")
			}
			if err != nil {
				// The row stays for a version that can read it, or for a
				// person; the others go on.
				q.cfg.Logger.Error("memory pending write unreadable; left in memory_pending_writes",
					"tenant", tenant, "node", node, "err", err)
				continue
			}
			out = append(out, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmemory: list pending writes: %w", err)
	}
	return out, nil
}

// Release gives up this process's leases at once, so that another process
// (or this one restarted) retries its rows without waiting for the lease to
// end. The memory service calls it when it stops.
func (q *Queue) Release(ctx context.Context) error {
	_, err := q.cfg.DB.Exec(ctx, `UPDATE memory_pending_writes SET owner = NULL, lease_until = NULL WHERE owner = $1`, q.cfg.Owner)
	if err != nil {
		return fmt.Errorf("sqlmemory: release pending writes of %s: %w", q.cfg.Owner, err)
	}
	return nil
}

// Count returns how many writes are pending for tenant, whoever holds them.
func (q *Queue) Count(ctx context.Context, tenant string) (int, error) {
	var n int
	err := q.cfg.DB.QueryRow(ctx, `SELECT COUNT(*) FROM memory_pending_writes WHERE tenant_id = $1`, tenant).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlmemory: count pending writes of tenant %s: %w", tenant, err)
	}
	return n, nil
}
