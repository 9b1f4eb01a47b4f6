package testenv

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Environment variables that point tests at a running Neo4j, as printed by
// scripts/neo4j.sh.
const (
	Neo4jURIVar      = "NEO4J_URI"
	Neo4jUserVar     = "NEO4J_USER"
	Neo4jPasswordVar = "NEO4J_PASSWORD"
)

// Neo4jImage is the image started through testcontainers when NEO4J_URI is
// unset and a Docker engine answers: the same 5.26 LTS line as the Maven
// launcher of scripts/neo4j.sh.
const Neo4jImage = "neo4j:5.26"

// neo4jServer is resolved once per test binary: every test of the process
// shares one server (tests isolate themselves by tenant, see Neo4jTenant).
var neo4jServer struct {
	once                sync.Once
	uri, user, password string
	why                 string // non-empty when no server could be found
}

// Neo4j returns the Bolt URI and credentials of a Neo4j 5 server for t:
// NEO4J_URI (with NEO4J_USER, NEO4J_PASSWORD) when set; otherwise a neo4j:5.26
// container when a Docker engine answers (shared by the whole test binary and
// removed by the testcontainers reaper when it exits); otherwise t is skipped,
// or failed under PRAETOR_REQUIRE_SERVICES=1. The server answered a query
// before Neo4j returns.
//
// Tests share the server, also across packages running in parallel, so each
// test works in its own tenant: see Neo4jTenant.
func Neo4j(t testing.TB) (uri, user, password string) {
	t.Helper()
	s := &neo4jServer
	s.once.Do(func() {
		s.uri, s.user, s.password, s.why = findNeo4j()
	})
	if s.why != "" {
		Unavailable(t, "Neo4j", Neo4jURIVar, s.why)
	}
	return s.uri, s.user, s.password
}

// Neo4jTenant returns a tenant id that no other test uses (built from the
// test name and random bytes, and valid as a subject token) on the server of
// Neo4j(t). Every node carrying that tenant_id is deleted when t ends, so
// tests that keep to their tenant need no other cleanup.
func Neo4jTenant(t testing.TB) string {
	t.Helper()
	uri, user, password := Neo4j(t)
	tenant := uniqueTenant(t.Name())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := DeleteNeo4jTenant(ctx, uri, user, password, tenant); err != nil {
			t.Errorf("clean Neo4j tenant %s: %v", tenant, err)
		}
	})
	return tenant
}

// DeleteNeo4jTenant deletes every labelled node whose tenant_id is tenant, with its
// relationships, in batches small enough for a test server's heap. It goes
// label by label, so that labels with an index on tenant_id (the memory
// graph's) are not scanned whole.
func DeleteNeo4jTenant(ctx context.Context, uri, user, password, tenant string) error {
	drv, err := neo4jDriver(uri, user, password)
	if err != nil {
		return err
	}
	defer drv.Close(ctx)
	res, err := neo4j.ExecuteQuery(ctx, drv, `CALL db.labels() YIELD label RETURN label`, nil, neo4j.EagerResultTransformer)
	if err != nil {
		return fmt.Errorf("list labels: %w", err)
	}
	for _, r := range res.Records {
		label, _ := r.Values[0].(string)
		quoted := "`" + strings.ReplaceAll(label, "`", "``") + "`"
		for {
			res, err := neo4j.ExecuteQuery(ctx, drv,
				`MATCH (n:`+quoted+`) WHERE n.tenant_id = $tenant WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS deleted`,
				map[string]any{"tenant": tenant}, neo4j.EagerResultTransformer)
			if err != nil {
				return fmt.Errorf("delete tenant nodes labelled %s: %w", label, err)
			}
			n, _ := res.Records[0].Get("deleted")
			if deleted, _ := n.(int64); deleted == 0 {
				break
			}
		}
	}
	return nil
}

func findNeo4j() (uri, user, password, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if uri = os.Getenv(Neo4jURIVar); uri != "" {
		user = cmp.Or(os.Getenv(Neo4jUserVar), "neo4j")
		password = os.Getenv(Neo4jPasswordVar)
		if err := pingNeo4j(ctx, uri, user, password); err != nil {
			return "", "", "", fmt.Sprintf("%s=%s does not answer: %v (start one with scripts/neo4j.sh)", Neo4jURIVar, uri, err)
		}
		return uri, user, password, ""
	}
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return "", "", "", "NEO4J_URI is unset and there is no Docker engine (" + err.Error() + "); scripts/neo4j.sh starts one without Docker"
	}
	if err := provider.Health(ctx); err != nil {
		return "", "", "", "NEO4J_URI is unset and the Docker engine does not answer (" + err.Error() + "); scripts/neo4j.sh starts one without Docker"
	}
	ctr, err := testcontainers.Run(ctx, Neo4jImage,
		testcontainers.WithEnv(map[string]string{"NEO4J_AUTH": "none"}),
		testcontainers.WithExposedPorts("7687/tcp"),
		testcontainers.WithWaitStrategyAndDeadline(3*time.Minute,
			wait.ForLog("Bolt enabled on"), wait.ForListeningPort("7687/tcp")),
	)
	if err != nil {
		return "", "", "", "start " + Neo4jImage + " container: " + err.Error()
	}
	uri, err = ctr.PortEndpoint(ctx, "7687/tcp", "bolt")
	if err != nil {
		return "", "", "", "read the container's Bolt port: " + err.Error()
	}
	if err := pingNeo4j(ctx, uri, "neo4j", ""); err != nil {
		return "", "", "", "the " + Neo4jImage + " container does not answer: " + err.Error()
	}
	return uri, "neo4j", "", ""
}

func pingNeo4j(ctx context.Context, uri, user, password string) error {
	drv, err := neo4jDriver(uri, user, password)
	if err != nil {
		return err
	}
	defer drv.Close(ctx)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err = neo4j.ExecuteQuery(ctx, drv, "RETURN 1", nil, neo4j.EagerResultTransformer)
	return err
}

func neo4jDriver(uri, user, password string) (neo4j.DriverWithContext, error) {
	auth := neo4j.NoAuth()
	if password != "" {
		auth = neo4j.BasicAuth(user, password, "")
	}
	drv, err := neo4j.NewDriverWithContext(uri, auth)
	if err != nil {
		return nil, fmt.Errorf("neo4j driver for %s: %w", uri, err)
	}
	return drv, nil
}

// uniqueTenant turns a test name into a tenant id: the characters allowed in
// a subject token, at most 40 of them, and 8 random hex digits.
func uniqueTenant(name string) string {
	var b strings.Builder
	for _, r := range name {
		if b.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	return "t-" + b.String() + "-" + hex.EncodeToString(rnd[:])
}
