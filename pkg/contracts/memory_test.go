package contracts

import (
	"strings"
	"testing"
)

// sampleGovernanceToken signs the global sample; its golden file pins the
// proof, so a change to the digest shows as a changed wire form.
const sampleGovernanceToken = "gov_abcdefghijklmnop_c2VjcmV0LW9mLXRoZS1zYW1wbGU"

func init() {
	global := MemoryWriteRequested{TenantID: "acme", RequestID: "r1", ProjectID: GlobalProject, FromProjectID: "p1",
		Kind: MemoryDecision, Node: MemoryNode{Title: "Use PostgreSQL", Rationale: "team knows it"}}
	if err := SignMemoryWrite(&global, sampleGovernanceToken); err != nil {
		panic(err)
	}
	for name, p := range map[string]Payload{
		"memory.write.requested": global,
		"memory.written": MemoryWritten{TenantID: "acme", RequestID: "r1", ProjectID: GlobalProject, Status: "saved",
			Outcome: "supersede", NodeID: "n2", MatchID: "n1", Scope: "g"},
	} {
		samples[name] = p
	}
}

func TestMemoryWriteValidate(t *testing.T) {
	project := MemoryWriteRequested{TenantID: "acme", RequestID: "r1", ProjectID: "p1", Kind: MemoryPattern,
		Node: MemoryNode{Title: "Outbox"}}
	signed := samples["memory.write.requested"].(MemoryWriteRequested)
	tests := []struct {
		name   string
		mutate func(*MemoryWriteRequested)
		want   string // "" for valid
	}{
		{"project write", func(m *MemoryWriteRequested) { *m = project }, ""},
		{"signed global write", func(*MemoryWriteRequested) {}, ""},
		{"global write without governance (the service answers failed)", func(m *MemoryWriteRequested) { m.Governance = nil }, ""},
		{"global write without origin (the service answers blocked_scope)", func(m *MemoryWriteRequested) { m.FromProjectID = "" }, ""},
		{"empty title (the service answers failed)", func(m *MemoryWriteRequested) { m.Node.Title = "" }, ""},
		{"no request id", func(m *MemoryWriteRequested) { m.RequestID = "" }, "request_id is required"},
		{"long request id", func(m *MemoryWriteRequested) { m.RequestID = strings.Repeat("r", 257) }, "request_id is 257 bytes"},
		{"bad kind", func(m *MemoryWriteRequested) { m.Kind = "opinion" }, "kind \"opinion\""},
		{"project with a dot", func(m *MemoryWriteRequested) { m.ProjectID = "p.1" }, "project_id"},
		{"origin on a project write", func(m *MemoryWriteRequested) { *m = project; m.FromProjectID = "p2" }, "from_project_id is only for"},
		{"bad origin", func(m *MemoryWriteRequested) { m.FromProjectID = "p 2" }, "from_project_id"},
		{"governance on a project write", func(m *MemoryWriteRequested) {
			g := *signed.Governance
			*m = project
			m.Governance = &g
		}, "governance is only for"},
		{"bad token id", func(m *MemoryWriteRequested) {
			m.Governance = &MemoryGovernance{TokenID: "X", Proof: signed.Governance.Proof}
		}, "token_id"},
		{"short proof", func(m *MemoryWriteRequested) {
			m.Governance = &MemoryGovernance{TokenID: signed.Governance.TokenID, Proof: "abcd"}
		}, "64 hex digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := signed
			tt.mutate(&m)
			err := m.Validate()
			if tt.want == "" && err != nil {
				t.Fatalf("Validate = %v, want valid", err)
			}
			if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestGovernanceTokenID(t *testing.T) {
	for token, want := range map[string]string{
		sampleGovernanceToken:                 "abcdefghijklmnop",
		"gov_abcdefghijklmnop_":               "",
		"gov_abcdefghijklmnop":                "",
		"gov_ABCDEFGHIJKLMNOP_secret":         "",
		"prt_abcdefghijklmnop_secret":         "",
		"gov_abcdefghijklmno_secret":          "",
		"gov_abcdefghijklmnop_secret_with_us": "abcdefghijklmnop",
	} {
		got, ok := GovernanceTokenID(token)
		if got != want || ok != (want != "") {
			t.Errorf("GovernanceTokenID(%q) = %q, %v; want %q", token, got, ok, want)
		}
	}
}

// A proof verifies with the token's hash only for the request it signed:
// any change of content, scope, tenant or token breaks it.
func TestMemoryWriteProof(t *testing.T) {
	signed := samples["memory.write.requested"].(MemoryWriteRequested)
	hash := GovernanceTokenHash(sampleGovernanceToken)
	if !VerifyMemoryWrite(signed, hash) {
		t.Fatal("the signed sample does not verify")
	}
	if VerifyMemoryWrite(signed, GovernanceTokenHash("gov_abcdefghijklmnop_other")) {
		t.Error("verifies with another token's hash")
	}
	if strings.Contains(signed.Governance.Proof, hash) || strings.Contains(signed.Governance.Proof, "c2VjcmV0") {
		t.Error("the proof carries the token or its hash")
	}
	changes := map[string]func(*MemoryWriteRequested){
		"tenant":    func(m *MemoryWriteRequested) { m.TenantID = "globex" },
		"request":   func(m *MemoryWriteRequested) { m.RequestID = "r2" },
		"origin":    func(m *MemoryWriteRequested) { m.FromProjectID = "p2" },
		"focus":     func(m *MemoryWriteRequested) { m.Focus = "api" },
		"kind":      func(m *MemoryWriteRequested) { m.Kind = MemoryPattern },
		"title":     func(m *MemoryWriteRequested) { m.Node.Title += "!" },
		"rationale": func(m *MemoryWriteRequested) { m.Node.Rationale = "" },
		"entity":    func(m *MemoryWriteRequested) { m.Node.EntityName = "x" },
		"confirmed": func(m *MemoryWriteRequested) { m.Confirmed = true },
		"token id":  func(m *MemoryWriteRequested) { g := *m.Governance; g.TokenID = "bbcdefghijklmnop"; m.Governance = &g },
		"proof": func(m *MemoryWriteRequested) {
			g := *m.Governance
			g.Proof = strings.Repeat("0", 64)
			m.Governance = &g
		},
		"no proof":   func(m *MemoryWriteRequested) { m.Governance = nil },
		"not hex":    func(m *MemoryWriteRequested) { g := *m.Governance; g.Proof = "zz"; m.Governance = &g },
		"field move": func(m *MemoryWriteRequested) { m.Node.Title, m.Node.Rationale = "Use PostgreSQLteam", " knows it" },
	}
	for name, change := range changes {
		m := signed
		change(&m)
		if VerifyMemoryWrite(m, hash) {
			t.Errorf("changed %s: the proof still verifies", name)
		}
	}
	if err := SignMemoryWrite(&signed, "prt_not_a_governance_token"); err == nil {
		t.Error("SignMemoryWrite accepted an API token")
	}
}
