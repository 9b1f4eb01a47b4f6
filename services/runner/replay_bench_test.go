package runner_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/runner"
)

// BenchmarkReplay measures what praetor replay --session does for each
// turn of a recorded session: the runner's steps folded over its
// turn.extracted events, each state hashed and compared with the one its
// turn.responded recorded. The session is project-discovery with the
// offline provider, whose answers the replay computes again (an audit
// serves them from the records instead, a map look-up); setup and the
// live run are not timed. turns/s is the replay's speed; a replay that
// diverges fails the benchmark.
//
//	go test -run '^$' -bench Replay -benchmem ./services/runner/
func BenchmarkReplay(b *testing.B) {
	for _, turns := range []int{20, 200} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) { benchReplay(b, turns) })
	}
}

func benchReplay(b *testing.B, turns int) {
	_, cat := enginetest.ShippedWithRegistry(b)
	evs := liveSession(b, "project-discovery", turns)
	s := newSession(b, "project-discovery")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		res, err := runner.Replay(ctx, s.run, cat, evs)
		if err != nil {
			b.Fatal(err)
		}
		if res.Diverged || len(res.Turns) != turns {
			b.Fatalf("replay diverged or replayed %d of %d turns", len(res.Turns), turns)
		}
	}
	b.ReportMetric(float64(b.N*turns)/b.Elapsed().Seconds(), "turns/s")
}

// liveSession plays a session of the given turns with the offline provider
// and returns its events as the stream holds them: session.started, then
// each turn's turn.extracted and turn.responded (with the state hash the
// replay must find again).
func liveSession(b *testing.B, engineID string, turns int) []event.Event {
	b.Helper()
	const tenant, sid = "acme", "sess-1"
	s := newSession(b, engineID)
	start := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	started, err := contracts.NewEvent(contracts.Meta{ID: "started", Source: "bench", Time: start},
		contracts.SessionStarted{TenantID: tenant, SessionID: sid, ProjectID: "proj-1", EngineID: engineID,
			EngineVersion: s.def.Version, StartedAt: start})
	if err != nil {
		b.Fatal(err)
	}
	first, err := runner.StartMemory(s.def, contracts.SessionStarted{SessionID: sid, ProjectID: "proj-1", StartedAt: start})
	if err != nil {
		b.Fatal(err)
	}
	s.state = first
	evs := []event.Event{started}
	messages := []string{
		"Our field technicians keep losing track of their jobs because everything runs on paper.",
		"Last month we missed three urgent repairs and lost a big customer.",
		"About 40 technicians, plus 5 office dispatchers who plan the routes.",
		"They need to see their daily jobs, record the work done and take photos.",
		"We want to cut missed appointments in half.",
		"We need it within 6 months, before the busy winter season.",
		"Our budget is around $60k to $80k.",
		"It has to run on Android tablets.",
	}
	ctx := context.Background()
	for i := range turns {
		msg, at := messages[i%len(messages)], start.Add(time.Duration(i+1)*time.Minute)
		req := s.request(msg)
		req.Meta.SessionID = sid
		ext, err := s.pipe.Extract(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		turnID := req.Meta.MessageID
		te, err := ext.Contract(tenant, sid, turnID, req.Meta.TurnNumber, msg)
		if err != nil {
			b.Fatal(err)
		}
		in, err := runner.FromContract(te, "proj-1")
		if err != nil {
			b.Fatal(err)
		}
		in.Now = at
		res, err := s.run.Process(ctx, s.def, s.state, in)
		if err != nil {
			b.Fatal(err)
		}
		s.state = res.State
		responded, err := res.Responded(tenant, turnID)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range []contracts.Payload{te, responded} {
			ev, err := contracts.NewEvent(contracts.Meta{ID: fmt.Sprintf("%s-%s", turnID, p.Spec().Name), Source: "bench", Time: at}, p)
			if err != nil {
				b.Fatal(err)
			}
			evs = append(evs, ev)
		}
	}
	return evs
}
