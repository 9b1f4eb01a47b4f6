package deploy_test

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/praetorhq/praetor/internal/testenv"
)

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Volumes         []string `yaml:"volumes"`
	Ports           []string `yaml:"ports"`
	StopGracePeriod string   `yaml:"stop_grace_period"`
	Healthcheck     *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", composePath, err)
	}
	return f
}

// praetorServices are the compose services that run the praetor image.
func (f composeFile) praetorServices() map[string]composeService {
	out := map[string]composeService{}
	for name, s := range f.Services {
		if s.Build != nil || strings.HasPrefix(s.Image, "praetor") {
			out[name] = s
		}
	}
	return out
}

// TestComposeRunsEveryService: one container per service kind, like the
// Deployments, each running a service the binary has.
func TestComposeRunsEveryService(t *testing.T) {
	t.Parallel()
	f := loadCompose(t)
	runs := map[string]string{}
	for name, s := range f.praetorServices() {
		inv, err := parseArgs(s.Command)
		if err != nil {
			t.Errorf("compose service %s: command %q: %v", name, s.Command, err)
			continue
		}
		if inv.command != "serve" {
			continue
		}
		for _, svc := range strings.Split(inv.flags["services"], ",") {
			svc = strings.TrimSpace(svc)
			if !slices.Contains(serviceNames(), svc) {
				t.Errorf("compose service %s runs service %q, which praetor does not have (%v)", name, svc, serviceNames())
			}
			runs[svc] = name
		}
	}
	for _, svc := range serviceNames() {
		if _, ok := runs[svc]; !ok {
			t.Errorf("%s runs no container with service %s", composePath, svc)
		}
	}
}

// TestComposeCommandsAndEnv: flags are the commands' own, variables are
// ones praetor reads, entrypoints are the image's.
func TestComposeCommandsAndEnv(t *testing.T) {
	t.Parallel()
	f := loadCompose(t)
	for name, s := range f.praetorServices() {
		where := "compose service " + name
		if len(s.Entrypoint) > 0 {
			t.Errorf("%s: entrypoint %q replaces /praetor: give the praetor command in command", where, s.Entrypoint)
		}
		inv, err := parseArgs(s.Command)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		checkFlags(t, where, inv)
		checkEnvNames(t, where, inv, sortedKeys(s.Environment))
	}
}

// TestComposeWiring: the services reach each other by the names and
// credentials the servers are given; every praetor container starts after
// the migrations and NATS; healthy-conditions have a healthcheck; volumes
// and bind mounts exist; the stop grace period covers the drain.
func TestComposeWiring(t *testing.T) {
	t.Parallel()
	f := loadCompose(t)
	help := flagsOf(t, "serve")
	imageOf := func(host string) string { return f.Services[host].Image }

	for name, s := range f.Services {
		for dep, cond := range s.DependsOn {
			target, ok := f.Services[dep]
			if !ok {
				t.Errorf("compose service %s depends on %q, which is not a service", name, dep)
				continue
			}
			if cond.Condition == "service_healthy" && target.Healthcheck == nil {
				t.Errorf("compose service %s waits for %s to be healthy, which has no healthcheck", name, dep)
			}
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("compose service %s mounts %s: %v", name, src, err)
				}
			} else if _, ok := f.Volumes[src]; !ok {
				t.Errorf("compose service %s mounts volume %q, which volumes: does not declare", name, src)
			}
		}
	}

	var migrate string
	for name, s := range f.praetorServices() {
		if inv, err := parseArgs(s.Command); err == nil && inv.command == "migrate" {
			migrate = name
		}
	}
	if migrate == "" {
		t.Fatalf("%s has no one-shot running praetor migrate", composePath)
	}

	for name, s := range f.praetorServices() {
		where := "compose service " + name
		if s.Build != nil {
			if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("%s: build: %v", where, err)
			}
		}
		env := s.Environment
		if u, ok := env["DATABASE_URL"]; ok {
			checkDatabaseURL(t, where, u, f.Services)
		}
		inv, _ := parseArgs(s.Command)
		if inv.command != "serve" {
			continue
		}
		if c := s.DependsOn[migrate].Condition; c != "service_completed_successfully" {
			t.Errorf("%s: depends_on %s with condition %q, want service_completed_successfully: serve refuses a database with pending migrations", where, migrate, c)
		}
		for _, need := range []struct{ key, image string }{{"NATS_URL", "nats"}, {"NEO4J_URI", "neo4j"}} {
			raw, ok := env[need.key]
			if !ok {
				t.Errorf("%s: no %s", where, need.key)
				continue
			}
			u, err := url.Parse(raw)
			if err != nil {
				t.Errorf("%s: %s=%q: %v", where, need.key, raw, err)
				continue
			}
			host := u.Hostname()
			if !strings.HasPrefix(imageOf(host), need.image) {
				t.Errorf("%s: %s=%s names host %q, which is no %s service of %s", where, need.key, raw, host, need.image, composePath)
				continue
			}
			if _, ok := s.DependsOn[host]; !ok {
				t.Errorf("%s: %s names %s, but it does not depend_on it", where, need.key, host)
			}
		}
		if host := hostOf(env["NEO4J_URI"]); host != "" {
			auth := f.Services[host].Environment["NEO4J_AUTH"]
			if want := env["NEO4J_USER"] + "/" + env["NEO4J_PASSWORD"]; auth != want {
				t.Errorf("%s: NEO4J_USER/NEO4J_PASSWORD %q, but %s has NEO4J_AUTH %q", where, want, host, auth)
			}
		}
		drain := parseDuration(t, where, "drain-timeout", setting(inv, env, help, "drain-timeout"))
		grace := 10 * time.Second // compose's default
		if s.StopGracePeriod != "" {
			grace = parseDuration(t, where, "stop_grace_period", s.StopGracePeriod)
		}
		if grace <= drain+httpShutdown {
			t.Errorf("%s: stop_grace_period %s is not more than the drain timeout %s + HTTP shutdown %s: the drain would be killed", where, grace, drain, httpShutdown)
		}
		port := httpPort(t, where, setting(inv, env, help, "http-addr"))
		for _, p := range s.Ports {
			parts := strings.Split(p, ":")
			if parts[len(parts)-1] != strconv.Itoa(port) {
				t.Errorf("%s: ports %q publishes container port %s, the node listens on %d", where, p, parts[len(parts)-1], port)
			}
		}
		// Settings that name a file or directory must find it in a mount.
		for _, k := range []string{"PRAETOR_WORKFLOW_REGISTRY", "PRAETOR_WORKFLOW_DIR"} {
			if v, ok := env[k]; ok {
				if host := hostPathOf(v, s.Volumes); host == "" {
					t.Errorf("%s: %s=%s is under no bind mount", where, k, v)
				} else if _, err := os.Stat(host); err != nil {
					t.Errorf("%s: %s=%s: %v", where, k, v, err)
				}
			}
		}
	}

	for name, s := range f.Services {
		if strings.HasPrefix(s.Image, "neo4j") && s.Image != testenv.Neo4jImage {
			t.Errorf("compose service %s runs %s; the tests run against %s (internal/testenv): keep them the same", name, s.Image, testenv.Neo4jImage)
		}
	}
}

// checkDatabaseURL: the URL names the postgres service with its user,
// password and database.
func checkDatabaseURL(t *testing.T, where, raw string, services map[string]composeService) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Errorf("%s: DATABASE_URL: %v", where, err)
		return
	}
	pg, ok := services[u.Hostname()]
	if !ok || !strings.HasPrefix(pg.Image, "postgres") {
		t.Errorf("%s: DATABASE_URL names host %q, which is no postgres service", where, u.Hostname())
		return
	}
	pass, _ := u.User.Password()
	got := []string{u.User.Username(), pass, strings.TrimPrefix(u.Path, "/")}
	want := []string{pg.Environment["POSTGRES_USER"], pg.Environment["POSTGRES_PASSWORD"], pg.Environment["POSTGRES_DB"]}
	if !slices.Equal(got, want) {
		t.Errorf("%s: DATABASE_URL user, password, database %q; %s has POSTGRES_USER, _PASSWORD, _DB %q", where, got, u.Hostname(), want)
	}
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// hostPathOf maps a container path to the host path of the bind mount
// that holds it ("" when none does).
func hostPathOf(p string, volumes []string) string {
	for _, v := range volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || !(strings.HasPrefix(parts[0], ".") || strings.HasPrefix(parts[0], "/")) {
			continue
		}
		if rel, ok := strings.CutPrefix(p, parts[1]); ok && (rel == "" || strings.HasPrefix(rel, "/")) {
			return filepath.Join(parts[0], rel)
		}
	}
	return ""
}
