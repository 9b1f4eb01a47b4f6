package contracts

func init() {
	for name, p := range map[string]Payload{
		"workflow.started": WorkflowStarted{TenantID: "acme", RunID: "run1", Workflow: "requirements-to-design", Seed: 42, StartedAt: at},
		"workflow.task.updated": WorkflowTaskUpdated{TenantID: "acme", RunID: "run1", TaskID: "design", Status: "COMPLETED",
			Attempt: 1, Outputs: []string{"design.md"}, At: at},
		"workflow.finished": WorkflowFinished{TenantID: "acme", RunID: "run1", Status: "COMPLETED", At: at},
	} {
		samples[name] = p
	}
}
