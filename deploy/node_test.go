package deploy_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestDeploymentsOnARunningNode runs, for every Deployment, the node it
// describes — its service, its ConfigMap settings, its explicit env, its
// ConfigMap volumes laid out as Kubernetes mounts them — as `praetor dev`
// (NATS and SQLite embedded instead of NATS_URL and DATABASE_URL; the
// probes, metrics and consumers are the same node code as serve). On it:
// every probe path and the scrape path answer 200; the ScaledObject's
// query selects exactly the praetor_consumer_backlog series this service
// exports (a Deployment without one exports none); and SIGTERM stops the
// node with status 0 within the grace period.
func TestDeploymentsOnARunningNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a praetor node per Deployment; not in -short")
	}
	m := loadBase(t)
	bin := praetorBin(t)
	scalers := map[string]scaledObject{}
	for _, o := range m.ofKind("ScaledObject") {
		var so scaledObject
		o.decode(t, &so)
		scalers[so.Spec.ScaleTargetRef.Name] = so
	}
	for name, d := range m.deployments(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := d.template.Spec.Containers[0]
			services := deploymentServices(t, d)
			env := knownValues(m.containerEnv(t, c))
			mountConfigMaps(t, m, d, env)
			n := startNode(t, bin, services, env)

			paths := map[string]bool{}
			for _, p := range []*probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
				if p != nil && p.HTTPGet != nil {
					paths[p.HTTPGet.Path] = true
				}
			}
			metricsPath := d.template.Metadata.Annotations["prometheus.io/path"]
			if metricsPath == "" {
				metricsPath = "/metrics" // what Prometheus scrapes by default
			}
			paths[metricsPath] = true
			for _, p := range sortedKeys(paths) {
				if code, body := n.get(t, p); code != http.StatusOK {
					t.Errorf("GET %s: %d %q, want 200: the node does not serve this probe or scrape path", p, code, body)
				}
			}

			series := n.backlogSeries(t, metricsPath)
			t.Logf("service %v: backlog series %v", services, series)
			so, scaled := scalers[name]
			switch {
			case !scaled && len(series) > 0:
				t.Errorf("service %v reports a backlog for consumers %v, but Deployment %s has no ScaledObject on it", services, series, name)
			case scaled:
				if len(series) == 0 {
					t.Errorf("Deployment %s scales on praetor_consumer_backlog, but service %v reports no backlog series", name, services)
				}
				for _, tr := range so.Spec.Triggers {
					q := tr.Metadata["query"]
					var selected []string
					for _, s := range series {
						if backlogSelects(t, q, m.kust.Namespace, s) {
							selected = append(selected, s)
						}
					}
					if !slices.Equal(selected, series) {
						t.Errorf("query %q selects backlog series %v of the %v this service reports: it must select all of its consumers", q, selected, series)
					}
					exported := n.metricNames(t, metricsPath)
					for _, mn := range promMetricNames(q) {
						if !exported[mn] {
							t.Errorf("query %q names %s, which this node does not export", q, mn)
						}
					}
				}
				// A query that also matched another service's consumers
				// would scale this one on their work.
				for other, otherSO := range scalers {
					if other == name {
						continue
					}
					for _, tr := range otherSO.Spec.Triggers {
						for _, s := range series {
							if backlogSelects(t, tr.Metadata["query"], m.kust.Namespace, s) {
								t.Errorf("the ScaledObject of %s selects backlog series %q, which belongs to %s", other, s, name)
							}
						}
					}
				}
			}

			grace := 30 * time.Second
			if g := d.template.Spec.TerminationGracePeriodSeconds; g != nil {
				grace = time.Duration(*g) * time.Second
			}
			n.stop(t, grace)
		})
	}
}

// mountConfigMaps lays out the Deployment's ConfigMap volumes in a
// directory as Kubernetes mounts them (one file per key) and points the
// env values under their mount paths there.
func mountConfigMaps(t *testing.T, m manifests, d workload, env map[string]string) {
	t.Helper()
	root := t.TempDir()
	c := d.template.Spec.Containers[0]
	for _, vm := range c.VolumeMounts {
		for _, v := range d.template.Spec.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil {
				continue
			}
			dir := filepath.Join(root, vm.MountPath)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			data, _ := m.configMapData(t, v.ConfigMap.Name)
			for key, val := range data {
				if err := os.WriteFile(filepath.Join(dir, key), []byte(val), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for key, src := range m.generated[v.ConfigMap.Name] {
				b, err := os.ReadFile(src)
				if err != nil {
					t.Fatalf("ConfigMap %s key %s: %v", v.ConfigMap.Name, key, err)
				}
				if err := os.WriteFile(filepath.Join(dir, key), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for k, val := range env {
				if val == vm.MountPath || strings.HasPrefix(val, vm.MountPath+"/") {
					env[k] = filepath.Join(root, val)
				}
			}
		}
	}
}

// node is a praetor dev process of the test.
type node struct {
	cmd    *exec.Cmd
	url    string
	client *http.Client
	done   chan struct{} // closed when the process has exited
	err    error         // its exit, once done is closed
	mu     sync.Mutex
	output strings.Builder
}

var readyLine = regexp.MustCompile(`praetor is ready.*?"?http"?[=:]"?(http://[^"\s]+)`)

// startNode runs `praetor dev --services ...` on a free loopback port with
// the given environment, and waits until it serves.
func startNode(t *testing.T, bin string, services []string, env map[string]string) *node {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(bin, "dev", "--services", strings.Join(services, ","), "--data-dir", filepath.Join(dir, "data"),
		"--http-addr", "127.0.0.1:0", "--nats-listen", "")
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	for _, k := range sortedKeys(env) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &node{cmd: cmd, done: make(chan struct{}), client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(n.client.CloseIdleConnections)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			n.mu.Lock()
			n.output.WriteString(line + "\n")
			n.mu.Unlock()
			if m := readyLine.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		n.err = cmd.Wait()
		close(n.done)
	}()
	t.Cleanup(func() {
		select {
		case <-n.done:
		default:
			_ = cmd.Process.Kill()
			<-n.done
		}
	})
	select {
	case n.url = <-ready:
	case <-n.done:
		t.Fatalf("praetor dev --services %v exited before serving (%v):\n%s", services, n.err, n.log())
	case <-time.After(90 * time.Second):
		t.Fatalf("praetor dev --services %v did not serve within 90s:\n%s", services, n.log())
	}
	return n
}

func (n *node) log() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.output.String()
}

func (n *node) get(t *testing.T, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var backlogLine = regexp.MustCompile(`(?m)^praetor_consumer_backlog\{[^}]*service="([^"]+)"[^}]*\}`)

// backlogSeries scrapes the service labels of praetor_consumer_backlog.
// Each consumer's gauge appears when its backlog poller first runs, just
// after the service subscribed, so the set is read until it has not
// changed for a second (within a deadline).
func (n *node) backlogSeries(t *testing.T, path string) []string {
	t.Helper()
	scrape := func() []string {
		code, body := n.get(t, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, code)
		}
		var out []string
		for _, m := range backlogLine.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last, since := scrape(), time.Now()
	for time.Since(since) < time.Second {
		select {
		case <-deadline:
			t.Fatalf("the backlog series did not settle within 20s (last %v)", last)
		case <-tick.C:
		}
		if cur := scrape(); !slices.Equal(cur, last) {
			last, since = cur, time.Now()
		}
	}
	return last
}

var typeLine = regexp.MustCompile(`(?m)^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) `)

// metricNames are the metric families the node exports.
func (n *node) metricNames(t *testing.T, path string) map[string]bool {
	t.Helper()
	_, body := n.get(t, path)
	out := map[string]bool{}
	for _, m := range typeLine.FindAllStringSubmatch(body, -1) {
		out[m[1]] = true
	}
	return out
}

// stop sends SIGTERM, as the kubelet does, and expects exit status 0
// within the grace period.
func (n *node) stop(t *testing.T, grace time.Duration) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-n.done:
		if n.err != nil {
			t.Errorf("after SIGTERM the node exited with %v, want status 0:\n%s", n.err, n.log())
		}
	case <-time.After(grace):
		t.Errorf("the node did not stop within the grace period %s after SIGTERM:\n%s", grace, tail(n.log(), 20))
	}
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
