// Package praetortest runs a real Praetor node inside a Go test, for the test
// suites of what is built on Praetor's HTTP API (a chat gateway, a bot): no
// Docker, no second process, nothing to install.
//
// [Start] runs what praetor dev runs, in the test's process: an embedded NATS
// JetStream server and a SQLite store in the test's temporary directory,
// the offline LLM provider (deterministic: the same messages get the same
// replies, with no model and no key), every service, and the HTTP API with
// its page. Every port is a free one on 127.0.0.1, so tests and packages
// run their nodes side by side. Start returns once the node is ready, and
// the test's end stops it, drained, within a bound. The model is offline
// whatever PRAETOR_LLM_* and OPENAI_API_KEY say; the workflow services read
// PRAETOR_WORKFLOW_* as under praetor dev.
//
// A node has the two tenants of praetor dev: requests with [Node.Token]
// act as the tenant [Tenant], made for the test; requests from the test's
// process without a token act as the open tenant [OpenTenant], as the page
// does. [Node.NewSession] and [Node.Turn] are the documented API's calls a
// test makes most, as the tenant [Tenant]; anything else is a request to
// [Node.URL].
//
// A node is quiet: its log is kept, and printed with the test's when the
// test fails. [WithLogger] sends it elsewhere.
package praetortest
