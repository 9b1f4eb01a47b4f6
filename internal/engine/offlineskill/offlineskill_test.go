package offlineskill_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/contextasm"
	"github.com/praetorhq/praetor/internal/engine/enginetest"
	"github.com/praetorhq/praetor/internal/engine/extraction"
	"github.com/praetorhq/praetor/internal/engine/handoff"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/engine/tasks"
	"github.com/praetorhq/praetor/internal/engine/technique"
	"github.com/praetorhq/praetor/internal/llm"
	"github.com/praetorhq/praetor/pkg/contracts"
)

func discovery(t testing.TB) *engine.Definition {
	t.Helper()
	cat := enginetest.Shipped(t)
	def, _ := cat.Get("project-discovery")
	return def
}

// asking returns a shipped engine and the id of the obligation that asks
// for field.
func asking(t testing.TB, engineID, field string) (*engine.Definition, string) {
	t.Helper()
	def, ok := enginetest.Shipped(t).Get(engineID)
	if !ok {
		t.Fatalf("no shipped engine %s", engineID)
	}
	for _, o := range def.Obligations {
		if slices.Contains(o.Fields, field) {
			return def, o.ID
		}
	}
	t.Fatalf("no obligation of %s asks for %s", engineID, field)
	return nil, ""
}

// extract runs the extraction skill on the prompt a model would get.
func extract(t testing.TB, def *engine.Definition, cur engine.Extraction, focus, msg string) extraction.Answer {
	t.Helper()
	req := extraction.BuildRequest(extraction.PromptInput{Def: def, Current: cur, Message: msg, Focus: focus})
	out, err := offlineskill.Extraction(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	ans, err := extraction.ParseAnswer(def, out)
	if err != nil {
		t.Fatalf("the skill's answer %s is not valid: %v", out, err)
	}
	return ans
}

func known(t testing.TB, def *engine.Definition, fields map[string]any) engine.Extraction {
	t.Helper()
	ans := extraction.Answer{Fields: map[string]extraction.FieldAnswer{}}
	for p, v := range fields {
		b, _ := json.Marshal(v)
		ans.Fields[p] = extraction.FieldAnswer{Value: b, Confidence: 0.85}
	}
	return extraction.Apply(def, engine.NewExtraction(), ans, "", extraction.Meta{MessageID: "m0", TurnNumber: 1}).Extraction
}

// filedAt is cur with fields filed by the message of turn, as the runner
// holds them after the extraction of that turn.
func filedAt(t testing.TB, def *engine.Definition, cur engine.Extraction, turn int, fields map[string]any) engine.Extraction {
	t.Helper()
	ans := extraction.Answer{Fields: map[string]extraction.FieldAnswer{}}
	for p, v := range fields {
		b, _ := json.Marshal(v)
		ans.Fields[p] = extraction.FieldAnswer{Value: b, Confidence: 0.85}
	}
	return extraction.Apply(def, cur, ans, "", extraction.Meta{MessageID: fmt.Sprintf("m%d", turn), TurnNumber: turn}).Extraction
}

func TestExtractionSkill(t *testing.T) {
	cat := enginetest.Shipped(t)
	tests := []struct {
		name     string
		engine   string // "" for project-discovery
		current  map[string]any
		focus    string
		msg      string
		want     map[string]any // path -> decoded value
		absent   []string
		deferred []string
	}{
		{name: "pattern with a named group", msg: "Our budget is around $60k to $80k.",
			want: map[string]any{"constraints.budget": "$60k to $80k"}},
		{name: "literal value", msg: "We want an Android app for the crew.",
			want: map[string]any{"purpose_and_problem.project_type": "mobile app"}},
		{name: "keyword selects the sentence", msg: "Hello. We keep losing track of jobs. Thanks!",
			want: map[string]any{"purpose_and_problem.core_problem": "We keep losing track of jobs"}},
		{name: "list after the keyword", msg: "They need to see jobs, record work and sign off.",
			want: map[string]any{"users_and_personas.jobs_to_be_done": []any{"see jobs", "record work", "sign off"}}},
		// What the product or the project has to do is no job of its users.
		{name: "a quality the product has to have is no job", msg: "It has to be cheap.",
			absent: []string{"users_and_personas.jobs_to_be_done"}},
		{name: "a limit the budget has to keep is no job", msg: "The budget has to stay under $50k.",
			want: map[string]any{"constraints.budget": "$50k"}, absent: []string{"users_and_personas.jobs_to_be_done"}},
		{name: "a system the product needs to sync with is no job", msg: "It needs to sync with Xero.",
			want: map[string]any{"constraints.integrations": []any{"Xero"}}, absent: []string{"users_and_personas.jobs_to_be_done"}},
		{name: "what the users have to do is a job", msg: "They have to record the work done.",
			want: map[string]any{"users_and_personas.jobs_to_be_done": []any{"record the work done"}}},
		{name: "number", msg: "About 1,200 users in total.",
			want: map[string]any{"users_and_personas.user_count": 1200.0}},
		{name: "a known field is left alone", current: map[string]any{"constraints.budget": "$50k"},
			msg: "Our budget is $70k.", absent: []string{"constraints.budget"}},
		{name: "a correction updates a known field", current: map[string]any{"constraints.budget": "$50k"},
			msg: "Actually, our budget is $70k.", want: map[string]any{"constraints.budget": "$70k"}},
		{name: "the asked field is updated", current: map[string]any{"constraints.budget": "$50k"}, focus: "budget_range_known",
			msg: "The budget is $70k.", want: map[string]any{"constraints.budget": "$70k"}},
		{name: "focus only cues need the focus", msg: "Yes.", absent: []string{"validation.scope_confirmed"}},
		{name: "focus only cue at the focus", focus: "confirm_project_scope", msg: "Yes, that's right.",
			want: map[string]any{"validation.scope_confirmed": true}},
		{name: "a yes-or-no question is not answered by whatever comes next", focus: "confirm_project_scope",
			current: map[string]any{"purpose_and_problem.core_problem": "Our field technicians keep losing track of their jobs",
				"purpose_and_problem.project_type": "mobile app", "users_and_personas.primary_user": "field technicians"},
			msg:    "Our field technicians keep losing track of their jobs. We want to build a mobile app.",
			absent: []string{"validation.scope_confirmed"}},
		{name: "a yes-or-no question answered without its cue", focus: "confirm_project_scope",
			current: map[string]any{"purpose_and_problem.project_type": "mobile app"}, msg: "Correct, a mobile app.",
			want: map[string]any{"validation.scope_confirmed": true}},
		{name: "an idiom that agrees is a yes", focus: "confirm_project_scope", msg: "Sure, why not.",
			want: map[string]any{"validation.scope_confirmed": true}},
		{name: "a plain no is a no", focus: "confirm_project_scope", msg: "Nope, the users are different.",
			want: map[string]any{"validation.scope_confirmed": false}},
		{name: "a count in words answers the count asked", focus: "user_count_estimated", msg: "About forty technicians.",
			want:   map[string]any{"users_and_personas.user_count": 40.0},
			absent: []string{"users_and_personas.primary_user", "users_and_personas.secondary_users"}},
		{name: "a count in words said unasked is no role", current: map[string]any{"users_and_personas.primary_user": "office staff"},
			focus: "user_count_estimated", msg: "Two hundred technicians.",
			want:   map[string]any{"users_and_personas.user_count": 200.0},
			absent: []string{"users_and_personas.secondary_users"}},
		// A group beside the user counts every part of it: the user, the
		// people each part names; a part that says no number ("some
		// part-timers", "my kids") makes it no count, which stored would
		// be wrong, and silently. A total before the parts is the count.
		{name: "me and a count in words is a headcount of them all", engine: "business-profile", focus: "team_size_known",
			msg: "Me and two part-timers.", want: map[string]any{"team_composition.headcount": 3.0}},
		{name: "the two of us and another is three", engine: "business-profile", focus: "team_size_known",
			msg: "Just the two of us and a part-time tour guide.", want: map[string]any{"team_composition.headcount": 3.0}},
		{name: "me, my wife and two staff are four", engine: "business-profile", focus: "team_size_known",
			msg: "Me, my wife and 2 staff.", want: map[string]any{"team_composition.headcount": 4.0}},
		{name: "a total before the parts is the headcount", engine: "business-profile", focus: "team_size_known",
			msg: "There are 6 of us, me, two bakers and three in the shop.", want: map[string]any{"team_composition.headcount": 6.0}},
		{name: "when a part works is no part of it", engine: "business-profile", focus: "team_size_known",
			msg: "Me, two chefs and my mum on Saturdays.", want: map[string]any{"team_composition.headcount": 4.0}},
		{name: "me and some part-timers is no headcount", engine: "business-profile", focus: "team_size_known",
			msg: "Me and some part-timers.", absent: []string{"team_composition.headcount"}},
		{name: "me and my kids is no headcount", engine: "business-profile", focus: "team_size_known",
			msg: "Me and my kids on weekends.", absent: []string{"team_composition.headcount"}},
		{name: "the two of us is two", engine: "business-profile", focus: "team_size_known",
			msg: "Just the two of us.", want: map[string]any{"team_composition.headcount": 2.0}},
		{name: "what worries the user is the con", engine: "exploration", focus: "cons_explored",
			msg: "What worries me is the monthly fee.", want: map[string]any{"solution_landscape.option_cons": []any{"the monthly fee"}}},
		{name: "what concerns the user most is the con", engine: "exploration", focus: "cons_explored",
			msg: "What concerns us most is lock-in.", want: map[string]any{"solution_landscape.option_cons": []any{"lock-in"}}},
		{name: "the just a list answer opens with is no part of its item", focus: "integrations_identified",
			msg: "Just Xero.", want: map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "the only a list answer opens with is no part of its item", focus: "key_features_listed",
			msg: "Only a job list and signatures.", want: map[string]any{"success_criteria.key_features": []any{"a job list", "signatures"}}},
		{name: "the no an answer opens with is no part of it", focus: "current_solution_understood",
			msg: "No, we do all of it by hand.", want: map[string]any{"purpose_and_problem.current_solution": "we do all of it by hand"}},
		{name: "the yes an answer opens with is no part of it", focus: "team_resources_known",
			msg: "Yeah, two people in Lisbon.", want: map[string]any{"constraints.team": "two people in Lisbon"}},
		{name: "an answer without cues goes to the focus", focus: "team_resources_known", msg: "Two people in Lisbon will do it.",
			want: map[string]any{"constraints.team": "Two people in Lisbon will do it"}},
		{name: "a declined focus is deferred", focus: "team_resources_known", msg: "No idea yet, let's skip that.",
			deferred: []string{"team_resources_known"}, absent: []string{"constraints.team"}},
		{name: "a message about something else does not answer the focus", focus: "team_resources_known",
			msg: "Our budget is $70k.", want: map[string]any{"constraints.budget": "$70k"}, absent: []string{"constraints.team"}},
		{name: "a message about something known does not answer the focus", focus: "trigger_event_identified",
			current: map[string]any{"users_and_personas.user_count": 6}, msg: "We have 40 technicians.",
			absent: []string{"purpose_and_problem.trigger_event", "users_and_personas.user_count"}},
		{name: "not knowing something else declines nothing", focus: "team_resources_known",
			msg:    "We have no idea how big the market is, maybe 20,000 households nearby.",
			absent: []string{"constraints.team"}},
		{name: "a short unsure answer declines", focus: "team_resources_known", msg: "No idea, honestly.",
			deferred: []string{"team_resources_known"}, absent: []string{"constraints.team"}},
		{name: "a keyword of a known field does not keep a message from answering", focus: "trigger_event_identified",
			current: map[string]any{"users_and_personas.primary_user": "field technicians", "users_and_personas.user_count": 40},
			msg:     "Our technicians kept showing up at the wrong address and a big client left.",
			want:    map[string]any{"purpose_and_problem.trigger_event": "Our technicians kept showing up at the wrong address and a big client left"}},
		{name: "restating a known value answers nothing", focus: "trigger_event_identified",
			current: map[string]any{"users_and_personas.primary_user": "field technicians"},
			msg:     "Like I told you, it's for our field technicians.",
			absent:  []string{"purpose_and_problem.trigger_event", "users_and_personas.primary_user"}},
		{name: "a sentence that says more than a known value answers", focus: "trigger_event_identified",
			current: map[string]any{"users_and_personas.primary_user": "field technicians"},
			msg:     "Our field technicians kept showing up at the wrong address and a big client left.",
			want:    map[string]any{"purpose_and_problem.trigger_event": "Our field technicians kept showing up at the wrong address and a big client left"}},
		{name: "a question back answers nothing", focus: "core_problem_defined", msg: "What do you mean by that?",
			absent: []string{"purpose_and_problem.core_problem"}},
		{name: "a qualified yes is a no", focus: "confirm_project_scope", msg: "Mostly correct, but the budget is wrong.",
			want: map[string]any{"validation.scope_confirmed": false}},
		{name: "a negated yes is a no", focus: "confirm_project_scope", msg: "That's not correct.",
			want: map[string]any{"validation.scope_confirmed": false}},
		{name: "a doubt is a no", focus: "confirm_project_scope", msg: "I'm not so sure that's correct.",
			want: map[string]any{"validation.scope_confirmed": false}},
		{name: "a yes with a bare no is a yes", focus: "confirm_project_scope", msg: "Yes, no changes needed.",
			want: map[string]any{"validation.scope_confirmed": true}},
		{name: "a yes with a negated no-word is a yes", focus: "confirm_project_scope", msg: "Yes, that's right, nothing wrong there.",
			want: map[string]any{"validation.scope_confirmed": true}},
		{name: "looks good is a yes", focus: "confirm_project_scope", msg: "Looks good, I don't see anything wrong.",
			want: map[string]any{"validation.scope_confirmed": true}},
		{name: "secondary users are not the primary ones", msg: "The secondary users are the office managers.",
			absent: []string{"users_and_personas.primary_user"}},
		{name: "a role named in a sentence about something else is the role", msg: "Our field technicians keep losing track of their jobs.",
			want: map[string]any{"users_and_personas.primary_user": "field technicians",
				"purpose_and_problem.core_problem": "Our field technicians keep losing track of their jobs"}},
		{name: "the primary users", msg: "The users are our field technicians.",
			want: map[string]any{"users_and_personas.primary_user": "field technicians"}},
		// A role the user says the product is not for, or names as the
		// secondary users, is not the primary one; the role it is for
		// instead is, and no secondary user.
		{name: "a role said to be the users over another is the primary user", focus: "primary_user_identified",
			msg:  "The office staff, not our technicians.",
			want: map[string]any{"users_and_personas.primary_user": "office staff"}, absent: []string{"users_and_personas.secondary_users"}},
		{name: "the role the product is said to be for instead is the primary user", focus: "primary_user_identified",
			msg:    "It's not for our field technicians, it's for the dispatchers.",
			want:   map[string]any{"users_and_personas.primary_user": "dispatchers"},
			absent: []string{"users_and_personas.secondary_users"}},
		{name: "a role the users mostly are is the primary user", focus: "primary_user_identified", msg: "Mostly the dispatchers.",
			want: map[string]any{"users_and_personas.primary_user": "dispatchers"}, absent: []string{"users_and_personas.secondary_users"}},
		{name: "the role that uses it most is the primary user, whatever was asked", focus: "trigger_event_identified",
			msg:    "Our office staff use it most.",
			want:   map[string]any{"users_and_personas.primary_user": "office staff"},
			absent: []string{"users_and_personas.secondary_users", "purpose_and_problem.trigger_event"}},
		{name: "the role that will use it the most is the primary user", msg: "The dispatchers will use it the most.",
			want: map[string]any{"users_and_personas.primary_user": "dispatchers"}, absent: []string{"users_and_personas.secondary_users"}},
		// The secondary users are the roles, not the sentence that names them.
		{name: "the secondary users are the role named", msg: "The secondary users are the office managers.",
			want: map[string]any{"users_and_personas.secondary_users": "office managers"}},
		{name: "the secondary users are the roles that also use it", msg: "The dispatchers will also use it to assign jobs.",
			want: map[string]any{"users_and_personas.secondary_users": "dispatchers"}},
		{name: "the secondary users are the roles a sentence names", msg: "Our admins and supervisors check the reports every week.",
			want: map[string]any{"users_and_personas.secondary_users": "admins and supervisors"}},
		{name: "the secondary users are who else uses it", msg: "Clients will also use it to book visits.",
			want: map[string]any{"users_and_personas.secondary_users": "Clients"}},
		{name: "the secondary users are who else uses it, after the primary ones",
			msg:  "The main users are the technicians, and the dispatchers also use it.",
			want: map[string]any{"users_and_personas.primary_user": "technicians", "users_and_personas.secondary_users": "dispatchers"}},
		{name: "a role said not to be the users with n't is not the primary user",
			msg: "The dispatchers aren't our technicians.", absent: []string{"users_and_personas.primary_user"}},
		{name: "a role named as the secondary users is not the primary user",
			msg: "The secondary users are our field technicians.", absent: []string{"users_and_personas.primary_user"}},
		// A bare role, or a role and a clause about it, answers the question
		// asked: the primary users when it asks who uses it most, the
		// secondary users when it asks who else does.
		{name: "a bare role answers who uses it most", focus: "primary_user_identified", msg: "Dispatchers.",
			want: map[string]any{"users_and_personas.primary_user": "Dispatchers"}, absent: []string{"users_and_personas.secondary_users"}},
		{name: "a bare role after our answers who uses it most", focus: "primary_user_identified", msg: "Our office staff.",
			want: map[string]any{"users_and_personas.primary_user": "office staff"}, absent: []string{"users_and_personas.secondary_users"}},
		{name: "a role and a clause about it answers who uses it most", focus: "primary_user_identified",
			msg:  "The office managers, they do all the booking.",
			want: map[string]any{"users_and_personas.primary_user": "office managers"}, absent: []string{"users_and_personas.secondary_users"}},
		{name: "a bare role answers who else uses it", focus: "secondary_users_identified", msg: "Dispatchers.",
			want: map[string]any{"users_and_personas.secondary_users": "Dispatchers"}, absent: []string{"users_and_personas.primary_user"}},
		{name: "any bare role answers who else uses it", focus: "secondary_users_identified", msg: "Managers.",
			want: map[string]any{"users_and_personas.secondary_users": "Managers"}, absent: []string{"users_and_personas.primary_user"}},
		{name: "a bare role answers who else uses it when the primary users are known", focus: "secondary_users_identified",
			current: map[string]any{"users_and_personas.primary_user": "field technicians"}, msg: "The managers.",
			want: map[string]any{"users_and_personas.secondary_users": "managers"}, absent: []string{"users_and_personas.primary_user"}},
		{name: "a role and a clause about it answers who else uses it when the primary users are known",
			focus: "secondary_users_identified", current: map[string]any{"users_and_personas.primary_user": "field technicians"},
			msg: "The managers, they check the reports.", want: map[string]any{"users_and_personas.secondary_users": "managers"}},
		{name: "a bare role said unasked is the primary users alone", msg: "Dispatchers.",
			want: map[string]any{"users_and_personas.primary_user": "Dispatchers"}, absent: []string{"users_and_personas.secondary_users"}},
		{name: "a role and a clause about it answers who else uses it", focus: "secondary_users_identified",
			msg:  "The office managers, they do all the booking.",
			want: map[string]any{"users_and_personas.secondary_users": "office managers"}, absent: []string{"users_and_personas.primary_user"}},
		// What a person needs or has to do is a job, whoever the person is.
		{name: "what a technician needs to do is a job", focus: "jobs_to_be_done_captured",
			msg:  "Each technician needs to log parts and get a signature.",
			want: map[string]any{"users_and_personas.jobs_to_be_done": []any{"log parts", "get a signature"}}},
		{name: "what every technician has to do is a job", msg: "Every technician has to fill in a job sheet and get it signed.",
			want: map[string]any{"users_and_personas.jobs_to_be_done": []any{"fill in a job sheet", "get it signed"}}},
		{name: "a hedge before the answer keeps the answer", focus: "team_resources_known",
			msg:  "Not sure really. Probably two developers from our partner agency.",
			want: map[string]any{"constraints.team": "Probably two developers from our partner agency"}},
		{name: "nothing else answers nothing", focus: "team_resources_known", msg: "Nothing else really.",
			absent: []string{"constraints.team"}},
		{name: "a hedge with nothing after it answers nothing", focus: "team_resources_known", msg: "I guess so.",
			absent: []string{"constraints.team"}},
		{name: "a bare hedged no answers nothing", focus: "team_resources_known", msg: "Yes? I think so.",
			absent: []string{"constraints.team"}},
		{name: "not knowing, then a hedge alone, puts the question off", focus: "team_resources_known",
			msg: "Hmm, I'm not sure. Maybe.", deferred: []string{"team_resources_known"}, absent: []string{"constraints.team"}},
		{name: "not knowing, then a hedged no, puts the question off", focus: "team_resources_known",
			msg: "Not sure. Probably not.", deferred: []string{"team_resources_known"}, absent: []string{"constraints.team"}},
		{name: "a bare number is an answer", focus: "team_resources_known", msg: "2.",
			want: map[string]any{"constraints.team": "2"}},
		{name: "a full-width question back answers nothing", focus: "team_resources_known", msg: "团队是指什么？",
			absent: []string{"constraints.team"}},
		{name: "an interjection before a question back answers nothing", focus: "team_resources_known", msg: "Hmm. Two people?",
			absent: []string{"constraints.team"}},
		{name: "not knowing, then a hedge alone, confirms nothing", focus: "confirm_project_scope",
			msg: "Hmm, I'm not sure. Maybe.", deferred: []string{"confirm_project_scope"}, absent: []string{"validation.scope_confirmed"}},
		{name: "a yes that says there is nothing more is a yes", focus: "confirm_project_scope", msg: "Sure, that's all.",
			want: map[string]any{"validation.scope_confirmed": true}},
		{name: "a yes after a question back is a yes", focus: "confirm_project_scope", msg: "Everything? Sure, nothing else.",
			want: map[string]any{"validation.scope_confirmed": true}},
		{name: "a message that goes on with something else answers nothing", focus: "trigger_event_identified",
			msg: "And maybe the dispatchers want it too.", absent: []string{"purpose_and_problem.trigger_event"}},
		{name: "a message that goes on adds to a list question", engine: "business-profile", focus: "competitors_named",
			msg: "Also Costa, and of course Greggs.", want: map[string]any{"target_market.competitors": []any{"Costa", "Greggs"}}},
		{name: "a message that goes on to say there is no more adds no item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "And that's it.", absent: []string{"constraints.integrations"}},
		{name: "a message that goes on adds its items but not its closing", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "And Stripe. That's it.", want: map[string]any{"constraints.integrations": []any{"Xero", "Stripe"}}},
		{name: "a message that goes on to say there are no others adds no item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "And no others.", absent: []string{"constraints.integrations"}},
		{name: "a message that goes on to say that is about it adds no item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "Also, that's about it.", absent: []string{"constraints.integrations"}},
		{name: "a message that goes on with a bare assent adds no item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "And yes, that's right.", absent: []string{"constraints.integrations"}},
		{name: "a keyword in a question back names nothing", focus: "team_resources_known",
			msg: "Not sure, what kind of budget do you mean?", absent: []string{"constraints.budget", "constraints.team"}},
		{name: "a question that raises a case still counts", msg: "What if a technician has no connection in a basement?",
			want: map[string]any{"edge_cases.cases": []any{"a technician has no connection in a basement"}}},
		{name: "a preference is not a correction", current: map[string]any{"users_and_personas.user_count": 60},
			msg:    "The office would rather get push alerts than phone calls, and the 6 staff there all agree.",
			absent: []string{"users_and_personas.user_count"}},
		// A keyword that is part of an item stays in it; one that introduces
		// the items does not.
		{name: "a keyword that is an item", engine: "business-profile", focus: "acquisition_channels_known",
			msg:  "Mostly word of mouth and Instagram.",
			want: map[string]any{"brand_and_marketing.acquisition_channels": []any{"word of mouth", "Instagram"}}},
		{name: "whom the business sells its goods to", engine: "business-profile",
			msg:  "We sell bread and cakes to local cafes.",
			want: map[string]any{"target_market.customer_segments": []any{"local cafes"}}},
		{name: "whom the business sells to", engine: "business-profile",
			msg:  "We sell to local cafes and offices.",
			want: map[string]any{"target_market.customer_segments": []any{"local cafes", "offices"}}},
		// Whom the business sells to names its customers; who pays is
		// said in the words of the model type.
		{name: "whom the business sells to is no model type", engine: "business-profile", focus: "business_model_type_known",
			msg:    "We sell bread and cakes to locals and a few cafes",
			want:   map[string]any{"target_market.customer_segments": []any{"locals", "a few cafes"}},
			absent: []string{"business_model.model_type"}},
		{name: "selling to businesses alone says nothing of both", engine: "business-profile",
			msg: "We sell to local cafes and offices.", absent: []string{"business_model.model_type"}},
		{name: "where a business is, after what it is", engine: "business-profile",
			msg:  "We're a small bakery in Leeds.",
			want: map[string]any{"industry.location": "Leeds", "industry.sector": "small bakery"}},
		{name: "no place after what a business is", engine: "business-profile",
			msg: "We're a small bakery in the market.", absent: []string{"industry.location"}},
		{name: "how much the business sells names no customers", engine: "business-profile",
			msg: "We sell up to 300 loaves a day.", absent: []string{"target_market.customer_segments"}},
		{name: "the range the business sells names no customers", engine: "business-profile", focus: "core_offering_described",
			msg: "We sell everything from sourdough to wedding cakes.", absent: []string{"target_market.customer_segments"}},
		{name: "what follows the customers is none of them", engine: "business-profile",
			msg:  "We sell bread and cakes to local cafes, but margins are thin.",
			want: map[string]any{"target_market.customer_segments": []any{"local cafes"}}},
		{name: "where a business is, after its name", engine: "business-profile", focus: "business_identity_known",
			msg:  "We're called Crumbs, a small bakery in Leeds.",
			want: map[string]any{"industry.business_name": "Crumbs", "industry.location": "Leeds"}},
		// How long the business has been open, without "for", is its age,
		// not its stage.
		{name: "the years the business has been open are its age", engine: "business-profile", focus: "business_stage_known",
			msg: "We've been open 4 years", want: map[string]any{"industry.years_operating": 4.0},
			absent: []string{"industry.business_stage"}},
		{name: "the years the business has been trading are its age", engine: "business-profile", focus: "business_model_type_known",
			msg: "We have been trading 12 years now.", want: map[string]any{"industry.years_operating": 12.0},
			absent: []string{"business_model.model_type"}},
		{name: "when the business opened is no place", engine: "business-profile", focus: "business_stage_known",
			msg: "We opened the bakery in March 2019.", absent: []string{"industry.location"}},
		{name: "when the business started is no place", engine: "business-profile",
			msg:  "We started the business in January and it's growing fast.",
			want: map[string]any{"industry.business_stage": "growth"}, absent: []string{"industry.location"}},
		{name: "a keyword that ends an item", engine: "business-profile", focus: "regulations_identified",
			msg:  "Food hygiene regulations and allergen labelling.",
			want: map[string]any{"regulatory_and_compliance.regulations": []any{"Food hygiene regulations", "allergen labelling"}}},
		{name: "a keyword that ends a clause", engine: "business-profile", focus: "bottlenecks_identified",
			msg:  "The delivery run takes too long, and invoicing is done by hand.",
			want: map[string]any{"operations.bottlenecks": []any{"The delivery run takes too long", "invoicing is done by hand"}}},
		{name: "a keyword that ends a clause splits clauses only", engine: "business-profile", focus: "tech_pain_points_identified",
			msg: "Xero and Shopify don't talk to each other, so everything is retyped.",
			want: map[string]any{"technology_stack.tech_pain_points": []any{"Xero and Shopify don't talk to each other",
				"everything is retyped"}}},
		{name: "a keyword before its items", engine: "business-profile", focus: "bottlenecks_identified",
			msg:  "Our biggest bottleneck is the delivery run and invoicing.",
			want: map[string]any{"operations.bottlenecks": []any{"the delivery run", "invoicing"}}},
		// A clause after the items a keyword introduces, opened by a word that
		// points back at them, gives a reason: no item.
		{name: "the reason an option is ruled out is no option", engine: "exploration",
			msg:  "I would rule out a custom build, it is too expensive.",
			want: map[string]any{"solution_landscape.eliminated_options": []any{"a custom build"}}},
		{name: "the reason after the options ruled out is none of them", engine: "exploration", focus: "options_narrowed",
			msg:  "We ruled out a custom build and WordPress, they're too much work.",
			want: map[string]any{"solution_landscape.eliminated_options": []any{"a custom build", "WordPress"}}},
		{name: "a demonstrative before a noun opens an item", engine: "business-profile",
			msg:  "We sell to local cafes and those offices by the station.",
			want: map[string]any{"target_market.customer_segments": []any{"local cafes", "those offices by the station"}}},
		{name: "a demonstrative before a verb opens a reason", engine: "exploration",
			msg:  "I would rule out a custom build, that would take too long.",
			want: map[string]any{"solution_landscape.eliminated_options": []any{"a custom build"}}},
		{name: "why a risk is one is no risk", engine: "ideation", focus: "risks_identified",
			msg: "My biggest worry is the rent, which could double.", want: map[string]any{"refinement.risks": []any{"the rent"}}},
		// A pattern's match in one item of a list of things named, to the
		// list asked for, is that whole item, beside the others; in a
		// sentence with a verb it stays its own words (below).
		{name: "a budget among the things named keeps them and its words", engine: "ideation", focus: "constraints_known",
			msg:  "Just me and my husband, and a tiny budget.",
			want: map[string]any{"problem_space.constraints": []any{"me and my husband", "a tiny budget"}}},
		{name: "a budget keeps its word and its thousands", engine: "exploration", focus: "constraints_identified",
			msg:  "Our budget is limited to $5,000 and we must be live within two months.",
			want: map[string]any{"decision.constraints": []any{"budget is limited to $5,000", "we must be live within two months"}}},
		{name: "a deadline keeps its word", engine: "exploration", focus: "constraints_identified",
			msg:  "We have a hard deadline before tax season in January.",
			want: map[string]any{"decision.constraints": []any{"hard deadline before tax season in January"}}},
		// A sum and the time the user has to give are what any idea must
		// respect, though neither says "budget": they answer no other
		// question.
		{name: "a sum and free time the user has are constraints", engine: "ideation", focus: "impact_understood",
			msg:    "I have about 5000 pounds to start and evenings free",
			want:   map[string]any{"problem_space.constraints": []any{"about 5000 pounds to start", "evenings free"}},
			absent: []string{"problem_space.impact"}},
		{name: "hours a week the user has are a constraint", engine: "ideation", focus: "constraints_known",
			msg:  "We only have £2,000 and maybe ten hours a week.",
			want: map[string]any{"problem_space.constraints": []any{"£2,000", "ten hours a week"}}},
		{name: "what the time the user has costs is no constraint", engine: "ideation", focus: "impact_understood",
			msg:  "I have 3 hours a week and it's costing me sleep.",
			want: map[string]any{"problem_space.constraints": []any{"3 hours a week"}}},
		{name: "a sum lost is no constraint", engine: "ideation", focus: "impact_understood",
			msg:    "We have lost about 5000 pounds this year.",
			absent: []string{"problem_space.constraints"}},
		// A goal, the time the user can give, a fee and what an idea needs
		// first are what any idea must respect, said whatever was asked; a
		// cost said with more, or that may come, weighs an idea or is a
		// risk when the question asks for one.
		{name: "a goal is a success criterion", engine: "ideation", focus: "impact_understood",
			msg: "My goal is to make maybe 500 dollars a month extra, I can spend weekends on it.",
			want: map[string]any{"problem_space.success_criteria": []any{"make maybe 500 dollars a month extra"},
				"problem_space.constraints": []any{"weekends on it"}},
			absent: []string{"problem_space.impact"}},
		{name: "what an idea needs first is a constraint", engine: "ideation", focus: "current_approach_known",
			msg:    "The classes need insurance, which I'm not sure about.",
			want:   map[string]any{"problem_space.constraints": []any{"The classes need insurance"}},
			absent: []string{"problem_space.current_workarounds"}},
		{name: "a fee is a constraint, whatever was asked", engine: "ideation", focus: "wild_ideas_explored",
			msg: "Etsy fees are about 10 percent, and shipping heavy boards is expensive.",
			want: map[string]any{"problem_space.constraints": []any{"Etsy fees are about 10 percent",
				"shipping heavy boards is expensive"}},
			absent: []string{"idea_generation.wild_ideas"}},
		{name: "a cost said alone is a constraint", engine: "ideation", focus: "root_causes_explored",
			msg: "Kiln hire is pricey.", want: map[string]any{"problem_space.constraints": []any{"Kiln hire is pricey"}},
			absent: []string{"problem_space.root_causes"}},
		{name: "a cost said with more weighs the idea asked about", engine: "ideation", focus: "feasibility_assessed",
			msg: "The Etsy shop would be quick, but shipping is expensive.",
			want: map[string]any{"evaluation.feasibility_notes": []any{"The Etsy shop would be quick",
				"shipping is expensive"}},
			absent: []string{"problem_space.constraints"}},
		{name: "a cost that may come is a risk", engine: "ideation", focus: "risks_identified",
			msg:    "Shipping could get expensive and boards might crack.",
			want:   map[string]any{"refinement.risks": []any{"Shipping could get expensive", "boards might crack"}},
			absent: []string{"problem_space.constraints"}},
		// An idea offered as an option while the problem is being framed is
		// an idea, not the answer to the question asked; an amount offered
		// so is none.
		{name: "an idea offered while framing is an idea", engine: "ideation", focus: "constraints_known",
			msg:    "Maybe a weekend stall selling Caribbean food",
			want:   map[string]any{"idea_generation.ideas": []any{"a weekend stall selling Caribbean food"}},
			absent: []string{"problem_space.constraints"}},
		{name: "an idea offered as another option adds to the ideas", engine: "ideation", focus: "success_criteria_set",
			current: map[string]any{"idea_generation.ideas": []string{"a weekend stall selling Caribbean food"}},
			msg:     "Or a meal prep service for busy parents",
			want: map[string]any{"idea_generation.ideas": []any{"a weekend stall selling Caribbean food",
				"a meal prep service for busy parents"}},
			absent: []string{"problem_space.success_criteria"}},
		{name: "why an idea is chosen is no idea", engine: "ideation", focus: "ideas_captured",
			msg: "The stall, it's cheapest to start.", want: map[string]any{"idea_generation.ideas": []any{"The stall"}}},
		{name: "a name after why one is named is an item", engine: "business-profile", focus: "competitors_named",
			msg: "Greggs, they're everywhere, and Pret.", want: map[string]any{"target_market.competitors": []any{"Greggs", "Pret"}}},
		{name: "an idea after why one is chosen is an idea", engine: "ideation", focus: "ideas_captured",
			msg:  "The stall, it's cheapest to start, and a meal prep service.",
			want: map[string]any{"idea_generation.ideas": []any{"The stall", "a meal prep service"}}},
		{name: "a clause after a clause is a pain point of its own", focus: "user_pain_points_captured",
			msg:  "Nobody knows where the techs are and they call me all day.",
			want: map[string]any{"users_and_personas.pain_points": []any{"Nobody knows where the techs are", "they call me all day"}}},
		{name: "an amount offered is no idea", engine: "ideation", focus: "impact_understood",
			msg:    "Maybe a few hundred pounds for the stock we throw away.",
			want:   map[string]any{"problem_space.impact": "a few hundred pounds for the stock we throw away"},
			absent: []string{"idea_generation.ideas"}},
		{name: "a doubt names no gap", engine: "exploration", msg: "Not sure, really.",
			absent: []string{"initial_state.knowledge_gaps"}},
		{name: "a pause after an opening keyword", engine: "ideation", focus: "wild_ideas_explored",
			msg:  "If money were no object, we could open a studio in every town.",
			want: map[string]any{"idea_generation.wild_ideas": []any{"we could open a studio in every town"}}},
		{name: "a keyword that introduces the next item again", engine: "ideation", focus: "ideas_captured",
			msg:  "We could run a buddy system, maybe we could do a beginners-only series and a discount for referrals.",
			want: map[string]any{"idea_generation.ideas": []any{"run a buddy system", "do a beginners-only series", "a discount for referrals"}}},
		// An "and" inside an item joins the words of its name ("a parents and
		// toddlers session": "a parents" is no name); one between items parts
		// them.
		{name: "an and inside an item parts nothing", engine: "ideation", focus: "ideas_captured",
			msg:  "We could run a parents and toddlers session.",
			want: map[string]any{"idea_generation.ideas": []any{"run a parents and toddlers session"}}},
		{name: "an and inside an item parts nothing, one after it parts items", engine: "ideation", focus: "ideas_captured",
			msg:  "We could run a mums and babies class and a loyalty card.",
			want: map[string]any{"idea_generation.ideas": []any{"run a mums and babies class", "a loyalty card"}}},
		{name: "an and between items with articles parts them", engine: "ideation", focus: "ideas_captured",
			msg:  "We could run a bus and a minibus to the studio.",
			want: map[string]any{"idea_generation.ideas": []any{"run a bus", "a minibus to the studio"}}},
		// Lists grow: a known list takes the new items a strong cue names, and
		// the message answers no other question.
		{name: "new ideas add to the known ideas", engine: "ideation", focus: "wild_ideas_explored",
			current: map[string]any{"idea_generation.ideas": []string{"a loyalty card"}},
			msg:     "We could run a buddy system, maybe we could do a beginners-only series and a discount for referrals.",
			want: map[string]any{"idea_generation.ideas": []any{"a loyalty card", "run a buddy system", "do a beginners-only series",
				"a discount for referrals"}},
			absent: []string{"idea_generation.wild_ideas"}},
		{name: "an added constraint adds to the known ones", engine: "exploration", focus: "constraints_identified",
			current: map[string]any{"decision.constraints": []string{"budget of 5000 dollars"}},
			msg:     "Not sure, maybe we also have a deadline before tax season in January.",
			want:    map[string]any{"decision.constraints": []any{"budget of 5000 dollars", "deadline before tax season in January"}},
			absent:  []string{"initial_state.knowledge_gaps"}},
		{name: "an added item answers no other question", focus: "trigger_event_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "It should also sync with Google Calendar.",
			want:    map[string]any{"constraints.integrations": []any{"Xero", "Google Calendar"}},
			absent:  []string{"purpose_and_problem.trigger_event"}},
		{name: "restating a known list answers nothing", focus: "trigger_event_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "Like I told you, it syncs with Xero.",
			absent:  []string{"purpose_and_problem.trigger_event", "constraints.integrations"}},
		{name: "a weak cue of a known list leaves the question its answer", focus: "trigger_event_identified",
			current: map[string]any{"users_and_personas.jobs_to_be_done": []string{"see jobs"}},
			msg:     "We need to replace the old system before the contract ends in March.",
			want:    map[string]any{"purpose_and_problem.trigger_event": "We need to replace the old system before the contract ends in March"},
			absent:  []string{"users_and_personas.jobs_to_be_done"}},
		{name: "a known list does not take what answers the question", engine: "business-profile", focus: "tech_pain_points_identified",
			current: map[string]any{"technology_stack.current_systems": []string{"Xero"}},
			msg:     "Our tools are clunky, I hate the till.",
			want:    map[string]any{"technology_stack.tech_pain_points": []any{"Our tools are clunky", "I hate the till"}},
			absent:  []string{"technology_stack.current_systems"}},
		{name: "a weak cue of a known list answers no question without fields", engine: "exploration", focus: "tradeoffs_weighed",
			current: map[string]any{"understanding.concepts_taught": []string{"hosting"}},
			msg:     "Price matters more than control, I see that now.",
			absent:  []string{"understanding.concepts_taught"}},
		{name: "a mention of an item on the list adds nothing", engine: "exploration", focus: "tradeoffs_weighed",
			current: map[string]any{"decision.constraints": []string{"budget is limited to $5,000"}},
			msg:     "Cost versus control, given the budget.",
			want:    map[string]any{"decision.tradeoffs": []any{"Cost versus control"}},
			absent:  []string{"decision.constraints"}},
		// Options named with a bare "or" are as many options; the hedge
		// after an "or" names no integration.
		{name: "a bare or parts the options", engine: "exploration", focus: "options_identified",
			msg:  "Xero or QuickBooks, maybe FreeAgent.",
			want: map[string]any{"solution_landscape.options": []any{"Xero", "QuickBooks", "FreeAgent"}}},
		{name: "a hedge after or is no integration", focus: "integrations_identified",
			msg:  "Avimark and Twilio, or whatever texting service is cheapest.",
			want: map[string]any{"constraints.integrations": []any{"Avimark", "Twilio"}}},
		// What an option does together is one pro.
		{name: "what an option does together is one pro", engine: "exploration", focus: "pros_explored",
			msg:  "CampMinder does registration and payments together.",
			want: map[string]any{"solution_landscape.option_pros": []any{"registration and payments together"}}},
		// What the user wants it for, said to a question that files
		// nothing, is a goal; to a question that files something, or with
		// a place or a person after "to", it is none.
		{name: "a purpose said to a question without fields is a goal", engine: "exploration", focus: "tradeoffs_weighed",
			msg:  "Mainly to spend less time on month-end for each client.",
			want: map[string]any{"initial_state.goals": []any{"spend less time on month-end for each client"}}},
		{name: "a purpose said unasked is a goal", engine: "exploration", msg: "To stop missing orders while I bake.",
			want: map[string]any{"initial_state.goals": []any{"stop missing orders while I bake"}}},
		{name: "a place after to is no goal", engine: "exploration", focus: "tradeoffs_weighed",
			msg: "To the bank, mostly.", absent: []string{"initial_state.goals"}},
		{name: "a purpose said to a question with fields answers it", engine: "exploration", focus: "prior_knowledge_assessed",
			msg:  "To be honest, not much.",
			want: map[string]any{"initial_state.prior_knowledge": "To be honest, not much"}, absent: []string{"initial_state.goals"}},
		// A correction of one item of a list replaces that item and keeps the
		// others.
		{name: "a correction replaces the item it corrects", engine: "exploration",
			current: map[string]any{"decision.constraints": []string{"budget of 5000 dollars", "deadline before tax season in January"}},
			msg:     "Actually the budget is more like 8000 dollars, I checked with my partner.",
			want: map[string]any{"decision.constraints": []any{"budget is more like 8000 dollars",
				"deadline before tax season in January"}}},
		{name: "a correction of an item not on the list adds it", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "Actually it syncs with Google Calendar too.",
			want:    map[string]any{"constraints.integrations": []any{"Xero", "Google Calendar"}}},
		{name: "a remark after the items is no item", engine: "business-profile", focus: "competitors_named",
			current: map[string]any{"target_market.competitors": []string{"Greggs"}},
			msg:     "Actually our main competitors are Greggs and Pret, I checked with my partner.",
			want:    map[string]any{"target_market.competitors": []any{"Greggs", "Pret"}}},
		{name: "a correction that takes an item back", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "Actually not Xero, it's QuickBooks.",
			want:    map[string]any{"constraints.integrations": []any{"Google Calendar", "QuickBooks"}}},
		// What the user keeps after a take-back ("just Xero", "only Xero")
		// is no item taken back, and the take-back takes its item off;
		// what they keep that the list lacks is added.
		{name: "an item kept after a take-back is not taken back", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Not Shopify, just Xero.", want: map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "the items kept after a take-back are the list while another question is asked", focus: "team_resources_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify", "Square"}},
			msg:     "Not Shopify, just Xero and Square.", want: map[string]any{"constraints.integrations": []any{"Xero", "Square"}},
			absent: []string{"constraints.team"}},
		{name: "an item kept after a take-back that the list lacks is added", engine: "business-profile", focus: "core_offering_described",
			current: map[string]any{"target_market.competitors": []string{"Greggs", "Pret"}},
			msg:     "Not Pret, just Greggs and the supermarket bakeries.",
			want:    map[string]any{"target_market.competitors": []any{"Greggs", "the supermarket bakeries"}},
			absent:  []string{"product_offering.core_products"}},
		{name: "an item kept after a negated keyword stays", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "It doesn't need to sync with Shopify any more, just Xero.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "a correction that takes an item back corrects its list while another question is asked", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "Actually not Xero, it's QuickBooks.",
			want:    map[string]any{"constraints.integrations": []any{"Google Calendar", "QuickBooks"}},
			absent:  []string{"constraints.timeline"}},
		{name: "a correction that takes an item back corrects its list when nothing is asked",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "Not Xero, it's QuickBooks.",
			want:    map[string]any{"constraints.integrations": []any{"QuickBooks"}}},
		{name: "a correction that takes an item back without a marker", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "It's not Xero, it's QuickBooks.",
			want:    map[string]any{"constraints.integrations": []any{"Google Calendar", "QuickBooks"}},
			absent:  []string{"constraints.timeline"}},
		// A "not" before items joined by "and" or "or" takes back each of
		// them that is on the list.
		{name: "a correction that takes two items back", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify", "Google Calendar"}},
			msg:     "Actually not Xero and Shopify.",
			want:    map[string]any{"constraints.integrations": []any{"Google Calendar"}}},
		{name: "a take-back of two items while another question is asked", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify", "Google Calendar"}},
			msg:     "Actually not Xero and Shopify.",
			want:    map[string]any{"constraints.integrations": []any{"Google Calendar"}},
			absent:  []string{"constraints.timeline"}},
		{name: "a take-back of items joined by or",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify", "Google Calendar"}},
			msg:     "Not Xero or Shopify.",
			want:    map[string]any{"constraints.integrations": []any{"Google Calendar"}}},
		{name: "a take-back of three items, then the one meant", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify", "Google Calendar"}},
			msg:     "Actually not Xero, Shopify or Google Calendar, it's QuickBooks.",
			want:    map[string]any{"constraints.integrations": []any{"QuickBooks"}}},
		{name: "a take-back of items joined by or, and the one meant", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify", "Google Calendar"}},
			msg:     "It is not Xero or Shopify but QuickBooks.",
			want:    map[string]any{"constraints.integrations": []any{"QuickBooks", "Google Calendar"}}},
		// What a take-back says of another item of the list ("Shopify is
		// optional") keeps that item: it is no choice between them, nor an
		// item.
		{name: "a take-back with a remark on another item keeps that item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Not Xero, and Shopify is optional.",
			want:    map[string]any{"constraints.integrations": []any{"Shopify"}}},
		{name: "a correction that takes back with a remark on another item keeps that item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Actually not Xero, and Shopify is optional.",
			want:    map[string]any{"constraints.integrations": []any{"Shopify"}}},
		{name: "a take-back with a remark on another item while another question is asked", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Not Xero, and Shopify is optional.",
			want:    map[string]any{"constraints.integrations": []any{"Shopify"}}, absent: []string{"constraints.timeline"}},
		{name: "a remark on an item before a take-back chooses it", focus: "mvp_scope_defined",
			current: map[string]any{"success_criteria.key_features": []string{"offline mode", "job list"}},
			msg:     "The job list is enough, not offline mode.", absent: []string{"success_criteria.key_features"}},
		// The items a correction leads into are all the correction's.
		{name: "a take-back, then the items meant", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "Actually not Xero, it is QuickBooks and Shopify.",
			want:    map[string]any{"constraints.integrations": []any{"Google Calendar", "QuickBooks", "Shopify"}}},
		{name: "a take-back, then the items meant, and a remark", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "Not Xero, it's QuickBooks and Shopify, we changed that.",
			want:    map[string]any{"constraints.integrations": []any{"Google Calendar", "QuickBooks", "Shopify"}}},
		{name: "a take-back adds no remark as an item", focus: "timeline_known",
			current: map[string]any{"users_and_personas.pain_points": []string{"double entry", "lost jobs"}},
			msg:     "Not double entry, we fixed that. We need it by June.",
			want:    map[string]any{"users_and_personas.pain_points": []any{"lost jobs"}}},
		// The names after a take-back are what the user meant, with no lead
		// into them as well as after "it's" or "but", and in a sentence of
		// their own right after it.
		{name: "the names after a take-back and an apology are put in", engine: "business-profile", focus: "competitors_named",
			current: map[string]any{"target_market.competitors": []string{"Greggs", "Pret"}},
			msg:     "Not Pret, sorry, Costa and Caffe Nero.",
			want:    map[string]any{"target_market.competitors": []any{"Greggs", "Costa", "Caffe Nero"}}},
		{name: "the name right after a take-back is put in", engine: "business-profile", focus: "competitors_named",
			current: map[string]any{"target_market.competitors": []string{"Greggs", "Pret"}},
			msg:     "Not Pret, Costa.",
			want:    map[string]any{"target_market.competitors": []any{"Greggs", "Costa"}}},
		{name: "the name in the sentence after a take-back is put in", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "No, not Shopify. Square.",
			want:    map[string]any{"constraints.integrations": []any{"Xero", "Square"}}},
		{name: "an apology after a take-back is no item", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Not Shopify, sorry about that.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}, absent: []string{"constraints.timeline"}},
		{name: "an apology in the sentence after a take-back is no item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Not Shopify. My mistake, thanks.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "thanks in the sentence after a take-back is no item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "No, not Shopify. Thanks for asking.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "praise in the sentence after a take-back is no item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Not Shopify. Great question.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "cheers after a take-back is no item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Not Shopify. Cheers.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}},
		// A removal of an item of a list without "not X" takes it off that
		// list, and answers no other question; an item kept beside it
		// stays, and a removal denied ("Don't forget Shopify") takes
		// nothing off.
		{name: "an item not needed after all is taken off", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "We don't need Shopify after all.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "an item no longer used is taken off while another question is asked", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Actually we don't use Shopify any more.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}, absent: []string{"constraints.timeline"}},
		{name: "an item no longer needed is taken off while another question is asked", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Shopify is no longer needed.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}, absent: []string{"constraints.timeline"}},
		{name: "an item to forget is taken off while another question is asked", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Forget Shopify.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}, absent: []string{"constraints.timeline"}},
		{name: "an item named by a keyword and no longer there is taken off", focus: "timeline_known",
			current: map[string]any{"users_and_personas.pain_points": []string{"double entry", "lost jobs"}},
			msg:     "Double entry is no longer an issue.",
			want:    map[string]any{"users_and_personas.pain_points": []any{"lost jobs"}}, absent: []string{"constraints.timeline"}},
		{name: "an item kept beside one forgotten stays", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Forget Shopify, just Xero.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "an item not to forget is not taken off", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Don't forget Shopify.", absent: []string{"constraints.integrations"}},
		// "No longer", "any more" and "after all" take an item off only
		// when the user no longer has, needs or uses it.
		{name: "a pain point the user can't take any more stays", focus: "timeline_known",
			current: map[string]any{"users_and_personas.pain_points": []string{"double entry", "lost jobs"}},
			msg:     "I can't take the double entry any more.", absent: []string{"users_and_personas.pain_points"}},
		{name: "an item no longer optional stays", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Xero is no longer optional.", absent: []string{"constraints.integrations"}},
		{name: "an item the user can't do without after all stays", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "We can't live without Xero after all.", absent: []string{"constraints.integrations"}},
		{name: "an item needed beside another no longer enough stays", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "We don't just need Xero any more, we need Shopify too.", absent: []string{"constraints.integrations"}},
		{name: "a pain point caused by something no longer done stays", focus: "timeline_known",
			current: map[string]any{"users_and_personas.pain_points": []string{"double entry", "lost jobs"}},
			msg:     "Jobs get lost because the sheet is no longer updated.", absent: []string{"users_and_personas.pain_points"}},
		{name: "an item the user no longer sells on is taken off", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "We don't sell on Shopify any more.", want: map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "a competitor no longer competed with is taken off", engine: "business-profile", focus: "competitors_named",
			current: map[string]any{"target_market.competitors": []string{"Greggs", "Pret"}},
			msg:     "We no longer compete with Pret.", want: map[string]any{"target_market.competitors": []any{"Greggs"}}},
		{name: "a job the users forget to do stays", focus: "timeline_known",
			current: map[string]any{"users_and_personas.jobs_to_be_done": []string{"log their jobs", "get a signature"}},
			msg:     "Techs often forget to log their jobs.", absent: []string{"users_and_personas.jobs_to_be_done"}},
		{name: "an item we can forget is taken off", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "We can forget Shopify.", want: map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "a take-back adds what comes after its but", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "Not Xero but QuickBooks, sorry.",
			want:    map[string]any{"constraints.integrations": []any{"QuickBooks", "Google Calendar"}}},
		{name: "not a word of an item takes nothing back", focus: "timeline_known",
			current: map[string]any{"users_and_personas.pain_points": []string{"It's so slow now"}},
			msg:     "Not now.", absent: []string{"users_and_personas.pain_points"}},
		{name: "a correction that names no item of a list answers the question", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "Actually not this year, early next year.",
			want:    map[string]any{"constraints.timeline": "Actually not this year, early next year"},
			absent:  []string{"constraints.integrations"}},
		// "X, not Y" of two items of a list chooses between them: it
		// answers the question, and takes nothing off the list.
		{name: "choosing items of a list over another answers the question", engine: "ideation", focus: "shortlist_made",
			current: map[string]any{"idea_generation.ideas": []string{"buddy system", "parents session", "loyalty card"}},
			msg:     "Parents session and loyalty card, not buddy system.",
			want:    map[string]any{"evaluation.shortlist": []any{"Parents session", "loyalty card"}},
			absent:  []string{"idea_generation.ideas"}},
		{name: "choosing an option over another takes none off", engine: "exploration", focus: "decision_made",
			current: map[string]any{"solution_landscape.options": []string{"Jobber", "a custom build"}},
			msg:     "Jobber, not a custom build.",
			want: map[string]any{"decision.decision_made": "Jobber",
				"solution_landscape.eliminated_options": []any{"a custom build"}},
			absent: []string{"solution_landscape.options"}},
		{name: "what can wait is no feature taken back", focus: "mvp_scope_defined",
			current: map[string]any{"success_criteria.key_features": []string{"offline mode", "job list"}},
			msg:     "Just the job list, not offline mode.", absent: []string{"success_criteria.key_features"}},
		{name: "a correction takes back only the item it names", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "I meant Outlook calendar, not Google Calendar.",
			want:    map[string]any{"constraints.integrations": []any{"Xero", "Outlook calendar"}}},
		{name: "a correction that puts an item for another", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "Actually, not Google Calendar but Outlook.",
			want:    map[string]any{"constraints.integrations": []any{"Xero", "Outlook"}}},
		{name: "a correction that puts an item for another after a comma", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "Actually, not Xero, but QuickBooks.",
			want:    map[string]any{"constraints.integrations": []any{"Google Calendar", "QuickBooks"}}},
		{name: "not only X but also Y adds Y", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "Not only Xero but also QuickBooks.",
			want:    map[string]any{"constraints.integrations": []any{"Xero", "Google Calendar", "QuickBooks"}}},
		{name: "a correction puts its item in the place of the one it takes off, not of another", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar", "Apple Calendar"}},
			msg:     "Actually, not Google Calendar but Outlook calendar.",
			want:    map[string]any{"constraints.integrations": []any{"Xero", "Outlook calendar", "Apple Calendar"}}},
		{name: "a worry is a risk, not the answer to another question", engine: "ideation", focus: "inspirations_gathered",
			msg:    "Not enough demand for the parents session is my worry.",
			want:   map[string]any{"refinement.risks": []any{"Not enough demand for the parents session"}},
			absent: []string{"idea_generation.inspirations"}},
		{name: "a worry before its item", engine: "ideation", msg: "My biggest worry is the rent.",
			want: map[string]any{"refinement.risks": []any{"the rent"}}},
		// A worry said not to be one names no risk, and answers no question.
		{name: "a worry in the negative is no risk", engine: "ideation", msg: "I'm not worried about rent.",
			absent: []string{"refinement.risks"}},
		{name: "a worry in the negative answers no risk question", engine: "ideation", focus: "risks_identified",
			msg: "I'm not worried about rent.", absent: []string{"refinement.risks"}},
		{name: "a worry in the negative adds nothing to a known list", engine: "ideation", focus: "risks_identified",
			current: map[string]any{"refinement.risks": []string{"not enough demand"}},
			msg:     "Honestly, we're not too worried about the rent.", absent: []string{"refinement.risks"}},
		{name: "a concern in the negative is no con", engine: "exploration", msg: "I have no concerns about pricing.",
			absent: []string{"solution_landscape.option_cons"}},
		{name: "a fear in the negative is no risk", engine: "exploration", msg: "We're not afraid of lock-in.",
			absent: []string{"decision.risks", "solution_landscape.option_cons"}},
		// A keyword a negation stands right before names no item, and the
		// sentence answers no other question; a negation elsewhere in the
		// sentence is part of what it says ("Technicians can't see their
		// jobs" is a pain point).
		{name: "a system it does not sync with is no integration", msg: "It does not sync with Xero.",
			absent: []string{"constraints.integrations"}},
		{name: "a system it does not sync with answers no integration question", focus: "integrations_identified",
			msg: "It does not sync with Xero.", absent: []string{"constraints.integrations"}},
		{name: "a system it need not sync with adds nothing to a known list", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "It doesn't need to integrate with Shopify.", absent: []string{"constraints.integrations", "users_and_personas.jobs_to_be_done"}},
		{name: "a system it no longer syncs with is taken off a known list", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "It doesn't sync with Xero any more.",
			want:    map[string]any{"constraints.integrations": []any{"Google Calendar"}}, absent: []string{"constraints.timeline"}},
		{name: "a business one does not compete with is taken off the competitors", engine: "business-profile",
			current: map[string]any{"target_market.competitors": []string{"Greggs", "Pret"}},
			msg:     "Actually we don't really compete with Greggs.",
			want:    map[string]any{"target_market.competitors": []any{"Pret"}}},
		{name: "a business one does not compete with is no competitor", engine: "business-profile",
			msg: "We don't compete with Greggs.", absent: []string{"target_market.competitors"}},
		{name: "a product one is not considering is no option", engine: "exploration",
			msg: "We're not considering Squarespace.", absent: []string{"solution_landscape.options"}},
		{name: "having no competitors names none", engine: "business-profile", focus: "competitors_named",
			msg: "We have no competitors.", want: map[string]any{"target_market.competitors": nil}},
		{name: "what one does not waste is no pain point", msg: "We don't waste time on it.",
			absent: []string{"users_and_personas.pain_points"}},
		{name: "a negated keyword beside an asserted one names what the asserted one does",
			msg:  "It doesn't sync with Xero, but it syncs with Shopify.",
			want: map[string]any{"constraints.integrations": []any{"Shopify"}}},
		{name: "a negation before the keyword's clause is part of the pain point",
			msg:  "Technicians can't see their jobs, which is so frustrating.",
			want: map[string]any{"users_and_personas.pain_points": []any{"Technicians can't see their jobs", "which is so frustrating"}}},
		// A negation under an "if" makes the keyword a condition the user
		// holds to: what it names is wanted.
		{name: "a system it is useless without syncing with is an integration", focus: "integrations_identified",
			msg: "It's useless if it can't sync with Xero.", want: map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "a system without which the user won't buy is an integration",
			msg: "If it doesn't sync with Xero, we won't buy it.", want: map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "a system it is fine not to integrate with is no integration", focus: "integrations_identified",
			msg: "It's fine if it doesn't integrate with Shopify.", absent: []string{"constraints.integrations"}},
		{name: "a system it is fine not to sync with comes off the list", focus: "timeline_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "If it can't sync with Shopify, that's fine.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}, absent: []string{"constraints.timeline"}},
		{name: "a system it need not sync with, said with it, is no integration", msg: "We don't need it to sync with Shopify.",
			absent: []string{"constraints.integrations"}},
		{name: "why not asks for the item", msg: "Why not integrate with Xero?",
			want: map[string]any{"constraints.integrations": []any{"Xero"}}},
		// The trade: "risk" said as a verb under a negation names no risk.
		{name: "a risk one cannot take names no risk", engine: "ideation", msg: "We can't risk losing customers.",
			absent: []string{"refinement.risks"}},
		// The items are read after the keyword the sentence asserts, not after
		// one it takes back.
		{name: "a worry after a worry in the negative is the risk", engine: "ideation",
			msg:  "I am not worried about rent, but I am worried about footfall.",
			want: map[string]any{"refinement.risks": []any{"footfall"}}},
		{name: "a system it syncs with after one it does not is the integration",
			msg:  "We don't sync with Xero but we sync with Shopify.",
			want: map[string]any{"constraints.integrations": []any{"Shopify"}}},
		{name: "a lack is an item, not an item taken off", engine: "ideation", focus: "risks_identified",
			msg: "Not enough demand.", want: map[string]any{"refinement.risks": []any{"Not enough demand"}}},
		{name: "a lack adds to a known list", engine: "ideation", focus: "risks_identified",
			current: map[string]any{"refinement.risks": []string{"rent is high"}},
			msg:     "Not enough demand, and not many people would pay.",
			want:    map[string]any{"refinement.risks": []any{"rent is high", "Not enough demand", "not many people would pay"}}},
		{name: "a lack after its keyword is the item", engine: "ideation", focus: "risks_identified",
			msg: "The main risk is not enough demand.", want: map[string]any{"refinement.risks": []any{"not enough demand"}}},
		{name: "an item after its keyword is without its preposition", engine: "exploration", msg: "I'm worried about pricing.",
			want: map[string]any{"solution_landscape.option_cons": []any{"pricing"}}},
		{name: "items after a keyword and a verb are without their preposition", engine: "exploration",
			msg:  "My main concern is about pricing and lock-in.",
			want: map[string]any{"solution_landscape.option_cons": []any{"pricing", "lock-in"}}},
		{name: "every item after its keyword is without its preposition", engine: "exploration",
			msg:  "I'm worried about pricing and about lock-in.",
			want: map[string]any{"solution_landscape.option_cons": []any{"pricing", "lock-in"}}},
		{name: "what one is afraid of is the risk and the con", engine: "exploration", msg: "I am afraid of lock-in.",
			want: map[string]any{"decision.risks": []any{"lock-in"}, "solution_landscape.option_cons": []any{"lock-in"}}},
		{name: "what one is scared of are the cons", engine: "exploration", msg: "I'm scared of lock-in and the monthly fees.",
			want: map[string]any{"solution_landscape.option_cons": []any{"lock-in", "the monthly fees"}}},
		{name: "the risk of something is that thing", engine: "exploration", focus: "risks_identified",
			msg: "There is a risk of vendor lock-in.", want: map[string]any{"decision.risks": []any{"vendor lock-in"}}},
		{name: "an about that says an amount is rough stays", engine: "exploration", focus: "constraints_identified",
			msg:  "We only have about 300 dollars a month.",
			want: map[string]any{"decision.constraints": []any{"about 300 dollars a month"}}},
		{name: "an item after with is the noun phrase", engine: "ideation", focus: "risks_identified",
			msg: "My concern is with the dispatchers.", want: map[string]any{"refinement.risks": []any{"the dispatchers"}}},
		{name: "saying items are what the field names names them", engine: "business-profile",
			msg:  "Greggs and Pret are our main competitors.",
			want: map[string]any{"target_market.competitors": []any{"Greggs", "Pret"}}},
		{name: "saying items are what the field names names them, even after another answer", engine: "business-profile",
			focus: "business_stage_known", current: map[string]any{"target_market.competitors": []string{"Greggs"}},
			msg:  "Pret and Costa are our main competitors.",
			want: map[string]any{"target_market.competitors": []any{"Greggs", "Pret", "Costa"}}},
		// Not the main one is still one.
		{name: "saying an item is not the main one keeps it", engine: "business-profile", focus: "competitors_named",
			current: map[string]any{"target_market.competitors": []string{"Greggs", "Pret"}},
			msg:     "Pret isn't our main competitor.", absent: []string{"target_market.competitors"}},
		{name: "saying an item is not the biggest one keeps it", engine: "business-profile",
			current: map[string]any{"target_market.competitors": []string{"Greggs", "Pret"}},
			msg:     "Pret is not our biggest competitor, Greggs is.", absent: []string{"target_market.competitors"}},
		// "They", "That" or "It" point back at what was said: no name.
		{name: "saying they are what the field names names nothing", engine: "business-profile",
			focus: "business_stage_known", current: map[string]any{"target_market.competitors": []string{"Greggs"}},
			msg: "They are our main competitors.", absent: []string{"target_market.competitors"}},
		{name: "saying that is what the field names adds nothing to a known list", focus: "timeline_known",
			current: map[string]any{"success_criteria.key_features": []string{"job list"}},
			msg:     "That is our main feature.", absent: []string{"success_criteria.key_features"}},
		{name: "saying an item is what the field names names it", engine: "business-profile", focus: "bottlenecks_identified",
			msg:  "Invoicing is our biggest bottleneck.",
			want: map[string]any{"operations.bottlenecks": []any{"Invoicing"}}},
		{name: "saying an item is not what the field names takes it off", engine: "business-profile", focus: "competitors_named",
			current: map[string]any{"target_market.competitors": []string{"Greggs", "Pret"}},
			msg:     "Pret isn't a competitor, it's Costa.",
			want:    map[string]any{"target_market.competitors": []any{"Greggs", "Costa"}}},
		{name: "saying an item is not what the field names corrects a known list while another question is asked",
			engine: "business-profile", focus: "business_model_type_known",
			current: map[string]any{"target_market.competitors": []string{"Greggs", "Pret"}},
			msg:     "Pret isn't a competitor, it's Costa.",
			want:    map[string]any{"target_market.competitors": []any{"Greggs", "Costa"}},
			absent:  []string{"business_model.model_type"}},
		{name: "saying an item is not what the field names names no item", engine: "business-profile", focus: "competitors_named",
			msg: "Pret isn't a competitor, it's Costa.", want: map[string]any{"target_market.competitors": []any{"Costa"}}},
		{name: "saying an item is not what the field names, and no other", engine: "business-profile",
			current: map[string]any{"target_market.competitors": []string{"Greggs", "Pret"}},
			msg:     "Pret is not really one of our competitors.",
			want:    map[string]any{"target_market.competitors": []any{"Greggs"}}},
		{name: "saying an item's not what the field names takes it off", engine: "business-profile",
			current: map[string]any{"target_market.competitors": []string{"Greggs", "Pret"}},
			msg:     "Pret’s not a competitor.",
			want:    map[string]any{"target_market.competitors": []any{"Greggs"}}},
		// A quality a keyword names, said not to be there, is no item.
		{name: "a quality in the negative adds nothing to a known list",
			current: map[string]any{"users_and_personas.pain_points": []string{"double entry"}},
			msg:     "The app isn't slow.", absent: []string{"users_and_personas.pain_points"}},
		{name: "a quality in the negative is no item", msg: "The app is not slow.",
			absent: []string{"users_and_personas.pain_points"}},
		{name: "a quality in the negative keeps the pain point said after it", focus: "user_pain_points_captured",
			msg: "The app isn't slow, but it crashes a lot.", want: map[string]any{"users_and_personas.pain_points": []any{"it crashes a lot"}}},
		{name: "a quality in the negative answers no other question", focus: "timeline_known",
			current: map[string]any{"users_and_personas.pain_points": []string{"double entry"}},
			msg:     "It's not slow.", absent: []string{"users_and_personas.pain_points", "constraints.timeline"}},
		// A risk or a problem that says what is hard or costly is not an
		// idea's feasibility: feasibility would be answered before any idea
		// is shortlisted.
		{name: "a risk that something is expensive is no feasibility note", engine: "ideation", focus: "risks_identified",
			msg: "The main risk is it's expensive to run.", want: map[string]any{"refinement.risks": []any{"it's expensive to run"}},
			absent: []string{"evaluation.feasibility_notes"}},
		{name: "a problem that something is hard is no feasibility note", engine: "ideation", focus: "problem_defined",
			msg:    "It's hard to get people to come on weekdays.",
			want:   map[string]any{"problem_space.problem_statement": "It's hard to get people to come on weekdays"},
			absent: []string{"evaluation.feasibility_notes"}},
		{name: "an idea hard to build is a feasibility note", engine: "ideation", focus: "feasibility_assessed",
			current: map[string]any{"evaluation.shortlist": []string{"a loyalty app", "a buddy system"}},
			msg:     "The app would be hard to build.",
			want:    map[string]any{"evaluation.feasibility_notes": []any{"The app would be hard to build"}}},
		{name: "a remark that one said so is no item", focus: "integrations_identified", msg: "Xero and Shopify, as I mentioned.",
			want: map[string]any{"constraints.integrations": []any{"Xero", "Shopify"}}},
		{name: "restating a list with a remark adds nothing", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "Xero and Google Calendar, like I said.", absent: []string{"constraints.integrations"}},
		{name: "restating list items with a possessive adds nothing", focus: "jobs_to_be_done_captured",
			current: map[string]any{"users_and_personas.jobs_to_be_done": []string{"see jobs", "record work"}},
			msg:     "They need to see their jobs and record their work.",
			absent:  []string{"users_and_personas.jobs_to_be_done"}},
		{name: "a keyword before one name", focus: "integrations_identified", msg: "It syncs with Xero.",
			want: map[string]any{"constraints.integrations": []any{"Xero"}}},
		// What the product has to do besides ("and work offline") is no item
		// of what it has to sync with; what it does with things is.
		{name: "a requirement after the systems is no system", msg: "It has to sync with Xero and work offline.",
			want: map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "a requirement after the systems is no system at the focus", focus: "integrations_identified",
			msg:  "It needs to integrate with Xero and Shopify and send invoices.",
			want: map[string]any{"constraints.integrations": []any{"Xero", "Shopify"}}},
		{name: "what a system does after it is no system", msg: "It syncs with Xero and runs on Android.",
			want: map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "a clause after the systems is no system", msg: "It has to connect to Xero and it must work offline.",
			want: map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "a noun that could be a verb is a system", focus: "integrations_identified",
			msg:  "It has to sync with Xero and work orders.",
			want: map[string]any{"constraints.integrations": []any{"Xero", "work orders"}}},
		{name: "what the business does after its customers is none", engine: "business-profile",
			msg:  "We sell to local cafes and deliver every morning.",
			want: map[string]any{"target_market.customer_segments": []any{"local cafes"}}},
		{name: "what the user wants after a con is no con", engine: "exploration",
			msg:  "I'm worried about pricing and want something simpler.",
			want: map[string]any{"solution_landscape.option_cons": []any{"pricing"}}},
		{name: "a name added to a known list", engine: "exploration", focus: "options_identified",
			current: map[string]any{"solution_landscape.options": []string{"Shopify", "WooCommerce"}},
			msg:     "We're also considering Squarespace.",
			want:    map[string]any{"solution_landscape.options": []any{"Shopify", "WooCommerce", "Squarespace"}}},
		{name: "a name on a known list said again with also adds nothing", focus: "trigger_event_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "It also needs to sync with Xero.", absent: []string{"constraints.integrations"}},
		{name: "one plain word after a keyword is no item", msg: "It's so slow now.",
			want: map[string]any{"users_and_personas.pain_points": []any{"It's so slow now"}}},
		{name: "a value said in the negative is not the value", focus: "project_type_identified",
			msg: "It's not a mobile app, it's a web app.", want: map[string]any{"purpose_and_problem.project_type": "web app"}},
		{name: "a bare assent answers no question that asks for a value", focus: "tech_constraints_known", msg: "Yes, that's right.",
			absent: []string{"constraints.technical"}},
		{name: "a bare assent without a yes answers nothing either", focus: "team_resources_known", msg: "That is correct.",
			absent: []string{"constraints.team"}},
		// After a handoff's greeting "Sounds good." became the project type.
		{name: "an appraisal answers a question asking how the user feels", engine: "exploration", focus: "user_reactions_captured",
			msg: "Good.", want: map[string]any{"solution_landscape.reactions": []any{"Good"}}},
		{name: "an appraisal with a hedge answers too", engine: "exploration", focus: "user_reactions_captured",
			msg: "Fine, I guess.", want: map[string]any{"solution_landscape.reactions": []any{"Fine"}}},
		{name: "good question is no yes", focus: "confirm_project_scope", msg: "Good question, let me check with my partner.",
			absent: []string{"validation.scope_confirmed"}},
		{name: "an acknowledgement confirms what a yes-or-no question asks", focus: "confirm_project_scope", msg: "Sounds good.",
			want: map[string]any{"validation.scope_confirmed": true}},
		{name: "an acknowledgement answers no question that asks for a value", focus: "project_type_identified", msg: "Sounds good.",
			absent: []string{"purpose_and_problem.project_type"}},
		{name: "thanks answer nothing", focus: "core_problem_defined", msg: "Great, thanks!",
			absent: []string{"purpose_and_problem.core_problem"}},
		{name: "got it answers nothing", focus: "core_problem_defined", msg: "Got it, makes sense.",
			absent: []string{"purpose_and_problem.core_problem"}},
		{name: "an appraisal after a greeting answers no question that asks for a value", focus: "project_type_identified", msg: "Great!",
			absent: []string{"purpose_and_problem.project_type"}},
		{name: "an appraisal before the answer is no part of it", focus: "core_problem_defined",
			msg:  "Perfect. Our crews keep missing urgent jobs.",
			want: map[string]any{"purpose_and_problem.core_problem": "Our crews keep missing urgent jobs"}},
		{name: "an appraisal with an ok answers no question that asks for a value", focus: "core_problem_defined", msg: "Ok, great.",
			absent: []string{"purpose_and_problem.core_problem"}},
		{name: "an acknowledgement before the answer keeps the answer", focus: "core_problem_defined",
			msg:  "Sounds good. Our crews keep missing urgent jobs.",
			want: map[string]any{"purpose_and_problem.core_problem": "Our crews keep missing urgent jobs"}},
		{name: "a tradeoff said after its verb", engine: "exploration", focus: "tradeoffs_weighed",
			msg:  "The tradeoff is flexibility versus simplicity.",
			want: map[string]any{"decision.tradeoffs": []any{"flexibility versus simplicity"}}},
		{name: "a tradeoff said after an adverb", engine: "exploration", focus: "tradeoffs_weighed",
			msg:  "It's really price versus control for us.",
			want: map[string]any{"decision.tradeoffs": []any{"price versus control"}}},
		{name: "a tradeoff said after it's", engine: "exploration", focus: "tradeoffs_weighed",
			msg:  "It's price versus control.",
			want: map[string]any{"decision.tradeoffs": []any{"price versus control"}}},
		// A side that a preposition qualifies keeps its head; what a verb
		// or a determiner stands before is no head.
		{name: "a tradeoff keeps the head a preposition qualifies", engine: "exploration", focus: "tradeoffs_weighed",
			msg:  "Convenience for parents versus the fees.",
			want: map[string]any{"decision.tradeoffs": []any{"Convenience for parents versus the fees"}}},
		{name: "a time after a preposition keeps its preposition", engine: "business-profile", focus: "growth_timeline_known",
			msg:  "We want to double revenue in 3 years.",
			want: map[string]any{"growth_and_scaling.growth_timeline": "in 3 years"}},
		{name: "a tradeoff keeps no verb before a preposition", engine: "exploration", focus: "tradeoffs_weighed",
			msg:  "It comes down to price versus control.",
			want: map[string]any{"decision.tradeoffs": []any{"price versus control"}}},
		{name: "a tradeoff said after always", engine: "exploration", focus: "tradeoffs_weighed",
			msg:  "It was always cost vs speed.",
			want: map[string]any{"decision.tradeoffs": []any{"cost vs speed"}}},
		{name: "a lead before a comma is no item", focus: "integrations_identified", msg: "Yes, Xero and Shopify.",
			want: map[string]any{"constraints.integrations": []any{"Xero", "Shopify"}}},
		// An answer that there is none is the list's null, not an item, and
		// to a list known already says there is no more.
		{name: "none is no item", engine: "business-profile", focus: "competitors_named", msg: "None.",
			want: map[string]any{"target_market.competitors": nil}},
		{name: "a bare no says there is none", engine: "business-profile", focus: "competitors_named", msg: "No.",
			want: map[string]any{"target_market.competitors": nil}},
		{name: "a no with its hedge says there is none", engine: "business-profile", focus: "competitors_named",
			msg: "Not really, no.", want: map[string]any{"target_market.competitors": nil}},
		{name: "nothing yet is none", focus: "integrations_identified", msg: "Nothing yet",
			want: map[string]any{"constraints.integrations": nil}},
		{name: "not using any is none", focus: "integrations_identified", msg: "We don't use any",
			want: map[string]any{"constraints.integrations": nil}},
		{name: "not needing it to integrate with anything is none", focus: "integrations_identified",
			msg: "We don't need it to integrate with anything.", want: map[string]any{"constraints.integrations": nil}},
		{name: "not needing to connect to anything else is none", focus: "integrations_identified",
			msg: "It doesn't need to connect to anything else.", want: map[string]any{"constraints.integrations": nil}},
		{name: "no worries to the risks question is none", engine: "ideation", focus: "risks_identified",
			msg: "No worries there.", want: map[string]any{"refinement.risks": nil}},
		{name: "having no real worries is none", engine: "ideation", focus: "risks_identified",
			msg: "Honestly I don't have any real worries.", want: map[string]any{"refinement.risks": nil}},
		{name: "an item with nothing else is the item", focus: "integrations_identified", msg: "Xero, nothing else.",
			want: map[string]any{"constraints.integrations": []any{"Xero"}}},
		{name: "none with why is none", focus: "integrations_identified", msg: "None, it's standalone.",
			want: map[string]any{"constraints.integrations": nil}},
		{name: "nothing with why is no pain point", focus: "user_pain_points_captured", msg: "Nothing, it's all fine.",
			want: map[string]any{"users_and_personas.pain_points": nil}},
		{name: "a no with what there is instead is not none", engine: "ideation", focus: "risks_identified",
			msg:  "Not really, it's the weather that worries me.",
			want: map[string]any{"refinement.risks": []any{"it's the weather that worries me"}}},
		{name: "none to a known list adds no item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "None.", absent: []string{"constraints.integrations"}},
		{name: "a lack is a pain point, not none", focus: "user_pain_points_captured", msg: "No way to see the jobs",
			want: map[string]any{"users_and_personas.pain_points": []any{"No way to see the jobs"}}},
		{name: "a negation made of a negated keyword's words is an item, not none", engine: "business-profile",
			focus: "tech_pain_points_identified", msg: "Nothing is connected.",
			want: map[string]any{"technology_stack.tech_pain_points": []any{"Nothing is connected"}}},
		{name: "not knowing any is not none", engine: "business-profile", focus: "competitors_named", msg: "I don't know any.",
			absent: []string{"target_market.competitors"}, deferred: []string{"competitors_named"}},
		{name: "a correction marker before a comma is no item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero"}},
			msg:     "Actually, Google Calendar too.",
			want:    map[string]any{"constraints.integrations": []any{"Xero", "Google Calendar"}}},
		{name: "an apology before a comma is no item", focus: "integrations_identified",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}},
			msg:     "Sorry, I meant Outlook calendar.",
			want:    map[string]any{"constraints.integrations": []any{"Xero", "Outlook calendar"}}},
		// What a user volunteers to exploration, whatever was asked.
		{name: "the decision the user needs to make is the problem", engine: "exploration",
			msg:  "I run a small yoga studio and I need to decide how members book classes.",
			want: map[string]any{"initial_state.problem_statement": "I run a small yoga studio and I need to decide how members book classes"}},
		{name: "what one is not sure how is no problem", engine: "exploration", focus: "problem_explored",
			msg:    "I'm not sure how the fees compare.",
			want:   map[string]any{"initial_state.knowledge_gaps": []any{"how the fees compare"}},
			absent: []string{"initial_state.problem_statement"}},
		{name: "names one has heard of are options", engine: "exploration", focus: "prior_knowledge_assessed",
			msg:  "I've heard of Mindbody and Glofox, maybe a custom app.",
			want: map[string]any{"solution_landscape.options": []any{"Mindbody", "Glofox", "a custom app"}}},
		{name: "names one has looked at are options", engine: "exploration", focus: "knowledge_gaps_identified",
			msg:    "I've looked at SignUpGenius and Google Sheets.",
			want:   map[string]any{"solution_landscape.options": []any{"SignUpGenius", "Google Sheets"}},
			absent: []string{"initial_state.knowledge_gaps"}},
		{name: "a name one has never heard of is no option", engine: "exploration", msg: "I've never heard of Glofox.",
			absent: []string{"solution_landscape.options"}},
		{name: "what one thinks about is no option", engine: "exploration", msg: "I'm thinking about the cost.",
			absent: []string{"solution_landscape.options"}},
		{name: "options considered grow the known ones whatever was asked", engine: "exploration", focus: "pros_explored",
			current: map[string]any{"solution_landscape.options": []string{"SchoolCloud"}},
			msg:     "We're considering SchoolCloud, Google Forms and a custom build.",
			want:    map[string]any{"solution_landscape.options": []any{"SchoolCloud", "Google Forms", "a custom build"}},
			absent:  []string{"solution_landscape.option_pros"}},
		{name: "an option too expensive is a con", engine: "exploration", focus: "pros_explored",
			msg:    "Mindbody is too expensive for me, around 150 pounds a month.",
			want:   map[string]any{"solution_landscape.option_cons": []any{"Mindbody is too expensive"}},
			absent: []string{"solution_landscape.option_pros", "decision.constraints"}},
		{name: "what an option does not do is a con", engine: "exploration", focus: "pros_explored",
			msg:    "Square doesn't do delivery slots.",
			want:   map[string]any{"solution_landscape.option_cons": []any{"Square doesn't do delivery slots"}},
			absent: []string{"solution_landscape.option_pros"}},
		{name: "an option not too expensive is no con", engine: "exploration", msg: "Glofox isn't too expensive.",
			absent: []string{"solution_landscape.option_cons"}},
		{name: "what it is too early for is no con", engine: "exploration", msg: "It's too early to say.",
			absent: []string{"solution_landscape.option_cons"}},
		{name: "what an option does is a pro", engine: "exploration", focus: "cons_explored",
			msg:    "I think Glofox looks good, it does booking and payments.",
			want:   map[string]any{"solution_landscape.option_pros": []any{"booking", "payments"}},
			absent: []string{"solution_landscape.option_cons"}},
		{name: "an option that looks good is a pro", engine: "exploration", focus: "cons_explored",
			msg: "Shopify looks good but it is too complicated for me.",
			want: map[string]any{"solution_landscape.option_pros": []any{"Shopify looks good"},
				"solution_landscape.option_cons": []any{"Shopify is too complicated"}}},
		// A pro and a con said of one option in one sentence are both
		// filed, and the "it" of the second clause is the option the
		// first names: "it's too expensive" alone says of what.
		{name: "an option that looks powerful but is too expensive has a pro and a con", engine: "exploration",
			focus: "pros_explored", msg: "Mindbody looks powerful but it's too expensive for us.",
			want: map[string]any{"solution_landscape.option_pros": []any{"Mindbody looks powerful"},
				"solution_landscape.option_cons": []any{"Mindbody is too expensive"}},
			absent: []string{"decision.constraints"}},
		{name: "what an option named before does not do is a con of it", engine: "exploration", focus: "cons_explored",
			msg:  "Glofox is cheap, but it doesn't do payments.",
			want: map[string]any{"solution_landscape.option_cons": []any{"Glofox doesn't do payments"}}},
		{name: "a pro said before a con ends where the con begins", engine: "exploration", focus: "cons_explored",
			msg: "Glofox has a nice app but it's too basic for us.",
			want: map[string]any{"solution_landscape.option_pros": []any{"Glofox has a nice app"},
				"solution_landscape.option_cons": []any{"Glofox is too basic"}}},
		{name: "a con said before a pro ends where the pro begins", engine: "exploration", focus: "cons_explored",
			msg: "Square doesn't do delivery slots but it looks good.",
			want: map[string]any{"solution_landscape.option_cons": []any{"Square doesn't do delivery slots"},
				"solution_landscape.option_pros": []any{"Square looks good"}}},
		{name: "it after a subject that is no name stays it", engine: "exploration", focus: "cons_explored",
			msg:  "The app looks nice but it's too slow.",
			want: map[string]any{"solution_landscape.option_cons": []any{"it's too slow"}}},
		{name: "it after a lead that is no name stays it", engine: "exploration", focus: "cons_explored",
			msg:  "Honestly, it's too expensive.",
			want: map[string]any{"solution_landscape.option_cons": []any{"it's too expensive"}}},
		// What an option has that is good is a pro of it.
		{name: "an option that has a nice app has a pro", engine: "exploration", focus: "teach_back_passed",
			msg:  "Glofox has a nice app for members.",
			want: map[string]any{"solution_landscape.option_pros": []any{"Glofox has a nice app for members"}}},
		{name: "an option that has great reviews has a pro", engine: "exploration", focus: "cons_explored",
			msg:  "Mindbody has really great reviews.",
			want: map[string]any{"solution_landscape.option_pros": []any{"Mindbody has really great reviews"}}},
		{name: "an option that has good support has a pro", engine: "exploration", focus: "cons_explored",
			msg:  "I think Acuity Scheduling has good support.",
			want: map[string]any{"solution_landscape.option_pros": []any{"Acuity Scheduling has good support"}}},
		{name: "it has of an option named before is a pro of it", engine: "exploration", focus: "cons_explored",
			msg:  "Glofox is too basic, but it's got great reviews.",
			want: map[string]any{"solution_landscape.option_pros": []any{"Glofox has got great reviews"}}},
		{name: "a nice app an option does not have is no pro", engine: "exploration", focus: "cons_explored",
			msg: "Glofox doesn't have a nice app.", absent: []string{"solution_landscape.option_pros"}},
		{name: "what the user has is no pro", engine: "exploration", focus: "cons_explored",
			msg: "We have a nice studio.", absent: []string{"solution_landscape.option_pros"}},
		// A date the decision is due by is a constraint of the decision,
		// not what the user hopes to achieve.
		{name: "a date to decide by is a constraint, not a goal", engine: "exploration", focus: "goals_clarified",
			msg:    "I'd like to decide by January.",
			want:   map[string]any{"decision.constraints": []any{"decide by January"}},
			absent: []string{"initial_state.goals"}},
		{name: "a date to choose before is a constraint", engine: "exploration", focus: "pros_explored",
			msg:  "We need to choose before the new term.",
			want: map[string]any{"decision.constraints": []any{"choose before the new term"}}},
		{name: "a date to pick one by is a constraint, not a goal", engine: "exploration", focus: "goals_clarified",
			msg:    "Need to pick one by January.",
			want:   map[string]any{"decision.constraints": []any{"pick one by January"}},
			absent: []string{"initial_state.goals"}},
		{name: "a decision wanted by a date is a constraint", engine: "exploration",
			msg:  "I want a decision by the end of the month.",
			want: map[string]any{"decision.constraints": []any{"a decision by the end of the month"}}},
		{name: "a date one need not decide by is no constraint", engine: "exploration",
			msg: "We don't have to decide by January.", absent: []string{"decision.constraints"}},
		// An option the user leans towards is a reaction to the options:
		// no pro of it (nothing it does or is), and no decision (a
		// decision hands the session off to project-discovery).
		{name: "a front runner is a leaning, not a pro", engine: "exploration", focus: "pros_explored",
			msg:    "I think Glofox is the front runner.",
			want:   map[string]any{"solution_landscape.reactions": []any{"Glofox is the front runner"}},
			absent: []string{"solution_landscape.option_pros", "decision.decision_made"}},
		{name: "leaning towards an option is no decision", engine: "exploration", focus: "decision_made",
			msg:    "I'm leaning towards Glofox.",
			want:   map[string]any{"solution_landscape.reactions": []any{"I'm leaning towards Glofox"}},
			absent: []string{"decision.decision_made"}},
		{name: "what the user would probably go with is no decision", engine: "exploration", focus: "decision_made",
			msg:    "We'd probably go with Glofox.",
			want:   map[string]any{"solution_landscape.reactions": []any{"We'd probably go with Glofox"}},
			absent: []string{"decision.decision_made"}},
		{name: "a leaning ends before its reason", engine: "exploration", focus: "pros_explored",
			msg:    "We'll probably go with Glofox because it's cheaper.",
			want:   map[string]any{"solution_landscape.reactions": []any{"We'll probably go with Glofox"}},
			absent: []string{"decision.decision_made"}},
		{name: "a favourite is a leaning", engine: "exploration", focus: "pros_explored",
			msg:    "Glofox is my favourite so far.",
			want:   map[string]any{"solution_landscape.reactions": []any{"Glofox is my favourite"}},
			absent: []string{"solution_landscape.option_pros", "decision.decision_made"}},
		{name: "a favorite named after it is a leaning", engine: "exploration", focus: "pros_explored",
			msg:    "My favorite is Mindbody, honestly.",
			want:   map[string]any{"solution_landscape.reactions": []any{"My favorite is Mindbody"}},
			absent: []string{"solution_landscape.option_pros", "decision.decision_made"}},
		{name: "leaning towards none is no leaning", engine: "exploration",
			msg: "I'm not leaning towards any of them yet.", absent: []string{"solution_landscape.reactions"}},
		{name: "a leaning beside a decision leaves the decision", engine: "exploration", focus: "decision_made",
			msg:  "I was leaning towards Mindbody, but I'll go with Glofox.",
			want: map[string]any{"decision.decision_made": "Glofox"}},
		{name: "what an option does not do is no pro", engine: "exploration", msg: "It does not handle payments.",
			absent: []string{"solution_landscape.option_pros"}},
		{name: "what one does not know how an option does is a gap, not a pro", engine: "exploration", focus: "pros_explored",
			current: map[string]any{"initial_state.knowledge_gaps": []string{"the costs"}},
			msg:     "I don't really know how Glofox handles payments.",
			want:    map[string]any{"initial_state.knowledge_gaps": []any{"the costs", "how Glofox handles payments"}},
			absent:  []string{"solution_landscape.option_pros"}},
		{name: "a few options looked at are no option", engine: "exploration", focus: "prior_knowledge_assessed",
			msg: "I've looked at a few options but nothing really fits.", absent: []string{"solution_landscape.options"}},
		{name: "reviews looked at are no option", engine: "exploration", focus: "pros_explored",
			msg: "I've been looking at a lot of reviews online.", absent: []string{"solution_landscape.options"}},
		{name: "a kind of product thought about is an option", engine: "exploration", focus: "pros_explored",
			msg:  "We're thinking about a no-code platform.",
			want: map[string]any{"solution_landscape.options": []any{"a no-code platform"}}},
		{name: "praise of the reply is no pro", engine: "exploration", focus: "pros_explored",
			msg: "That's great, thanks.", absent: []string{"solution_landscape.option_pros"}},
		{name: "a name that begins like That is still a name", engine: "exploration", focus: "cons_explored",
			msg:  "Thrivecart looks good.",
			want: map[string]any{"solution_landscape.option_pros": []any{"Thrivecart looks good"}}},
		{name: "an option said to be out is ruled out", engine: "exploration", focus: "tradeoffs_weighed",
			msg: "Custom is out.", want: map[string]any{"solution_landscape.eliminated_options": []any{"Custom"}}},
		{name: "an option ruled out is not its reason", engine: "exploration", focus: "tradeoffs_weighed",
			msg:  "We can rule out the custom build, no time.",
			want: map[string]any{"solution_landscape.eliminated_options": []any{"the custom build"}}},
		{name: "what is out of reach is ruled out of nothing", engine: "exploration", msg: "The budget is out of reach.",
			absent: []string{"solution_landscape.eliminated_options"}},
		// What the user would not rule out is ruled out of nothing.
		{name: "an option the user can't rule out stays", engine: "exploration", focus: "tradeoffs_weighed",
			current: map[string]any{"solution_landscape.options": []string{"Glofox", "Mindbody"}},
			msg:     "I can't rule out Glofox.", absent: []string{"solution_landscape.eliminated_options"}},
		{name: "nothing ruled out yet is none", engine: "exploration", focus: "options_narrowed",
			current: map[string]any{"solution_landscape.options": []string{"Glofox", "Mindbody"}},
			msg:     "I wouldn't rule out anything yet.",
			want:    map[string]any{"solution_landscape.eliminated_options": nil}},
		{name: "an option the user thinks they can rule out is ruled out", engine: "exploration",
			focus: "tradeoffs_weighed", msg: "I think we can rule out Mindbody.",
			want: map[string]any{"solution_landscape.eliminated_options": []any{"Mindbody"}}},
		{name: "a plain answer to what the user is unsure about is a gap", engine: "exploration",
			focus: "knowledge_gaps_identified", msg: "The monthly fees.",
			want: map[string]any{"initial_state.knowledge_gaps": []any{"The monthly fees"}}},
		// A count said to what the user is unsure about states a size, not
		// a doubt; a count that introduces the doubts does not.
		{name: "a count answers no question for doubts", engine: "exploration",
			focus: "knowledge_gaps_identified", msg: "About 120 members, mostly locals.",
			absent: []string{"initial_state.knowledge_gaps"}},
		{name: "a count of the doubts named is no size", engine: "exploration",
			focus: "knowledge_gaps_identified", msg: "Two things: the fees and the setup.",
			want: map[string]any{"initial_state.knowledge_gaps": []any{"the fees", "the setup"}}},
		{name: "a doubt about a number is a doubt", engine: "exploration",
			focus: "knowledge_gaps_identified", msg: "Whether 50 pounds a month is enough.",
			want: map[string]any{"initial_state.knowledge_gaps": []any{"Whether 50 pounds a month is enough"}}},
		// A stream the user stopped, an integration they drop, goes; the
		// sentence answers no question asked.
		{name: "a stopped item goes", engine: "business-profile", focus: "pricing_model_known",
			current: map[string]any{"business_model.revenue_streams": []string{"Plants", "the cafe", "landscaping jobs"}},
			msg:     "Scratch that, we stopped the landscaping jobs last year.",
			want:    map[string]any{"business_model.revenue_streams": []any{"Plants", "the cafe"}},
			absent:  []string{"business_model.pricing_model"}},
		{name: "a dropped item goes", focus: "team_resources_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Square", "Shopify"}},
			msg:     "We're dropping Shopify.",
			want:    map[string]any{"constraints.integrations": []any{"Xero", "Square"}},
			absent:  []string{"constraints.team"}},
		// What is no longer worth it goes, and what the user closes: the
		// item named, or the one "it" points back at in the sentence.
		{name: "an item no longer worth it goes", engine: "business-profile", focus: "pricing_model_known",
			current: map[string]any{"business_model.revenue_streams": []string{"Trade sales", "distillery tours", "the online shop"}},
			msg:     "The online shop is no longer worth it.",
			want:    map[string]any{"business_model.revenue_streams": []any{"Trade sales", "distillery tours"}},
			absent:  []string{"business_model.pricing_model"}},
		{name: "an item the user closes goes", engine: "business-profile", focus: "pricing_model_known",
			current: map[string]any{"business_model.revenue_streams": []string{"Trade sales", "distillery tours", "the online shop"}},
			msg:     "We're closing the online shop next month.",
			want:    map[string]any{"business_model.revenue_streams": []any{"Trade sales", "distillery tours"}},
			absent:  []string{"business_model.pricing_model"}},
		{name: "the item a closing points back at goes", engine: "business-profile", focus: "pricing_model_known",
			current: map[string]any{"business_model.revenue_streams": []string{"Trade sales", "distillery tours", "the online shop"}},
			msg:     "The online shop barely sells, so we're shutting it down.",
			want:    map[string]any{"business_model.revenue_streams": []any{"Trade sales", "distillery tours"}},
			absent:  []string{"business_model.pricing_model"}},
		{name: "an item the user closes on a day stays", engine: "business-profile", focus: "pricing_model_known",
			current: map[string]any{"business_model.revenue_streams": []string{"Trade sales", "distillery tours"}},
			msg:     "We close the distillery tours on Mondays.", absent: []string{"business_model.revenue_streams"}},
		{name: "an item that closes of itself stays", engine: "business-profile", focus: "pricing_model_known",
			current: map[string]any{"business_model.revenue_streams": []string{"Trade sales", "the online shop"}},
			msg:     "The online shop closed for a week, it was down.", absent: []string{"business_model.revenue_streams"}},
		{name: "an item not dropped stays",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "We didn't drop Shopify.", absent: []string{"constraints.integrations"}},
		{name: "an item the drop verb names stays",
			current: map[string]any{"users_and_personas.pain_points": []string{"dropped calls"}},
			msg:     "The dropped calls are the worst of it.", absent: []string{"users_and_personas.pain_points"}},
		// "Never mind" with what the user sets aside after it takes nothing
		// back: the rest of the message answers the question asked (the
		// timeline's pattern reads the deadline in it).
		{name: "never mind a topic, then the answer", focus: "timeline_known",
			msg:  "Never mind the cost, we need it before winter, so October at the latest.",
			want: map[string]any{"constraints.timeline": "before winter, so October at the latest"}},
		// What dropped or stopped of itself, not by the user's doing, takes
		// nothing the sentence names off a list.
		{name: "a competitor named after a figure that dropped stays", engine: "business-profile",
			focus:   "key_roles_identified",
			current: map[string]any{"target_market.competitors": []string{"BrightView", "local guys with a mower"}},
			msg:     "Our revenue dropped a little when BrightView opened a branch in Round Rock.",
			absent:  []string{"target_market.competitors"}},
		{name: "an idea named after a figure that dropped stays", engine: "ideation",
			current: map[string]any{"idea_generation.ideas": []string{"Text reminders", "a waitlist"}},
			msg:     "No-shows dropped at my last salon once they started text reminders.",
			absent:  []string{"idea_generation.ideas"}},
		// The reason the user gives for dropping something names what they
		// keep.
		{name: "a competitor named in the reason for a stopped product stays", engine: "business-profile",
			focus:   "core_offering_described",
			current: map[string]any{"target_market.competitors": []string{"Greggs", "Pret"}},
			msg:     "Bread and cakes, we stopped doing sandwiches because Pret does them better.",
			absent:  []string{"target_market.competitors"}},
		{name: "an option named in the reason for dropping another stays", engine: "exploration",
			focus:   "pros_explored",
			current: map[string]any{"solution_landscape.options": []string{"Glofox", "Mindbody"}},
			msg:     "We stopped looking at Mindbody because Glofox is cheaper.",
			want:    map[string]any{"solution_landscape.options": []any{"Glofox"}}},
		{name: "an item the user drops by telling to goes",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Shopify"}},
			msg:     "Actually, let's drop Shopify.",
			want:    map[string]any{"constraints.integrations": []any{"Xero"}}},
		// Names said aside go on the known list of names they belong
		// with, not under the question asked; with no such list, nowhere.
		{name: "a name added aside goes on the list of names", focus: "team_resources_known",
			current: map[string]any{"constraints.integrations": []string{"Google Calendar", "Outlook Calendar"}},
			msg:     "Oh, and Shopify too, we sell cleaning kits online.",
			want:    map[string]any{"constraints.integrations": []any{"Google Calendar", "Outlook Calendar", "Shopify"}},
			absent:  []string{"constraints.team"}},
		{name: "a name not to forget goes on the list of names", focus: "team_resources_known",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Square"}},
			msg:     "Don't forget Shopify, my partner wants to keep it.",
			want:    map[string]any{"constraints.integrations": []any{"Xero", "Square", "Shopify"}},
			absent:  []string{"constraints.team"}},
		{name: "a name added aside is no answer to a list asked for", focus: "key_features_listed",
			current: map[string]any{"constraints.integrations": []string{"Xero", "Square"}},
			msg:     "Oh, and Mailchimp.",
			want:    map[string]any{"constraints.integrations": []any{"Xero", "Square", "Mailchimp"}},
			absent:  []string{"success_criteria.key_features"}},
		{name: "a name added aside with no list of names answers nothing", focus: "team_resources_known",
			current: map[string]any{"users_and_personas.pain_points": []string{"Typing everything twice"}},
			msg:     "Oh, and Shopify too.",
			absent:  []string{"constraints.team", "users_and_personas.pain_points", "constraints.integrations"}},
		// A pain point the user says is gone, named by a part of it,
		// goes; the sentence names no other field.
		{name: "a pain point no longer a problem goes", focus: "success_metrics_defined",
			current: map[string]any{
				"users_and_personas.pain_points":    []string{"The double entry is really frustrating", "the calls at 7am when someone is lost"},
				"purpose_and_problem.core_problem":  "scheduling is a nightmare",
				"purpose_and_problem.trigger_event": "Last month two cleaners went to the same house"},
			msg:    "Double entry is no longer a problem actually, we fixed that with a form last week.",
			want:   map[string]any{"users_and_personas.pain_points": []any{"the calls at 7am when someone is lost"}},
			absent: []string{"purpose_and_problem.core_problem", "purpose_and_problem.trigger_event", "success_criteria.metrics"}},
		{name: "a pain point that isn't an issue any more goes",
			current: map[string]any{"users_and_personas.pain_points": []string{"Double entry", "missed calls"}},
			msg:     "Double entry isn't an issue any more.",
			want:    map[string]any{"users_and_personas.pain_points": []any{"missed calls"}}},
		{name: "what the users no longer need is not the users' pain",
			current: map[string]any{"users_and_personas.pain_points": []string{"The techs forget their paper forms"}},
			msg:     "The techs will no longer need paper forms.", absent: []string{"users_and_personas.pain_points"}},
		// An idea added ("Oh, and … too") while a kind of ideas none is
		// said of yet is asked for adds to the ideas.
		{name: "an idea added aside goes on the ideas", engine: "ideation", focus: "perspective_ideas_gathered",
			current: map[string]any{"idea_generation.ideas": []string{"A beginners-only evening", "a buddy system"}},
			msg:     "Oh, and a monthly social after class would be lovely too.",
			want: map[string]any{"idea_generation.ideas": []any{"A beginners-only evening", "a buddy system",
				"a monthly social after class would be lovely"}},
			absent: []string{"idea_generation.perspective_ideas"}},
		{name: "an idea added to a kind of ideas said already goes on it", engine: "ideation", focus: "perspective_ideas_gathered",
			current: map[string]any{"idea_generation.ideas": []string{"A beginners-only evening"},
				"idea_generation.perspective_ideas": []string{"a quiet corner for beginners"}},
			msg:    "Also a buddy to practise with.",
			want:   map[string]any{"idea_generation.perspective_ideas": []any{"a quiet corner for beginners", "a buddy to practise with"}},
			absent: []string{"idea_generation.ideas"}},
		// A bare list answers the list asked for, whatever keyword of
		// another field one of its items holds; a clause is read by it.
		{name: "a keyword in an item of a bare list answers no other question", engine: "business-profile",
			focus: "core_offering_described", msg: "Support, backups and security reviews.",
			want:   map[string]any{"product_offering.core_products": []any{"Support", "backups", "security reviews"}},
			absent: []string{"customer_experience.satisfaction"}},
		{name: "a keyword in a clause answers its field", engine: "business-profile",
			focus: "core_offering_described", msg: "Customers leave us great reviews.",
			want:   map[string]any{"customer_experience.satisfaction": "Customers leave us great reviews"},
			absent: []string{"product_offering.core_products"}},
		// The words a keyword of two fields finds are the text of the one
		// asked about; a yes read from them is no such text.
		{name: "a keyword of two fields gives its words to the one asked", engine: "ideation",
			focus: "root_causes_explored", msg: "The reason is the new Greggs across the road.",
			want:   map[string]any{"problem_space.root_causes": []any{"the new Greggs across the road"}},
			absent: []string{"selection.selection_rationale"}},
		{name: "a keyword of two fields gives a yes beside its words", engine: "exploration",
			focus: "teach_back_passed", msg: "In my own words, Resy is cheaper and OpenTable brings customers.",
			want: map[string]any{"understanding.teach_back": "In my own words, Resy is cheaper and OpenTable brings customers",
				"understanding.teach_back_passed": true}},
		// "Both" to a question that offers two things and both is the two.
		{name: "both is the two things the question offers", engine: "business-profile",
			focus: "business_model_type_known", msg: "Both really, cafes order wholesale and the public buys in the shop.",
			want: map[string]any{"business_model.model_type": "B2B and B2C"}},
		// Who pays, named by kind, says which model: businesses alone B2B,
		// people alone B2C, both both; a list with anything else names none.
		{name: "businesses named by kind are B2B", engine: "business-profile",
			focus: "business_model_type_known", msg: "Mostly businesses, bars and hotels.",
			want: map[string]any{"business_model.model_type": "B2B"}},
		{name: "people named by kind are B2C", engine: "business-profile",
			focus: "business_model_type_known", msg: "Tourists and local families.",
			want: map[string]any{"business_model.model_type": "B2C"}},
		{name: "businesses and people named by kind are both", engine: "business-profile",
			focus: "business_model_type_known", msg: "Hotels, restaurants and walk-ins.",
			want: map[string]any{"business_model.model_type": "B2B and B2C"}},
		{name: "a list with something else is no model", engine: "business-profile",
			focus: "business_model_type_known", msg: "Hotels and whoever finds us online.",
			absent: []string{"business_model.model_type"}},
		// How long the business has traded, said as a short time, is its
		// early stage; said unasked, "not long" is no stage.
		{name: "not long trading is early-stage", engine: "business-profile",
			focus: "business_stage_known", msg: "Not long at all, we only opened in 2023.",
			want: map[string]any{"industry.business_stage": "early-stage"}},
		{name: "a recent opening is early-stage", engine: "business-profile",
			focus: "business_stage_known", msg: "We've only been open since March.",
			want: map[string]any{"industry.business_stage": "early-stage"}},
		{name: "not long said unasked is no stage", engine: "business-profile",
			focus: "team_size_known", msg: "Not long, we are 4 people.",
			absent: []string{"industry.business_stage"}},
		// The user's remark that points back at an item is none.
		{name: "a remark pointing back at an item is none", engine: "ideation",
			msg:  "Pret does a coffee subscription, we could copy that.",
			want: map[string]any{"idea_generation.inspirations": []any{"Pret does a coffee subscription"}}},
		{name: "a remark pointing back at an integration is none",
			msg:  "It has to sync with Xero and Shopify, we need that.",
			want: map[string]any{"constraints.integrations": []any{"Xero", "Shopify"}}},
		// A keyword's item before a pattern's is an item as well.
		{name: "a keyword's item before a pattern's is kept", focus: "success_metrics_defined",
			msg:  "Success would be no more missed cleans, and I want to cut the morning phone calls in half.",
			want: map[string]any{"success_criteria.metrics": []any{"no more missed cleans", "cut the morning phone calls in half"}}},
		{name: "a pattern's item alone is the item", focus: "success_metrics_defined",
			msg:  "We want to cut the morning phone calls in half.",
			want: map[string]any{"success_criteria.metrics": []any{"cut the morning phone calls in half"}}},
		// A question of two fields, one a number: a number in the unit
		// it names answers it beside the other.
		{name: "a number in the unit asked answers beside a cue", engine: "business-profile",
			focus: "business_stage_known", msg: "Twelve years, long-standing.",
			want: map[string]any{"industry.business_stage": "established", "industry.years_operating": 12.0}},
		{name: "a number in another unit answers no number asked", engine: "business-profile",
			focus: "business_stage_known", msg: "Long-standing, there are 8 of us.",
			want: map[string]any{"industry.business_stage": "established"}, absent: []string{"industry.years_operating"}},
		{name: "a take-back with nothing to take back answers nothing", focus: "team_resources_known",
			msg: "Never mind.", absent: []string{"constraints.team"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, _ := cat.Get(cmp.Or(tt.engine, "project-discovery"))
			cur := engine.NewExtraction()
			if tt.current != nil {
				cur = known(t, def, tt.current)
			}
			ans := extract(t, def, cur, tt.focus, tt.msg)
			for p, want := range tt.want {
				fa, ok := ans.Fields[p]
				if !ok {
					t.Errorf("%s not extracted; answer %+v", p, ans.Fields)
					continue
				}
				var got any
				_ = json.Unmarshal(fa.Value, &got)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", p, got, want)
				}
				fd, _ := def.Field(p)
				if fa.Confidence < fd.Threshold() || fa.Reasoning == "" {
					t.Errorf("%s: confidence %v, reasoning %q", p, fa.Confidence, fa.Reasoning)
				}
			}
			for _, p := range tt.absent {
				if _, ok := ans.Fields[p]; ok {
					t.Errorf("%s extracted: %s", p, ans.Fields[p].Value)
				}
			}
			if !reflect.DeepEqual(ans.DeferredObligations, tt.deferred) {
				t.Errorf("deferred = %v, want %v", ans.DeferredObligations, tt.deferred)
			}
		})
	}
}

// A take-back ("Scratch that.", "Never mind, …") takes off a known list
// the items the user's last message added, and answers no question asked;
// one that would empty the list leaves it.
func TestExtractionSkillTakeBackUndoesTheLastMessage(t *testing.T) {
	def, focus := asking(t, "project-discovery", "constraints.team")
	tests := []struct {
		name, last, msg string
		current         []string
		want            []any // nil: the list is left alone
	}{
		{name: "scratch that", last: "Oh, and Mailchimp.", msg: "Scratch that.",
			current: []string{"Xero", "Square", "Mailchimp"}, want: []any{"Xero", "Square"}},
		{name: "never mind with a reason", last: "Oh, and Shopify too, we sell cleaning kits online.",
			msg: "Never mind, the kits are a side thing.", current: []string{"Google Calendar", "Shopify"},
			want: []any{"Google Calendar"}},
		{name: "the whole list", last: "Xero and Square.", msg: "Scratch that.", current: []string{"Xero", "Square"}},
		{name: "nothing the last message named", last: "Our budget is $20k.", msg: "Never mind.",
			current: []string{"Xero", "Square"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := known(t, def, map[string]any{"constraints.integrations": tt.current})
			req := extraction.BuildRequest(extraction.PromptInput{Def: def, Current: cur, Message: tt.msg, Focus: focus,
				History: []engine.Message{{Role: engine.RoleUser, Content: tt.last, Turn: 1},
					{Role: engine.RoleAssistant, Content: "Who will build and run it?", Turn: 1}}})
			out, err := offlineskill.Extraction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			ans, err := extraction.ParseAnswer(def, out)
			if err != nil {
				t.Fatal(err)
			}
			if fa, ok := ans.Fields["constraints.team"]; ok {
				t.Errorf("the take-back answers the team: %s", fa.Value)
			}
			fa, ok := ans.Fields["constraints.integrations"]
			var got []any
			_ = json.Unmarshal(fa.Value, &got)
			if ok != (tt.want != nil) || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("integrations = %v (answered %v), want %v", got, ok, tt.want)
			}
		})
	}
}

// A thing offered as an alternative right after an idea ("Or custom
// engraved boards for weddings") is one more idea, whatever was asked;
// after something else, or when it gives a reason, an amount, a time or a
// cause, it answers the question asked.
func TestExtractionSkillAlternativeAfterAnIdeaIsAnIdea(t *testing.T) {
	def, focus := asking(t, "ideation", "problem_space.root_causes")
	ideas := []string{"selling cutting boards on Etsy", "woodworking classes in my garage for beginners"}
	const idea = "Another idea: woodworking classes in my garage for beginners."
	tests := []struct {
		name, last, msg string
		want            []any // the ideas, nil for none answered
	}{
		{name: "or and a thing", last: idea, msg: "Or custom engraved boards for weddings.",
			want: []any{ideas[0], ideas[1], "custom engraved boards for weddings"}},
		{name: "what about and a thing, asked", last: idea, msg: "What about engraved coasters?",
			want: []any{ideas[0], ideas[1], "engraved coasters"}},
		{name: "maybe and a thing with a remark", last: idea, msg: "Maybe headshots for realtors, they always need them.",
			want: []any{ideas[0], ideas[1], "headshots for realtors"}},
		{name: "a reason", last: idea, msg: "Or maybe they're just too busy."},
		{name: "a cause", last: idea, msg: "Maybe lack of time."},
		{name: "a time", last: idea, msg: "Maybe weekends only."},
		{name: "an amount", last: idea, msg: "Or 200 dollars."},
		{name: "a placeholder", last: idea, msg: "Or something like that."},
		{name: "after a constraint", last: "Kiln hire is pricey.", msg: "Maybe commissions for cafes."},
		// A time, a place, or an idea said already ("the Etsy one", "the
		// classes") is no idea more.
		{name: "a time to come", last: idea, msg: "Maybe next month."},
		{name: "a season", last: idea, msg: "Or maybe in the spring."},
		{name: "one of the ideas", last: idea, msg: "Or the Etsy one."},
		{name: "an idea said already", last: idea, msg: "Maybe the classes."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := known(t, def, map[string]any{"idea_generation.ideas": ideas})
			req := extraction.BuildRequest(extraction.PromptInput{Def: def, Current: cur, Message: tt.msg, Focus: focus,
				History: []engine.Message{{Role: engine.RoleUser, Content: tt.last, Turn: 1},
					{Role: engine.RoleAssistant, Content: "Why do you think it happens — what are the root causes?", Turn: 1}}})
			out, err := offlineskill.Extraction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			ans, err := extraction.ParseAnswer(def, out)
			if err != nil {
				t.Fatal(err)
			}
			fa, ok := ans.Fields["idea_generation.ideas"]
			var got []any
			_ = json.Unmarshal(fa.Value, &got)
			if ok != (tt.want != nil) || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ideas = %v (answered %v), want %v", got, ok, tt.want)
			}
			if _, asked := ans.Fields["problem_space.root_causes"]; ok && asked {
				t.Errorf("the idea answers the root causes too")
			}
		})
	}
}

// A correction of one item of a list, applied, keeps the other items: the
// list is superseded by the list with that item corrected, not by the
// correction alone.
func TestExtractionSkillListCorrectionKeepsTheOthers(t *testing.T) {
	cat := enginetest.Shipped(t)
	def, _ := cat.Get("exploration")
	cur := known(t, def, map[string]any{"decision.constraints": []string{"budget of 5000 dollars", "deadline before tax season in January"}})
	msg := "Actually the budget is more like 8000 dollars, I checked with my partner."
	res := extraction.Apply(def, cur, extract(t, def, cur, "", msg), msg, extraction.Meta{MessageID: "m1", TurnNumber: 2})
	var got []string
	res.Extraction.Decode("decision.constraints", &got)
	if want := []string{"budget is more like 8000 dollars", "deadline before tax season in January"}; !slices.Equal(got, want) {
		t.Errorf("constraints = %q, want %q", got, want)
	}
	if len(res.Superseded) != 1 || !strings.Contains(string(res.Superseded[0].OldValue), "5000") {
		t.Errorf("superseded = %+v, want the old list", res.Superseded)
	}
}

// A clause after an answer that names something ("No, it's Xero") gives
// no reason for what comes before it: the integration the user names
// was dropped with it, leaving "No".
func TestExtractionSkillClauseNamingAnItemIsNoReason(t *testing.T) {
	def := discovery(t)
	_, focus := asking(t, "project-discovery", "constraints.integrations")
	ans := extract(t, def, engine.NewExtraction(), focus, "No, it's Xero.")
	var got []string
	_ = json.Unmarshal(ans.Fields["constraints.integrations"].Value, &got)
	if !slices.ContainsFunc(got, func(it string) bool { return strings.Contains(it, "Xero") }) {
		t.Errorf("integrations = %q, want Xero among them", got)
	}
}

// A list keyword a negation takes back ("It doesn't sync with Xero any
// more"), applied, takes the item off the stored list and keeps the others.
func TestExtractionSkillNegatedKeywordTakesTheItemOff(t *testing.T) {
	def := discovery(t)
	cur := known(t, def, map[string]any{"constraints.integrations": []string{"Xero", "Google Calendar"}})
	msg := "It doesn't sync with Xero any more."
	res := extraction.Apply(def, cur, extract(t, def, cur, "", msg), msg, extraction.Meta{MessageID: "m1", TurnNumber: 2})
	var got []string
	res.Extraction.Decode("constraints.integrations", &got)
	if want := []string{"Google Calendar"}; !slices.Equal(got, want) {
		t.Errorf("integrations = %q, want %q", got, want)
	}
}

// A decision is firm or it is none: exploration's decision answered with a
// hedge, and no cue, stays open.
func TestExtractionSkillFirmDecision(t *testing.T) {
	def, focus := asking(t, "exploration", "decision.decision_made")
	for msg, want := range map[string]any{
		"The off-the-shelf one.":                               "The off-the-shelf one",
		"Maybe the off-the-shelf one.":                         nil,
		"The cheaper one, I guess.":                            nil,
		"And it goes down a lot, too.":                         nil,
		"Which one would you pick?":                            nil,
		"We'll go with the hosted one.":                        "hosted one",
		"We picked the hosted one.":                            "hosted one",
		"Whatever we pick must fit within our budget.":         nil,
		"Hmm. The cheaper one?":                                nil,
		"Maybe. The cheaper one.":                              nil,
		"Yes. The off-the-shelf one.":                          "The off-the-shelf one",
		"Whatever I pick, it has to be cheap.":                 nil,
		"Whichever one I pick, it must be cheap.":              nil,
		"Whatever I choose has to be cheap.":                   nil,
		"If we go with the hosted one, it'd be cheaper.":       nil,
		"So if I pick the hosted one, will it scale?":          nil,
		"Should we go with the hosted one?":                    nil,
		"Even if it costs more, we'll go with the hosted one.": "hosted one",
		"We'll go with Glofox, probably.":                      nil,
		"I'll go with Glofox, I think.":                        nil,
		"I guess we'll go with Glofox.":                        nil,
		"We'll go with Glofox because it's probably cheaper.":  "Glofox",
		"We'll go with Glofox, definitely.":                    "Glofox",
		"Glofox. I think the app is what sold it.":             "Glofox",
		"Glofox. I think so.":                                  nil,
		"I think Glofox. The app sold it.":                     nil,
	} {
		ans := extract(t, def, engine.NewExtraction(), focus, msg)
		var got any
		if fa, ok := ans.Fields["decision.decision_made"]; ok {
			_ = json.Unmarshal(fa.Value, &got)
		}
		if got != want {
			t.Errorf("%q: decision = %v, want %v", msg, got, want)
		}
	}
}

// The confirmation of ideation's selection reads a negated no-word as
// nothing: "I can't wait" is eager, not a no.
func TestExtractionSkillIdeationConfirmation(t *testing.T) {
	def, focus := asking(t, "ideation", "selection.selection_confirmed")
	for msg, want := range map[string]bool{
		"Absolutely, I can't wait to get started!": true,
		"Yes, let's do it, no need to wait.":       true,
		"Wait, not yet.":                           false,
		"Yes, but wait a moment.":                  false,
	} {
		ans := extract(t, def, engine.NewExtraction(), focus, msg)
		var got any
		if fa, ok := ans.Fields["selection.selection_confirmed"]; ok {
			_ = json.Unmarshal(fa.Value, &got)
		}
		if got != want {
			t.Errorf("%q: selection confirmed = %v, want %v", msg, got, want)
		}
	}
}

func TestExtractionSkillRejectsOtherPrompts(t *testing.T) {
	_, err := offlineskill.Extraction(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}}})
	if !errors.Is(err, extraction.ErrNotExtractionPrompt) {
		t.Errorf("err = %v", err)
	}
	if _, err := offlineskill.Reply(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}}}); !errors.Is(err, offlineskill.ErrNotReplyPrompt) {
		t.Errorf("err = %v", err)
	}
}

// FuzzExtractionSkill: whatever the user says, the skill's answer validates
// against the answer schema the prompt carries.
func FuzzExtractionSkill(f *testing.F) {
	def := discovery(f)
	raw := extraction.AnswerSchema(def)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		f.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("answer.json", doc); err != nil {
		f.Fatal(err)
	}
	schema, err := c.Compile("answer.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add("Our budget is around $60k to $80k, about 40 technicians.", "")
	f.Add("Yes! skip", "confirm_project_scope")
	f.Add("They need to: a, b, and c; we keep 1.5m users", "jobs_to_be_done_captured")
	f.Fuzz(func(t *testing.T, msg, focus string) {
		req := extraction.BuildRequest(extraction.PromptInput{Def: def, Current: engine.NewExtraction(), Message: msg, Focus: focus})
		out, err := offlineskill.Extraction(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
		if err != nil {
			t.Fatalf("answer is not JSON: %v", err)
		}
		if err := schema.Validate(inst); err != nil {
			t.Fatalf("answer %s breaks the schema: %v", out, err)
		}
		if _, err := extraction.ParseAnswer(def, out); err != nil {
			t.Fatalf("answer %s: %v", out, err)
		}
	})
}

func replyPrompt(t *testing.T, def *engine.Definition, phaseID string, techniques []string, next string, m *engine.WorkingMemory, msg string) llm.Request {
	t.Helper()
	tok, err := contextasm.NewTiktoken("")
	if err != nil {
		t.Fatal(err)
	}
	a, err := contextasm.New(contextasm.Config{Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	m.Phase.Current = phaseID
	o, _ := def.Obligation(next)
	asm := a.Assemble(contextasm.Input{Def: def, Memory: m, Message: msg, Techniques: techniques, Next: o})
	var sections []string
	for _, p := range asm.Parts {
		if p.Section != contextasm.SectionMessage {
			sections = append(sections, p.Text)
		}
	}
	return llm.Request{Purpose: offlineskill.PurposeResponse, Messages: []llm.Message{
		{Role: llm.System, Content: "You are a consultant.\n\n" + strings.Join(sections, "\n\n")},
		{Role: llm.User, Content: msg}}}
}

func TestReplySkill(t *testing.T) {
	def := discovery(t)
	fresh := func() *engine.WorkingMemory {
		m := engine.NewWorkingMemory(def, "s", "p")
		m.TurnNumber = 2
		// What is known was filed at turn 1, which the history shows: the
		// message of turn 2 filed nothing yet.
		m.Extraction = known(t, def, map[string]any{"purpose_and_problem.core_problem": "jobs get lost",
			"success_criteria.key_features": []string{"job list", "signatures"}})
		m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "hi"},
			{Role: engine.RoleAssistant, Turn: 1, Content: "Hello! What would you like to build?"}}
		return m
	}
	tests := []struct {
		name       string
		phase      string
		techniques []string
		next       string
		msg        string
		setup      func(m *engine.WorkingMemory)
		want       string
	}{
		{name: "active listening reflects the user", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "We lose our jobs every week. It hurts.",
			want: "It sounds like you lose your jobs every week. What made this a priority now?"},
		{name: "active listening turns contractions around", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "I've used ServiceTitan and we'd like something simpler.",
			want: "It sounds like you've used ServiceTitan and you'd like something simpler. What made this a priority now?"},
		{name: "active listening keeps a name's capital", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Greggs and Pret are our main competitors.",
			want: "It sounds like Greggs and Pret are your main competitors. What made this a priority now?"},
		{name: "mirroring keeps the capital of a name the session knows", phase: "CORE_CAPTURE", techniques: []string{"mirroring"},
			next: "trigger_event_identified", msg: "Xero is what our accountant wants.",
			setup: func(m *engine.WorkingMemory) {
				m.Extraction = known(t, def, map[string]any{"constraints.integrations": []string{"Xero"}})
			},
			want: "Got it: Xero is what your accountant wants. What made this a priority now?"},
		{name: "mirroring drops a remark on what the user told before", phase: "CORE_CAPTURE", techniques: []string{"mirroring"},
			next: "trigger_event_identified", msg: "As I told you, my team wastes hours on scheduling every week",
			want: "Got it: your team wastes hours on scheduling every week. What made this a priority now?"},
		{name: "active listening keeps a capital inside a word", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "QuickBooks takes an hour every evening.",
			want: "It sounds like QuickBooks takes an hour every evening. What made this a priority now?"},
		{name: "active listening lowers a common first word", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "The paperwork takes an hour every evening.",
			want: "It sounds like the paperwork takes an hour every evening. What made this a priority now?"},
		{name: "active listening lowers a common noun", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Customers keep calling us about late visits.",
			want: "It sounds like customers keep calling you about late visits. What made this a priority now?"},
		{name: "active listening lowers an opener before a name", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Honestly, Excel is killing us at month end.",
			want: "It sounds like honestly, Excel is killing you at month end. What made this a priority now?"},
		{name: "active listening keeps the capital of names listed with commas", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Greggs, Pret and Costa are our main competitors.",
			want: "It sounds like Greggs, Pret and Costa are your main competitors. What made this a priority now?"},
		// A name the session does not know keeps its capital when it is no
		// common word, or when the user wrote it capitalised inside a
		// sentence; a common noun is lowered.
		{name: "active listening keeps the capital of a product's name", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Excel is what we use for the rota.",
			want: "It sounds like Excel is what you use for the rota. What made this a priority now?"},
		{name: "active listening keeps the capital of a word that is no common one", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "Tradify keeps crashing on site.",
			want: "It sounds like Tradify keeps crashing on site. What made this a priority now?"},
		{name: "active listening keeps the capital of a name the user wrote inside a sentence", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "Square keeps logging us out.",
			setup: func(m *engine.WorkingMemory) {
				m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "We take payments with Square."},
					{Role: engine.RoleAssistant, Turn: 1, Content: "What problem do you want to solve?"}}
			},
			want: "It sounds like Square keeps logging you out. What made this a priority now?"},
		{name: "active listening lowers a common word the session never wrote inside a sentence", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "Square keeps logging us out.",
			want: "It sounds like square keeps logging you out. What made this a priority now?"},
		{name: "active listening keeps the capital of a name the message writes inside a sentence", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "Square is slow. We moved to Square last year.",
			want: "It sounds like Square is slow. What made this a priority now?"},
		{name: "active listening lowers a common first word that a known value only starts with", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "Right now we use paper and Excel.",
			setup: func(m *engine.WorkingMemory) {
				m.Extraction = known(t, def, map[string]any{"purpose_and_problem.current_solution": "Right now we use paper and Excel"})
			},
			want: "It sounds like right now you use paper and Excel. What made this a priority now?"},
		{name: "reflective listening lowers a common first word that a known value of a few clauses starts with", phase: "CORE_CAPTURE",
			techniques: []string{"reflective_listening"}, next: "trigger_event_identified", msg: "Something with food would suit us.",
			setup: func(m *engine.WorkingMemory) {
				m.Extraction = known(t, def, map[string]any{"purpose_and_problem.current_solution": "Something with food would suit us"})
			},
			want: "So what matters to you is that something with food would suit you. What made this a priority now?"},
		{name: "active listening keeps the capital of a common word the session knows as a name", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "Square keeps logging us out.",
			setup: func(m *engine.WorkingMemory) {
				m.Extraction = known(t, def, map[string]any{"constraints.integrations": []string{"Square"}})
			},
			want: "It sounds like Square keeps logging you out. What made this a priority now?"},
		{name: "active listening lowers a plural noun", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Deadlines are tight every spring.",
			want: "It sounds like deadlines are tight every spring. What made this a priority now?"},
		{name: "active listening lowers a common word", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Rent went up again this year.",
			want: "It sounds like rent went up again this year. What made this a priority now?"},
		{name: "active listening lowers a word with a common ending", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Invoicing takes us a whole day.",
			want: "It sounds like invoicing takes you a whole day. What made this a priority now?"},
		// A long word the tokenizer's vocabulary holds whole, lowercase, is a
		// common word; a short one may be a name ("Costa").
		{name: "active listening lowers a common word the vocabulary holds", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Revenue is about 300k a year.",
			want: "It sounds like revenue is about 300k a year. What made this a priority now?"},
		{name: "active listening keeps the capital of a short name the vocabulary holds", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "Costa opened a shop next door.",
			want: "It sounds like Costa opened a shop next door. What made this a priority now?"},
		{name: "active listening keeps a day's capital", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Mondays are chaos for us.",
			want: "It sounds like Mondays are chaos for you. What made this a priority now?"},
		{name: "active listening lowers an article a known fact opens with", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "The van breaks down every week.",
			setup: func(m *engine.WorkingMemory) {
				m.Extraction = known(t, def, map[string]any{"purpose_and_problem.core_problem": "The paperwork eats our evenings"})
			},
			want: "It sounds like the van breaks down every week. What made this a priority now?"},
		// A message that goes on with an "or" or a "but" is echoed without
		// it, and a fragment without a verb ("Or a meal prep service …") is
		// no "that" clause, nor what "It sounds like" takes: reflective and
		// active listening leave it to the next technique.
		{name: "active listening drops the or a message opens with", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Or we could run a meal prep service for busy parents",
			want: "It sounds like you could run a meal prep service for busy parents. What made this a priority now?"},
		{name: "mirroring drops the hedge before a fragment", phase: "CORE_CAPTURE", techniques: []string{"mirroring"},
			next: "trigger_event_identified", msg: "Maybe a weekend stall selling Caribbean food",
			want: "Got it: a weekend stall selling Caribbean food. What made this a priority now?"},
		{name: "active listening leaves out a thing named", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening", "elicit_change_talk"}, next: "trigger_event_identified",
			msg:  "Or custom engraved boards for weddings.",
			want: "Think about what will be different for you once this is solved. What made this a priority now?"},
		{name: "active listening leaves out a thing named with a participle", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "Fewer missed jobs.",
			want: "What made this a priority now?"},
		{name: "reflective listening echoes a clause whose verb is in the present", phase: "CORE_CAPTURE",
			techniques: []string{"reflective_listening"}, next: "trigger_event_identified", msg: "The van breaks down every week.",
			want: "So what matters to you is that the van breaks down every week. What made this a priority now?"},
		{name: "reflective listening echoes a clause whose verb is a regular past", phase: "CORE_CAPTURE",
			techniques: []string{"reflective_listening"}, next: "trigger_event_identified", msg: "Revenue dropped last year.",
			want: "So what matters to you is that revenue dropped last year. What made this a priority now?"},
		// What the user labels ("Another idea: …", "One idea is …") is said
		// back as a clause, whichever technique says it back.
		{name: "reflective listening says a label as a clause", phase: "CORE_CAPTURE",
			techniques: []string{"reflective_listening"}, next: "trigger_event_identified",
			msg:  "Another idea: woodworking classes in my garage for beginners.",
			want: "So another idea is woodworking classes in your garage for beginners. What made this a priority now?"},
		{name: "active listening says a label as a clause", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "One idea is selling cutting boards on Etsy.",
			want: "So one idea is selling cutting boards on Etsy. What made this a priority now?"},
		{name: "mirroring says a label of a thing named as a clause", phase: "CORE_CAPTURE",
			techniques: []string{"mirroring"}, next: "trigger_event_identified", msg: "My idea: a pottery class.",
			want: "So your idea is a pottery class. What made this a priority now?"},
		// An example's opener fits any engine: it names no tool or build
		// the user's case may have nothing to do with.
		{name: "examples and analogies invent no example", phase: "CORE_CAPTURE",
			techniques: []string{"examples_and_analogies"}, next: "trigger_event_identified", msg: "We sell cakes.",
			want: "An example can help: think of someone who faced something similar, in your field or another, and what they did. " +
				"What made this a priority now?"},
		// A question for the assistant is taken up before the question the
		// reply asks, in place of the technique's opener and of a repeat's
		// excuse; an offer put as a question, or one about what the reply
		// meant, is not.
		{name: "a question for the assistant is taken up", phase: "CORE_CAPTURE",
			techniques: []string{"context_reinstatement"}, next: "trigger_event_identified", msg: "What would you do next?",
			want: "Good question. First, let's settle this: what made this a priority now?"},
		{name: "a question for the assistant after a statement is taken up", phase: "CONSTRAINTS", techniques: nil,
			next: "timeline_known", msg: "I like the wedding boards. Which one would you pick?",
			setup: func(m *engine.WorkingMemory) {
				m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "hi"},
					{Role: engine.RoleAssistant, Turn: 1, Content: "When do you need it, and is there a hard deadline?"}}
			},
			want: "Good question. First, let's settle this: when do you need it, and is there a hard deadline?"},
		{name: "an offer put as a question is no question for the assistant", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "What about mugs on Etsy?",
			want: "What made this a priority now?"},
		{name: "reflective listening drops the but a message opens with", phase: "CORE_CAPTURE",
			techniques: []string{"reflective_listening"}, next: "trigger_event_identified", msg: "But we can't afford a new van this year.",
			want: "So what matters to you is that you can't afford a new van this year. What made this a priority now?"},
		{name: "active listening drops the because a reason opens with", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "current_solution_understood", msg: "Because our biggest client told us they'd leave if we keep missing calls",
			want: "It sounds like your biggest client told you they'd leave if you keep missing calls. How do you handle this today?"},
		{name: "mirroring keeps what the user said happened before a comma", phase: "CORE_CAPTURE", techniques: []string{"mirroring"},
			next: "trigger_event_identified", msg: "I said no, but my partner wants to build it anyway.",
			want: "Got it: you said no, but your partner wants to build it anyway. What made this a priority now?"},
		{name: "active listening keeps the because of a cause", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Because of the rain we lose half our jobs.",
			want: "It sounds like because of the rain you lose half your jobs. What made this a priority now?"},
		{name: "reflective listening does not make a fragment a clause", phase: "CORE_CAPTURE",
			techniques: []string{"reflective_listening", "mirroring"}, next: "trigger_event_identified",
			msg:  "Or a meal prep service for busy parents",
			want: "Got it: a meal prep service for busy parents. What made this a priority now?"},
		// An echo that does not fit its frame is left out: a sentence
		// without its subject, a thing named for "what matters to you is
		// that", a preposition's phrase, an instruction, an aside, a
		// take-back.
		{name: "active listening leaves out a sentence without its subject", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "Lost a big client last month.",
			want: "What made this a priority now?"},
		{name: "reflective listening leaves out a thing named", phase: "CORE_CAPTURE",
			techniques: []string{"reflective_listening"}, next: "trigger_event_identified", msg: "Whiteboard and phone calls.",
			want: "What made this a priority now?"},
		{name: "active listening leaves out a preposition's phrase", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "On paper, mostly.",
			want: "What made this a priority now?"},
		{name: "active listening leaves out an instruction", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified",
			msg: "Don't forget Shopify, my partner wants to keep it.", want: "What made this a priority now?"},
		{name: "active listening leaves out an aside", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified",
			msg: "Oh, and Shopify too, we sell cleaning kits online.", want: "What made this a priority now?"},
		{name: "active listening leaves out a take-back", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified",
			msg: "Scratch that, we stopped the landscaping jobs last year.", want: "What made this a priority now?"},
		{name: "reflective listening echoes the clause after a no", phase: "CORE_CAPTURE",
			techniques: []string{"reflective_listening"}, next: "trigger_event_identified", msg: "No, we do all of it by hand.",
			want: "So what matters to you is that you do all of it by hand. What made this a priority now?"},
		{name: "mirroring lowers a first word a known value opens with", phase: "CORE_CAPTURE",
			techniques: []string{"mirroring"}, next: "trigger_event_identified", msg: "Fewer missed jobs.",
			setup: func(m *engine.WorkingMemory) {
				m.Extraction = known(t, def, map[string]any{"success_criteria.metrics": []string{"Fewer missed jobs"}})
			},
			want: "Got it: fewer missed jobs. What made this a priority now?"},
		{name: "reflective listening echoes a clause that opens with an article", phase: "CORE_CAPTURE",
			techniques: []string{"reflective_listening"}, next: "trigger_event_identified", msg: "A big client left us last month.",
			want: "So what matters to you is that a big client left you last month. What made this a priority now?"},
		// "me" after a "you" the echo just said is "yourself", not "you"
		// again.
		{name: "active listening names the user once among the team", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "There are 6 of us, me, two bakers and three in the shop",
			want: "It sounds like there are 6 of you, yourself, two bakers and three in the shop. What made this a priority now?"},
		{name: "active listening turns me and us around", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "Me and my partner run it, it keeps us busy.",
			want: "It sounds like you and your partner run it, it keeps you busy. What made this a priority now?"},
		{name: "active listening does not echo a question back", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "What do you mean by alternatives?", want: "What made this a priority now?"},
		{name: "active listening does not echo a decline", phase: "CORE_CAPTURE", techniques: []string{"active_listening"},
			next: "trigger_event_identified", msg: "I'd rather skip that one.", want: "What made this a priority now?"},
		{name: "reflective listening does not echo a bare confirmation", phase: "CORE_CAPTURE",
			techniques: []string{"reflective_listening"}, next: "trigger_event_identified", msg: "That's right.",
			want: "What made this a priority now?"},
		{name: "context reinstatement then the question", phase: "CORE_CAPTURE", techniques: []string{"context_reinstatement", "active_listening"},
			next: "trigger_event_identified", msg: "ok",
			want: "Picture the last time this came up: where you were and who was involved. What made this a priority now?"},
		{name: "summary reflection lists what is known", phase: "VALIDATION", techniques: []string{"summary_reflection"},
			next: "confirm_project_scope", msg: "ok",
			want: "Here is what I have so far:\n- Core problem: jobs get lost\n- Key features: job list and signatures\nDoes this summary capture your project correctly?"},
		{name: "a repeated question is asked another way", phase: "CONSTRAINTS", techniques: nil,
			next: "timeline_known", msg: "hmm",
			setup: func(m *engine.WorkingMemory) {
				m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "hi"},
					{Role: engine.RoleAssistant, Turn: 1, Content: "When do you need it, and is there a hard deadline?"}}
			},
			want: "Even a rough answer helps, or say if you would rather skip it for now: when do you need it, and is there a hard deadline?"},
		// A message that files something, if not what was asked, is an
		// answer: the question comes back after a word that takes it, in
		// the user's words turned around, without the excuse of a question
		// passed over (the dog-walking chat read "Even a rough answer
		// helps, or say if you would rather skip it for now: …" after the
		// success metrics, a project type and a budget).
		{name: "a question asked again after an answer filed elsewhere takes the answer", phase: "CORE_CAPTURE",
			techniques: nil, next: "trigger_event_identified", msg: "It has to work on phones, most clients are on iPhone.",
			setup: func(m *engine.WorkingMemory) {
				m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "We need an app for dog walks."},
					{Role: engine.RoleAssistant, Turn: 1, Content: "What made this a priority now?"}}
				m.Extraction = filedAt(t, def, m.Extraction, 2, map[string]any{"purpose_and_problem.project_type": "mobile app"})
			},
			want: "Noted, the project type: mobile app. What made this a priority now?"},
		{name: "an acknowledgement does not take the last reply's words", phase: "CORE_CAPTURE",
			techniques: nil, next: "trigger_event_identified", msg: "It has to work on phones, most clients are on iPhone.",
			setup: func(m *engine.WorkingMemory) {
				m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "Budget is $8k."},
					{Role: engine.RoleAssistant, Turn: 1, Content: "Noted, the budget: $8k. What made this a priority now?"}}
				m.Extraction = filedAt(t, def, m.Extraction, 2, map[string]any{"purpose_and_problem.project_type": "mobile app"})
			},
			want: "Thanks, I have the project type down as mobile app. What made this a priority now?"},
		{name: "an answer filed to a list is said back by the items the message names", phase: "CORE_CAPTURE",
			techniques: nil, next: "trigger_event_identified", msg: "We also want reminders the evening before a walk.",
			setup: func(m *engine.WorkingMemory) {
				m.Extraction = filedAt(t, def, m.Extraction, 2, map[string]any{
					"success_criteria.key_features": []string{"job list", "signatures", "reminders the evening before a walk"}})
			},
			want: "I've put that with the key features: reminders the evening before a walk. What made this a priority now?"},
		{name: "an answer is said back with the user's words turned around", phase: "CORE_CAPTURE",
			techniques: nil, next: "trigger_event_identified", msg: "And my three walkers.",
			setup: func(m *engine.WorkingMemory) {
				m.Extraction = filedAt(t, def, m.Extraction, 2, map[string]any{"users_and_personas.secondary_users": "my three walkers"})
			},
			want: "Noted, the secondary users: your three walkers. What made this a priority now?"},
		{name: "an answer filed to two fields names them", phase: "CORE_CAPTURE",
			techniques: nil, next: "trigger_event_identified", msg: "Budget is $8k, need it by March.",
			setup: func(m *engine.WorkingMemory) {
				m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "We need an app for dog walks."},
					{Role: engine.RoleAssistant, Turn: 1, Content: "What made this a priority now?"}}
				m.Extraction = filedAt(t, def, m.Extraction, 2, map[string]any{"constraints.budget": "$8k", "constraints.timeline": "by March"})
			},
			want: "Thanks, I've noted the budget and the timeline. What made this a priority now?"},
		{name: "an answer that there is none is taken without naming what", phase: "CORE_CAPTURE",
			techniques: nil, next: "trigger_event_identified", msg: "Nothing to integrate with.",
			setup: func(m *engine.WorkingMemory) {
				m.Extraction = filedAt(t, def, m.Extraction, 2, map[string]any{"constraints.integrations": nil})
			},
			want: "Noted: none. What made this a priority now?"},
		{name: "an answer an echo says back is not acknowledged again", phase: "CORE_CAPTURE",
			techniques: []string{"active_listening"}, next: "trigger_event_identified", msg: "Actually the budget is 10000, my partner agreed.",
			setup: func(m *engine.WorkingMemory) {
				m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "We need an app for dog walks."},
					{Role: engine.RoleAssistant, Turn: 1, Content: "What made this a priority now?"}}
				m.Extraction = filedAt(t, def, m.Extraction, 2, map[string]any{"constraints.budget": "10000 dollars"})
			},
			want: "It sounds like the budget is 10000, your partner agreed. What made this a priority now?"},
		{name: "only the last reply counts as asked", phase: "CONSTRAINTS", techniques: nil,
			next: "timeline_known", msg: "hmm",
			setup: func(m *engine.WorkingMemory) {
				m.History = []engine.Message{{Role: engine.RoleUser, Turn: 1, Content: "hi"},
					{Role: engine.RoleAssistant, Turn: 1, Content: "When do you need it, and is there a hard deadline?"},
					{Role: engine.RoleUser, Turn: 2, Content: "soon"},
					{Role: engine.RoleAssistant, Turn: 2, Content: "Who will use it?"}}
			},
			want: "When do you need it, and is there a hard deadline?"},
		{name: "nothing left", phase: "VALIDATION", techniques: nil, next: "", msg: "done",
			want: "I think we have covered everything we need. Is there anything you would like to add or change?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := fresh()
			if tt.setup != nil {
				tt.setup(m)
			}
			got, err := offlineskill.Reply(context.Background(), replyPrompt(t, def, tt.phase, tt.techniques, tt.next, m, tt.msg))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("reply =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestParseReplyPrompt(t *testing.T) {
	def := discovery(t)
	m := engine.NewWorkingMemory(def, "s", "p")
	p, err := offlineskill.ParseReplyPrompt(replyPrompt(t, def, "USERS_AND_GOALS", []string{"change_perspective", "open_ended_questions"},
		"user_count_estimated", m, "Tell me more"))
	if err != nil {
		t.Fatal(err)
	}
	want := offlineskill.ReplyPrompt{Phase: "USERS_AND_GOALS", PhaseName: "Users and Goals", DominantMode: "extract",
		Techniques: []string{"change_perspective", "open_ended_questions"}, NextID: "user_count_estimated",
		NextDescription: "The number of users is estimated", NextQuestion: "Roughly how many people will use it?", Message: "Tell me more"}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("prompt =\n%+v\nwant\n%+v", p, want)
	}
}

// The prompt tells the last replies, the latest first, and what the message
// filed: the fields of a turn later than the history's last.
func TestParseReplyPromptRecentRepliesAndFiled(t *testing.T) {
	def := discovery(t)
	m := engine.NewWorkingMemory(def, "s", "p")
	for turn, reply := range []string{"One?", "Two?", "Three?", "Four?"} {
		m.History = append(m.History, engine.Message{Role: engine.RoleUser, Turn: turn + 1, Content: "ok"},
			engine.Message{Role: engine.RoleAssistant, Turn: turn + 1, Content: reply})
	}
	m.Extraction = filedAt(t, def, m.Extraction, 2, map[string]any{"constraints.budget": "$8k"})
	m.Extraction = filedAt(t, def, m.Extraction, 5, map[string]any{"purpose_and_problem.project_type": "mobile app",
		"success_criteria.key_features": []string{"reminders"}})
	m.TurnNumber = 5
	p, err := offlineskill.ParseReplyPrompt(replyPrompt(t, def, "CORE_CAPTURE", nil, "trigger_event_identified", m, "On phones."))
	if err != nil {
		t.Fatal(err)
	}
	if p.LastReply != "Four?" || !slices.Equal(p.EarlierReplies, []string{"Three?", "Two?"}) {
		t.Errorf("last reply %q, earlier replies %q; want \"Four?\" and [Three? Two?]", p.LastReply, p.EarlierReplies)
	}
	want := []offlineskill.Filed{{Name: "Project type", Value: `"mobile app"`}, {Name: "Key features", Value: `["reminders"]`}}
	if !reflect.DeepEqual(p.Filed, want) {
		t.Errorf("filed = %+v, want %+v", p.Filed, want)
	}
}

func TestSummarizeSkill(t *testing.T) {
	got, err := offlineskill.Summarize(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.User,
		Content: "Summarize.\nConversation:\n[turn 1] user: We lose jobs. It hurts.\n[turn 1] assistant: Why?\n[turn 2] user: Paper!\n"}}})
	if err != nil || got != "Earlier the user said: turn 1: We lose jobs; turn 2: Paper." {
		t.Errorf("Summarize = %q, %v", got, err)
	}
}

func TestHelpers(t *testing.T) {
	if got := offlineskill.SplitItems("a job list, offline sync, photo uploads and customer signatures."); !reflect.DeepEqual(got,
		[]string{"a job list", "offline sync", "photo uploads", "customer signatures"}) {
		t.Errorf("SplitItems = %q", got)
	}
	// The user and the people with them are one item, the people there are.
	for in, want := range map[string][]string{
		"£500 to spend and just me and one assistant": {"£500 to spend", "just me and one assistant"},
		"Me and my partner, and a part-timer":         {"Me and my partner", "a part-timer"},
		"Invoices go to me and I chase them":          {"Invoices go to me", "I chase them"},
		// An "and" inside an item stays: between the objects of one "with"
		// in a noun phrase, in what is done together, in one infinitive
		// after a place or a thing; not before a clause of its own.
		"BrightView, and a lot of guys with a truck and a mower": {"BrightView", "a lot of guys with a truck and a mower"},
		"a van with a ladder and we drive it":                    {"a van with a ladder", "we drive it"},
		"It needs to sync with Xero and Shopify":                 {"It needs to sync with Xero", "Shopify"},
		"registration and payments together":                     {"registration and payments together"},
		"Invoicing and payroll, and reports together":            {"Invoicing", "payroll", "reports together"},
		"A teenager would want somewhere to sit and charge their phone": {
			"A teenager would want somewhere to sit and charge their phone"},
		"a place to sit and we could sell coffee":         {"a place to sit", "we could sell coffee"},
		"They need to see jobs, record work and sign off": {"They need to see jobs", "record work", "sign off"},
		// A bare "or" parts items as "and" does, but not one that rounds
		// a number or makes a phrase, nor one in a clause a negation, an
		// "if", a "whether" or an "either" opens; a hedge after it ("or
		// whatever is cheapest") is no item.
		"Xero or QuickBooks, maybe FreeAgent":               {"Xero", "QuickBooks", "FreeAgent"},
		"Square, Shopify or a custom website":               {"Square", "Shopify", "a custom website"},
		"Hendrick's, Caorunn or any of the other gins":      {"Hendrick's", "Caorunn", "any of the other gins"},
		"Either Xero or QuickBooks":                         {"Xero", "QuickBooks"},
		"Avimark and Twilio, or whatever texting service":   {"Avimark", "Twilio"},
		"Avimark or something like that":                    {"Avimark"},
		"Cutting no-shows to one or two a week":             {"Cutting no-shows to one or two a week"},
		"a day or two, and twelve or so":                    {"a day or two", "twelve or so"},
		"2 or 3 people, more or less":                       {"2 or 3 people", "more or less"},
		"Two hundred customers, give or take":               {"Two hundred customers", "give or take"},
		"whether parents pay online or by phone":            {"whether parents pay online or by phone"},
		"Not Xero or Shopify":                               {"Not Xero or Shopify"},
		"We don't use Xero or Sage, just paper":             {"We don't use Xero or Sage", "just paper"},
		"if it breaks or goes down":                         {"if it breaks or goes down"},
		"we'd either hire someone or do it ourselves":       {"we'd either hire someone or do it ourselves"},
		"Whether or not they come back":                     {"Whether or not they come back"},
		"A flat monthly fee for contracts, or hourly rates": {"A flat monthly fee for contracts", "hourly rates"},
		"OpenTable, Resy, or a booking page on our website": {"OpenTable", "Resy", "a booking page on our website"},
		"Oregon or Orlando":                                 {"Oregon", "Orlando"},
	} {
		if got := offlineskill.SplitItems(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitItems(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]float64{"about 25 people": 25, "$50k": 50000, "1,200": 1200, "2.5 million": 2.5e6,
		"about forty technicians": 40, "Two hundred customers": 200, "two hundred and fifty": 250, "a hundred staff": 100,
		"forty-five people": 45, "Eight of us, counting me.": 8, "three thousand members": 3000,
		"the one we use has 12 seats": 12, "one of the managers, 3 people": 3, "a one-off fee of 200": 200} {
		if got, ok := offlineskill.ParseNumber(in); !ok || got != want {
			t.Errorf("ParseNumber(%q) = %v, %t, want %v", in, got, ok, want)
		}
	}
	for in, want := range map[string]bool{"It is a no-code tool": false, "No, not really": true, "I don't think so": true,
		"skip it": true, "yes": false, "Yes, no problem": false, "Sure, why not": false, "Nope": true,
		"Correct, nothing to add": false, "That wasn't it": true, "Yes, not an issue at all": false} {
		if got := offlineskill.Negated(in); got != want {
			t.Errorf("Negated(%q) = %t, want %t", in, got, want)
		}
	}
	if len(offlineskill.Skills()) != 4 {
		t.Error("Skills() should give extraction, response, summarize and research")
	}
}

// A reply does not say again what one of the last replies said before its
// question: a technique's fixed opener said in the last three gives way to
// the next technique's, or to none, and the signpost of inform mode is
// said alone and as seldom (a chat with exploration read "An example can
// help: …" every other reply, and "Next, let's look at this." after
// another opener, or in one reply out of two).
func TestReplyDoesNotRepeatItsOpener(t *testing.T) {
	cat := enginetest.Shipped(t)
	def, _ := cat.Get("exploration")
	const (
		example = "An example can help: think of someone who faced something similar, in your field or another, and what they did."
		chunk   = "Let's take this one step at a time."
	)
	steps := []struct {
		next string
		want string // what the reply says before its question
	}{
		{"pros_explored", example},
		{"cons_explored", chunk},
		{"goals_clarified", signpostText}, // both openers said lately
		{"options_identified", ""},        // and the signpost too
		{"user_reactions_captured", example},
		{"precedents_reviewed", chunk},
	}
	m := engine.NewWorkingMemory(def, "s", "p")
	for i, st := range steps {
		turn := i + 1
		m.TurnNumber = turn
		msg := "Hmm."
		got, err := offlineskill.Reply(context.Background(),
			replyPrompt(t, def, "EDUCATION", []string{"examples_and_analogies", "chunking_with_checkin"}, st.next, m, msg))
		if err != nil {
			t.Fatal(err)
		}
		o, _ := def.Obligation(st.next)
		if want := strings.TrimSpace(st.want + " " + o.Question); got != want {
			t.Errorf("reply %d = %q, want %q", turn, got, want)
		}
		m.History = append(m.History, engine.Message{Role: engine.RoleUser, Turn: turn, Content: msg},
			engine.Message{Role: engine.RoleAssistant, Turn: turn, Content: got})
	}
}

// signpostText is the signpost of inform mode.
const signpostText = "Next, let's look at this."

// The signpost leads to the question where no opener does: after one, as
// in "Building on what we covered: Next, let's look at this.", it piles
// up.
func TestReplySignpostsAlone(t *testing.T) {
	p := offlineskill.ReplyPrompt{Phase: "EDUCATION", DominantMode: "inform", Techniques: []string{"incremental_teach"},
		NextID: "goals_clarified", NextQuestion: "What do you hope to achieve with it?", Message: "A custom app is out."}
	if got, want := offlineskill.Compose(p), "Building on what we covered: What do you hope to achieve with it?"; got != want {
		t.Errorf("reply = %q, want %q", got, want)
	}
	p.Techniques = nil
	if got, want := offlineskill.Compose(p), signpostText+" What do you hope to achieve with it?"; got != want {
		t.Errorf("reply without an opener = %q, want %q", got, want)
	}
}

// A reply asks one question, the obligation's: no technique's opener is a
// question of its own ("Think back to the last time this came up: where
// were you, and who was involved? What made this a priority now?").
func TestReplyAsksOneQuestion(t *testing.T) {
	for _, id := range technique.IDs() {
		p := offlineskill.ReplyPrompt{Phase: "CORE_CAPTURE", DominantMode: "extract", Techniques: []string{id},
			NextID: "trigger_event_identified", NextQuestion: "What made this a priority now?",
			Known: []string{"Core problem: jobs get lost"}, Message: "We lose our jobs every week."}
		got := offlineskill.Compose(p)
		var questions []string
		for _, sn := range engine.Sentences(got) {
			if engine.IsQuestion(sn) {
				questions = append(questions, sn)
			}
		}
		if len(questions) != 1 {
			t.Errorf("%s: reply %q asks %d questions, want 1", id, got, len(questions))
		}
	}
}

// The first reply after a handoff restates it, so the I-PASS check passes
// offline; later replies do not repeat it.
func TestReplyAcknowledgesAHandoff(t *testing.T) {
	h := contracts.EngineHandoff{
		Metadata: contracts.HandoffMetadata{SourceEngineID: "exploration", SourceEngineName: "Exploration", TargetEngineID: "project-discovery",
			HandoffDate: time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC), SessionID: "s1", ProjectID: "p1", TurnCount: 10,
			CompletenessScore: 0.7, TransitionReason: "decided"},
		PhaseResults: []contracts.PhaseResult{{PhaseName: "DELIBERATION", CompletionPercentage: 70, KeyOutputs: "a decision"}},
		ActionList: contracts.ActionList{
			DecisionsReached:      []contracts.Decision{{Decision: "off-the-shelf tool", Confidence: 0.8, Reasoning: "it is cheap and fast to start"}},
			ConstraintsIdentified: []contracts.IdentifiedConstraint{{Constraint: "Budget limited to $5,000", Implication: "fit it"}},
		},
		SituationAwareness: contracts.SituationAwareness{UserConfidenceLevel: "medium",
			KnowledgeGapsRevealed: []string{"how hosting works", handoff.OpenPrefix + "The risks of the option are named"}},
		AccumulatedContext: contracts.AccumulatedContext{TechnicalLevel: "beginner"},
		RelationalState:    contracts.RelationalState{TrustLevel: "medium", Rapport: "Cordial", Sensitivities: []string{"the budget is tight"}},
	}
	summary := handoff.Format(h, "Project Discovery")
	prompt := func(history string) llm.Request {
		sys := summary + "\n\n" + contextasm.HeaderPhase + "\nPhase: OPENING | Opening | 1 of 5 | turn 1 in phase\nMode blend: extract 70% \n\n" +
			contextasm.HeaderObligations + "\n" + contextasm.NextPrefix + "core_problem_defined | The core problem is defined | ask: What problem do you want to solve?\n\n" +
			contextasm.HeaderHistory + "\n" + history
		return llm.Request{Purpose: offlineskill.PurposeResponse, Messages: []llm.Message{{Role: llm.System, Content: sys}, {Role: llm.User, Content: "Yes, let's go."}}}
	}
	first, err := offlineskill.Reply(context.Background(), prompt("(this is the first turn)"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Picking up from Exploration.", "off-the-shelf tool", "budget limited to $5,000", "how hosting works",
		"the budget is tight", "What problem do you want to solve?"} {
		if !strings.Contains(first, want) {
			t.Errorf("first reply lacks %q: %s", want, first)
		}
	}
	if n := strings.Count(first, "Still open:"); n != 1 {
		t.Errorf("the first reply says %q %d times, want once: %s", "Still open:", n, first)
	}
	if v := handoff.Verify(h, first, handoff.Receiver{EngineID: "project-discovery", ProjectID: "p1"}); !v.Verified {
		t.Errorf("the offline acknowledgment does not verify: %+v", v.Details)
	}
	later, _ := offlineskill.Reply(context.Background(), prompt("[turn 1] assistant: Picking up from Exploration."))
	if strings.Contains(later, "Picking up") {
		t.Errorf("a later reply restates the handoff: %s", later)
	}
}

// One choice made for two questions along a chain (PostgreSQL for the app
// and for analytics) is acknowledged with the question of each, not as a
// repeat, in the user's words turned around; a choice made once is named
// alone.
func TestReplyAcknowledgesOneChoiceForTwoQuestions(t *testing.T) {
	h := contracts.EngineHandoff{
		Metadata: contracts.HandoffMetadata{SourceEngineID: "exploration", SourceEngineName: "Exploration", TargetEngineID: "project-discovery",
			HandoffDate: time.Date(2026, 2, 23, 9, 0, 0, 0, time.UTC), SessionID: "s1", ProjectID: "p1", TurnCount: 10,
			CompletenessScore: 0.7, TransitionReason: "decided"},
		ActionList: contracts.ActionList{DecisionsReached: []contracts.Decision{
			{Decision: "PostgreSQL", Question: "Which database should we use for the app?", Confidence: 0.8, Reasoning: "we know it"},
			{Decision: "PostgreSQL", Question: "Which database should we use for analytics?", Confidence: 0.7, Reasoning: "one tool"},
			{Decision: "Stripe", Question: "How do we take card payments?", Confidence: 0.9, Reasoning: "fees"},
		}},
	}
	sys := handoff.Format(h, "Project Discovery") + "\n\n" + contextasm.HeaderPhase + "\nPhase: OPENING | Opening | 1 of 5 | turn 1 in phase\nMode blend: extract 70% \n\n" +
		contextasm.HeaderObligations + "\n" + contextasm.NextPrefix + "core_problem_defined | The core problem is defined | ask: What problem do you want to solve?\n\n" +
		contextasm.HeaderHistory + "\n(this is the first turn)"
	first, err := offlineskill.Reply(context.Background(), llm.Request{Purpose: offlineskill.PurposeResponse,
		Messages: []llm.Message{{Role: llm.System, Content: sys}, {Role: llm.User, Content: "Yes, let's go."}}})
	if err != nil {
		t.Fatal(err)
	}
	want := "You decided on PostgreSQL (for: Which database should you use for the app?); " +
		"PostgreSQL (for: Which database should you use for analytics?); and Stripe."
	if !strings.Contains(first, want) {
		t.Errorf("first reply = %q\nwant it to say %q", first, want)
	}
}

func TestResearchIsDeterministic(t *testing.T) {
	ask := func(handler string) (tasks.Findings, string) {
		t.Helper()
		body, _ := json.Marshal(tasks.ResearchRequest{Handler: handler, Task: tasks.Input{TaskID: "competitive_scan",
			DisplayName: "Competitive scan", Facts: []string{"Core problem: technicians lose track of jobs", "Primary user: field technicians"}}})
		out, err := offlineskill.Research(context.Background(), llm.Request{Purpose: tasks.PurposeResearch,
			Messages: []llm.Message{{Role: llm.System, Content: "research"}, {Role: llm.User, Content: string(body)}}})
		if err != nil {
			t.Fatal(err)
		}
		var f tasks.Findings
		if err := json.Unmarshal([]byte(out), &f); err != nil {
			t.Fatalf("answer is not findings: %v: %s", err, out)
		}
		return f, out
	}
	for _, h := range []string{"research.competitors", "research.solution_landscape", "something.else"} {
		f, out := ask(h)
		_, again := ask(h)
		if out != again || f.Summary == "" || len(f.Findings) == 0 || f.Source != "offline" {
			t.Errorf("%s: %s / %s", h, out, again)
		}
	}
	if f, _ := ask("research.competitors"); !strings.Contains(f.Summary, "technicians lose track of jobs") {
		t.Errorf("findings ignore the session's facts: %+v", f)
	}
	if _, err := offlineskill.Research(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}}}); err == nil {
		t.Error("a request that is not research was answered")
	}
}

// A time or money limit said with "within" is a constraint of exploration,
// not the decision the question just asked for: filed as the decision, it
// would fire the handoff to project discovery.
func TestExtractionSkillExplorationWithinIsAConstraint(t *testing.T) {
	def, focus := asking(t, "exploration", "decision.decision_made")
	for msg, want := range map[string]string{
		"We need it live within 3 months.":    "3 months",
		"It has to stay within $500 a month.": "$500 a month",
	} {
		ans := extract(t, def, engine.NewExtraction(), focus, msg)
		if fa, ok := ans.Fields["decision.decision_made"]; ok {
			t.Errorf("%q: decision = %s, want none", msg, fa.Value)
		}
		var got []string
		if fa, ok := ans.Fields["decision.constraints"]; !ok || json.Unmarshal(fa.Value, &got) != nil ||
			!slices.ContainsFunc(got, func(c string) bool { return strings.Contains(c, want) }) {
			t.Errorf("%q: constraints = %q, want one with %q", msg, got, want)
		}
	}
	for _, msg := range []string{"Within the app, scheduling is what matters.", "It is done within a few clicks."} {
		if fa, ok := extract(t, def, engine.NewExtraction(), "", msg).Fields["decision.constraints"]; ok {
			t.Errorf("%q: constraints = %s, want none", msg, fa.Value)
		}
	}
}

// What the options a user names are for ("… or a custom website for online
// orders at my bakery") is the problem they explore, as "options for"
// would say, but a guess: filed at the least confidence that counts, it
// gives way to the problem the user names outright later, where a problem
// the user named stays.
func TestExtractionSkillWhatTheOptionsAreForIsTheProblem(t *testing.T) {
	def, _ := enginetest.Shipped(t).Get("exploration")
	const path = "initial_state.problem_statement"
	fd, _ := def.Field(path)
	ans := extract(t, def, engine.NewExtraction(), "",
		"We're thinking about Square, Shopify or a custom website for online orders at my bakery.")
	fa, ok := ans.Fields[path]
	var got string
	if !ok || json.Unmarshal(fa.Value, &got) != nil || !strings.Contains(got, "online orders at my bakery") {
		t.Fatalf("problem = %s, want what the options are for", fa.Value)
	}
	if fa.Confidence != fd.Threshold() {
		t.Errorf("confidence = %v, want %v, the least that counts", fa.Confidence, fd.Threshold())
	}
	cur := extraction.Apply(def, engine.NewExtraction(), ans, "", extraction.Meta{MessageID: "m1", TurnNumber: 1}).Extraction
	named := "The problem is customers ring up and I miss orders while I'm baking."
	fa, ok = extract(t, def, cur, "", named).Fields[path]
	if !ok || json.Unmarshal(fa.Value, &got) != nil || got != strings.TrimSuffix(named, ".") {
		t.Errorf("problem named later = %s, want %q", fa.Value, named)
	}
	firm := known(t, def, map[string]any{path: "Customers ring up and I miss orders"})
	if fa, ok := extract(t, def, firm, "", named).Fields[path]; ok {
		t.Errorf("a problem the user named is replaced: %s", fa.Value)
	}
	for _, msg := range []string{"We're thinking about Square and Shopify.", "I've heard of Glofox, it's good for classes."} {
		if fa, ok := extract(t, def, engine.NewExtraction(), "", msg).Fields[path]; ok {
			t.Errorf("%q: problem = %s, want none", msg, fa.Value)
		}
	}
}
