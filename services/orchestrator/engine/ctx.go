package engine

import (
	"math/rand/v2"
	"time"
)

// Ctx is everything non-deterministic a transition may use (seed 004's
// SpecExecutionContext): the time, and a seeded random source. Transitions
// never read the clock or a global generator.
type Ctx struct {
	Now  time.Time
	Rand *rand.Rand
}

// NewCtx returns the context of transition number seq of a run seeded with
// seed. The random source depends on (seed, seq) only, so a replay of the
// run's events, or a run resumed in a new process, draws the same numbers.
func NewCtx(now time.Time, seed, seq int64) Ctx {
	return Ctx{Now: now, Rand: rand.New(rand.NewPCG(uint64(seed), uint64(seq)))}
}

// Next returns the context of the transition that follows s, at now.
func Next(s State, now time.Time) Ctx { return NewCtx(now, s.Seed, s.Seq+1) }

// now is the transition's time as stored: UTC, to the microsecond, which is
// what PostgreSQL keeps, so a state rebuilt from stored events hashes the same.
func (c Ctx) now() time.Time { return c.Now.UTC().Truncate(time.Microsecond) }

func (c Ctx) validate() error {
	if c.Now.IsZero() {
		return ErrBadContext
	}
	if c.Rand == nil {
		return ErrBadContext
	}
	return nil
}
