// Package mcpserver serves the memory tools over the Model Context Protocol
// (github.com/modelcontextprotocol/go-sdk): get_context, save_decision,
// save_pattern, save_entity_fact, route_analysis and run_hygiene.
//
// One Server runs over stdio (praetor memory mcp), acting for one tenant,
// and over streamable HTTP (Handler, mounted at /mcp by the memory service),
// where each request acts for the tenant of its bearer token, as the gateway
// authenticates (store.Authenticate); praetor dev may serve requests without
// a token from loopback as its local tenant.
//
// The tools follow the seed's business output guarantee: a save answers with
// its write status (saved, pending_retry, failed, blocked_scope) and dedup
// outcome as fields of a normal result, never as an error; a tool error
// (IsError) means the call itself was malformed, and says which field breaks
// which rule.
package mcpserver
