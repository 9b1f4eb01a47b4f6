package contracts

import "encoding/json"

func init() {
	for name, p := range map[string]Payload{
		"memory.write.requested": MemoryWriteRequested{TenantID: "acme", RequestID: "r1", ProjectID: "p1", Kind: MemoryDecision,
			Node: json.RawMessage(`{"title":"Use PostgreSQL","rationale":"team knows it"}`)},
		"memory.written": MemoryWritten{TenantID: "acme", RequestID: "r1", ProjectID: "p1", Status: "saved", Outcome: "new", NodeID: "n1"},
	} {
		samples[name] = p
	}
}
