package deploy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// dockerInstructions reads the Dockerfile as instructions, continuation
// lines joined and comments dropped.
func dockerInstructions(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if rest, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(trimmed)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// TestDockerfile: the -X flag reaches `praetor version`, the built package
// exists, the binary is static (CGO_ENABLED=0, for distroless/static), the
// entrypoint is the binary, the default command is a praetor command, and
// the exposed port is the one serve listens on.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	ins := dockerInstructions(t)
	var stages []string
	var entrypoint, cmd []string
	var expose []int
	var goBuild string
	for _, in := range ins {
		word, rest, _ := strings.Cut(in, " ")
		switch strings.ToUpper(word) {
		case "FROM":
			stages = append(stages, rest)
		case "ENTRYPOINT":
			entrypoint = jsonArgs(t, in, rest)
		case "CMD":
			cmd = jsonArgs(t, in, rest)
		case "EXPOSE":
			for _, p := range strings.Fields(rest) {
				n, err := strconv.Atoi(strings.TrimSuffix(p, "/tcp"))
				if err != nil {
					t.Fatalf("%s: EXPOSE %q", dockerfile, p)
				}
				expose = append(expose, n)
			}
		case "RUN":
			if strings.Contains(rest, "go build") {
				goBuild = rest
			}
		}
	}
	if goBuild == "" {
		t.Fatalf("%s: no RUN ... go build", dockerfile)
	}
	if !strings.Contains(goBuild, "CGO_ENABLED=0") {
		t.Errorf("%s: go build without CGO_ENABLED=0: the binary may link libc, which distroless/static lacks", dockerfile)
	}
	pkg := regexp.MustCompile(`\s(\./[^\s]+)\s*$`).FindStringSubmatch(goBuild)
	if pkg == nil {
		t.Errorf("%s: the go build does not end with the package it builds (./cmd/praetor)", dockerfile)
	} else if _, err := os.Stat(filepath.Join("..", pkg[1], "main.go")); err != nil {
		t.Errorf("%s builds %s: %v", dockerfile, pkg[1], err)
	}

	sym := versionSymbol()
	if sym == "" {
		t.Errorf("%s: no -ldflags -X <package>.<var>=... setting the version", dockerfile)
	} else {
		out, err := exec.Command(praetorBin(t), "version").Output()
		if err != nil {
			t.Fatalf("praetor version: %v", err)
		}
		if !strings.HasPrefix(string(out), "praetor "+versionMark) {
			t.Errorf("built with -X %s=%s, praetor version prints %q: the Dockerfile's -X names no variable of the binary", sym, versionMark, out)
		}
	}

	if len(stages) < 2 {
		t.Errorf("%s: %d stages, want a builder and a final image", dockerfile, len(stages))
	}
	if len(entrypoint) != 1 || !strings.HasPrefix(entrypoint[0], "/") {
		t.Errorf("%s: ENTRYPOINT %q, want the binary alone (manifests give the command as args)", dockerfile, entrypoint)
	} else {
		copied := false
		for _, in := range ins {
			f := strings.Fields(in)
			copied = copied || (strings.EqualFold(f[0], "COPY") && f[len(f)-1] == entrypoint[0])
		}
		if !copied {
			t.Errorf("%s: ENTRYPOINT %s is not where a COPY puts the binary", dockerfile, entrypoint[0])
		}
	}
	if len(cmd) == 0 {
		t.Errorf("%s: no CMD", dockerfile)
	} else {
		flagsOf(t, cmd[0]) // fails when cmd[0] is not a praetor command
	}
	port := httpPort(t, "praetor serve", flagsOf(t, "serve")["http-addr"])
	if !containsInt(expose, port) {
		t.Errorf("%s: EXPOSE %v, serve listens on %d by default", dockerfile, expose, port)
	}
}

func jsonArgs(t *testing.T, in, rest string) []string {
	t.Helper()
	var args []string
	if err := json.Unmarshal([]byte(rest), &args); err != nil {
		t.Errorf("%s: %q is not in exec (JSON) form: with a shell the binary would not receive SIGTERM", dockerfile, in)
	}
	return args
}

func containsInt(xs []int, n int) bool {
	for _, x := range xs {
		if x == n {
			return true
		}
	}
	return false
}

// TestDockerignoreKeepsTheBuildInputs: every file the binary is built from
// (Go files, embedded files, go.mod, go.sum) stays in the build context.
// An exclusion that catches one fails the image build only where Docker
// runs, long after the change.
func TestDockerignoreKeepsTheBuildInputs(t *testing.T) {
	t.Parallel()
	f, err := os.Open(dockerignore)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf("%s: %v", dockerignore, err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"go.mod", "go.sum"}
	cmd := exec.Command("go", "list", "-deps", "-json=Dir,GoFiles,EmbedFiles,Module", "./cmd/praetor")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Dir        string
			GoFiles    []string
			EmbedFiles []string
			Module     *struct{ Main bool }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || !p.Module.Main {
			continue // from the module cache, downloaded in the image
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range append(p.GoFiles, p.EmbedFiles...) {
			files = append(files, filepath.ToSlash(filepath.Join(rel, name)))
		}
	}
	if len(files) < 10 {
		t.Fatalf("go list found only %v", files)
	}
	for _, file := range files {
		excluded, err := pm.MatchesOrParentMatches(file)
		if err != nil {
			t.Fatal(err)
		}
		if excluded {
			t.Errorf("%s excludes %s, which the praetor binary is built from", dockerignore, file)
		}
	}
}
