package handoff

// The context mappers of the shipped engines' exit transitions. Each knows
// its source engine's extraction schema (engines/*.yaml), as custom
// evaluators do; what every engine has is mapped by FromFields.

// Exploration → Project Discovery: the decision reached, with its
// reasoning and the tradeoffs weighed, the options ruled out, the
// constraints and risks, and what the user learnt. The question the
// decision answers is the problem the user stated, or else the one the
// session's inbound handoff carried, which exploration takes up without
// asking for it (problemCarried).
var explorationToProjectDiscovery = Fields{
	Decision: "decision.decision_made", Confidence: "decision.confidence",
	Reasoning:       []string{"decision.reasoning", "decision.tradeoffs"},
	Options:         []string{"solution_landscape.options", "solution_landscape.eliminated_options"},
	Question:        "initial_state.problem_statement",
	QuestionCarried: true,
	Eliminated:      []string{"solution_landscape.eliminated_options"},
	Constraints: []Constraint{{Path: "decision.constraints",
		Implication: "The requirements must fit within it"}},
	Risks:           []string{"decision.risks"},
	Gaps:            []string{"initial_state.knowledge_gaps"},
	Goals:           []string{"initial_state.goals"},
	PainPoints:      []string{"initial_state.problem_statement"},
	Concepts:        []string{"understanding.concepts_taught"},
	Understood:      "understanding.teach_back_passed",
	PriorExperience: []string{"initial_state.prior_knowledge"},
	TechnicalLevel:  "initial_state.technical_level",
	OpenQuestions:   []string{"understanding.questions"},
	Sensitivities:   []string{"understanding.misconceptions"},
}

// Project Discovery → Exploration: the requirements as constraints on the
// options to explore, the goals and pains behind them, the core problem as
// such (ProblemPrefix), which exploration takes up and names.
var projectDiscoveryToExploration = Fields{
	Constraints: []Constraint{
		{Path: "constraints.budget", Label: "Budget", Implication: "Only options within it are worth exploring"},
		{Path: "constraints.timeline", Label: "Timeline", Implication: "Options must be deliverable in time"},
		{Path: "constraints.technical", Label: "Technical", Implication: "Options must run on it"},
		{Path: "constraints.integrations", Label: "Integration", Implication: "Options must integrate with it"},
		{Path: "constraints.team", Label: "Team", Implication: "Options must suit who builds and runs it"},
	},
	Assumptions:     []string{"success_criteria.mvp_scope"},
	Goals:           []string{"purpose_and_problem.desired_outcome", "success_criteria.metrics"},
	Problem:         "purpose_and_problem.core_problem",
	PainPoints:      []string{"users_and_personas.pain_points"},
	PriorExperience: []string{"purpose_and_problem.current_solution"},
	OpenQuestions:   []string{"edge_cases.cases"},
	Sensitivities:   []string{"non_functional_screening.security"},
}

// businessProfile maps a confirmed business profile; implication says what
// a constraint means for the target engine.
func businessProfile(implication string) Fields {
	return Fields{
		Constraints: []Constraint{
			{Path: "growth_and_scaling.scaling_constraints", Implication: implication},
			{Path: "regulatory_and_compliance.regulations", Label: "Regulation", Implication: implication},
			{Path: "financial_model.funding", Label: "Funding", Implication: implication},
		},
		Gaps:            []string{"team_composition.skill_gaps", "data_and_analytics.data_gaps"},
		Goals:           []string{"growth_and_scaling.growth_goals", "growth_and_scaling.top_priorities"},
		PainPoints:      []string{"operations.bottlenecks", "technology_stack.tech_pain_points", "customer_experience.complaints"},
		PriorExperience: []string{"technology_stack.current_systems"},
		TechnicalLevel:  "technology_stack.digital_maturity",
		Sensitivities:   []string{"regulatory_and_compliance.data_privacy", "regulatory_and_compliance.compliance_risks"},
	}
}

// Ideation → Exploration: the framed problem, what it costs and why it
// happens, its constraints and assumptions, and the ideas the user
// shortlisted, whose solution options exploration is there to find out
// about.
var ideationToExploration = Fields{
	Question:      "problem_space.problem_statement",
	Eliminated:    []string{"evaluation.eliminated_ideas"},
	Constraints:   []Constraint{{Path: "problem_space.constraints", Implication: "Options must respect it"}},
	Assumptions:   []string{"problem_space.assumptions"},
	Shortlist:     []string{"evaluation.shortlist"},
	Goals:         []string{"problem_space.success_criteria"},
	Problem:       "problem_space.problem_statement",
	PainPoints:    []string{"problem_space.impact"},
	Causes:        []string{"problem_space.root_causes"},
	OpenQuestions: []string{"problem_space.how_might_we"},
}

// ideationToExplorationBefore3 is how sessions of memory versions 1 and 2
// hand off from ideation to exploration: the root causes as knowledge
// gaps, which the target read as open ("Still open: they get bored of the
// same coffee"), the problem as a pain point like the others, and no
// shortlist.
var ideationToExplorationBefore3 = Fields{
	Question:      "problem_space.problem_statement",
	Eliminated:    []string{"evaluation.eliminated_ideas"},
	Constraints:   []Constraint{{Path: "problem_space.constraints", Implication: "Options must respect it"}},
	Assumptions:   []string{"problem_space.assumptions"},
	Gaps:          []string{"problem_space.root_causes"},
	Goals:         []string{"problem_space.success_criteria"},
	PainPoints:    []string{"problem_space.problem_statement", "problem_space.impact"},
	OpenQuestions: []string{"problem_space.how_might_we"},
}

// explorationToProjectDiscoveryBefore3 is how sessions of memory versions
// 1 and 2 hand off from exploration to project discovery: the decision's
// question is the problem the user stated, none when the problem came with
// the inbound handoff.
var explorationToProjectDiscoveryBefore3 = Fields{
	Decision: "decision.decision_made", Confidence: "decision.confidence",
	Reasoning:  []string{"decision.reasoning", "decision.tradeoffs"},
	Options:    []string{"solution_landscape.options", "solution_landscape.eliminated_options"},
	Question:   "initial_state.problem_statement",
	Eliminated: []string{"solution_landscape.eliminated_options"},
	Constraints: []Constraint{{Path: "decision.constraints",
		Implication: "The requirements must fit within it"}},
	Risks:           []string{"decision.risks"},
	Gaps:            []string{"initial_state.knowledge_gaps"},
	Goals:           []string{"initial_state.goals"},
	PainPoints:      []string{"initial_state.problem_statement"},
	Concepts:        []string{"understanding.concepts_taught"},
	Understood:      "understanding.teach_back_passed",
	PriorExperience: []string{"initial_state.prior_knowledge"},
	TechnicalLevel:  "initial_state.technical_level",
	OpenQuestions:   []string{"understanding.questions"},
	Sensitivities:   []string{"understanding.misconceptions"},
}

// projectDiscoveryToExplorationBefore3 is how sessions of memory versions
// 1 and 2 hand off from project discovery to exploration: the core problem
// as a pain point like the others.
var projectDiscoveryToExplorationBefore3 = Fields{
	Constraints: []Constraint{
		{Path: "constraints.budget", Label: "Budget", Implication: "Only options within it are worth exploring"},
		{Path: "constraints.timeline", Label: "Timeline", Implication: "Options must be deliverable in time"},
		{Path: "constraints.technical", Label: "Technical", Implication: "Options must run on it"},
		{Path: "constraints.integrations", Label: "Integration", Implication: "Options must integrate with it"},
		{Path: "constraints.team", Label: "Team", Implication: "Options must suit who builds and runs it"},
	},
	Assumptions:     []string{"success_criteria.mvp_scope"},
	Goals:           []string{"purpose_and_problem.desired_outcome", "success_criteria.metrics"},
	PainPoints:      []string{"purpose_and_problem.core_problem", "users_and_personas.pain_points"},
	PriorExperience: []string{"purpose_and_problem.current_solution"},
	OpenQuestions:   []string{"edge_cases.cases"},
	Sensitivities:   []string{"non_functional_screening.security"},
}

// Ideation → Project Discovery: the selected idea, why, and what it must
// respect, to define its requirements.
var ideationToProjectDiscovery = Fields{
	Decision: "selection.selected_idea", Confidence: "selection.confidence",
	Reasoning:   []string{"selection.selection_rationale", "refinement.refined_concept"},
	Options:     []string{"evaluation.shortlist", "idea_generation.ideas", "evaluation.eliminated_ideas"},
	Question:    "problem_space.problem_statement",
	Eliminated:  []string{"evaluation.eliminated_ideas"},
	Constraints: []Constraint{{Path: "problem_space.constraints", Implication: "The requirements must respect it"}},
	Assumptions: []string{"problem_space.assumptions"},
	Risks:       []string{"refinement.risks"},
	Goals:       []string{"selection.success_metrics", "problem_space.success_criteria"},
	PainPoints:  []string{"problem_space.problem_statement"},
}

// listLabels are the labels of constraints mapped from list fields: each
// value is one item among others, so the integration a later session names
// is added to those carried (CarryForward), where a later budget, a single
// value, replaces the one carried.
var listLabels = map[string]bool{"Integration": true, "Regulation": true}

func builtinFields() map[string]Fields {
	return map[string]Fields{
		Name("exploration", "project-discovery"):      explorationToProjectDiscovery,
		Name("project-discovery", "exploration"):      projectDiscoveryToExploration,
		Name("business-profile", "ideation"):          businessProfile("Ideas must respect it"),
		Name("business-profile", "project-discovery"): businessProfile("The project must respect it"),
		Name("ideation", "exploration"):               ideationToExploration,
		Name("ideation", "project-discovery"):         ideationToProjectDiscovery,
	}
}

// builtinFieldsBefore3 are the fields of the mappers that sessions of
// memory versions 1 and 2 hand off with, where they are not
// builtinFields': a session hands off by the rules it started with, so
// that a replay by a later build rebuilds the handoff its target started
// with.
func builtinFieldsBefore3() map[string]Fields {
	return map[string]Fields{
		Name("ideation", "exploration"):          ideationToExplorationBefore3,
		Name("exploration", "project-discovery"): explorationToProjectDiscoveryBefore3,
		Name("project-discovery", "exploration"): projectDiscoveryToExplorationBefore3,
	}
}
