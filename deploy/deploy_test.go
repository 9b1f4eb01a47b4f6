// Package deploy_test checks the deployment files against the code they
// deploy: the Kubernetes base and its overlay, the compose stack and the
// Dockerfile name services, flags, environment variables, probe paths and
// metrics that must exist in the praetor binary, and nothing here would
// fail until a cluster did. The flags are read from the help of a praetor
// binary built for the test, the services from internal/wiring, the metric
// names from pkg/events, and node_test.go runs a node per service kind to
// probe the paths and scrape the backlog series the autoscalers query.
package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"gopkg.in/yaml.v3"
)

const (
	baseDir       = "kubernetes/base"
	hpaOverlayDir = "kubernetes/overlays/hpa-cpu"
	secretExample = "kubernetes/base/secret.example.yaml"
	composePath   = "compose.yaml"
	dockerfile    = "../Dockerfile"
	dockerignore  = "../.dockerignore"
	// httpShutdown is what node.Run gives the HTTP server after the
	// consumers drained (srv.Shutdown with 5s): a stop takes up to the drain
	// timeout plus this.
	httpShutdown = 5 * time.Second
	// versionMark is linked into the test binary through the Dockerfile's
	// -X flag, so TestDockerfile sees whether that flag reaches the version.
	versionMark = "deploy-test-version"
)

// binDir holds the praetor binary built once for the whole package.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "praetor-deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var build struct {
	once sync.Once
	path string
	err  error
}

// praetorBin builds cmd/praetor once, with the -X flag of the Dockerfile set
// to versionMark, and with -race when the tests run with it so the build
// shares the cache of the race-enabled test builds.
func praetorBin(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		out := filepath.Join(binDir, "praetor")
		args := []string{"build", "-o", out}
		if raceEnabled {
			args = append(args, "-race")
		}
		if sym := versionSymbol(); sym != "" {
			args = append(args, "-ldflags", "-X "+sym+"="+versionMark)
		}
		args = append(args, "./cmd/praetor")
		cmd := exec.Command("go", args...)
		cmd.Dir = ".."
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			build.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			return
		}
		build.path = out
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// versionSymbol is the symbol the Dockerfile sets with -ldflags -X.
func versionSymbol() string {
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		return ""
	}
	m := regexp.MustCompile(`-X\s+([A-Za-z0-9_./-]+\.[A-Za-z0-9_]+)=`).FindSubmatch(b)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// flagHelp is a subcommand's flags (its own and inherited) with their
// defaults, as `praetor <command> --help` prints them.
type flagHelp map[string]string

var helps sync.Map // command → flagHelp

var (
	commandLine = regexp.MustCompile(`(?m)^COMMAND\n\s+(\S+) --`)
	flagLine    = regexp.MustCompile(`^\s+--([a-z0-9][a-z0-9-]*)\b(.*)$`)
	flagDefault = regexp.MustCompile(`\(default: ([^)]*)\)\s*$`)
)

// flagsOf runs `praetor <command> --help` and parses its flag lines.
func flagsOf(t *testing.T, command string) flagHelp {
	t.Helper()
	if f, ok := helps.Load(command); ok {
		return f.(flagHelp)
	}
	cmd := exec.Command(praetorBin(t), command, "--help")
	cmd.Env = cleanEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("praetor %s --help: %v (is %q a praetor command?)", command, err, command)
	}
	// An unknown command prints the root's help: its COMMAND section names
	// praetor, not the command.
	if m := commandLine.FindSubmatch(out); m == nil || string(m[1]) != command {
		t.Fatalf("%q is not a praetor command (praetor --help lists them)", command)
	}
	flags := flagHelp{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := flagLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		def := ""
		if d := flagDefault.FindStringSubmatch(m[2]); d != nil {
			def = d[1]
		}
		flags[m[1]] = def
	}
	if len(flags) == 0 {
		t.Fatalf("praetor %s --help lists no flags:\n%s", command, out)
	}
	helps.Store(command, flags)
	return flags
}

// cleanEnv is the test's environment without the variables praetor reads,
// so the machine's settings do not leak into a help text or a node.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "PRAETOR_"), strings.HasPrefix(name, "NEO4J_"), strings.HasPrefix(name, "OPENAI_"),
			name == "NATS_URL", name == "DATABASE_URL":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// --- Kubernetes manifests ---------------------------------------------------

type meta struct {
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// object is one document of a manifest file.
type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   meta   `yaml:"metadata"`
	file       string
	node       *yaml.Node
}

func (o object) String() string { return fmt.Sprintf("%s %s (%s)", o.Kind, o.Metadata.Name, o.file) }

func (o object) decode(t *testing.T, into any) {
	t.Helper()
	if err := o.node.Decode(into); err != nil {
		t.Fatalf("%s: %v", o, err)
	}
}

type podTemplate struct {
	Metadata meta    `yaml:"metadata"`
	Spec     podSpec `yaml:"spec"`
}

type podSpec struct {
	TerminationGracePeriodSeconds *int64 `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []volume    `yaml:"volumes"`
}

type volume struct {
	Name      string    `yaml:"name"`
	EmptyDir  *struct{} `yaml:"emptyDir"`
	ConfigMap *struct {
		Name string `yaml:"name"`
	} `yaml:"configMap"`
	Secret *struct {
		SecretName string `yaml:"secretName"`
	} `yaml:"secret"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef    *keyRef `yaml:"secretKeyRef"`
			ConfigMapKeyRef *keyRef `yaml:"configMapKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	StartupProbe   *probe `yaml:"startupProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	Lifecycle      *struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int64 `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext *struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type keyRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

type probe struct {
	HTTPGet *struct {
		Path string    `yaml:"path"`
		Port yaml.Node `yaml:"port"`
	} `yaml:"httpGet"`
}

// workload is a Deployment or a Job: the things that run praetor.
type workload struct {
	object
	template podTemplate
}

type scaledObject struct {
	Spec struct {
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicaCount *int `yaml:"minReplicaCount"`
		MaxReplicaCount *int `yaml:"maxReplicaCount"`
		Triggers        []struct {
			Type     string            `yaml:"type"`
			Metadata map[string]string `yaml:"metadata"`
		} `yaml:"triggers"`
	} `yaml:"spec"`
}

type hpa struct {
	Spec struct {
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas *int `yaml:"minReplicas"`
		MaxReplicas int  `yaml:"maxReplicas"`
	} `yaml:"spec"`
}

type selectorSpec struct {
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
	} `yaml:"spec"`
}

type k8sService struct {
	Spec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string    `yaml:"name"`
			Port       int       `yaml:"port"`
			TargetPort yaml.Node `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// kustomization is the part of a kustomization.yaml the tests follow.
type kustomization struct {
	Namespace          string   `yaml:"namespace"`
	Resources          []string `yaml:"resources"`
	Components         []string `yaml:"components"`
	ConfigMapGenerator []struct {
		Name     string   `yaml:"name"`
		Files    []string `yaml:"files"`
		Literals []string `yaml:"literals"`
		Envs     []string `yaml:"envs"`
	} `yaml:"configMapGenerator"`
	Patches []struct {
		Path   string `yaml:"path"`
		Patch  string `yaml:"patch"`
		Target *struct {
			Group string `yaml:"group"`
			Kind  string `yaml:"kind"`
			Name  string `yaml:"name"`
		} `yaml:"target"`
	} `yaml:"patches"`
}

// manifests is what a kustomization deploys, read from its files.
type manifests struct {
	dir     string
	kust    kustomization
	objects []object
	// generated are the ConfigMaps of configMapGenerator, by name, with
	// their keys and, for files, the file each key comes from.
	generated map[string]map[string]string
}

func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	return k
}

// loadBase reads the base's kustomization and every resource it lists.
func loadBase(t *testing.T) manifests {
	t.Helper()
	m := manifests{dir: baseDir, kust: readKustomization(t, baseDir), generated: map[string]map[string]string{}}
	for _, r := range m.kust.Resources {
		m.objects = append(m.objects, readObjects(t, filepath.Join(baseDir, r))...)
	}
	for _, g := range m.kust.ConfigMapGenerator {
		keys := map[string]string{}
		for _, f := range g.Files {
			key, path, ok := strings.Cut(f, "=")
			if !ok {
				key, path = filepath.Base(f), f
			}
			keys[key] = filepath.Join(baseDir, path)
		}
		for _, l := range g.Literals {
			k, _, _ := strings.Cut(l, "=")
			keys[k] = ""
		}
		m.generated[g.Name] = keys
	}
	return m
}

// readObjects decodes every document of a manifest file.
func readObjects(t *testing.T, path string) []object {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("resource %s: %v", path, err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var out []object
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
			continue // an empty document between two ---
		}
		o := object{file: path, node: &n}
		o.decode(t, &o)
		if o.Kind == "" || o.Metadata.Name == "" {
			t.Fatalf("%s: a document without kind or metadata.name", path)
		}
		out = append(out, o)
	}
}

func (m manifests) ofKind(kind string) []object {
	var out []object
	for _, o := range m.objects {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func (m manifests) workloads(t *testing.T) []workload {
	t.Helper()
	var out []workload
	for _, o := range m.objects {
		var w struct {
			Spec struct {
				Template podTemplate `yaml:"template"`
			} `yaml:"spec"`
		}
		switch o.Kind {
		case "Deployment", "Job":
			o.decode(t, &w)
			out = append(out, workload{object: o, template: w.Spec.Template})
		}
	}
	return out
}

func (m manifests) deployments(t *testing.T) map[string]workload {
	t.Helper()
	out := map[string]workload{}
	for _, w := range m.workloads(t) {
		if w.Kind == "Deployment" {
			out[w.Metadata.Name] = w
		}
	}
	return out
}

// configMapData is the data of a ConfigMap resource of the base.
func (m manifests) configMapData(t *testing.T, name string) (map[string]string, bool) {
	t.Helper()
	for _, o := range m.ofKind("ConfigMap") {
		if o.Metadata.Name == name {
			var cm struct {
				Data map[string]string `yaml:"data"`
			}
			o.decode(t, &cm)
			return cm.Data, true
		}
	}
	return nil, false
}

// secretKeys are the keys of the example Secret, which stands for the one
// operators create (it is not a resource of the base).
func secretKeys(t *testing.T) (string, map[string]bool) {
	t.Helper()
	objs := readObjects(t, secretExample)
	if len(objs) != 1 || objs[0].Kind != "Secret" {
		t.Fatalf("%s: want one Secret, got %v", secretExample, objs)
	}
	var s struct {
		Data       map[string]string `yaml:"data"`
		StringData map[string]string `yaml:"stringData"`
	}
	objs[0].decode(t, &s)
	keys := map[string]bool{}
	for k := range s.Data {
		keys[k] = true
	}
	for k := range s.StringData {
		keys[k] = true
	}
	return objs[0].Metadata.Name, keys
}

// containerEnv is the environment a container gets, by name, with where
// each variable comes from; values of Secrets are unknown ("").
type envVar struct {
	value  string
	source string
	known  bool // the value is known (not from a Secret)
}

func (m manifests) containerEnv(t *testing.T, c container) map[string]envVar {
	t.Helper()
	secretName, secret := secretKeys(t)
	env := map[string]envVar{}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			data, ok := m.configMapData(t, ef.ConfigMapRef.Name)
			if !ok {
				t.Errorf("container %s: envFrom ConfigMap %q is not a resource of %s", c.Name, ef.ConfigMapRef.Name, baseDir)
			}
			for k, v := range data {
				env[k] = envVar{value: v, source: "ConfigMap " + ef.ConfigMapRef.Name, known: true}
			}
		case ef.SecretRef != nil:
			if ef.SecretRef.Name != secretName {
				t.Errorf("container %s: envFrom Secret %q, but %s documents %q", c.Name, ef.SecretRef.Name, secretExample, secretName)
			}
			for k := range secret {
				env[k] = envVar{source: "Secret " + ef.SecretRef.Name}
			}
		}
	}
	// Explicit env wins over envFrom, as in Kubernetes.
	for _, e := range c.Env {
		v := envVar{value: e.Value, source: "env", known: true}
		if e.ValueFrom != nil {
			switch ref := e.ValueFrom; {
			case ref.SecretKeyRef != nil:
				if ref.SecretKeyRef.Name != secretName || !secret[ref.SecretKeyRef.Key] {
					t.Errorf("container %s: env %s reads Secret %s key %s, which %s does not have", c.Name, e.Name,
						ref.SecretKeyRef.Name, ref.SecretKeyRef.Key, secretExample)
				}
				v = envVar{source: "Secret " + ref.SecretKeyRef.Name}
			case ref.ConfigMapKeyRef != nil:
				data, _ := m.configMapData(t, ref.ConfigMapKeyRef.Name)
				val, ok := data[ref.ConfigMapKeyRef.Key]
				if !ok {
					t.Errorf("container %s: env %s reads ConfigMap %s key %s, which does not exist", c.Name, e.Name,
						ref.ConfigMapKeyRef.Name, ref.ConfigMapKeyRef.Key)
				}
				v = envVar{value: val, source: "ConfigMap " + ref.ConfigMapKeyRef.Name, known: true}
			}
		}
		env[e.Name] = v
	}
	return env
}

// invocation is what a container runs: the praetor command and its flags.
type invocation struct {
	command string
	flags   map[string]string // --flag value, as given on the command line
}

// parseArgs reads `<command> [--flag[=value] | --flag value]...`.
func parseArgs(args []string) (invocation, error) {
	if len(args) == 0 {
		return invocation{}, errors.New("no arguments: the image's CMD (serve) would run without --services")
	}
	inv := invocation{command: args[0], flags: map[string]string{}}
	if strings.HasPrefix(inv.command, "-") {
		return inv, fmt.Errorf("the first argument %q is a flag, not a praetor command", inv.command)
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return inv, fmt.Errorf("argument %q is not a flag (commands here take none)", a)
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			val = args[i+1]
			i++
		}
		inv.flags[name] = val
	}
	return inv, nil
}

// setting is a flag's value in effect: the command line, else the
// environment variable, else the help's default.
func setting(inv invocation, env map[string]string, help flagHelp, flag string) string {
	if v, ok := inv.flags[flag]; ok {
		return v
	}
	for _, name := range envNames(flag) {
		if v, ok := env[name]; ok {
			return v
		}
	}
	return help[flag]
}

// envNames are the variables a flag is read from: PRAETOR_<FLAG>, and the
// conventional one of the flags that have it (NATS_URL, DATABASE_URL).
func envNames(flag string) []string {
	names := []string{"PRAETOR_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))}
	if conv := nodeEnvVar(flag); !slices.Contains(names, conv) {
		names = append(names, conv)
	}
	return names
}

// checkEnvNames reports every variable that no flag of the command maps
// to and that praetor does not read otherwise: a typo there is silently
// ignored by the binary.
func checkEnvNames(t *testing.T, where string, inv invocation, names []string) {
	t.Helper()
	help := flagsOf(t, inv.command)
	accepted := map[string]bool{}
	for flag := range help {
		for _, n := range envNames(flag) {
			accepted[n] = true
		}
	}
	for _, n := range otherEnvNames() {
		accepted[n] = true
	}
	for _, n := range names {
		if !accepted[n] {
			t.Errorf("%s: environment variable %s is read by nothing in `praetor %s` (no flag --%s; not one of the LLM, NEO4J_* or PRAETOR_WORKFLOW_* settings)",
				where, n, inv.command, strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(n, "PRAETOR_"), "_", "-")))
		}
	}
}

// checkFlags reports every flag of inv that the command does not have.
func checkFlags(t *testing.T, where string, inv invocation) {
	t.Helper()
	help := flagsOf(t, inv.command)
	for f := range inv.flags {
		if _, ok := help[f]; !ok {
			t.Errorf("%s: `praetor %s` has no flag --%s (praetor %s --help)", where, inv.command, f, inv.command)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func parseDuration(t *testing.T, where, flag, v string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: --%s %q: %v", where, flag, v, err)
	}
	return d
}
