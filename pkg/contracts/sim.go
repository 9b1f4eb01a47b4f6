package contracts

import (
	"encoding/json"
)

var (
	SimEpisodeStartedSpec = define[SimEpisodeStarted]("sim.episode.started", StreamSim, "episode_started", "episode",
		"simulator", "simulator, replay")
	SimEpisodeStepSpec = define[SimEpisodeStep]("sim.episode.step", StreamSim, "episode_step", "episode",
		"simulator", "simulator, replay")
	SimEpisodeFinishedSpec = define[SimEpisodeFinished]("sim.episode.finished", StreamSim, "episode_finished", "episode",
		"simulator", "simulator, replay")
)

// SimEpisodeStarted opens a simulation episode.
type SimEpisodeStarted struct {
	TenantID  string          `json:"tenant_id"`
	RunID     string          `json:"run_id"`
	EpisodeID string          `json:"episode_id"`
	Seed      int64           `json:"seed"`
	Setup     json.RawMessage `json:"setup,omitempty"`
}

func (SimEpisodeStarted) Spec() *Spec                   { return SimEpisodeStartedSpec }
func (s SimEpisodeStarted) Partition() (string, string) { return s.TenantID, s.EpisodeID }
func (s SimEpisodeStarted) Validate() error {
	if err := needTokens("tenant_id", s.TenantID, "episode_id", s.EpisodeID); err != nil {
		return err
	}
	return need("run_id", s.RunID)
}

// SimEpisodeStep is one turn of an episode.
type SimEpisodeStep struct {
	TenantID  string          `json:"tenant_id"`
	RunID     string          `json:"run_id"`
	EpisodeID string          `json:"episode_id"`
	Step      int             `json:"step"`
	AgentID   string          `json:"agent_id"`
	Action    json.RawMessage `json:"action,omitempty"`
}

func (SimEpisodeStep) Spec() *Spec                   { return SimEpisodeStepSpec }
func (s SimEpisodeStep) Partition() (string, string) { return s.TenantID, s.EpisodeID }
func (s SimEpisodeStep) Validate() error {
	if err := needTokens("tenant_id", s.TenantID, "episode_id", s.EpisodeID); err != nil {
		return err
	}
	return need("run_id", s.RunID, "agent_id", s.AgentID)
}

// SimEpisodeFinished closes an episode with the judge's verdict.
type SimEpisodeFinished struct {
	TenantID  string          `json:"tenant_id"`
	RunID     string          `json:"run_id"`
	EpisodeID string          `json:"episode_id"`
	Outcome   string          `json:"outcome"`
	Scores    json.RawMessage `json:"scores,omitempty"`
}

func (SimEpisodeFinished) Spec() *Spec                   { return SimEpisodeFinishedSpec }
func (s SimEpisodeFinished) Partition() (string, string) { return s.TenantID, s.EpisodeID }
func (s SimEpisodeFinished) Validate() error {
	if err := needTokens("tenant_id", s.TenantID, "episode_id", s.EpisodeID); err != nil {
		return err
	}
	return need("run_id", s.RunID, "outcome", s.Outcome)
}
