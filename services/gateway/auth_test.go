package gateway_test

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/services/gateway"
	"github.com/praetorhq/praetor/services/gateway/gatewaytest"
)

// TestTenantIsolation: a token never sees another tenant's session, by any
// route, and the answer is the 404 of a session that does not exist.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{})
	acme, globex := n.Tenant(t, "acme"), n.Tenant(t, "globex")
	id := n.CreateSession(t, acme, "project-discovery")
	n.Say(t, acme, id, "We want to build a web app for dental clinics.")

	var acmeInfo struct {
		TenantID string `json:"tenant_id"`
	}
	n.Get(t, "/v1/info", acme).Decode(t, &acmeInfo)
	if acmeInfo.TenantID != "acme" {
		t.Fatalf("acme's token is served as tenant %q", acmeInfo.TenantID)
	}

	// globex by token, and the dev tenant by being on loopback without one.
	for name, token := range map[string]string{"another tenant's token": globex, "the open dev tenant": ""} {
		t.Run(name, func(t *testing.T) {
			wantError(t, n.Get(t, "/v1/sessions/"+id, token), http.StatusNotFound, "unknown_session", id)
			wantError(t, n.Post(t, "/v1/sessions/"+id+"/turns", token, map[string]string{"message": "hi"}),
				http.StatusNotFound, "unknown_session", id)
			wantError(t, n.Post(t, "/v1/sessions/"+id+"/turns?wait=5s", token, map[string]string{"message": "hi"}),
				http.StatusNotFound, "unknown_session", id)
			wantError(t, n.Get(t, "/v1/sessions/"+id+"/turns", token), http.StatusNotFound, "unknown_session", id)
			wantError(t, n.Get(t, "/v1/sessions/"+id+"/extractions", token), http.StatusNotFound, "unknown_session", id)
			stream, res := n.OpenStream(t, id, token)
			if stream != nil {
				t.Fatal("the stream of another tenant's session opened")
			}
			wantError(t, res, http.StatusNotFound, "unknown_session", id)
			// The same answer as for a session that never existed.
			missing := n.Get(t, "/v1/sessions/"+strings.Repeat("0", len(id)), token)
			if missing.Status != http.StatusNotFound {
				t.Errorf("a missing session answers %d", missing.Status)
			}
			if listed := sessionIDs(t, n, token); slices.Contains(listed, id) {
				t.Errorf("GET /v1/sessions lists acme's session %s", id)
			}
		})
	}

	if got := turns(t, n, acme, id); len(got) != 1 {
		t.Errorf("acme's session has %d turns after the others' refused posts, want 1", len(got))
	}
	if got := n.Get(t, "/v1/sessions/"+id+"/extractions", acme); got.Status != http.StatusOK {
		t.Errorf("acme reads its extractions: %d %s", got.Status, got.Body)
	}
	if listed := sessionIDs(t, n, acme); !slices.Equal(listed, []string{id}) {
		t.Errorf("acme lists %v, want [%s]", listed, id)
	}
	stream, res := n.OpenStream(t, id, acme)
	if stream == nil {
		t.Fatalf("acme opens its stream: %d %s", res.Status, res.Body)
	}
}

func sessionIDs(t *testing.T, n *gatewaytest.Node, token string) []string {
	t.Helper()
	var body struct {
		Sessions []session `json:"sessions"`
	}
	res := n.Get(t, "/v1/sessions", token)
	if res.Status != http.StatusOK {
		t.Fatalf("list sessions: %d %s", res.Status, res.Body)
	}
	res.Decode(t, &body)
	var ids []string
	for _, s := range body.Sessions {
		ids = append(ids, s.SessionID)
	}
	return ids
}

// TestAuthentication drives the gateway's handlers with requests from
// addresses a test cannot connect from.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{})
	ctx := context.Background()
	valid := n.Tenant(t, "acme")
	revoked, tok, err := store.CreateToken(ctx, n.DB, "acme", "revoked", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.RevokeToken(ctx, n.DB, "acme", tok.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute)
	expired, _, err := store.CreateToken(ctx, n.DB, "acme", "expired", &past)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	n.Gateway.Routes(mux)

	const remote, loopback, loopback6 = "203.0.113.7:40000", "127.0.0.1:40000", "[::1]:40000"
	cases := []struct {
		name   string
		from   string
		auth   string
		tenant string // "" means 401
		host   string // default: 127.0.0.1:8080
		origin string
	}{
		{"remote without a token", remote, "", "", "", ""},
		{"remote with a valid token", remote, "Bearer " + valid, "acme", "", ""},
		{"the scheme in lower case", remote, "bearer " + valid, "acme", "", ""},
		{"remote with an unknown token", remote, "Bearer prt_nosuchtoken", "", "", ""},
		{"remote with a revoked token", remote, "Bearer " + revoked, "", "", ""},
		{"remote with an expired token", remote, "Bearer " + expired, "", "", ""},
		{"basic auth", remote, "Basic YWRtaW46YWRtaW4=", "", "", ""},
		{"bearer without a token", remote, "Bearer ", "", "", ""},
		{"a bare token", remote, valid, "", "", ""},
		{"loopback without a token", loopback, "", n.DevTenant, "", ""},
		{"IPv6 loopback without a token", loopback6, "", n.DevTenant, "", ""},
		{"loopback with a token", loopback, "Bearer " + valid, "acme", "", ""},
		// A token that is sent is checked, loopback or not.
		{"loopback with a revoked token", loopback, "Bearer " + revoked, "", "", ""},
		{"loopback with an expired token", loopback, "Bearer " + expired, "", "", ""},
		{"loopback with an unknown token", loopback, "Bearer prt_nosuchtoken", "", "", ""},
		// Without a token, only this machine's own pages: not another
		// site's page in the developer's browser (its Origin), nor one that
		// reaches the port under a name of its own (DNS rebinding: its Host).
		{"loopback as localhost", loopback, "", n.DevTenant, "localhost:8080", ""},
		{"loopback as [::1]", loopback6, "", n.DevTenant, "[::1]:8080", ""},
		{"loopback from its own page", loopback, "", n.DevTenant, "127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"loopback from another site's page", loopback, "", "", "127.0.0.1:8080", "https://evil.example"},
		{"loopback from another port's page", loopback, "", "", "127.0.0.1:8080", "http://127.0.0.1:9999"},
		{"loopback under another site's name", loopback, "", "", "evil.example:8080", ""},
		{"loopback under another site's name, from its page", loopback, "", "", "evil.example:8080", "http://evil.example:8080"},
		{"another site's page with a token", loopback, "Bearer " + valid, "acme", "127.0.0.1:8080", "https://evil.example"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/v1/info", nil)
			req.RemoteAddr = tc.from
			req.Host = cmp.Or(tc.host, "127.0.0.1:8080")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			res := gatewaytest.Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
			if tc.tenant == "" {
				wantError(t, res, http.StatusUnauthorized, "unauthenticated")
				if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("WWW-Authenticate %q, want a Bearer challenge", got)
				}
				return
			}
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d, want 200: %s", rec.Code, rec.Body)
			}
			var info struct {
				TenantID string `json:"tenant_id"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil || info.TenantID != tc.tenant {
				t.Errorf("served as tenant %q (%v), want %q", info.TenantID, err, tc.tenant)
			}
		})
	}

	// A proxy on this machine that says it forwards for someone else: not
	// this machine's own client.
	for _, h := range []string{"X-Forwarded-For", "Forwarded", "X-Real-IP"} {
		req := httptest.NewRequest(http.MethodGet, "/v1/info", nil)
		req.RemoteAddr, req.Host = loopback, "127.0.0.1:8080"
		req.Header.Set(h, "203.0.113.7")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		wantError(t, gatewaytest.Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()},
			http.StatusUnauthorized, "unauthenticated", "proxy")
	}

	// Every API route asks; the page and its files do not.
	id := n.CreateSession(t, valid, "project-discovery")
	for _, route := range []struct{ method, path string }{
		{"GET", "/v1/engines"}, {"POST", "/v1/sessions"}, {"GET", "/v1/sessions"}, {"GET", "/v1/sessions/" + id},
		{"POST", "/v1/sessions/" + id + "/turns"}, {"GET", "/v1/sessions/" + id + "/turns"},
		{"GET", "/v1/sessions/" + id + "/extractions"}, {"GET", "/v1/sessions/" + id + "/stream"},
	} {
		req := httptest.NewRequest(route.method, route.path, strings.NewReader(`{"message":"hi"}`))
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%s %s without a token from %s: %d, want 401", route.method, route.path, remote, rec.Code)
		}
	}
	for _, path := range []string{"/", "/static/app.js"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s from %s: %d, want 200", path, remote, rec.Code)
		}
	}

	// Over the network: a token stops working once revoked.
	if res := n.Get(t, "/v1/sessions/"+id, valid); res.Status != http.StatusOK {
		t.Fatalf("GET with acme's token: %d %s", res.Status, res.Body)
	}
	toks, err := store.ListTokens(ctx, n.DB, "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range toks {
		if err := store.RevokeToken(ctx, n.DB, "acme", tk.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	wantError(t, n.Get(t, "/v1/sessions/"+id, valid), http.StatusUnauthorized, "unauthenticated", "revoked")
}

// TestClosedGateway: without an open tenant (praetor serve) loopback needs
// a token too.
func TestClosedGateway(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{Gateway: func(c *gateway.Config) { c.OpenTenant = "" }})
	wantError(t, n.Get(t, "/v1/engines", ""), http.StatusUnauthorized, "unauthenticated", "Bearer")
	token := n.Tenant(t, "acme")
	if res := n.Get(t, "/v1/engines", token); res.Status != http.StatusOK {
		t.Errorf("with a token: %d %s", res.Status, res.Body)
	}
}

// TestStreamEndsWithItsToken: a stream opened with a token ends once the
// token no longer authenticates, with an "error" event saying why: at the
// next check after a revocation, before the session's next event when the
// last check is old, and at the token's expiry.
func TestStreamEndsWithItsToken(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		now = time.Now()
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	for _, tc := range []struct {
		name string
		// interval is Config.StreamAuthInterval; fake runs the gateway on
		// a clock the test moves.
		interval time.Duration
		fake     bool
		ttl      time.Duration // the token's; 0: it never expires
		revoke   bool
		post     bool // post a turn after the revocation
		mentions string
	}{
		{name: "revoked, checked while idle", interval: 50 * time.Millisecond, revoke: true, mentions: "revoked"},
		// The timer never fires within the test: the check before the
		// reply's event, its last one older than the interval, ends it.
		{name: "revoked, checked before the next event", interval: time.Hour, fake: true, revoke: true, post: true, mentions: "revoked"},
		{name: "expired", interval: time.Hour, ttl: 3 * time.Second, mentions: "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := gatewaytest.Start(t, gatewaytest.Options{Gateway: func(c *gateway.Config) {
				c.StreamAuthInterval = tc.interval
				if tc.fake {
					c.Now = clock
				}
			}})
			ctx := context.Background()
			other := n.Tenant(t, "acme") // stays valid: posts the turn
			var expires *time.Time
			if tc.ttl > 0 {
				e := time.Now().Add(tc.ttl)
				expires = &e
			}
			token, tok, err := store.CreateToken(ctx, n.DB, "acme", "streamer", expires)
			if err != nil {
				t.Fatal(err)
			}
			id := n.CreateSession(t, token, "project-discovery")
			stream := n.MustOpenStream(t, id, token)
			if ev := stream.Next(t, 10*time.Second); ev.Name != "state" {
				t.Fatalf("first event %s, want state", ev.Name)
			}
			if tc.revoke {
				if err := store.RevokeToken(ctx, n.DB, "acme", tok.ID, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			if tc.post {
				advance(2 * tc.interval)
				n.Say(t, other, id, "We want to build a web app for dental clinics.")
			}
			ev := stream.Next(t, 30*time.Second)
			if ev.Name != "error" {
				t.Fatalf("after the token stopped authenticating the stream sent %s %s, want error", ev.Name, ev.Data)
			}
			var body struct{ Error, Code string }
			if err := json.Unmarshal([]byte(ev.Data), &body); err != nil || body.Code != "unauthenticated" ||
				!strings.Contains(body.Error, tc.mentions) {
				t.Errorf("error event %s (%v), want code unauthenticated and an error mentioning %q", ev.Data, err, tc.mentions)
			}
			stream.WaitEnd(t, 10*time.Second)
		})
	}
	// A stream of the open tenant has no token to lose, and one with a
	// valid token goes on.
	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		n := gatewaytest.Start(t, gatewaytest.Options{Gateway: func(c *gateway.Config) { c.StreamAuthInterval = 10 * time.Millisecond }})
		token := n.Tenant(t, "acme")
		id := n.CreateSession(t, token, "project-discovery")
		stream := n.MustOpenStream(t, id, token)
		if ev := stream.Next(t, 10*time.Second); ev.Name != "state" {
			t.Fatalf("first event %s, want state", ev.Name)
		}
		turn := n.Say(t, token, id, "We want to build a web app for dental clinics.")
		if ev := stream.Next(t, 30*time.Second); ev.Name != "turn" || ev.ID != turn.TurnID {
			t.Errorf("the stream of a valid token sent %s %s, want the turn %s", ev.Name, ev.Data, turn.TurnID)
		}
	})
}

// queriesByToken counts the queries that read a token's row, by the
// token's hash.
type queriesByToken struct {
	store.DB
	mu sync.Mutex
	n  map[string]int
}

func (q *queriesByToken) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	if hash, ok := args[0].(string); ok && strings.Contains(query, "FROM api_tokens") {
		q.mu.Lock()
		q.n[hash]++
		q.mu.Unlock()
	}
	return q.DB.QueryRow(ctx, query, args...)
}

func (q *queriesByToken) of(secret string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n[store.HashToken(secret)]
}

// TestStreamsOfATokenShareItsChecks: the streams open with one token check
// it with one query an interval between them, not one each, and a
// revocation still ends every one of them.
func TestStreamsOfATokenShareItsChecks(t *testing.T) {
	t.Parallel()
	const interval, streams = time.Hour, 8 // the guards' timers never fire: the checks are those before events
	var (
		mu      sync.Mutex
		now     = time.Now()
		queries *queriesByToken
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	n := gatewaytest.Start(t, gatewaytest.Options{Gateway: func(c *gateway.Config) {
		c.StreamAuthInterval, c.Now = interval, clock
		queries = &queriesByToken{DB: c.DB, n: map[string]int{}}
		c.DB = queries
	}})
	ctx := context.Background()
	other := n.Tenant(t, "acme") // posts the turns
	token, tok, err := store.CreateToken(ctx, n.DB, "acme", "chat-service", nil)
	if err != nil {
		t.Fatal(err)
	}
	id := n.CreateSession(t, token, "project-discovery")
	open := make([]*gatewaytest.Stream, streams)
	for i := range open {
		open[i] = n.MustOpenStream(t, id, token)
		if ev := open[i].Next(t, 10*time.Second); ev.Name != "state" {
			t.Fatalf("stream %d: first event %s, want state", i, ev.Name)
		}
	}
	// nextOf returns each stream's next event of one of the names.
	nextOf := func(names ...string) []gatewaytest.Event {
		t.Helper()
		got := make([]gatewaytest.Event, streams)
		for i, s := range open {
			ev := s.Next(t, 30*time.Second)
			for !slices.Contains(names, ev.Name) {
				ev = s.Next(t, 30*time.Second)
			}
			got[i] = ev
		}
		return got
	}

	before := queries.of(token)
	advance(2 * interval)
	turn := n.Say(t, other, id, "We want to build a web app for dental clinics.")
	for i, ev := range nextOf("turn", "error") {
		if ev.Name != "turn" || ev.ID != turn.TurnID {
			t.Fatalf("stream %d sent %s %s, want the turn %s", i, ev.Name, ev.Data, turn.TurnID)
		}
	}
	if got := queries.of(token) - before; got != 1 {
		t.Errorf("%d streams of a token checked it with %d queries before the interval's first event, want 1", streams, got)
	}

	if err := store.RevokeToken(ctx, n.DB, "acme", tok.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	before = queries.of(token)
	advance(2 * interval)
	n.Say(t, other, id, "Mostly small clinics with one or two dentists.")
	for i, ev := range nextOf("error") {
		if !strings.Contains(ev.Data, "revoked") {
			t.Errorf("stream %d ended with %s, want the token revoked", i, ev.Data)
		}
		open[i].WaitEnd(t, 10*time.Second)
	}
	if got := queries.of(token) - before; got != 1 {
		t.Errorf("%d streams of a revoked token checked it with %d queries, want 1", streams, got)
	}
}
