package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/praetorhq/praetor/internal/conversation"
	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/services/gateway/gatewaytest"
)

// GET /v1/sessions/{id} says why the phase is held: a transition trigger
// of project-discovery's USERS_AND_GOALS holds (80% of users), but its
// checkpoint success_metrics_defined is not satisfied and a background
// task is stalled. A session whose phase nothing holds leaves it out.
func TestSessionSaysWhyThePhaseIsHeld(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{Services: []string{"gateway"}})
	id := n.CreateSession(t, "", "project-discovery")
	type view struct {
		Phase          string   `json:"phase"`
		PhaseBlockedBy []string `json:"phase_blocked_by"`
	}
	get := func() (view, string) {
		t.Helper()
		res := n.Get(t, "/v1/sessions/"+id, "")
		if res.Status != http.StatusOK {
			t.Fatalf("GET session: %d %s", res.Status, res.Body)
		}
		var v view
		res.Decode(t, &v)
		return v, string(res.Body)
	}
	if v, body := get(); v.PhaseBlockedBy != nil {
		t.Errorf("a new session's phase is held: %s", body)
	}

	ctx := context.Background()
	s, err := conversation.GetSession(ctx, n.DB, n.DevTenant, id)
	if err != nil {
		t.Fatal(err)
	}
	var m engine.WorkingMemory
	if err := json.Unmarshal(s.State, &m); err != nil {
		t.Fatal(err)
	}
	m.Phase.Current = "USERS_AND_GOALS"
	for i, o := range m.Obligations.Items {
		if slices.Contains([]string{"primary_user_identified", "user_count_estimated", "jobs_to_be_done_captured",
			"user_pain_points_captured"}, o.ID) {
			m.Obligations.Items[i].Status = engine.StatusSatisfied
		}
	}
	m.BackgroundTasks.Pending = []engine.TaskRecord{{TaskID: "competitive_scan", Handler: "research.competitors", Attempt: 2,
		Status: engine.TaskStalled}}
	if s.State, err = json.Marshal(&m); err != nil {
		t.Fatal(err)
	}
	s.Phase = m.Phase.Current
	if err := conversation.SaveSession(ctx, n.DB, s); err != nil {
		t.Fatal(err)
	}
	want := []string{"checkpoint success_metrics_defined is not satisfied", "waiting for background task Competitive scan (stalled)"}
	if v, body := get(); v.Phase != "USERS_AND_GOALS" || !slices.Equal(v.PhaseBlockedBy, want) {
		t.Errorf("session %s; want phase_blocked_by %q", body, want)
	}
}
