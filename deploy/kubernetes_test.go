package deploy_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/praetorhq/praetor/internal/llm/provider"
)

// TestKustomizationListsEveryManifest: a manifest left out of resources is
// silently not deployed, and a listed one that is gone breaks the build.
func TestKustomizationListsEveryManifest(t *testing.T) {
	t.Parallel()
	m := loadBase(t) // fails on a listed resource that does not exist
	notResources := map[string]bool{"kustomization.yaml": true, filepath.Base(secretExample): true}
	entries, err := os.ReadDir(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".yaml") || notResources[name] {
			continue
		}
		if !slices.Contains(m.kust.Resources, name) {
			t.Errorf("%s/%s is not in the resources of %s/kustomization.yaml: it would not be deployed", baseDir, name, baseDir)
		}
	}
	for name, keys := range m.generated {
		for key, path := range keys {
			if path == "" {
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("configMapGenerator %s: key %s: %v", name, key, err)
			}
		}
	}
}

// TestOneDeploymentPerService: every service of the binary has its own
// Deployment, so each kind scales on its own, and every Deployment runs a
// service the binary has.
func TestOneDeploymentPerService(t *testing.T) {
	t.Parallel()
	m := loadBase(t)
	runs := map[string]string{} // service → Deployment
	for name, d := range m.deployments(t) {
		services := deploymentServices(t, d)
		if len(services) != 1 {
			t.Errorf("Deployment %s runs services %v: run exactly one, so each kind scales on its own", name, services)
			continue
		}
		s := services[0]
		if !slices.Contains(serviceNames(), s) {
			t.Errorf("Deployment %s runs service %q, which praetor does not have (services: %v)", name, s, serviceNames())
		}
		if other, dup := runs[s]; dup {
			t.Errorf("service %s runs in two Deployments, %s and %s", s, other, name)
		}
		runs[s] = name
		if want := "praetor-" + s; name != want {
			t.Errorf("Deployment %s runs %s: name it %s, as the autoscalers and the README do", name, s, want)
		}
	}
	for _, s := range serviceNames() {
		if _, ok := runs[s]; !ok {
			t.Errorf("service %s has no Deployment in %s", s, baseDir)
		}
	}
}

// deploymentServices is what `--services` a Deployment's praetor serve
// runs (from its args, else from PRAETOR_SERVICES).
func deploymentServices(t *testing.T, d workload) []string {
	t.Helper()
	if len(d.template.Spec.Containers) != 1 {
		t.Fatalf("%s: want one container, got %d", d.object, len(d.template.Spec.Containers))
	}
	c := d.template.Spec.Containers[0]
	inv, err := parseArgs(c.Args)
	if err != nil {
		t.Fatalf("%s: args %q: %v", d.object, c.Args, err)
	}
	if inv.command != "serve" {
		t.Fatalf("%s: runs `praetor %s`, want serve", d.object, inv.command)
	}
	v, ok := inv.flags["services"]
	if !ok {
		for _, e := range c.Env {
			if e.Name == "PRAETOR_SERVICES" {
				v, ok = e.Value, true
			}
		}
	}
	if !ok {
		t.Fatalf("%s: no --services", d.object)
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// TestContainerArgsAndEnv: every flag on a command line is one the command
// has, and every environment variable is one praetor reads. A mistyped
// flag stops the process; a mistyped variable is silently ignored.
func TestContainerArgsAndEnv(t *testing.T) {
	t.Parallel()
	m := loadBase(t)
	for _, w := range m.workloads(t) {
		for _, c := range w.template.Spec.Containers {
			where := w.String() + " container " + c.Name
			if len(c.Command) > 0 && !slices.Equal(c.Command, []string{"/praetor"}) {
				t.Errorf("%s: command %q replaces the image's ENTRYPOINT /praetor: give the praetor command in args", where, c.Command)
			}
			inv, err := parseArgs(c.Args)
			if err != nil {
				t.Errorf("%s: args %q: %v", where, c.Args, err)
				continue
			}
			checkFlags(t, where, inv)
			checkEnvNames(t, where, inv, sortedKeys(m.containerEnv(t, c)))
		}
	}
}

// The example Secret, applied as it is, runs the offline provider: a
// placeholder API key would make auto pick openai and degrade every turn.
func TestSecretExampleRunsOffline(t *testing.T) {
	t.Parallel()
	objs := readObjects(t, secretExample)
	if len(objs) != 1 {
		t.Fatalf("%s: want one Secret, got %v", secretExample, objs)
	}
	var s struct {
		StringData map[string]string `yaml:"stringData"`
	}
	objs[0].decode(t, &s)
	m := loadBase(t)
	for _, w := range m.workloads(t) {
		for _, c := range w.template.Spec.Containers {
			env := knownValues(m.containerEnv(t, c))
			maps.Copy(env, s.StringData)
			cfg, err := provider.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if err != nil {
				t.Fatalf("%s container %s: %v", w, c.Name, err)
			}
			_, info, err := provider.New(cfg, nil)
			if err != nil {
				t.Fatalf("%s container %s: %v", w, c.Name, err)
			}
			if !info.Offline {
				t.Errorf("%s container %s with %s as shipped runs the %s provider, want offline until a key is given", w, c.Name, secretExample, info.Provider)
			}
		}
	}
	b, err := os.ReadFile(secretExample)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "# "+provider.EnvAPIKey+": ") {
		t.Errorf("%s does not show, commented, how to give %s", secretExample, provider.EnvAPIKey)
	}
}

// TestProbesAndPorts: the probes, the scrape annotations and the Services
// reach the port the node listens on (--http-addr); liveness is not the
// readiness check (a database outage would restart every pod). That the
// paths answer is checked on a running node (node_test.go).
func TestProbesAndPorts(t *testing.T) {
	t.Parallel()
	m := loadBase(t)
	help := flagsOf(t, "serve")
	deps := m.deployments(t)
	for name, d := range deps {
		c := d.template.Spec.Containers[0]
		inv, _ := parseArgs(c.Args)
		env := knownValues(m.containerEnv(t, c))
		port := httpPort(t, name, setting(inv, env, help, "http-addr"))
		ports := map[string]int{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if !slices.Contains(mapsValues(ports), port) {
			t.Errorf("Deployment %s: --http-addr listens on %d, which is not a containerPort (%v)", name, port, ports)
		}
		probes := map[string]*probe{"startupProbe": c.StartupProbe, "readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe}
		for kind, p := range probes {
			if p == nil {
				if kind != "startupProbe" {
					t.Errorf("Deployment %s: no %s", name, kind)
				}
				continue
			}
			if p.HTTPGet == nil {
				t.Errorf("Deployment %s: %s is not an httpGet on the node's health endpoints", name, kind)
				continue
			}
			if got := resolvePort(p.HTTPGet.Port, ports); got != port {
				t.Errorf("Deployment %s: %s port %q is %d, the node listens on %d", name, kind, p.HTTPGet.Port.Value, got, port)
			}
		}
		if c.ReadinessProbe != nil && c.LivenessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.LivenessProbe.HTTPGet != nil &&
			c.ReadinessProbe.HTTPGet.Path == c.LivenessProbe.HTTPGet.Path {
			t.Errorf("Deployment %s: liveness and readiness both probe %s; readiness fails while NATS or the database is away, liveness must not",
				name, c.LivenessProbe.HTTPGet.Path)
		}
		ann := d.template.Metadata.Annotations
		if ann["prometheus.io/scrape"] == "true" {
			if got, _ := strconv.Atoi(ann["prometheus.io/port"]); got != port {
				t.Errorf("Deployment %s: prometheus.io/port %q, the node serves /metrics on %d", name, ann["prometheus.io/port"], port)
			}
		}
	}
	for _, o := range m.ofKind("Service") {
		var s k8sService
		o.decode(t, &s)
		var target *workload
		for _, d := range deps {
			if matches(s.Spec.Selector, d.template.Metadata.Labels) {
				if target != nil {
					t.Errorf("%s selects two Deployments, %s and %s", o, target.Metadata.Name, d.Metadata.Name)
				}
				target = &d
			}
		}
		if target == nil {
			t.Errorf("%s selects no Deployment's pods (selector %v)", o, s.Spec.Selector)
			continue
		}
		ports := map[string]int{}
		for _, p := range target.template.Spec.Containers[0].Ports {
			ports[p.Name] = p.ContainerPort
		}
		for _, p := range s.Spec.Ports {
			if resolvePort(p.TargetPort, ports) == 0 {
				t.Errorf("%s: targetPort %q is no port of Deployment %s (%v)", o, p.TargetPort.Value, target.Metadata.Name, ports)
			}
		}
	}
	// The gateway is the API and memory serves MCP: both need a Service.
	for _, svc := range []string{"gateway", "memory"} {
		found := false
		for _, o := range m.ofKind("Service") {
			var s k8sService
			o.decode(t, &s)
			if d, ok := deps["praetor-"+svc]; ok && matches(s.Spec.Selector, d.template.Metadata.Labels) {
				found = true
			}
		}
		if !found {
			t.Errorf("no Service routes to the %s Deployment", svc)
		}
	}
}

// TestGracePeriodCoversDrain: Kubernetes kills a pod terminationGrace-
// PeriodSeconds after it began stopping it: preStop, then SIGTERM, then the
// node drains its consumers for up to --drain-timeout and gives the HTTP
// server 5s. A shorter grace period cuts the drain short and leaves events
// to be redelivered after the ack wait.
func TestGracePeriodCoversDrain(t *testing.T) {
	t.Parallel()
	m := loadBase(t)
	help := flagsOf(t, "serve")
	for name, d := range m.deployments(t) {
		c := d.template.Spec.Containers[0]
		inv, _ := parseArgs(c.Args)
		drain := parseDuration(t, name, "drain-timeout", setting(inv, knownValues(m.containerEnv(t, c)), help, "drain-timeout"))
		var preStop time.Duration
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
			preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		}
		grace := 30 * time.Second // Kubernetes' default
		if g := d.template.Spec.TerminationGracePeriodSeconds; g != nil {
			grace = time.Duration(*g) * time.Second
		}
		if need := preStop + drain + httpShutdown; grace <= need {
			t.Errorf("Deployment %s: terminationGracePeriodSeconds %s is not more than preStop %s + drain timeout %s + HTTP shutdown %s",
				name, grace, preStop, drain, httpShutdown)
		}
	}
}

// TestHardening: non-root, read-only root filesystem with an emptyDir for
// /tmp, no privilege escalation, no capabilities, requests and limits.
func TestHardening(t *testing.T) {
	t.Parallel()
	m := loadBase(t)
	for _, w := range m.workloads(t) {
		spec := w.template.Spec
		if spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: pod securityContext.runAsNonRoot is not true", w.object)
		}
		emptyDirs := map[string]bool{}
		for _, v := range spec.Volumes {
			if v.EmptyDir != nil {
				emptyDirs[v.Name] = true
			}
		}
		for _, c := range spec.Containers {
			where := w.String() + " container " + c.Name
			sc := c.SecurityContext
			switch {
			case sc == nil:
				t.Errorf("%s: no securityContext", where)
				continue
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				t.Errorf("%s: allowPrivilegeEscalation is not false", where)
			case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
				t.Errorf("%s: readOnlyRootFilesystem is not true", where)
			case !slices.Contains(sc.Capabilities.Drop, "ALL"):
				t.Errorf("%s: capabilities do not drop ALL", where)
			}
			if w.Kind == "Deployment" {
				tmp := false
				for _, vm := range c.VolumeMounts {
					tmp = tmp || (vm.MountPath == "/tmp" && emptyDirs[vm.Name])
				}
				if !tmp {
					t.Errorf("%s: no emptyDir on /tmp: the root filesystem is read-only and command agents write their work there", where)
				}
			}
			for _, r := range []string{"cpu", "memory"} {
				if c.Resources.Requests[r] == "" {
					t.Errorf("%s: no %s request", where, r)
				}
			}
			if c.Resources.Limits["memory"] == "" {
				t.Errorf("%s: no memory limit", where)
			}
		}
	}
}

// TestConfigReferences: every ConfigMap and Secret a pod names exists, and
// every path a setting names inside a ConfigMap volume is a key of it.
func TestConfigReferences(t *testing.T) {
	t.Parallel()
	m := loadBase(t)
	secretName, _ := secretKeys(t)
	for _, w := range m.workloads(t) {
		spec := w.template.Spec
		volumes := map[string]string{} // volume → ConfigMap
		for _, v := range spec.Volumes {
			switch {
			case v.ConfigMap != nil:
				_, resource := m.configMapData(t, v.ConfigMap.Name)
				if _, generated := m.generated[v.ConfigMap.Name]; !resource && !generated {
					t.Errorf("%s: volume %s: ConfigMap %q is neither a resource nor generated by %s/kustomization.yaml", w.object, v.Name, v.ConfigMap.Name, baseDir)
				}
				volumes[v.Name] = v.ConfigMap.Name
			case v.Secret != nil && v.Secret.SecretName != secretName:
				t.Errorf("%s: volume %s: Secret %q is not the documented %q", w.object, v.Name, v.Secret.SecretName, secretName)
			}
		}
		for _, c := range spec.Containers {
			mounts := map[string]string{} // mount path → ConfigMap
			for _, vm := range c.VolumeMounts {
				if !slices.ContainsFunc(spec.Volumes, func(v volume) bool { return v.Name == vm.Name }) {
					t.Errorf("%s container %s: volumeMount %s names no volume", w.object, c.Name, vm.Name)
				}
				if cm, ok := volumes[vm.Name]; ok {
					mounts[vm.MountPath] = cm
				}
			}
			for name, v := range m.containerEnv(t, c) {
				for path, cm := range mounts {
					rel, ok := strings.CutPrefix(v.value, path+"/")
					if !ok || rel == "" {
						continue
					}
					key := strings.Split(rel, "/")[0]
					data, _ := m.configMapData(t, cm)
					_, inData := data[key]
					_, inGenerated := m.generated[cm][key]
					if !inData && !inGenerated {
						t.Errorf("%s container %s: %s=%s, but ConfigMap %s mounted at %s has no key %q", w.object, c.Name, name, v.value, cm, path, key)
					}
				}
			}
		}
	}
}

// TestDisruptionBudgets: every Deployment has a PodDisruptionBudget that
// selects its pods, and every budget selects a Deployment's pods.
func TestDisruptionBudgets(t *testing.T) {
	t.Parallel()
	m := loadBase(t)
	deps := m.deployments(t)
	covered := map[string]bool{}
	for _, o := range m.ofKind("PodDisruptionBudget") {
		var p selectorSpec
		o.decode(t, &p)
		n := 0
		for name, d := range deps {
			if len(p.Spec.Selector.MatchLabels) > 0 && matches(p.Spec.Selector.MatchLabels, d.template.Metadata.Labels) {
				covered[name] = true
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s selects no Deployment's pods (%v)", o, p.Spec.Selector.MatchLabels)
		}
	}
	for name := range deps {
		if !covered[name] {
			t.Errorf("Deployment %s has no PodDisruptionBudget", name)
		}
	}
}

// TestAutoscaling: each Deployment has one autoscaler (two would fight
// over the replicas) and no replicas field of its own (kubectl apply would
// reset the autoscaler's count); each ScaledObject targets a Deployment,
// keeps at least one replica (the backlog is reported by the service's own
// pods: at zero nothing reports it) and queries metrics pkg/events exports,
// aggregating the backlog with max since every replica reports the same
// figure. The HPA overlay replaces every ScaledObject.
func TestAutoscaling(t *testing.T) {
	t.Parallel()
	m := loadBase(t)
	deps := m.deployments(t)
	metricNames, err := eventMetricNames()
	if err != nil {
		t.Fatal(err)
	}
	scalers := map[string][]string{} // Deployment → autoscalers
	for _, o := range m.ofKind("ScaledObject") {
		var so scaledObject
		o.decode(t, &so)
		ref := so.Spec.ScaleTargetRef
		if ref.Kind != "" && ref.Kind != "Deployment" {
			t.Errorf("%s scales a %s; the services are Deployments", o, ref.Kind)
		}
		if _, ok := deps[ref.Name]; !ok {
			t.Errorf("%s targets Deployment %q, which the base does not have", o, ref.Name)
		}
		scalers[ref.Name] = append(scalers[ref.Name], o.String())
		minR := 0 // KEDA's default
		if so.Spec.MinReplicaCount != nil {
			minR = *so.Spec.MinReplicaCount
		}
		if minR < 1 {
			t.Errorf("%s: minReplicaCount %d: at zero replicas no pod reports the backlog, so the service would never scale up again", o, minR)
		}
		if so.Spec.MaxReplicaCount == nil || *so.Spec.MaxReplicaCount < minR {
			t.Errorf("%s: maxReplicaCount missing or below minReplicaCount", o)
		}
		if len(so.Spec.Triggers) == 0 {
			t.Errorf("%s: no trigger", o)
		}
		for _, tr := range so.Spec.Triggers {
			if tr.Type != "prometheus" {
				continue
			}
			q := tr.Metadata["query"]
			if tr.Metadata["serverAddress"] == "" || q == "" {
				t.Errorf("%s: a prometheus trigger needs serverAddress and query", o)
			}
			if th, err := strconv.ParseFloat(tr.Metadata["threshold"], 64); err != nil || th <= 0 {
				t.Errorf("%s: threshold %q is not a positive number", o, tr.Metadata["threshold"])
			}
			for _, name := range promMetricNames(q) {
				if !metricNames[name] {
					t.Errorf("%s: query %q names metric %s, which pkg/events does not export (it has %v)", o, q, name, sortedKeys(metricNames))
				}
			}
			if err := backlogAggregatedWithMax(q); err != nil {
				t.Errorf("%s: query %q: %v", o, q, err)
			}
			// One Prometheus may scrape two installs: a query without the
			// install's namespace would scale this one on the other's
			// backlog too.
			if m.kust.Namespace == "" {
				t.Errorf("%s/kustomization.yaml sets no namespace", baseDir)
			}
			for _, sel := range backlogSeries.FindAllStringSubmatch(q, -1) {
				if !slices.Contains(labelMatcher.FindAllString(sel[1], -1), `namespace="`+m.kust.Namespace+`"`) {
					t.Errorf("%s: query %q: the backlog selector {%s} has no namespace=%q, so it also counts other installs' backlog", o, q, sel[1], m.kust.Namespace)
				}
			}
		}
	}
	for _, o := range m.ofKind("HorizontalPodAutoscaler") {
		var h hpa
		o.decode(t, &h)
		if _, ok := deps[h.Spec.ScaleTargetRef.Name]; !ok || h.Spec.ScaleTargetRef.Kind != "Deployment" {
			t.Errorf("%s targets %s %q, which is not a Deployment of the base", o, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
		}
		scalers[h.Spec.ScaleTargetRef.Name] = append(scalers[h.Spec.ScaleTargetRef.Name], o.String())
	}
	for name, d := range deps {
		if n := len(scalers[name]); n != 1 {
			t.Errorf("Deployment %s has %d autoscalers %v, want one", name, n, scalers[name])
		}
		var spec struct {
			Spec struct {
				Replicas *int `yaml:"replicas"`
			} `yaml:"spec"`
		}
		d.decode(t, &spec)
		if spec.Spec.Replicas != nil && len(scalers[name]) > 0 {
			t.Errorf("Deployment %s sets replicas: %d while an autoscaler owns the count; kubectl apply would reset it", name, *spec.Spec.Replicas)
		}
	}

	// The overlay drops the ScaledObjects and must scale the same
	// Deployments on CPU.
	overlay := readKustomization(t, hpaOverlayDir)
	deletes := false
	for _, p := range overlay.Patches {
		if p.Target != nil && p.Target.Kind == "ScaledObject" && p.Target.Name == "" && strings.Contains(p.Patch, "$patch: delete") {
			deletes = true
		}
	}
	if !deletes {
		t.Errorf("%s: no patch deletes every ScaledObject", hpaOverlayDir)
	}
	hpaTargets := map[string]bool{}
	for _, r := range overlay.Resources {
		path := filepath.Join(hpaOverlayDir, r)
		if fi, err := os.Stat(path); err != nil {
			t.Errorf("%s: resource %s: %v", hpaOverlayDir, r, err)
			continue
		} else if fi.IsDir() {
			continue
		}
		for _, o := range readObjects(t, path) {
			if o.Kind != "HorizontalPodAutoscaler" {
				continue
			}
			var h hpa
			o.decode(t, &h)
			if _, ok := deps[h.Spec.ScaleTargetRef.Name]; !ok {
				t.Errorf("%s targets %q, which is not a Deployment of the base", o, h.Spec.ScaleTargetRef.Name)
			}
			hpaTargets[h.Spec.ScaleTargetRef.Name] = true
		}
	}
	for _, o := range m.ofKind("ScaledObject") {
		var so scaledObject
		o.decode(t, &so)
		if !hpaTargets[so.Spec.ScaleTargetRef.Name] {
			t.Errorf("%s drops %s, but has no HorizontalPodAutoscaler for %s", hpaOverlayDir, o, so.Spec.ScaleTargetRef.Name)
		}
	}
}

var (
	promName      = regexp.MustCompile(`\b(praetor_[a-z0-9_]+)\b`)
	backlogSeries = regexp.MustCompile(`praetor_consumer_backlog\s*\{([^}]*)\}`)
	labelMatcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")`)
	maxAround     = regexp.MustCompile(`max\s*(?:by\s*\(\s*service\s*\)\s*)?\(\s*$`)
)

// promMetricNames are the praetor_ metric names a PromQL query names.
func promMetricNames(q string) []string {
	var out []string
	for _, m := range promName.FindAllStringSubmatch(q, -1) {
		out = append(out, m[1])
	}
	return out
}

// backlogAggregatedWithMax checks that the backlog enters the query only
// through max(...) or max by (service) (...).
func backlogAggregatedWithMax(q string) error {
	idx := regexp.MustCompile(`praetor_consumer_backlog\b`).FindAllStringIndex(q, -1)
	if len(idx) == 0 {
		return errBacklog("does not read praetor_consumer_backlog")
	}
	for _, i := range idx {
		if !maxAround.MatchString(q[:i[0]]) {
			return errBacklog("praetor_consumer_backlog is not inside max(...) or max by (service) (...): every replica reports the same backlog, so a sum over replicas multiplies it by the replica count")
		}
	}
	return nil
}

type errBacklog string

func (e errBacklog) Error() string { return string(e) }

// backlogSelects says whether the query's praetor_consumer_backlog selector
// picks the series of this service label in this namespace, with PromQL's
// (anchored) regexes.
func backlogSelects(t *testing.T, q, namespace, service string) bool {
	t.Helper()
	sel := backlogSeries.FindAllStringSubmatch(q, -1)
	if len(sel) == 0 {
		return false
	}
	for _, s := range sel {
		all := true
		for _, lm := range labelMatcher.FindAllStringSubmatch(s[1], -1) {
			label, op := lm[1], lm[2]
			val, err := strconv.Unquote(lm[3])
			if err != nil {
				t.Fatalf("query %q: label value %s: %v", q, lm[3], err)
			}
			got := ""
			switch label {
			case "service":
				got = service
			case "namespace":
				got = namespace
			}
			var ok bool
			switch op {
			case "=":
				ok = got == val
			case "!=":
				ok = got != val
			case "=~", "!~":
				re, err := regexp.Compile("^(?:" + val + ")$")
				if err != nil {
					t.Fatalf("query %q: regex %q: %v", q, val, err)
				}
				ok = re.MatchString(got) == (op == "=~")
			}
			all = all && ok
		}
		if all {
			return true
		}
	}
	return false
}

// knownValues keeps the variables whose value the manifests give.
func knownValues(env map[string]envVar) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		if v.known {
			out[k] = v.value
		}
	}
	return out
}

// httpPort is the port of a host:port address.
func httpPort(t *testing.T, where, addr string) int {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	p, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("%s: --http-addr %q has no port", where, addr)
	}
	return p
}

// resolvePort is the number a port reference (name or number) stands for
// among a container's ports; 0 when it stands for none.
func resolvePort(ref yaml.Node, ports map[string]int) int {
	if n, err := strconv.Atoi(ref.Value); err == nil {
		if slices.Contains(mapsValues(ports), n) {
			return n
		}
		return 0
	}
	return ports[ref.Value]
}

func mapsValues(m map[string]int) []int {
	var out []int
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// matches says whether every label of sel is in labels.
func matches(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
