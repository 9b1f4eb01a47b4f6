package runner

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/builtin"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

// tinyEngine is a small engine whose phase instructions go into every
// reply's prompt: a definition with other instructions asks the model
// something else, which a replay's recorded calls cannot answer.
const tinyEngine = `
engine_id: tiny
name: Tiny Engine
description: An engine with one phase, for the version tests.
version: 1.0.0
engine_type: extract-dominant
initial_phase: START
phases:
  - id: START
    display_name: Start
    order: 1
    mode_blend: {extract: 70, validate: 30}
    active_techniques: [open_ended_questions]
    agent_instructions: Ask about the goal.
obligations:
  - id: goal_known
    category: basics
    description: The goal is known
    required: true
    fields: [basics.goal]
completeness_model:
  type: obligation
  ready_threshold: 0.5
context_config:
  max_tokens: 4000
  allocation: {obligations: 0.4, conversation_history: 0.3, background_intelligence: 0.2, extraction_summary: 0.1}
information_ratio: {user: 70, system: 30}
sidebar_config:
  static_sections:
    - {id: basics, title: Basics, obligation_categories: [basics]}
available_techniques: [open_ended_questions]
system_prompt_template: "You are {{.EngineName}}."
extraction_schema:
  fields:
    - {path: basics.goal, display_name: Goal, description: What the user wants, value_type: string, required: true}
`

// tinyAt is the tiny engine at version, its instructions instructions.
func tinyAt(version, instructions string) string {
	s := strings.Replace(tinyEngine, "\nversion: 1.0.0\n", "\nversion: "+version+"\n", 1)
	return strings.Replace(s, "agent_instructions: Ask about the goal.", "agent_instructions: "+instructions, 1)
}

// tinyCatalog is the shipped engines and the tiny engine's files.
func tinyCatalog(t *testing.T, rig *runnertest.Rig, files map[string]string) *engine.Catalog {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, y := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(y)}
	}
	cat, rep, err := builtin.LoadWith(rig.Registry, engine.Source{FS: fsys, Dir: ".", Label: "tiny"})
	if err != nil {
		t.Fatalf("load: %v\n%v", err, rep.Errors)
	}
	return cat
}

// A build whose engine has a new version and the frozen copy of the old
// one (engines/history/ENGINE_ID@VERSION.yaml) starts new sessions on the
// new version and replays a session recorded on the old one, each turn on
// the version it ran, with no --engines-dir. The frozen copy used to be a
// second definition of the engine, refused as a duplicate.
func TestReplayRunsEachTurnOnItsFrozenVersion(t *testing.T) {
	first := tinyAt("1.0.0", "Ask about the goal.")
	rig := runnertest.New(t, runnertest.Options{Engines: map[string]string{"tiny.yaml": first}})
	old := recording(t, rig, rig.Engines)
	sid := rig.CreateSession(t, "tiny", "frozen-1")
	say(t, rig, sid, 1, "We want to sell pottery online.")
	say(t, rig, sid, 2, "Mostly mugs.")
	stop(t, old)

	released := tinyCatalog(t, rig, map[string]string{"tiny.yaml": tinyAt("1.1.0", "Ask about the goal, briefly."),
		"tiny@1.0.0.yaml": first})
	if def, ok := released.Get("tiny"); !ok || def.Version != "1.1.0" || !slices.Contains(released.IDs(), "tiny") ||
		len(released.IDs()) != rig.Engines.Len() {
		t.Fatalf("Get(tiny) = %v, %t; ids %v; want tiny once, at 1.1.0", def, ok, released.IDs())
	}
	recording(t, rig, released)
	say(t, rig, sid, 3, "And bowls.")
	rig.Engines = released // the gateway's catalog: new sessions start on Get's version
	fresh := rig.CreateSession(t, "tiny", "frozen-2")
	say(t, rig, fresh, 1, "We want to sell pottery online.")
	if _, m := rig.Session(t, fresh); m.EngineVersion != "1.1.0" {
		t.Errorf("a new session runs tiny %s, want the newest, 1.1.0", m.EngineVersion)
	}

	sess, _ := rig.Session(t, sid)
	evs, calls := rig.SessionEvents(t, sid), rig.Events(t, contracts.StreamLLM, contracts.LLMCallRecordedSpec.Type)
	res, err := replayRecorded(t, rig, released, evs, calls)
	if err != nil {
		t.Fatalf("replay with the frozen 1.0.0: %v", err)
	}
	var ran []string
	for _, rt := range res.Turns {
		if rt.EngineChanged {
			t.Errorf("turn %d is marked as run on another definition of %s", rt.TurnNumber, rt.EngineVersion)
		}
		ran = append(ran, rt.EngineVersion)
	}
	if res.Diverged || res.StateHash != sess.StateHash || !slices.Equal(ran, []string{"1.0.0", "1.0.0", "1.1.0"}) {
		t.Errorf("replay: diverged %t, hash %s (live %s), versions %v; want 1.0.0, 1.0.0, 1.1.0 as live", res.Diverged,
			res.StateHash, sess.StateHash, ran)
	}

	unfrozen := tinyCatalog(t, rig, map[string]string{"tiny.yaml": tinyAt("1.1.0", "Ask about the goal, briefly.")})
	if _, err := replayRecorded(t, rig, unfrozen, evs, calls); err == nil ||
		!strings.Contains(err.Error(), "started on tiny 1.0.0, which is not loaded") {
		t.Errorf("replay without the frozen copy: %v, want 1.0.0 named as not loaded", err)
	}
}

// A session that went on after its engine's file was edited without a new
// version ran two definitions of one version. Given both (the earlier
// build's engines with --engines-dir), a replay takes for each turn the one
// of the digest it recorded, and matches; given only the edited one, it
// says that the definition of the first turn's digest is not loaded and
// where to find it. It used to replay every turn with the definition the
// last source gave, and diverge at the other's turns.
func TestReplayTakesTheDefinitionOfEachTurnsDigest(t *testing.T) {
	first := tinyAt("1.0.0", "Ask about the goal.")
	edited := tinyAt("1.0.0", "Ask about the goal, briefly.")
	rig := runnertest.New(t, runnertest.Options{Engines: map[string]string{"tiny.yaml": first}})
	old := recording(t, rig, rig.Engines)
	sid := rig.CreateSession(t, "tiny", "digests-1")
	say(t, rig, sid, 1, "We want to sell pottery online.")
	stop(t, old)
	editedBuild := tinyCatalog(t, rig, map[string]string{"tiny.yaml": edited})
	recording(t, rig, editedBuild)
	say(t, rig, sid, 2, "Mostly mugs.")
	sess, _ := rig.Session(t, sid)
	evs, calls := rig.SessionEvents(t, sid), rig.Events(t, contracts.StreamLLM, contracts.LLMCallRecordedSpec.Type)

	// The edited build, and the first build's engines given after it.
	both, rep, err := builtin.LoadWith(rig.Registry,
		engine.Source{FS: fstest.MapFS{"tiny.yaml": {Data: []byte(edited)}}, Dir: ".", Label: "edited"},
		engine.Source{FS: fstest.MapFS{"tiny.yaml": {Data: []byte(first)}}, Dir: ".", Label: "first"})
	if err != nil {
		t.Fatalf("load: %v\n%v", err, rep.Errors)
	}
	res, err := replayRecorded(t, rig, both, evs, calls)
	if err != nil || res.Diverged || res.StateHash != sess.StateHash || len(res.Turns) != 2 ||
		res.Turns[0].EngineChanged || res.Turns[1].EngineChanged {
		t.Fatalf("replay with both definitions: %v; result %+v, live hash %s", err, res, sess.StateHash)
	}

	firstDef, _ := rig.Engines.Get("tiny")
	_, err = replayRecorded(t, rig, editedBuild, evs, calls)
	for _, want := range []string{"turn 1 (" + runnertest.TurnID(sid, 1) + ")",
		"the live run used a definition of tiny 1.0.0 (digest " + firstDef.Digest()[:12] + ") that is not loaded",
		"--engines-dir"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("replay with the edited definition alone: %v, want %q", err, want)
		}
	}
}
