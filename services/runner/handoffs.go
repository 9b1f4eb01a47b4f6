package runner

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// HandoffID is the id of the handoff a turn makes, and TargetSessionID the
// id of the session it starts: both derived from the turn, so a re-run of
// the turn (after a crash, or in a replay) names the same ones.
func HandoffID(turnID string) string { return events.DeriveID(turnID, "handoff") }

// TargetSessionID is the session a handoff starts.
func TargetSessionID(handoffID string) string { return events.DeriveID(handoffID, "target-session") }

// firstReplyNote asks the receiving engine to acknowledge the handoff in its
// first reply, which the I-PASS check then verifies.
const firstReplyNote = "This is your first reply since the handoff: acknowledge, in a sentence or two, the decisions, " +
	"constraints, open questions and sensitivities above, then go on."

// inboundSummary is the executive summary of the session's inbound handoff
// for the top of its context, or "" without one.
func inboundSummary(def *engine.Definition, m *engine.WorkingMemory) string {
	h, ok := contracts.DecodeHandoff(m.InboundHandoff)
	if !ok {
		return ""
	}
	text := handoff.Format(h, def.Name)
	if m.TurnNumber == 1 {
		text += "\n" + firstReplyNote
	}
	return text
}

// verifyInbound checks the first reply of a session that started with a
// handoff (I-PASS); nil for any other reply.
func verifyInbound(def *engine.Definition, m *engine.WorkingMemory, reply string) *handoff.Verification {
	h, ok := contracts.DecodeHandoff(m.InboundHandoff)
	if !ok || m.TurnNumber != 1 {
		return nil
	}
	v := handoff.Verify(h, reply, handoff.Receiver{EngineID: def.EngineID, ProjectID: m.ProjectID})
	return &v
}

// exit is step 17: the first exit transition whose conditions all hold
// fires, unless a stalled task blocks progress. Its context mapper builds
// the handoff; when the handoff passes validation the transition fires
// once (m.Exit), its effect carries the handoff to write and publish, and
// the reply ends by telling the user where the conversation goes, in place
// of the questions it closed with (see handover); when it does not,
// nothing is handed off, the rejection is kept in working memory and the
// result, and the conversation goes on (the transition may fire on a later
// turn). It returns the reply.
func (r *Runner) exit(ctx context.Context, def *engine.Definition, m *engine.WorkingMemory, in Input, now time.Time,
	reply string, res *Result) string {
	if m.Exit != nil || len(res.Stalled) > 0 {
		return reply
	}
	env := engine.CondEnv{Memory: m, Registry: r.cfg.Registry, Message: in.Message}
	for _, x := range def.ExitTransitions {
		if !engine.AllHold(x.Conditions, env) {
			continue
		}
		reject := func(errs []string) string {
			m.HandoffRejection = &engine.HandoffRejection{TargetEngine: x.TargetEngine, AtTurn: m.TurnNumber, Errors: errs}
			res.HandoffRejected = m.HandoffRejection
			r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "handoff rejected: not written",
				slog.String("engine_id", def.EngineID), slog.String("session_id", m.SessionID),
				slog.String("target_engine_id", x.TargetEngine), slog.Int("turn", m.TurnNumber), slog.Any("errors", errs))
			return reply
		}
		var target *engine.Definition
		if r.cfg.Engines != nil {
			t, ok := r.cfg.Engines.Get(x.TargetEngine)
			if !ok {
				return reject([]string{fmt.Sprintf("target engine %s is not loaded", x.TargetEngine)})
			}
			target = t
		}
		h, err := r.cfg.Mappers.Map(handoff.Input{Source: def, Memory: m, TargetEngineID: x.TargetEngine, Reason: x.Reason, Now: now})
		if err != nil {
			return reject([]string{err.Error()})
		}
		if m.SchemaVersion < 2 {
			withoutQuestions(&h)
		}
		if v := handoff.Validate(h); !v.Valid {
			return reject(v.Errors)
		}
		id := HandoffID(in.TurnID)
		m.Exit = &engine.ExitState{TargetEngine: x.TargetEngine, Reason: x.Reason, AtTurn: m.TurnNumber, HandoffID: id}
		m.HandoffRejection = nil
		res.Effects.Exit = &ExitTransition{TargetEngine: x.TargetEngine, Reason: x.Reason, AtTurn: m.TurnNumber,
			Completeness: m.Completeness.Overall, HandoffID: id, TargetSessionID: TargetSessionID(id), Handoff: h}
		name := x.TargetEngine
		if target != nil {
			name = cmp.Or(target.Name, name)
		}
		return handover(m.SchemaVersion, reply, name, x.Reason)
	}
	return reply
}

// withoutQuestions makes h the handoff of a session of memory version 1
// as the builds before decision keys (e1267ff) wrote it: their decisions
// recorded no key, options or question, nor their eliminated options a
// question. The target session starts with the payload, and a replay of
// the session must rebuild the one its live run published. The version
// does not tell the build that handed off: a version-1 session handed off
// between e1267ff and this gate (2026-11-27 18:34 to 2026-11-28 02:53 UTC)
// published keys, by then options and questions too, and a replay of it
// now differs at them; nor does it hold what carrying forward an inbound
// handoff has changed since (internal/engine/handoff's CarryForward).
func withoutQuestions(h *contracts.EngineHandoff) {
	al := &h.ActionList
	al.DecisionsReached = slices.Clone(al.DecisionsReached)
	for i := range al.DecisionsReached {
		d := &al.DecisionsReached[i]
		d.Key, d.Options, d.Question = "", nil, ""
	}
	al.OptionsEliminated = slices.Clone(al.OptionsEliminated)
	for i := range al.OptionsEliminated {
		al.OptionsEliminated[i].Question = ""
	}
}

// handover is the reply of the turn that hands off, in a session of memory
// version: the reply, without the questions it ends with, then where the
// conversation goes. The reply was written at step 12, before the exit
// fired, and asks what the source engine needs next; the user's next
// message goes to the target engine, so no answer to such a question could
// reach the engine that asked it. (The obligation it asked about stays open
// in the handoff's phase results.) A session of version 1 keeps its
// questions, as the builds it started on did: the reply is in its history,
// and its replay must rebuild the state they stored.
func handover(version int, reply, target, reason string) string {
	line := "I am handing you over to " + target + " to go on from here (" + reason + "). Your next message goes there."
	if version < 2 {
		return reply + "\n\n" + line
	}
	if reply = withoutClosingQuestions(reply); reply == "" {
		return line
	}
	return reply + "\n\n" + line
}

// withoutClosingQuestions is s without the questions it ends with, each
// the last of s's sentences (engine.Sentences: after the previous sentence
// end or line) while it asks (engine.IsQuestion), with what belongs to
// them: an emoji or mark after them ("Anything else? 🙂"), and the line
// that led into them ("A few questions:").
func withoutClosingQuestions(s string) string {
	cut := false
	for {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
		ss := engine.Sentences(s)
		k := len(ss) - 1
		for k >= 0 && !strings.ContainsFunc(ss[k], func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			k-- // "🙂", kept unless a question before it goes
		}
		if k < 0 || !engine.IsQuestion(ss[k]) && !(cut && strings.HasSuffix(ss[k], ":")) {
			return s
		}
		i := strings.LastIndex(s, ss[k])
		if i < 0 {
			return s
		}
		s, cut = s[:i], true
	}
}

// stalledNames are the display names of the tasks progress waits for.
func stalledNames(def *engine.Definition, m *engine.WorkingMemory) []string {
	var out []string
	for _, t := range m.BackgroundTasks.Stalled() {
		name := t.TaskID
		if d, ok := tasks.Lookup(def, t.TaskID); ok {
			name = cmp.Or(d.DisplayName, name)
		}
		out = append(out, name)
	}
	return out
}
