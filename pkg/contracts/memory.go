package contracts

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

var (
	MemoryWriteRequestedSpec = define[MemoryWriteRequested]("memory.write.requested", StreamMemory, "write", "project",
		"any service", "memory")
	MemoryWrittenSpec = define[MemoryWritten]("memory.written", StreamMemory, "written", "project",
		"memory", "any service")
)

// Memory node kinds a write may carry.
const (
	MemoryDecision   = "decision"
	MemoryPattern    = "pattern"
	MemoryEntityFact = "entity_fact"
)

// GlobalProject is the project_id (and so the ordering key) of writes to the
// tenant's global memory scope. A project named "global" cannot receive
// writes by event: the name always means the global scope.
const GlobalProject = "global"

// MemoryWriteRequested asks the memory service to save a node.
//
// A write to a project goes to its focus area when Focus names an existing
// one, else to the project. A write to the global scope has ProjectID
// GlobalProject and names in FromProjectID the project it comes from: the
// memory service's scope gate lets only a resolved (existing) project write,
// globally too, so a global write without one ends blocked_scope. It also
// needs Governance, a proof made with a governance token (SignMemoryWrite);
// the token itself never travels.
type MemoryWriteRequested struct {
	TenantID string `json:"tenant_id"`
	// RequestID correlates the memory.written answers with the request.
	RequestID string `json:"request_id"`
	// ProjectID is the project scope, or GlobalProject.
	ProjectID string `json:"project_id"`
	// FromProjectID is, for a global write only, the project it comes from.
	FromProjectID string `json:"from_project_id,omitempty"`
	// Focus is a focus area of ProjectID (of FromProjectID for a global
	// write, where it only takes part in resolving the scope).
	Focus string `json:"focus,omitempty"`
	Kind  string `json:"kind"`
	// Node is the decision, pattern or entity fact to write.
	Node MemoryNode `json:"node"`
	// Confirmed writes a decision even when a near-duplicate waits for
	// manual review: a person has looked at the candidate.
	Confirmed bool `json:"confirmed,omitempty"`
	// Governance authorizes a global write; only global writes carry it.
	Governance *MemoryGovernance `json:"governance,omitempty"`
}

// MemoryNode is the content of a memory write. Its size and shape rules
// (title length, one line, ...) are the memory service's: a write that breaks
// them is answered with status failed and the rule, not dead-lettered.
type MemoryNode struct {
	// Title is the decision, the pattern's name, or the fact.
	Title string `json:"title"`
	// Rationale is the why of a decision, the body of a pattern, or the
	// source of a fact.
	Rationale string `json:"rationale,omitempty"`
	// EntityName is the entity an entity fact is about (entity_fact only).
	EntityName string `json:"entity_name,omitempty"`
}

// MemoryGovernance proves that the holder of a governance token asked for
// this very write. Proof is the hex HMAC-SHA256, keyed with the token's
// stored hash (GovernanceTokenHash), of the request's canonical form
// (MemoryWriteDigest). The memory service, which keeps only hashes, looks
// the token up by TokenID, checks that it is unexpired and unrevoked, and
// recomputes the proof. A proof read from the stream is worth nothing for
// any other content, and nothing in the event lets anyone make a new one.
type MemoryGovernance struct {
	// TokenID names the governance token (the part of the token between
	// "gov_" and the next "_").
	TokenID string `json:"token_id"`
	Proof   string `json:"proof"`
}

func (MemoryWriteRequested) Spec() *Spec                   { return MemoryWriteRequestedSpec }
func (m MemoryWriteRequested) Partition() (string, string) { return m.TenantID, m.ProjectID }
func (m MemoryWriteRequested) Validate() error {
	if err := needTokens("tenant_id", m.TenantID, "project_id", m.ProjectID); err != nil {
		return err
	}
	if err := need("request_id", m.RequestID); err != nil {
		return err
	}
	if len(m.RequestID) > 256 {
		return fmt.Errorf("request_id is %d bytes; the limit is 256", len(m.RequestID))
	}
	if err := oneOf("kind", m.Kind, MemoryDecision, MemoryPattern, MemoryEntityFact); err != nil {
		return err
	}
	global := m.ProjectID == GlobalProject
	if m.FromProjectID != "" {
		if !global {
			return fmt.Errorf("from_project_id is only for writes to project_id %q (the global scope)", GlobalProject)
		}
		if err := needTokens("from_project_id", m.FromProjectID); err != nil {
			return err
		}
	}
	if g := m.Governance; g != nil {
		if !global {
			return fmt.Errorf("governance is only for writes to project_id %q (the global scope)", GlobalProject)
		}
		if !governanceTokenID.MatchString(g.TokenID) {
			return fmt.Errorf("governance.token_id %q is not a governance token id", g.TokenID)
		}
		if b, err := hex.DecodeString(g.Proof); err != nil || len(b) != sha256.Size {
			return errors.New("governance.proof must be 64 hex digits (HMAC-SHA256)")
		}
	}
	return nil
}

// MemoryWritten is the outcome of a memory write. A write answered with
// pending_retry (the graph was unavailable) is answered again, with the same
// request_id, when the retry settles it as saved, failed or blocked_scope.
type MemoryWritten struct {
	TenantID  string `json:"tenant_id"`
	RequestID string `json:"request_id"`
	// ProjectID is the request's project_id (GlobalProject for a global write).
	ProjectID string `json:"project_id"`
	// Status is saved, partial, pending_retry, failed or blocked_scope.
	Status string `json:"status"`
	// Outcome is the dedup outcome: new, duplicate_skip, supersede or manual_review.
	Outcome string `json:"outcome,omitempty"`
	// NodeID is the node holding the content (the existing one on
	// duplicate_skip); for pending_retry, the id the node will have.
	NodeID string `json:"node_id,omitempty"`
	// MatchID is the node dedup compared with: the duplicate, the node
	// superseded, or the candidate waiting for manual review.
	MatchID string `json:"match_id,omitempty"`
	// Scope is where the node went: "g", "p/<project>" or "f/<project>/<focus>".
	Scope  string `json:"scope,omitempty"`
	Detail string `json:"detail,omitempty"`
}

func (MemoryWritten) Spec() *Spec                   { return MemoryWrittenSpec }
func (m MemoryWritten) Partition() (string, string) { return m.TenantID, m.ProjectID }
func (m MemoryWritten) Validate() error {
	if err := needTokens("tenant_id", m.TenantID, "project_id", m.ProjectID); err != nil {
		return err
	}
	if err := need("request_id", m.RequestID); err != nil {
		return err
	}
	return oneOf("status", m.Status, "saved", "partial", "pending_retry", "failed", "blocked_scope")
}

// GovernanceTokenPrefix starts every governance token.
const GovernanceTokenPrefix = "gov_"

// governanceTokenID is the shape of a token id: lower-case base32.
var governanceTokenID = regexp.MustCompile(`^[a-z2-7]{16}$`)

// GovernanceTokenID returns the id part of a governance token
// "gov_<id>_<secret>", and whether token has that shape.
func GovernanceTokenID(token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, GovernanceTokenPrefix)
	if !ok {
		return "", false
	}
	id, secret, ok := strings.Cut(rest, "_")
	if !ok || secret == "" || !governanceTokenID.MatchString(id) {
		return "", false
	}
	return id, true
}

// GovernanceTokenHash is the form in which governance tokens are stored:
// hex SHA-256. It is also the key of write proofs.
func GovernanceTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// MemoryWriteDigest is the canonical form of the request that a governance
// proof covers: every field that decides what is written and where, and the
// token id, each length-prefixed so that no two requests share a form.
func MemoryWriteDigest(m MemoryWriteRequested, tokenID string) []byte {
	confirmed := "0"
	if m.Confirmed {
		confirmed = "1"
	}
	var b []byte
	for _, f := range []string{"praetor.memory.write.v1", m.TenantID, m.RequestID, m.ProjectID, m.FromProjectID,
		m.Focus, m.Kind, m.Node.Title, m.Node.Rationale, m.Node.EntityName, confirmed, tokenID} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// MemoryWriteProof is the proof of m by the token whose stored hash is
// tokenHash.
func MemoryWriteProof(m MemoryWriteRequested, tokenID, tokenHash string) string {
	mac := hmac.New(sha256.New, []byte(tokenHash))
	mac.Write(MemoryWriteDigest(m, tokenID))
	return hex.EncodeToString(mac.Sum(nil))
}

// SignMemoryWrite sets m.Governance to the proof of m by token: call it last,
// once every other field is final.
func SignMemoryWrite(m *MemoryWriteRequested, token string) error {
	id, ok := GovernanceTokenID(token)
	if !ok {
		return errors.New("sign memory write: not a governance token (gov_<id>_<secret>, from praetor memory token issue)")
	}
	m.Governance = &MemoryGovernance{TokenID: id, Proof: MemoryWriteProof(*m, id, GovernanceTokenHash(token))}
	return nil
}

// VerifyMemoryWrite reports whether m.Governance is a proof of m by the
// token whose stored hash is tokenHash, in constant time.
func VerifyMemoryWrite(m MemoryWriteRequested, tokenHash string) bool {
	if m.Governance == nil {
		return false
	}
	got, err := hex.DecodeString(m.Governance.Proof)
	if err != nil {
		return false
	}
	want, _ := hex.DecodeString(MemoryWriteProof(m, m.Governance.TokenID, tokenHash))
	return hmac.Equal(got, want)
}
