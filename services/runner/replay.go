package runner

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"
	fastjson "github.com/segmentio/encoding/json"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// ReplayedTurn is one turn of a session rebuilt from its events, or one
// background task outcome merged between turns (TaskID set).
type ReplayedTurn struct {
	// TaskID names the background task of a merge ("" for a turn).
	TaskID     string `json:"task_id,omitempty"`
	TurnNumber int    `json:"turn_number"`
	TurnID     string `json:"turn_id"`
	Phase      string `json:"phase"`
	// EngineVersion is the version of the engine the step ran with.
	EngineVersion string `json:"engine_version"`
	// EngineChanged is set when the live run recorded its engine's digest
	// and no loaded definition of its version has it: the live run's
	// engine file was another at this version (edited without a new
	// version), and the replay cannot be the live run without it.
	EngineChanged bool `json:"engine_changed,omitempty"`
	// StateHash is the hash of the rebuilt state; RecordedHash the one the
	// live run published in turn.responded ("" when it published none).
	StateHash    string `json:"state_hash"`
	RecordedHash string `json:"recorded_hash,omitempty"`
	Match        bool   `json:"match"`
	Reply        string `json:"reply"`
	// Handoff is the handoff the turn made when its exit transition fired
	// (nil for any other step).
	Handoff *ReplayedHandoff `json:"handoff,omitempty"`
}

// ReplayedHandoff is the handoff a replayed turn made: the payload the
// runner built for it, which is what the live run published in
// handoff.created and what the target session started with, and whether
// it is the one the live run published. The state hash does not hold the
// payload (the state keeps only where it went), so a change of what an
// engine is told at a handoff shows here, not in the turn's state.
type ReplayedHandoff struct {
	HandoffID       string `json:"handoff_id"`
	TargetEngineID  string `json:"target_engine_id"`
	TargetSessionID string `json:"target_session_id"`
	// Payload is the rebuilt handoff (an EngineHandoff) in canonical JSON,
	// and PayloadHash its hash.
	Payload     json.RawMessage `json:"payload"`
	PayloadHash string          `json:"payload_hash"`
	// Checked is true when the replay has the payload the live run
	// published (ReplayOptions.Handoffs), and RecordedHash is then the
	// hash of its canonical JSON.
	Checked      bool   `json:"checked"`
	RecordedHash string `json:"recorded_hash,omitempty"`
	// Match is true when the rebuilt payload is the recorded one. A
	// handoff not checked does not match, and does not make the replay
	// diverge either: nothing says whether it is the live run's. When a
	// checked one does not match, Differences says what differs, a line
	// per JSON path with both values.
	Match       bool     `json:"match"`
	Differences []string `json:"differences,omitempty"`
}

// ReplayOptions are a replay's optional parts; the zero value has none.
type ReplayOptions struct {
	// Each, when set, is called with every step as soon as it is rebuilt
	// and the number of the session's turns, so that a long replay can say
	// what it is at.
	Each func(step ReplayedTurn, turns int)
	// Handoffs, when set, gives the payload the live run published for
	// each handoff the replay rebuilds, which it is compared with. A
	// handoff it has no record of is reported unchecked
	// (ReplayedHandoff.Checked).
	Handoffs HandoffRecords
}

// HandoffRecords gives the payloads of the handoffs a live run published.
// They are not among the session's events: handoff.created is on
// PRAETOR_HANDOFFS, on the subject of the target session, which also
// starts with a copy of it (its session.started's inbound handoff).
type HandoffRecords interface {
	// RecordedHandoff is the payload the live run published for the
	// handoff of that id, which started that target session; ok is false
	// when there is no record of it.
	RecordedHandoff(ctx context.Context, handoffID, targetSessionID string) (payload json.RawMessage, ok bool, err error)
}

// HandoffPayloads are recorded handoff payloads by handoff id, gathered
// from events (Add).
type HandoffPayloads map[string]json.RawMessage

// Add keeps the handoff payload an event records: a handoff.created's, or
// the inbound handoff of a session.started (the target session's copy,
// decoded and encoded again by the runner that started it), which does not
// replace a handoff.created's. Each is kept as the event holds it: this
// build's encoding of it would drop a member the live build wrote and this
// one no longer has, which the comparison must see. Other events, and a
// session.started without a handoff, add nothing.
func (p HandoffPayloads) Add(ev event.Event) error {
	switch ev.Type() {
	case contracts.HandoffCreatedSpec.Type:
		hc, err := contracts.DecodeAs[contracts.HandoffCreated](ev)
		if err != nil {
			return err
		}
		p[hc.HandoffID] = hc.Payload
	case contracts.SessionStartedSpec.Type:
		s, err := contracts.DecodeAs[contracts.SessionStarted](ev)
		if err != nil {
			return err
		}
		if _, kept := p[s.InboundHandoffID]; s.InboundHandoff == nil || kept {
			return nil
		}
		var recorded struct {
			InboundHandoff json.RawMessage `json:"inbound_handoff"`
		}
		if err := json.Unmarshal(ev.Data(), &recorded); err != nil {
			return fmt.Errorf("session %s: inbound handoff: %w", s.SessionID, err)
		}
		p[s.InboundHandoffID] = recorded.InboundHandoff
	}
	return nil
}

// RecordedHandoff is the payload kept for the handoff id.
func (p HandoffPayloads) RecordedHandoff(_ context.Context, handoffID, _ string) (json.RawMessage, bool, error) {
	b, ok := p[handoffID]
	return b, ok, nil
}

// ReplayResult is a session rebuilt from the event log.
type ReplayResult struct {
	SessionID string                `json:"session_id"`
	EngineID  string                `json:"engine_id"`
	Turns     []ReplayedTurn        `json:"turns"`
	State     *engine.WorkingMemory `json:"state"`
	StateHash string                `json:"state_hash"`
	// Diverged is true when a rebuilt turn's hash differs from the recorded
	// one, or a rebuilt handoff's payload from the one the live run
	// published.
	Diverged bool `json:"diverged"`
}

// ErrNoSessionStart is returned when the events hold no session.started.
var ErrNoSessionStart = errors.New("replay: no session.started event for the session")

// Replay rebuilds a session by folding its events, in stream order, through
// the runner, each step with the version of the engine it ran with live
// (engines holds every version the session ran: Catalog.Version): the
// session.started event gives the initial working memory (with its
// inbound handoff, if any), each turn.extracted a turn (at the
// event's time), each task.returned a background task outcome merged
// between turns, where the live run merged it; the runner's model answers
// come from r's LLM, which for an audit is a record.Replayer of the
// session's llm.call.recorded events, so no model is called. Each turn's
// state hash is compared with the one its turn.responded recorded, and
// each merge's with its task.merged. A turn whose model call the records
// cannot serve (a record.Replayer's Missed) ends the replay with an error
// naming the turn and the call: past it, the state is not the live run's.
// A turn that hands off reports the handoff it built (ReplayedTurn.Handoff).
func Replay(ctx context.Context, r *Runner, engines *engine.Catalog, sessionEvents []event.Event) (*ReplayResult, error) {
	return ReplayWith(ctx, r, engines, sessionEvents, ReplayOptions{})
}

// ReplayWith is Replay with options: each step told as soon as it is
// rebuilt, and each handoff compared with the one the live run published.
func ReplayWith(ctx context.Context, r *Runner, engines *engine.Catalog, sessionEvents []event.Event,
	opts ReplayOptions) (*ReplayResult, error) {
	each := opts.Each
	var (
		start    *contracts.SessionStarted
		steps    []event.Event
		turns    int // the turn.extracted among steps
		recorded = map[string]string{}
		versions = map[string]string{} // the engine version each step ran with live, where recorded
		digests  = map[string]string{} // and its digest
		skipped  = map[int]bool{}      // turns the live run went on without
	)
	for _, ev := range sessionEvents {
		switch ev.Type() {
		case contracts.SessionStartedSpec.Type:
			s, err := contracts.DecodeAs[contracts.SessionStarted](ev)
			if err != nil {
				return nil, err
			}
			start = s
		case contracts.TurnExtractedSpec.Type:
			steps = append(steps, ev)
			turns++
		case contracts.TaskReturnedSpec.Type:
			steps = append(steps, ev)
		case contracts.TurnRespondedSpec.Type:
			tr, err := contracts.DecodeAs[contracts.TurnResponded](ev)
			if err != nil {
				return nil, err
			}
			recorded[tr.TurnID], versions[tr.TurnID], digests[tr.TurnID] = tr.StateHash, tr.EngineVersion, tr.EngineDigest
			for _, n := range tr.SkippedTurns {
				skipped[n] = true
			}
		case contracts.TaskMergedSpec.Type:
			tm, err := contracts.DecodeAs[contracts.TaskMerged](ev)
			if err != nil {
				return nil, err
			}
			recorded[ev.ID()], versions[ev.ID()], digests[ev.ID()] = tm.StateHash, tm.EngineVersion, tm.EngineDigest
		}
	}
	if start == nil {
		return nil, ErrNoSessionStart
	}
	// A session goes on under a new version of its engine once it is
	// loaded: each step is replayed with the version it ran with, and of
	// that version with the definition of the digest it recorded, where
	// one is loaded (the live run's file, edited without a new version,
	// given with --engines-dir beside the frozen copy).
	defAt := func(version, digest string) (*engine.Definition, error) {
		revs := engines.Revisions(start.EngineID, version)
		for _, d := range revs {
			if d.Digest() == digest {
				return d, nil
			}
		}
		if len(revs) > 0 {
			return revs[0], nil
		}
		loaded := engines.Versions(start.EngineID)
		if len(loaded) == 0 {
			return nil, fmt.Errorf("engine %q, which is not loaded", start.EngineID)
		}
		return nil, fmt.Errorf("%s %s, which is not loaded (loaded: %s; give each version's engine directory with --engines-dir)",
			start.EngineID, version, strings.Join(loaded, ", "))
	}
	// The session started on the definition its first step at the start
	// version ran with: session.started records no digest.
	startDigest := ""
	for _, ev := range steps {
		key := ev.ID()
		if ev.Type() == contracts.TaskReturnedSpec.Type {
			key = mergedEventID(key)
		}
		if versions[key] == start.EngineVersion && digests[key] != "" {
			startDigest = digests[key]
			break
		}
	}
	def, err := defAt(start.EngineVersion, startDigest)
	if err != nil {
		return nil, fmt.Errorf("replay: session %s started on %w", start.SessionID, err)
	}
	changed := func(key string, d *engine.Definition) bool {
		return digests[key] != "" && d.Digest() != "" && digests[key] != d.Digest()
	}
	stepDef := func(key string) (*engine.Definition, error) {
		if v := versions[key]; v != "" && (v != def.Version || changed(key, def)) {
			return defAt(v, digests[key])
		}
		return def, nil
	}
	ctx = llm.WithOwner(ctx, start.TenantID, start.SessionID)
	r = r.withEngines(engines)
	mem, err := StartMemory(def, *start)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	memJSON, err := json.Marshal(mem)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	out := &ReplayResult{SessionID: start.SessionID, EngineID: start.EngineID, Turns: []ReplayedTurn{}}
	seen := map[string]bool{}
	for _, ev := range steps {
		if seen[ev.ID()] {
			continue // a republished copy
		}
		seen[ev.ID()] = true
		if ev.Type() == contracts.TaskReturnedSpec.Type {
			tr, err := contracts.DecodeAs[contracts.TaskReturned](ev)
			if err != nil {
				return nil, err
			}
			// Each merge is compared with its own task.merged: one attempt
			// may merge twice (given up on as overdue, with a gap, then
			// answered late after all).
			key := mergedEventID(ev.ID())
			if def, err = stepDef(key); err != nil {
				return nil, fmt.Errorf("replay: task %s attempt %d was merged by %w", tr.TaskID, tr.Attempt, err)
			}
			mg, err := r.Merge(def, mem, OutcomeOf(*tr))
			if err != nil {
				return nil, fmt.Errorf("replay: task %s attempt %d: %w", tr.TaskID, tr.Attempt, err)
			}
			if !mg.Applied {
				continue
			}
			rt := ReplayedTurn{TaskID: tr.TaskID, TurnNumber: mg.State.TurnNumber, TurnID: ev.ID(), Phase: mg.State.Phase.Current,
				EngineVersion: def.Version, EngineChanged: changed(key, def), StateHash: mg.StateHash,
				RecordedHash: recorded[key]}
			out.add(rt, each, turns)
			mem = mg.State
			if memJSON, err = json.Marshal(mem); err != nil {
				return nil, err
			}
			continue
		}
		te, err := contracts.DecodeAs[contracts.TurnExtracted](ev)
		if err != nil {
			return nil, err
		}
		if skipped[te.TurnNumber] {
			continue // never reached the live runner: its state went on without it
		}
		in, err := FromContract(*te, start.ProjectID)
		if err != nil {
			return nil, err
		}
		in.Now = ev.Time()
		if def, err = stepDef(te.TurnID); err != nil {
			return nil, fmt.Errorf("replay: turn %d (%s) ran %w", te.TurnNumber, te.TurnID, err)
		}
		// A gap is taken where the live run took it, over skipped turns
		// only: any other is a turn missing from the events.
		in.AcceptGap = true
		for n := mem.TurnNumber + 1; n < te.TurnNumber; n++ {
			in.AcceptGap = in.AcceptGap && skipped[n]
		}
		// The turn's calls are named as the live run named them, so a call
		// the records cannot serve is told from the live run's.
		// As the live service does: the turn works on the memory decoded
		// from the state the last step stored.
		var own engine.WorkingMemory
		if err := fastjson.Unmarshal(memJSON, &own); err != nil {
			return nil, fmt.Errorf("replay: turn %d (%s): state: %w", te.TurnNumber, te.TurnID, err)
		}
		if err := own.NormalizeDecoded(); err != nil {
			return nil, fmt.Errorf("replay: turn %d (%s): state: %w", te.TurnNumber, te.TurnID, err)
		}
		res, err := r.processOwned(llm.WithWork(ctx, "turn/"+te.TurnID), def, &own, in)
		if errors.Is(err, ErrDuplicateTurn) || errors.Is(err, ErrHandedOff) {
			continue // the live run answered it without processing it
		}
		if err == nil {
			err = missedCall(r)
		}
		if err != nil && changed(te.TurnID, def) {
			err = fmt.Errorf("%w; %s", err, notLoaded(engines, def, digests[te.TurnID]))
		}
		if err != nil {
			return nil, fmt.Errorf("replay: turn %d (%s): %w", te.TurnNumber, te.TurnID, err)
		}
		rt := ReplayedTurn{TurnNumber: res.State.TurnNumber, TurnID: te.TurnID, Phase: res.Phase, EngineVersion: def.Version,
			EngineChanged: changed(te.TurnID, def),
			StateHash:     res.StateHash, RecordedHash: recorded[te.TurnID], Reply: res.Reply}
		if x := res.Effects.Exit; x != nil {
			if rt.Handoff, err = replayedHandoff(ctx, x, opts.Handoffs); err != nil {
				return nil, fmt.Errorf("replay: turn %d (%s): %w", te.TurnNumber, te.TurnID, err)
			}
		}
		out.add(rt, each, turns)
		mem, memJSON = res.State, res.stateJSON
	}
	out.State = mem
	hash, err := engine.StateHash(mem)
	if err != nil {
		return nil, err
	}
	out.StateHash = hash
	return out, nil
}

// notLoaded says that no loaded definition of def's engine and version
// has the digest the live run recorded, and where to find it.
func notLoaded(engines *engine.Catalog, def *engine.Definition, digest string) string {
	var loaded []string
	for _, d := range engines.Revisions(def.EngineID, def.Version) {
		loaded = append(loaded, fmt.Sprintf("%.12s", d.Digest()))
	}
	return fmt.Sprintf("the live run used a definition of %s %s (digest %.12s) that is not loaded (loaded at %s: %s): "+
		"its file was edited without a new version; give the directory of the engine files it ran with --engines-dir",
		def.EngineID, def.Version, digest, def.Version, strings.Join(loaded, ", "))
}

// missedCalls is a replay's LLM (a record.Replayer) that says which call
// it could not serve.
type missedCalls interface {
	Missed() error
}

// missedCall is the call of the turn just processed that the records could
// not serve. The turn took it as a model failure and went on, degraded (a
// summary falls back to the offline one): its state is not the live run's,
// and the call is the reason.
func missedCall(r *Runner) error {
	if m, ok := r.cfg.LLM.(missedCalls); ok {
		return m.Missed()
	}
	return nil
}

// mergedEventID is the id of the task.merged that records the merge of the
// task.returned returnedID.
func mergedEventID(returnedID string) string { return events.DeriveID(returnedID, "merged") }

// StartMemory is the working memory a session starts with, as its
// session.started says: a new memory of the engine at the start time,
// holding the inbound handoff if the session began with one, at the
// memory version the session started with (an event from before versions
// were recorded: 1). The handoff consumer and Replay start sessions
// through it, and the gateway's new memory is the same, so a replay
// starts where the live run did. A version newer than this build's is
// refused: its rules are not this build's, and a replay with them would
// only diverge.
func StartMemory(def *engine.Definition, s contracts.SessionStarted) (*engine.WorkingMemory, error) {
	if s.MemoryVersion > engine.MemorySchemaVersion {
		return nil, fmt.Errorf("session %s started with working memory version %d, newer than this build's %d: "+
			"replay it with a newer praetor", s.SessionID, s.MemoryVersion, engine.MemorySchemaVersion)
	}
	m := engine.NewWorkingMemory(def, s.SessionID, s.ProjectID)
	m.SchemaVersion = max(s.MemoryVersion, 1)
	m.UpdatedAt = s.StartedAt.UTC()
	if s.InboundHandoff != nil {
		b, err := json.Marshal(s.InboundHandoff)
		if err != nil {
			return nil, fmt.Errorf("session %s: inbound handoff: %w", s.SessionID, err)
		}
		m.InboundHandoff = b
	}
	return m, nil
}

// add records a rebuilt step: it matches when the live run recorded no hash
// for it or the same one. each, when set, hears of it.
func (out *ReplayResult) add(rt ReplayedTurn, each func(ReplayedTurn, int), turns int) {
	rt.Match = rt.RecordedHash == "" || rt.RecordedHash == rt.StateHash
	out.Diverged = out.Diverged || !rt.Match || rt.Handoff != nil && rt.Handoff.Checked && !rt.Handoff.Match
	out.Turns = append(out.Turns, rt)
	if each != nil {
		each(rt, turns)
	}
}

// replayedHandoff is the handoff of a replayed turn's fired exit
// transition: its payload as the live run encoded it (ExitTransition.
// Payload), compared with the one records hold for it, if any. The
// payload depends on the target engine by its id only (handoff.Input):
// which version of the target ran does not change it.
func replayedHandoff(ctx context.Context, x *ExitTransition, records HandoffRecords) (*ReplayedHandoff, error) {
	raw, err := x.Payload()
	if err != nil {
		return nil, err
	}
	payload, err := engine.Canonicalize(raw)
	if err != nil {
		return nil, fmt.Errorf("handoff %s: payload: %w", x.HandoffID, err)
	}
	h := &ReplayedHandoff{HandoffID: x.HandoffID, TargetEngineID: x.TargetEngine, TargetSessionID: x.TargetSessionID,
		Payload: payload, PayloadHash: engine.HashCanonical(payload)}
	if records == nil {
		return h, nil
	}
	rec, ok, err := records.RecordedHandoff(ctx, x.HandoffID, x.TargetSessionID)
	if err != nil {
		return nil, fmt.Errorf("handoff %s: the recorded payload: %w", x.HandoffID, err)
	}
	if !ok {
		return h, nil
	}
	recorded, err := engine.Canonicalize(rec)
	if err != nil {
		return nil, fmt.Errorf("handoff %s: the recorded payload is not JSON: %w", x.HandoffID, err)
	}
	h.Checked, h.RecordedHash = true, engine.HashCanonical(recorded)
	if h.Match = h.RecordedHash == h.PayloadHash; !h.Match {
		h.Differences = jsonDifferences(payload, recorded, maxDifferences)
	}
	return h, nil
}

// maxDifferences is how many of a handoff's differences a replay names.
const maxDifferences = 8

// jsonDifferences says where the JSON document got differs from want, a
// line per path (at most limit, then how many more): the value got has
// there, then want's ("absent" for a member or item only one has).
func jsonDifferences(got, want []byte, limit int) []string {
	decode := func(b []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		return v, d.Decode(&v)
	}
	g, err1 := decode(got)
	w, err2 := decode(want)
	if err := errors.Join(err1, err2); err != nil {
		return []string{fmt.Sprintf("(the payloads do not decode: %v)", err)}
	}
	var out []string
	walkDifferences("", g, w, &out)
	if len(out) == 0 && !bytes.Equal(got, want) { // the same values, spelt otherwise
		g, w := briefPair(string(got), string(want))
		out = []string{fmt.Sprintf("%s (recorded %s)", g, w)}
	}
	if len(out) > limit {
		out = append(out[:limit], fmt.Sprintf("and %d more", len(out)-limit))
	}
	return out
}

// walkDifferences appends to out a line for each path under path where
// got and want differ.
func walkDifferences(path string, got, want any, out *[]string) {
	at := func(p string) string { return cmp.Or(p, "(the payload)") }
	switch g := got.(type) {
	case map[string]any:
		w, ok := want.(map[string]any)
		if !ok {
			break
		}
		keys := slices.Collect(maps.Keys(g))
		for k := range w {
			if _, ok := g[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			gv, gok := g[k]
			wv, wok := w[k]
			switch {
			case !wok:
				*out = append(*out, fmt.Sprintf("%s: %s (recorded: absent)", p, brief(gv)))
			case !gok:
				*out = append(*out, fmt.Sprintf("%s: absent (recorded %s)", p, brief(wv)))
			default:
				walkDifferences(p, gv, wv, out)
			}
		}
		return
	case []any:
		w, ok := want.([]any)
		if !ok {
			break
		}
		for i := range max(len(g), len(w)) {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(w):
				*out = append(*out, fmt.Sprintf("%s: %s (recorded: absent, %d items)", p, brief(g[i]), len(w)))
			case i >= len(g):
				*out = append(*out, fmt.Sprintf("%s: absent, %d items (recorded %s)", p, len(g), brief(w[i])))
			default:
				walkDifferences(p, g[i], w[i], out)
			}
		}
		return
	}
	if g, w := asJSON(got), asJSON(want); g != w {
		g, w = briefPair(g, w)
		*out = append(*out, fmt.Sprintf("%s: %s (recorded %s)", at(path), g, w))
	}
}

// briefLine is how many characters of a value a difference shows, and
// briefContext how many of them come before where two long values start
// to differ.
const (
	briefLine    = 120
	briefContext = 30
)

// brief is v as JSON, cut to a line's worth.
func brief(v any) string {
	s, _ := briefPair(asJSON(v), "")
	return s
}

// briefPair is got and want cut to a line's worth each: from their start,
// or, when they differ past where a line would cut them, from a little
// before where they start to differ, so that the line shows the
// difference.
func briefPair(got, want string) (string, string) {
	g, w := []rune(got), []rune(want)
	from := 0
	if max(len(g), len(w)) > briefLine {
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		from = max(i-briefContext, 0)
	}
	cut := func(r []rune) string {
		s, lead := "", ""
		if from > 0 {
			lead = "…"
		}
		r = r[min(from, len(r)):]
		if len(r) > briefLine {
			r, s = r[:briefLine], "…"
		}
		return lead + string(r) + s
	}
	return cut(g), cut(w)
}

// asJSON is v as canonical JSON (v itself when it is JSON already).
func asJSON(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	b, err := engine.CanonicalJSON(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
