package runner_test

import (
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/completeness"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/services/runner"
)

// scriptedTurn is one user message of a scripted conversation, with the
// phase the conversation must be in after it and fields it must extract.
type scriptedTurn struct {
	msg   string
	phase string
	// fields must be among the fields logged this turn.
	fields []string
}

func messages(turns []scriptedTurn) []string {
	out := make([]string, len(turns))
	for i, t := range turns {
		out[i] = t.msg
	}
	return out
}

// A coffee roaster's owner builds a business profile: the foundations, the
// team (volunteered in the first message, and corrected later), operations,
// technology, finances (the funding question is put off), compliance and
// growth, then confirms the profile and asks for ideas.
var businessProfileScript = []scriptedTurn{
	{"Hi! We're a specialty coffee roaster called Northside Roasters, based in Leeds, with 12 employees. We started 8 years ago and are well established now.",
		"FOUNDATIONS", []string{"industry.sector", "industry.business_name", "industry.location", "industry.business_stage",
			"industry.years_operating", "team_composition.headcount"}},
	{"Both: it's B2B and B2C.", "FOUNDATIONS", []string{"business_model.model_type"}},
	{"Most of our revenue comes from wholesale coffee, online subscriptions and a small retail counter.",
		"FOUNDATIONS", []string{"business_model.revenue_streams"}},
	{"Wholesale is priced per kilo at about $28, and subscriptions cost $18 per bag each month.",
		"FOUNDATIONS", []string{"business_model.pricing_model", "product_offering.price_points"}},
	{"Customers choose us because we roast to order and deliver within 48 hours, so the coffee is always fresh.",
		"FOUNDATIONS", []string{"business_model.value_proposition"}},
	{"Our customers are independent cafés, small offices and home coffee lovers.", "FOUNDATIONS", []string{"target_market.customer_segments"}},
	{"Wholesale is mostly local to Yorkshire, but we ship subscriptions nationwide.", "FOUNDATIONS", []string{"target_market.geography"}},
	{"Our main competitors are Origin Coffee, Dark Woods and the supermarket brands.", "FOUNDATIONS", []string{"target_market.competitors"}},
	{"Our product range is single-origin beans, house espresso blends and barista training for café staff.",
		"OPERATIONS", []string{"product_offering.core_products"}},
	{"Actually, we're a team of 14 now. The team includes two co-founders, a head roaster, three roasters, two packers and a sales manager.",
		"OPERATIONS", []string{"team_composition.headcount", "team_composition.key_roles"}},
	{"Our weekly workflow: roasting twice a week, packing subscription orders, and van deliveries to cafés.",
		"OPERATIONS", []string{"operations.core_processes"}},
	{"Our bottlenecks are hand-printed labels and slow manual packing.", "OPERATIONS", []string{"operations.bottlenecks"}},
	{"A typical customer journey starts with a free tasting, then a trial order, then a standing weekly order.",
		"OPERATIONS", []string{"customer_experience.customer_journey"}},
	{"Customers reach us by email, phone and WhatsApp.", "TECHNOLOGY", []string{"customer_experience.support_channels"}},
	{"We run the business on Shopify, Xero and a lot of spreadsheets.",
		"TECHNOLOGY", []string{"technology_stack.current_systems", "technology_stack.digital_maturity"}},
	{"The main problems: double entry between systems, no stock sync, and slow invoicing.",
		"TECHNOLOGY", []string{"technology_stack.tech_pain_points"}},
	{"The metrics we watch are monthly revenue, subscriber churn and active wholesale accounts.",
		"TECHNOLOGY", []string{"data_and_analytics.key_metrics"}},
	{"We track orders, subscriber details and roast logs.", "TECHNOLOGY", []string{"data_and_analytics.data_collected"}},
	{"We partner with two green coffee importers and a local bakery that stocks our beans.",
		"TECHNOLOGY", []string{"partnerships_and_integrations.key_partners", "operations.supply_chain"}},
	{"Shopify syncs with Xero for invoices, and our courier app integrates with Shopify.",
		"COMMERCIALS", []string{"partnerships_and_integrations.system_integrations"}},
	{"Annual revenue is about $1.2M.", "COMMERCIALS", []string{"financial_model.annual_revenue"}},
	{"We are profitable, with gross margins around 45%.", "COMMERCIALS",
		[]string{"financial_model.profitability", "financial_model.gross_margin"}},
	{"I'd prefer to skip that one for now.", "COMMERCIALS", nil},
	{"New customers mostly find us through Instagram, word of mouth and trade shows.",
		"COMMERCIALS", []string{"brand_and_marketing.acquisition_channels"}},
	{"We're known for bright, fruity light roasts and a friendly, no-snobbery brand.",
		"RISK_AND_GROWTH", []string{"brand_and_marketing.brand_positioning"}},
	{"Regulations we follow: food safety, allergen labelling and packaging waste rules. We are also certified organic.",
		"RISK_AND_GROWTH", []string{"regulatory_and_compliance.regulations", "regulatory_and_compliance.certifications"}},
	{"We store customer addresses and payment details through Shopify, and we follow GDPR for personal data.",
		"RISK_AND_GROWTH", []string{"regulatory_and_compliance.data_privacy"}},
	{"Our goals are doubling subscriptions and opening a second roastery within three years.",
		"RISK_AND_GROWTH", []string{"growth_and_scaling.growth_goals", "growth_and_scaling.growth_timeline"}},
	{"What holds us back is roasting capacity and cash for a bigger roaster.",
		"PROFILE_REVIEW", []string{"growth_and_scaling.scaling_constraints"}},
	{"Yes, that's right. Now I'd like to brainstorm ideas for growing the subscription side.",
		"PROFILE_REVIEW", []string{"review.profile_confirmed"}},
}

// The roaster's owner runs an ideation on subscriber churn: frames the
// problem, generates six ideas (first thoughts, a bold one, the
// subscriber's view), evaluates, refines the favourite and selects it.
var ideationScript = []scriptedTurn{
	{"Our problem is that coffee subscribers cancel after about three months, and I need ideas to keep them longer.",
		"PROBLEM_FRAMING", []string{"problem_space.problem_statement"}},
	{"It mostly affects new subscribers who signed up through Instagram offers. They cancel because they get bored of the same coffee.",
		"PROBLEM_FRAMING", []string{"problem_space.affected_users", "problem_space.root_causes"}},
	{"Churn costs us about $4,000 a month in lost revenue.", "PROBLEM_FRAMING", []string{"problem_space.impact"}},
	{"We only have a budget of $5k and two people to work on it.", "PROBLEM_FRAMING", []string{"problem_space.constraints"}},
	{"Success would be keeping subscribers past six months and cutting churn by a third.",
		"DIVERGE", []string{"problem_space.success_criteria"}},
	{"A few ideas: a pause button in place of cancelling, a rotating origin of the month, and brewing guides with every bag.",
		"DIVERGE", []string{"idea_generation.ideas"}},
	{"Something bold: a members-only tasting club with live online cuppings with our roasters.",
		"DIVERGE", []string{"idea_generation.wild_ideas"}},
	{"From a subscriber's point of view, they would want to choose their next coffee and get a reward after six months.",
		"EVALUATE", []string{"idea_generation.perspective_ideas"}},
	{"We should judge them on impact on churn, cost to run and how quickly we can launch.",
		"EVALUATE", []string{"evaluation.evaluation_criteria"}},
	{"My shortlist is the pause button, origin of the month and the six-month reward.", "EVALUATE", []string{"evaluation.shortlist"}},
	{"Feasibility: the pause button is easy in Shopify, and the tasting club needs a lot of effort.",
		"EVALUATE", []string{"evaluation.feasibility_notes"}},
	{"Impact-wise: the origin of the month would help most, and the pause button saves some cancellations.",
		"REFINE", []string{"evaluation.impact_notes"}},
	{"The concept is an origin-of-the-month subscription: each month subscribers get a new single origin with tasting notes and a story about the farm.",
		"REFINE", []string{"refinement.refined_concept"}},
	{"It is for subscribers who get bored after a few months.", "REFINE", []string{"refinement.concept_users"}},
	{"Key features: a monthly origin rotation, tasting cards, and an option to skip a month.", "REFINE", []string{"refinement.key_features"}},
	{"The main risk is that sourcing a new origin every month gets expensive.", "SELECT", []string{"refinement.risks"}},
	{"Let's go with the origin of the month because it tackles boredom, the main reason people cancel.",
		"SELECT", []string{"selection.selected_idea", "selection.selection_rationale"}},
	{"Next steps: line up three origins with our importers, design the tasting cards, and pilot it with 50 subscribers.",
		"SELECT", []string{"selection.next_steps", "refinement.validation_plan"}},
	{"Yes, let's do it.", "SELECT", []string{"selection.selection_confirmed"}},
}

// The scripts of offline_test.go's project-discovery and exploration
// conversations, as plain messages.
var projectDiscoveryMessages = []string{
	"Hi! Our field technicians keep losing track of their jobs because everything runs on paper and spreadsheets. We want to build a mobile app to fix that.",
	"Last month we missed three urgent repairs and lost a big customer. That's why it became a priority now.",
	"About 40 technicians, plus 5 office dispatchers who plan the routes.",
	"They need to see their daily jobs, record the work done, take photos and get the customer's signature.",
	"The paperwork is slow and they waste an hour every evening on double entry.",
	"We want to cut missed appointments in half and reduce the time spent on paperwork by 30 percent.",
	"We need it within 6 months, before the busy winter season.",
	"Our budget is around $60k to $80k.",
	"It has to run on Android tablets and be hosted on Azure, since we already use Microsoft 365.",
	"It needs to sync with our scheduling system and with QuickBooks for invoicing.",
	"I'm not sure yet who will build it, can we skip that for now?",
	"It must have a job list, offline sync, photo uploads and customer signatures.",
	"Yes, it stores customer addresses and signatures, so it must be secure and only our staff may see customer data.",
	"Ideally every technician starts the day with a clear schedule, so that no job is forgotten.",
	"Actually, our budget is now up to $90k.",
	"The first version should cover the job list and signatures; invoicing can wait for later versions.",
	"It would save each technician about five hours a week, which is worth a lot of money to us.",
	"Yes, that's right.",
	"Downtime in the morning would hurt, and we need daily backups.",
	"What if a technician is in a basement with no connection? It should keep working and sync later.",
	"We would launch with a pilot of ten technicians.",
	"This looks complete. Could we explore options for how to build it?",
}

var explorationMessages = []string{
	"I want to figure out the best way to build a booking system for my yoga studio.",
	"I've heard of tools like Mindbody, but I have never built software myself.",
	"I'm not sure how hosting works and I don't understand what a custom build would cost.",
	"We are considering an off-the-shelf tool like Mindbody, a no-code platform, or a custom build.",
	"I like that an off-the-shelf tool is cheap and quick to start.",
	"I'm worried about monthly fees and being locked in.",
	"In my own words: an off-the-shelf tool is fastest, no-code is flexible, and a custom build gives full control but costs the most.",
	"Our budget is limited to $5,000 and we must be live within two months.",
	"For us, speed matters more than control, so cost versus flexibility is the main tradeoff.",
	"I'll go with the off-the-shelf tool because it is cheap and fast to start.",
}

// play runs a conversation on a new session of engineID whose runner and
// extraction pipeline are shared's (nil: the session's own).
func play(t *testing.T, engineID string, shared *session, msgs []string) (*session, []*runner.Result) {
	t.Helper()
	s := newSession(t, engineID)
	if shared != nil {
		s.run, s.pipe = shared.run, shared.pipe
	}
	out := make([]*runner.Result, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, s.say(m))
	}
	return s, out
}

// One engine-agnostic test: the four shipped engines run through the very
// same runner and extraction pipeline (offline provider), each with a
// scripted conversation, and every assertion is derived from the engine's
// configuration — never from which engine it is.
func TestAllEnginesThroughOneRunner(t *testing.T) {
	scripts := map[string][]string{
		"project-discovery": projectDiscoveryMessages,
		"exploration":       explorationMessages,
		"business-profile":  messages(businessProfileScript),
		"ideation":          messages(ideationScript),
	}
	ids := make([]string, 0, len(scripts))
	for id := range scripts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	type played struct {
		s       *session
		results []*runner.Result
	}
	// A pass plays the four conversations, in order, through one runner
	// and one pipeline (those of a first session, with a fresh clock).
	pass := func() map[string]played {
		shared := newSession(t, "project-discovery")
		out := map[string]played{}
		for _, id := range ids {
			s, results := play(t, id, shared, scripts[id])
			if s.run != shared.run || s.pipe != shared.pipe {
				t.Fatal("not the shared runner")
			}
			out[id] = played{s, results}
		}
		return out
	}
	first, second := pass(), pass()
	types := map[engine.EngineType]bool{}
	for _, id := range ids {
		t.Run(id, func(t *testing.T) {
			s, results := first[id].s, first[id].results
			def := s.def
			types[def.EngineType] = true
			lastOrder := 0
			for _, p := range def.Phases {
				lastOrder = max(lastOrder, p.Order)
			}
			var exits []*runner.ExitTransition
			var visible []map[string]bool
			finalAt := 0
			for i, res := range results {
				turn := i + 1
				checkTurn(t, s, res, turn)
				if res.Effects.Exit != nil {
					exits = append(exits, res.Effects.Exit)
				}
				vis := map[string]bool{}
				for _, sec := range res.Sidebar.Sections {
					vis[sec.ID] = sec.Visible
				}
				visible = append(visible, vis)
				if p, _ := def.Phase(res.Phase); p.Order == lastOrder && finalAt == 0 {
					finalAt = turn
				}
			}
			start, last := results[0], results[len(results)-1]
			st := last.State

			// Phase progress: the conversation reaches the last phase, and
			// every phase it left had its required checkpoints satisfied.
			if finalAt == 0 {
				t.Errorf("never reached the last phase; ended in %s", last.Phase)
			}
			for _, h := range append(slices.Clone(st.Phase.History), engine.PhaseRecord{PhaseID: st.Phase.Current}) {
				p, _ := def.Phase(h.PhaseID)
				for _, c := range p.MandatoryCheckpoints {
					if o, _ := st.Obligation(c.ObligationID); c.Required && o.Status != engine.StatusSatisfied {
						t.Errorf("checkpoint %s of %s is %s", c.ObligationID, p.ID, o.Status)
					}
				}
			}
			// Completeness rises to the engine's ready threshold.
			if last.Completeness.Overall <= start.Completeness.Overall || !last.Completeness.IsReady {
				t.Errorf("completeness %v -> %+v, want rising to ready (%.2f)", start.Completeness.Overall, last.Completeness,
					def.CompletenessModel.ReadyThreshold)
			}
			// Obligations get satisfied.
			if a, b := satisfied(start.State), satisfied(st); b <= a || b < len(def.Obligations)/2 {
				t.Errorf("satisfied obligations %d -> %d of %d", a, b, len(def.Obligations))
			}
			// Some dynamic section unfolds during the conversation.
			unfolded := false
			for _, d := range def.SidebarConfig.DynamicSections {
				if !visible[0][d.Section.ID] && visible[len(visible)-1][d.Section.ID] {
					unfolded = true
				}
			}
			if !unfolded {
				t.Errorf("no dynamic section unfolded: first %v, last %v", visible[0], visible[len(visible)-1])
			}
			// Exactly one exit transition fires, to a target the engine
			// declares.
			if len(exits) != 1 {
				t.Fatalf("exit transitions fired: %+v", exits)
			}
			declared := slices.ContainsFunc(def.ExitTransitions, func(x engine.ExitTransition) bool {
				return x.TargetEngine == exits[0].TargetEngine && x.Reason == exits[0].Reason
			})
			if !declared || st.Exit == nil || st.Exit.TargetEngine != exits[0].TargetEngine {
				t.Errorf("exit = %+v (state %+v), not declared by the engine", exits[0], st.Exit)
			}
			// Determinism: the same script gives the same state hash at every turn.
			again := second[id].results
			for i := range results {
				if results[i].StateHash != again[i].StateHash {
					t.Fatalf("turn %d: state hash %s, then %s", i+1, results[i].StateHash, again[i].StateHash)
				}
			}
			t.Logf("%s (%s): %d turns, last phase at turn %d, completeness %.2f, %d/%d obligations satisfied, exit to %s at turn %d",
				id, def.EngineType, len(results), finalAt, last.Completeness.Overall, satisfied(st), len(def.Obligations),
				exits[0].TargetEngine, exits[0].AtTurn)
		})
	}
	if len(types) != 3 {
		t.Errorf("engine types covered: %v, want extract-dominant, inform-dominant and balanced", types)
	}
}

// checkTurn asserts what the configuration says about one turn's result.
func checkTurn(t *testing.T, s *session, res *runner.Result, turn int) {
	t.Helper()
	def, st := s.def, res.State
	if st.EngineID != def.EngineID || st.EngineType != def.EngineType || st.EngineVersion != def.Version || st.TurnNumber != turn {
		t.Errorf("turn %d: state is %s %s %s at turn %d", turn, st.EngineID, st.EngineType, st.EngineVersion, st.TurnNumber)
	}
	if !slices.Equal(res.Steps, runner.Steps()) {
		t.Errorf("turn %d: steps %v", turn, res.Steps)
	}
	// Every reply asks for more, but the one that hands off: it says where
	// the user's next message goes.
	switch {
	case res.Degraded:
		t.Errorf("turn %d: reply %q degraded", turn, res.Reply)
	case res.Effects.Exit != nil:
		if strings.Contains(res.Reply, "?") || !strings.HasSuffix(res.Reply, "Your next message goes there.") {
			t.Errorf("turn %d: the reply that hands off asks what the user cannot answer here: %q", turn, res.Reply)
		}
	case !strings.Contains(res.Reply, "?"):
		t.Errorf("turn %d: reply %q asks nothing", turn, res.Reply)
	}
	// A phase change follows an edge of the phase graph.
	cur, ok := def.Phase(res.Phase)
	if !ok || st.Phase.Current != res.Phase {
		t.Fatalf("turn %d: phase %s (state %s)", turn, res.Phase, st.Phase.Current)
	}
	if pc := res.PhaseChange; pc != nil {
		from, _ := def.Phase(pc.From)
		target := cmpOr(from.TransitionTriggers[pc.Trigger].TargetPhase, from.NextPhase)
		if pc.To != res.Phase || target != pc.To {
			t.Errorf("turn %d: change %+v does not follow trigger %d of %s", turn, pc, pc.Trigger, pc.From)
		}
	}
	// The techniques come from the phase's active techniques.
	for _, id := range res.Techniques {
		if !slices.Contains(cur.ActiveTechniques, id) {
			t.Errorf("turn %d: technique %s is not active in %s", turn, id, cur.ID)
		}
	}
	// Completeness is scored by the configured heuristics.
	var keys []string
	for _, h := range completeness.Heuristics(def) {
		keys = append(keys, cmpOr(h.Category, h.ID))
	}
	var got []string
	for k := range res.Completeness.ByCategory {
		got = append(got, k)
	}
	slices.Sort(keys)
	slices.Sort(got)
	if !slices.Equal(got, keys) {
		t.Errorf("turn %d: completeness keys %v, want %v", turn, got, keys)
	}
	if res.Completeness.IsReady != (res.Completeness.Overall+1e-9 >= def.CompletenessModel.ReadyThreshold) {
		t.Errorf("turn %d: completeness %+v against threshold %v", turn, res.Completeness, def.CompletenessModel.ReadyThreshold)
	}
	// The sidebar follows its configuration: static sections always,
	// dynamic ones while their condition holds (in their phases); then the
	// background tasks, once there are some.
	sb, cfg := res.Sidebar, def.SidebarConfig
	bt := st.BackgroundTasks
	if n := len(bt.Pending) + len(bt.Completed); n > 0 {
		last := sb.Sections[len(sb.Sections)-1]
		if last.ID != runner.SidebarTasksSection || len(last.Items) != n || !last.Visible {
			t.Fatalf("turn %d: %d tasks, sidebar ends with %+v", turn, n, last)
		}
		sb.Sections = sb.Sections[:len(sb.Sections)-1]
	}
	if len(sb.Sections) != len(cfg.StaticSections)+len(cfg.DynamicSections) {
		t.Fatalf("turn %d: %d sections", turn, len(sb.Sections))
	}
	env := engine.CondEnv{Memory: st, Registry: s.reg}
	for i, sec := range sb.Sections {
		want, cats := true, []string(nil)
		if i < len(cfg.StaticSections) {
			cats = cfg.StaticSections[i].ObligationCategories
		} else {
			d := cfg.DynamicSections[i-len(cfg.StaticSections)]
			cats = d.Section.ObligationCategories
			want = d.AppearsWhen.Holds(env) && (len(d.Phases) == 0 || slices.Contains(d.Phases, st.Phase.Current))
		}
		n := 0
		for _, o := range def.Obligations {
			if slices.Contains(cats, o.Category) {
				n++
			}
		}
		if sec.Visible != want || len(sec.Items) != n {
			t.Errorf("turn %d: section %s visible %v with %d items, want %v with %d", turn, sec.ID, sec.Visible, len(sec.Items), want, n)
		}
	}
	if cfg.PhaseIndicator.Show {
		label := cmpOr(cfg.PhaseIndicator.Labels[cur.ID], cur.DisplayName)
		if sb.PhaseIndicator == nil || sb.PhaseIndicator.Label != label || sb.PhaseIndicator.Order != cur.Order {
			t.Errorf("turn %d: phase indicator %+v, want %q", turn, sb.PhaseIndicator, label)
		}
	}
	if cfg.ProgressBar.Show {
		if sb.ProgressBar == nil || sb.ProgressBar.Percentage != int(math.Round(res.Completeness.Overall*100)) {
			t.Errorf("turn %d: progress bar %+v for completeness %v", turn, sb.ProgressBar, res.Completeness.Overall)
		}
	}
}

func satisfied(m *engine.WorkingMemory) int {
	n := 0
	for _, o := range m.Obligations.Items {
		if o.Status == engine.StatusSatisfied {
			n++
		}
	}
	return n
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// runScript plays a scripted conversation on a new session, checking each
// turn's phase and extracted fields.
func runScript(t *testing.T, engineID string, script []scriptedTurn) (*session, []*runner.Result) {
	t.Helper()
	s := newSession(t, engineID)
	var out []*runner.Result
	for i, step := range script {
		res := s.say(step.msg)
		out = append(out, res)
		if res.Phase != step.phase {
			t.Fatalf("turn %d: phase = %s, want %s (blocked by %v)", i+1, res.Phase, step.phase, res.PhaseBlockedBy)
		}
		logged := map[string]bool{}
		for _, e := range res.Effects.ExtractionLog {
			logged[e.FieldPath] = true
		}
		for _, f := range step.fields {
			if !logged[f] {
				t.Errorf("turn %d: %s not extracted (updated %v)", i+1, f, res.Telemetry.FieldsUpdated)
			}
		}
	}
	return s, out
}

func visibleSections(res *runner.Result) []string {
	var out []string
	for _, sec := range res.Sidebar.Sections {
		if sec.Visible && sec.ID != runner.SidebarTasksSection {
			out = append(out, sec.ID)
		}
	}
	return out
}

// The scripted business-profile conversation, offline: the walk through
// the five groups of dimensions, the sidebar unfolding like a form, a
// correction and a deferral, the review with its confirmation, and the exit
// to ideation (or, when the owner asks for a project, to project-discovery).
func TestOfflineBusinessProfileConversation(t *testing.T) {
	s, results := runScript(t, "business-profile", businessProfileScript)
	st := s.state
	last := results[len(results)-1]

	// The walk: each group's phase entered once, in order.
	var history []string
	for _, h := range st.Phase.History {
		history = append(history, h.PhaseID)
	}
	if got := strings.Join(history, ","); got != "FOUNDATIONS,OPERATIONS,TECHNOLOGY,COMMERCIALS,RISK_AND_GROWTH" {
		t.Errorf("phase history = %s", got)
	}
	reviewAt := slices.IndexFunc(results, func(r *runner.Result) bool { return r.Phase == "PROFILE_REVIEW" }) + 1
	if reviewAt != len(results)-1 {
		t.Errorf("PROFILE_REVIEW reached at turn %d, want %d", reviewAt, len(results)-1)
	}
	// The review opens by reading the profile back and asking for the
	// confirmation (its mandatory checkpoint).
	if r := results[reviewAt-1].Reply; !strings.Contains(r, "Industry: specialty coffee roaster") ||
		!strings.HasSuffix(r, "Does this profile capture your business correctly, or should we change anything?") {
		t.Errorf("review reply = %q", r)
	}

	// The form unfolds: the team was mentioned in the first message, so its
	// group shows from the start; the others appear as the walk reaches them.
	wantVisible := map[int]string{
		1:  "business_foundations,operations_and_customers",
		13: "business_foundations,operations_and_customers",
		14: "business_foundations,operations_and_customers,technology_and_data",
		20: "business_foundations,operations_and_customers,technology_and_data,finance_and_brand",
		25: "business_foundations,operations_and_customers,technology_and_data,finance_and_brand,compliance_and_growth",
		29: "business_foundations,operations_and_customers,technology_and_data,finance_and_brand,compliance_and_growth,profile_review",
	}
	for turn, want := range wantVisible {
		if got := strings.Join(visibleSections(results[turn-1]), ","); got != want {
			t.Errorf("turn %d: visible sections %s, want %s", turn, got, want)
		}
	}
	if pi := last.Sidebar.PhaseIndicator; pi.Label != "Reviewing Your Profile" || pi.Order != 6 || pi.Total != 6 {
		t.Errorf("phase indicator = %+v", pi)
	}

	// The correction superseded the head count; the funding question was
	// put off and stays a gap rather than holding the walk.
	if f := st.Extraction.Fields["team_composition.headcount"]; string(f.Value) != "14" || f.SupersededPrevious == nil ||
		string(f.SupersededPrevious.Value) != "12" {
		t.Errorf("headcount = %s (previous %+v)", f.Value, f.SupersededPrevious)
	}
	var supersede bool
	for _, e := range results[9].Effects.ExtractionLog {
		supersede = supersede || (e.FieldPath == "team_composition.headcount" && e.ExtractionType == extraction.TypeSupersede)
	}
	if !supersede {
		t.Errorf("turn 10 log = %+v", results[9].Effects.ExtractionLog)
	}
	if o, _ := st.Obligation("funding_known"); o.Status != engine.StatusDeferred {
		t.Errorf("funding_known = %+v, want deferred", o)
	}
	if !slices.Contains(st.Completeness.Gaps, "financial_model.funding") {
		t.Errorf("gaps %v do not name the funding", st.Completeness.Gaps)
	}
	// Every other required obligation is satisfied, and every dimension
	// scores.
	for _, o := range st.Obligations.Items {
		if o.Required && o.ID != "funding_known" && o.Status != engine.StatusSatisfied {
			t.Errorf("required obligation %s is %s", o.ID, o.Status)
		}
	}
	for dim, score := range st.Completeness.ByCategory {
		if score < 0.5 {
			t.Errorf("dimension %s scores %v", dim, score)
		}
	}
	if !st.Completeness.IsReady || st.Completeness.Overall < 0.75 {
		t.Errorf("completeness = %+v", st.Completeness)
	}
	// The market scan was dispatched once the industry and the customers
	// were known.
	var dispatched []int
	for i, r := range results {
		for _, task := range r.Effects.Tasks {
			if task.TaskID == "market_scan" {
				dispatched = append(dispatched, i+1)
			}
		}
	}
	if !slices.Equal(dispatched, []int{6}) {
		t.Errorf("market_scan dispatched at turns %v, want [6]", dispatched)
	}
	// Confirmed, the owner asks for ideas: the exit to ideation fires.
	if o, _ := st.Obligation("profile_confirmed"); o.Status != engine.StatusSatisfied {
		t.Errorf("profile_confirmed = %+v", o)
	}
	if x := last.Effects.Exit; x == nil || x.TargetEngine != "ideation" || x.AtTurn != len(results) {
		t.Errorf("exit = %+v", x)
	}
	for _, r := range results[:len(results)-1] {
		if r.Effects.Exit != nil {
			t.Errorf("early exit %+v", r.Effects.Exit)
		}
	}
	t.Logf("business-profile: PROFILE_REVIEW at turn %d of %d, completeness %.4f, exit to %s",
		reviewAt, len(results), st.Completeness.Overall, last.Effects.Exit.TargetEngine)

	t.Run("exit to project-discovery", func(t *testing.T) {
		script := slices.Clone(businessProfileScript[:len(businessProfileScript)-1])
		script = append(script, scriptedTurn{"Yes, that's right. Next I'd like to scope a project for a wholesale ordering portal.",
			"PROFILE_REVIEW", []string{"review.profile_confirmed"}})
		_, results := runScript(t, "business-profile", script)
		if x := results[len(results)-1].Effects.Exit; x == nil || x.TargetEngine != "project-discovery" {
			t.Errorf("exit = %+v", x)
		}
	})
	t.Run("no exit before the profile is confirmed", func(t *testing.T) {
		script := slices.Clone(businessProfileScript[:len(businessProfileScript)-2])
		script = append(script, scriptedTurn{"What holds us back is roasting capacity. Could we brainstorm ideas now?", "PROFILE_REVIEW", nil})
		_, results := runScript(t, "business-profile", script)
		if x := results[len(results)-1].Effects.Exit; x != nil {
			t.Errorf("exit = %+v before the confirmation", x)
		}
	})
}

// The scripted ideation conversation, offline: framing, divergence until
// six ideas, evaluation, refinement and selection, then the exit to
// project-discovery; and the other ways out of divergence and of the engine.
func TestOfflineIdeationConversation(t *testing.T) {
	s, results := runScript(t, "ideation", ideationScript)
	st := s.state
	last := results[len(results)-1]
	var history []string
	for _, h := range st.Phase.History {
		history = append(history, h.PhaseID)
	}
	if got := strings.Join(history, ","); got != "PROBLEM_FRAMING,DIVERGE,EVALUATE,REFINE" {
		t.Errorf("phase history = %s", got)
	}
	selectAt := slices.IndexFunc(results, func(r *runner.Result) bool { return r.Phase == "SELECT" }) + 1
	// Divergence ended with six distinct ideas across the idea fields.
	if r := results[7]; r.PhaseChange == nil || r.PhaseChange.From != "DIVERGE" || s.reg.Evaluate("ideaFluency", r.State) != 1 {
		t.Errorf("turn 8: change %+v, fluency %v", r.PhaseChange, s.reg.Evaluate("ideaFluency", r.State))
	}
	// Selection is asked first in SELECT: it is the phase's checkpoint.
	if r := results[selectAt-1].Reply; !strings.HasSuffix(r, "Which idea do you want to take forward?") {
		t.Errorf("SELECT opens with %q", r)
	}
	if got := st.Extraction.String("selection.selected_idea"); got != "origin of the month" {
		t.Errorf("selected idea = %q", got)
	}
	if got := st.Extraction.String("selection.selection_rationale"); !strings.Contains(got, "tackles boredom") {
		t.Errorf("rationale = %q", got)
	}
	// Maturity rises through its levels to "idea selected".
	var levels []string
	for _, r := range results {
		if len(levels) == 0 || levels[len(levels)-1] != r.Completeness.Level {
			levels = append(levels, r.Completeness.Level)
		}
	}
	if got := strings.Join(levels, " > "); got != "exploring the problem > problem framed > ideas generated > ideas evaluated > concept refined > idea selected" {
		t.Errorf("maturity levels = %s", got)
	}
	for i := 1; i < len(results); i++ {
		if results[i].Completeness.Overall < results[i-1].Completeness.Overall {
			t.Errorf("turn %d: maturity fell from %v to %v", i+1, results[i-1].Completeness.Overall, results[i].Completeness.Overall)
		}
	}
	if x := last.Effects.Exit; x == nil || x.TargetEngine != "project-discovery" || x.AtTurn != len(results) {
		t.Errorf("exit = %+v", x)
	}
	t.Logf("ideation: SELECT at turn %d of %d, completeness %.4f (%s), exit to %s",
		selectAt, len(results), st.Completeness.Overall, st.Completeness.Level, last.Effects.Exit.TargetEngine)

	t.Run("divergence ends when the ideas dry up", func(t *testing.T) {
		script := slices.Clone(ideationScript[:7])
		script = append(script, scriptedTurn{"Honestly, I'm not sure what else.", "EVALUATE", nil})
		s, results := runScript(t, "ideation", script)
		if n := s.reg.Evaluate("ideaFluency", s.state); n >= 1 {
			t.Errorf("fluency = %v, want fewer than six ideas", n)
		}
		if o, _ := s.state.Obligation("perspective_ideas_gathered"); o.Status != engine.StatusDeferred {
			t.Errorf("perspective_ideas_gathered = %+v", o)
		}
		if pc := results[7].PhaseChange; pc == nil || pc.From != "DIVERGE" || pc.To != "EVALUATE" {
			t.Errorf("phase change = %+v", pc)
		}
	})
	t.Run("exit to exploration", func(t *testing.T) {
		script := slices.Clone(ideationScript[:5])
		script = append(script, scriptedTurn{"Before we brainstorm, I'd like to learn about the solution options out there.", "DIVERGE", nil})
		_, results := runScript(t, "ideation", script)
		if x := results[len(results)-1].Effects.Exit; x == nil || x.TargetEngine != "exploration" {
			t.Errorf("exit = %+v", x)
		}
	})
	t.Run("no exit to exploration before the problem is framed", func(t *testing.T) {
		script := []scriptedTurn{{"I'd like to learn about the solution options for a loyalty scheme.", "PROBLEM_FRAMING", nil}}
		_, results := runScript(t, "ideation", script)
		if x := results[0].Effects.Exit; x != nil {
			t.Errorf("exit = %+v", x)
		}
	})
}
