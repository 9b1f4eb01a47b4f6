package obligation_test

import (
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/obligation"
)

func TestItemStatus(t *testing.T) {
	def := enginetest.Definition()
	reg := enginetest.Registry()
	tests := []struct {
		name     string
		id       string
		setup    func(m *engine.WorkingMemory)
		want     engine.ObligationStatusValue
		wantConf float64
	}{
		{name: "nothing extracted", id: "goal_known", want: engine.StatusPending},
		{name: "met at threshold", id: "goal_known", want: engine.StatusSatisfied, wantConf: 0.7,
			setup: func(m *engine.WorkingMemory) { enginetest.Set(m, "basics.goal", "ship it", 0.7, 1) }},
		{name: "below threshold is partial", id: "goal_known", want: engine.StatusPartial, wantConf: 0.5,
			setup: func(m *engine.WorkingMemory) { enginetest.Set(m, "basics.goal", "ship it", 0.5, 1) }},
		{name: "field threshold 0.8 applies", id: "budget_known", want: engine.StatusPartial, wantConf: 0.75,
			setup: func(m *engine.WorkingMemory) { enginetest.Set(m, "details.budget", 5000, 0.75, 1) }},
		{name: "null answer counts", id: "goal_known", want: engine.StatusSatisfied, wantConf: 0.9,
			setup: func(m *engine.WorkingMemory) { enginetest.Set(m, "basics.goal", nil, 0.9, 1) }},
		{name: "one of two fields is enough with min_fields 1", id: "timeline_known", want: engine.StatusSatisfied, wantConf: 0.8,
			setup: func(m *engine.WorkingMemory) { enginetest.Set(m, "details.deadline", "March", 0.8, 1) }},
		{name: "confidence from top k fields", id: "timeline_known", want: engine.StatusSatisfied, wantConf: 0.9,
			setup: func(m *engine.WorkingMemory) {
				enginetest.Set(m, "details.deadline", "March", 0.8, 1)
				enginetest.Set(m, "details.timeline", "3 months", 0.9, 2)
			}},
		{name: "a false confirmation is partial", id: "confirm_scope", want: engine.StatusPartial, wantConf: 0.9,
			setup: func(m *engine.WorkingMemory) { enginetest.Set(m, "review.confirmed", false, 0.9, 1) }},
		{name: "a true confirmation satisfies", id: "confirm_scope", want: engine.StatusSatisfied, wantConf: 0.9,
			setup: func(m *engine.WorkingMemory) { enginetest.Set(m, "review.confirmed", true, 0.9, 1) }},
		{name: "deferred", id: "users_known", want: engine.StatusDeferred,
			setup: func(m *engine.WorkingMemory) { m.Extraction.Deferred = map[string]int{"users_known": 2} }},
		{name: "evidence after deferral ends it", id: "users_known", want: engine.StatusPartial, wantConf: 0.4,
			setup: func(m *engine.WorkingMemory) {
				m.Extraction.Deferred = map[string]int{"users_known": 2}
				enginetest.Set(m, "basics.users", "admins", 0.4, 3)
			}},
		{name: "satisfied beats deferral", id: "users_known", want: engine.StatusSatisfied, wantConf: 0.9,
			setup: func(m *engine.WorkingMemory) {
				enginetest.Set(m, "basics.users", "admins", 0.9, 1)
				m.Extraction.Deferred = map[string]int{"users_known": 2}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := enginetest.Memory(def)
			if tt.setup != nil {
				tt.setup(m)
			}
			o, _ := def.Obligation(tt.id)
			got := obligation.Item(def, o, m, reg)
			if got.Status != tt.want || got.Confidence != tt.wantConf {
				t.Errorf("status, confidence = %s, %v; want %s, %v", got.Status, got.Confidence, tt.want, tt.wantConf)
			}
		})
	}
}

// A list field with min_items ("at least three options") leaves its
// obligation partial until it holds that many; "there are none" (null)
// still answers it.
func TestMinItemsObligation(t *testing.T) {
	def := enginetest.Definition()
	fd, _ := def.Field("details.features")
	fd.MinItems = 3
	o, _ := def.Obligation("features_known")
	for _, tc := range []struct {
		value any
		want  engine.ObligationStatusValue
	}{
		{[]string{"tasks"}, engine.StatusPartial},
		{[]string{"tasks", "deadlines"}, engine.StatusPartial},
		{[]string{"tasks", "deadlines", "notifications"}, engine.StatusSatisfied},
		{nil, engine.StatusSatisfied},
	} {
		m := enginetest.Memory(def)
		enginetest.Set(m, "details.features", tc.value, 0.9, 1)
		if got := obligation.Item(def, o, m, enginetest.Registry()); got.Status != tc.want {
			t.Errorf("features %v: %s, want %s", tc.value, got.Status, tc.want)
		}
	}
}

func TestEvaluatorObligation(t *testing.T) {
	def := enginetest.Definition()
	reg := enginetest.Registry()
	m := enginetest.Memory(def)
	for _, tt := range []struct {
		eval      string
		threshold float64
		want      engine.ObligationStatusValue
	}{
		{"always", 0, engine.StatusSatisfied},
		{"half", 0, engine.StatusPartial},
		{"half", 0.5, engine.StatusSatisfied},
		{"never", 0, engine.StatusPending},
	} {
		o := &engine.Obligation{ID: "x", Category: "basics", Evaluator: tt.eval, Threshold: tt.threshold}
		if got := obligation.Item(def, o, m, reg).Status; got != tt.want {
			t.Errorf("%s at %v: status = %s, want %s", tt.eval, tt.threshold, got, tt.want)
		}
	}
}

// An obligation with fields and an evaluator is satisfied by either: the
// evaluator counts what the fields cannot show (an answer an inbound
// handoff carried), and without it the fields decide as they always did.
func TestFieldsAndEvaluatorObligation(t *testing.T) {
	def := enginetest.Definition()
	reg := enginetest.Registry()
	for _, tt := range []struct {
		name      string
		eval      string
		threshold float64
		conf      float64 // of basics.goal; 0 for none
		want      engine.ObligationStatusValue
		wantConf  float64
		wantMet   bool
	}{
		{name: "evaluator satisfies without the field", eval: "always", want: engine.StatusSatisfied, wantConf: 1},
		{name: "evaluator satisfies beside a weak field", eval: "always", conf: 0.4, want: engine.StatusSatisfied, wantConf: 1},
		{name: "field satisfies, evaluator scores nothing", eval: "never", conf: 0.9, want: engine.StatusSatisfied, wantConf: 0.9, wantMet: true},
		{name: "both", eval: "half", threshold: 0.5, conf: 0.9, want: engine.StatusSatisfied, wantConf: 0.9, wantMet: true},
		{name: "neither: a weak field is partial", eval: "never", conf: 0.4, want: engine.StatusPartial, wantConf: 0.4},
		{name: "neither: a partial score is partial", eval: "half", want: engine.StatusPartial, wantConf: 0.5},
		{name: "nothing", eval: "never", want: engine.StatusPending},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := enginetest.Memory(def)
			if tt.conf > 0 {
				enginetest.Set(m, "basics.goal", "ship it", tt.conf, 1)
			}
			o := &engine.Obligation{ID: "x", Category: "basics", Fields: []string{"basics.goal"}, Evaluator: tt.eval, Threshold: tt.threshold}
			got := obligation.Item(def, o, m, reg)
			if got.Status != tt.want || got.Confidence != tt.wantConf || (len(got.FieldsMet) > 0) != tt.wantMet {
				t.Errorf("status, confidence, fields met = %s, %v, %q; want %s, %v, met %v",
					got.Status, got.Confidence, got.FieldsMet, tt.want, tt.wantConf, tt.wantMet)
			}
		})
	}
}

func TestEvaluateSummary(t *testing.T) {
	def := enginetest.Definition()
	m := enginetest.Memory(def)
	m.Obligations.Focus = "users_known"
	enginetest.Set(m, "basics.goal", "ship", 0.9, 1)
	enginetest.Set(m, "basics.users", "ops", 0.3, 1)
	m.Extraction.Deferred = map[string]int{"name_known": 1}
	st := obligation.Evaluate(def, m, enginetest.Registry())
	want := engine.ObligationSummary{Total: 7, Satisfied: 1, Partial: 1, Pending: 4, Deferred: 1, RequiredTotal: 5, RequiredSatisfied: 1}
	if st.Summary != want {
		t.Errorf("summary = %+v, want %+v", st.Summary, want)
	}
	if st.Focus != "users_known" {
		t.Errorf("focus = %q, want it kept", st.Focus)
	}
}

func TestNext(t *testing.T) {
	def := enginetest.Definition()
	reg := enginetest.Registry()
	tests := []struct {
		name  string
		phase string
		setup func(m *engine.WorkingMemory)
		want  string
	}{
		{name: "critical first", phase: "INTRO", want: "goal_known"},
		{name: "then high", phase: "INTRO", want: "users_known",
			setup: func(m *engine.WorkingMemory) { enginetest.Set(m, "basics.goal", "x", 0.9, 1) }},
		{name: "deferred skipped", phase: "INTRO", want: "name_known",
			setup: func(m *engine.WorkingMemory) {
				enginetest.Set(m, "basics.goal", "x", 0.9, 1)
				m.Extraction.Deferred = map[string]int{"users_known": 1}
			}},
		{name: "checkpoint of the phase first", phase: "DETAILS", want: "budget_known"},
		{name: "partial before pending at equal rank", phase: "DETAILS", want: "timeline_known",
			setup: func(m *engine.WorkingMemory) {
				enginetest.Set(m, "details.budget", 10, 0.9, 1)
				enginetest.Set(m, "details.timeline", "soon", 0.2, 1)
			}},
		// budget_known is DETAILS's checkpoint: it waits for DETAILS.
		{name: "outside the focus when the phase is done", phase: "INTRO", want: "timeline_known",
			setup: func(m *engine.WorkingMemory) {
				enginetest.Set(m, "basics.goal", "x", 0.9, 1)
				enginetest.Set(m, "basics.users", "x", 0.9, 1)
				enginetest.Set(m, "basics.name", "x", 0.9, 1)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := enginetest.Memory(def)
			m.Phase.Current = tt.phase
			if tt.setup != nil {
				tt.setup(m)
			}
			m.Obligations = obligation.Evaluate(def, m, reg)
			got := obligation.Next(def, m)
			if got == nil || got.ID != tt.want {
				t.Errorf("Next = %v, want %s", got, tt.want)
			}
		})
	}
	// A checkpoint of a later phase waits for its phase, unless nothing else is left.
	m := enginetest.Memory(def)
	m.Phase.Current = "DETAILS"
	for _, p := range []string{"basics.goal", "basics.users", "basics.name", "details.budget", "details.timeline"} {
		enginetest.Set(m, p, "x", 0.9, 1)
	}
	m.Obligations = obligation.Evaluate(def, m, reg)
	def.Phases[1].FocusCategories = []string{"basics"} // confirm_scope (review) is outside the focus
	if got := obligation.Next(def, m); got == nil || got.ID != "features_known" {
		t.Errorf("Next = %v, want features_known before REVIEW's checkpoint", got)
	}
	enginetest.Set(m, "details.features", []string{"x"}, 0.9, 1)
	m.Obligations = obligation.Evaluate(def, m, reg)
	if got := obligation.Next(def, m); got == nil || got.ID != "confirm_scope" {
		t.Errorf("Next = %v, want confirm_scope once nothing else is left", got)
	}
	def.Phases[1].FocusCategories = nil

	m = enginetest.Memory(def)
	for _, f := range def.ExtractionSchema.Fields {
		enginetest.Set(m, f.Path, true, 1, 1)
	}
	m.Obligations = obligation.Evaluate(def, m, reg)
	if got := obligation.Next(def, m); got != nil {
		t.Errorf("Next with everything satisfied = %s, want nil", got.ID)
	}
}

func TestNextFollowsTheFocusOrder(t *testing.T) {
	def := enginetest.Definition()
	reg := enginetest.Registry()
	def.Phases[1].FocusCategories = []string{"details", "basics"}
	def.Phases[1].MandatoryCheckpoints = nil
	m := enginetest.Memory(def)
	m.Phase.Current = "DETAILS"
	m.Obligations = obligation.Evaluate(def, m, reg)
	steps := []struct {
		want string
		set  string
	}{
		{"budget_known", "details.budget"},     // required details first
		{"timeline_known", "details.timeline"}, // then the next required detail
		{"goal_known", "basics.goal"},          // then required basics (second focus category)
		{"users_known", "basics.users"},
		{"features_known", "details.features"}, // optional ones after every required one in focus
		{"name_known", "basics.name"},
		{"confirm_scope", ""}, // REVIEW's checkpoint, last
	}
	for _, s := range steps {
		got := obligation.Next(def, m)
		if got == nil || got.ID != s.want {
			t.Fatalf("Next = %v, want %s", got, s.want)
		}
		if s.set != "" {
			enginetest.Set(m, s.set, 1, 0.9, 1)
			m.Obligations = obligation.Evaluate(def, m, reg)
		}
	}
}

func TestAskRestsAnObligationAskedForInVain(t *testing.T) {
	def := enginetest.Definition()
	reg := enginetest.Registry()
	type turn struct {
		set   string // a field the turn's message answers, "" for none
		value string
		want  string
		asked int
	}
	run := func(t *testing.T, m *engine.WorkingMemory, turns []turn) {
		t.Helper()
		for i, tn := range turns {
			m.TurnNumber = i + 1
			asked, _ := m.Obligation(m.Obligations.Focus)
			before := engine.ObligationItem{}
			if asked != nil {
				before = *asked
			}
			if tn.set != "" {
				// Below the threshold, at the confidence of any earlier
				// answer: partial, and an answer all the same.
				enginetest.Set(m, tn.set, tn.value, 0.5, m.TurnNumber)
			}
			m.Obligations = obligation.Evaluate(def, m, reg)
			moved := before.ID != "" && obligation.Moved(def, m, before)
			got := obligation.Ask(def, m, moved)
			if got == nil || got.ID != tn.want || m.Obligations.Focus != tn.want || m.Obligations.Asked != tn.asked {
				t.Fatalf("turn %d: Ask = %v, focus %q asked %d; want %s asked %d (resting %v)",
					m.TurnNumber, got, m.Obligations.Focus, m.Obligations.Asked, tn.want, tn.asked, m.Obligations.Resting)
			}
		}
	}
	t.Run("asked twice in vain, it rests for three turns", func(t *testing.T) {
		m := enginetest.Memory(def)
		m.Phase.Current = "INTRO"
		run(t, m, []turn{
			{want: "goal_known", asked: 1},
			{want: "goal_known", asked: 2},
			{want: "users_known", asked: 1}, // goal_known rests at turns 3-5
			{want: "users_known", asked: 2},
			{want: "name_known", asked: 1}, // users_known rests too
			{want: "goal_known", asked: 1}, // back, at turn 6
		})
		if _, ok := m.Obligations.Resting["goal_known"]; ok {
			t.Errorf("resting %v: goal_known's rest is over", m.Obligations.Resting)
		}
	})
	t.Run("an answer that moves it keeps it asked", func(t *testing.T) {
		m := enginetest.Memory(def)
		m.Phase.Current = "INTRO"
		run(t, m, []turn{
			{want: "goal_known", asked: 1},
			{set: "basics.goal", value: "ship it", want: "goal_known", asked: 1}, // partial now: asked again, as a first time
			{want: "goal_known", asked: 2},
			{want: "users_known", asked: 1},
		})
	})
	t.Run("another answer at the same confidence keeps it asked", func(t *testing.T) {
		m := enginetest.Memory(def)
		m.Phase.Current = "INTRO"
		run(t, m, []turn{
			{want: "goal_known", asked: 1},
			{set: "basics.goal", value: "ship it", want: "goal_known", asked: 1},
			{set: "basics.goal", value: "ship it soon", want: "goal_known", asked: 1},
			{set: "basics.goal", value: "ship it this year", want: "goal_known", asked: 1},
			{want: "goal_known", asked: 2},
		})
	})
	t.Run("with nothing else left it is asked again", func(t *testing.T) {
		m := enginetest.Memory(def)
		m.Phase.Current = "REVIEW"
		for _, f := range def.ExtractionSchema.Fields {
			if f.Path != "review.confirmed" {
				enginetest.Set(m, f.Path, "x", 0.95, 0)
			}
		}
		run(t, m, []turn{
			{want: "confirm_scope", asked: 1},
			{want: "confirm_scope", asked: 2},
			{want: "confirm_scope", asked: 3},
		})
	})
	t.Run("a session of memory version 1 keeps asking", func(t *testing.T) {
		m := enginetest.Memory(def)
		m.SchemaVersion = 1
		m.Phase.Current = "INTRO"
		run(t, m, []turn{
			{want: "goal_known"}, {want: "goal_known"}, {want: "goal_known"}, {want: "goal_known"},
		})
	})
}
