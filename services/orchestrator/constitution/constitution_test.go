package constitution

import (
	"errors"
	"strings"
	"testing"
)

func mustParse(t *testing.T, l Level, file, text string) *Document {
	t.Helper()
	d, err := Parse(l, file, []byte(text))
	if err != nil {
		t.Fatalf("Parse %s: %v", file, err)
	}
	return d
}

func TestParse(t *testing.T) {
	t.Parallel()
	d := mustParse(t, Project, "p.md", "# Project rules\n\nIntro text.\n\n## Use UTC {#utc}\nAll times in UTC.\n\n## Tests first!\nWrite the test.\n```\n## not a rule\n```\n### Detail\nmore\n")
	if len(d.Rules) != 2 {
		t.Fatalf("rules = %+v, want 2", d.Rules)
	}
	if r := d.Rules[0]; r.ID != "utc" || r.Title != "Use UTC" || r.Body != "All times in UTC." || r.Source.Line != 5 {
		t.Fatalf("rule 0 = %+v", r)
	}
	if r := d.Rules[1]; r.ID != "tests-first" || !strings.Contains(r.Body, "## not a rule") || !strings.Contains(r.Body, "### Detail") {
		t.Fatalf("rule 1 = %+v", r)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, text, want string }{
		{"no rules", "# Title\njust prose\n", ":1: no rules"},
		{"empty rule", "## A\n\n## B\ntext\n", `:1: rule "A" has no text`},
		{"duplicate id", "## Same\nx\n## same\ny\n", `:3: rule id "same" is already used at line 1`},
		{"open fence", "## A\n```\ncode\n", "never closed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(Task, "f.md", []byte(tc.text))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestMergePrecedenceAndProvenance(t *testing.T) {
	t.Parallel()
	org := mustParse(t, Organisation, "org.md", "## Language {#lang}\nBritish English.\n\n## Security\nNo secrets in logs.\n")
	proj := mustParse(t, Project, "proj.md", "## Language {#lang}\nAmerican English.\n\n## Tests\nTable-driven tests.\n")
	wf := mustParse(t, Workflow, "wf.md", "## Tests\nGolden files for renderings.\n")
	task := mustParse(t, Task, "task.md", "## Language {#lang}\nPlain English, short sentences.\n")

	m, err := Merge(org, proj, wf, task)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range m.Rules {
		ids = append(ids, r.ID)
	}
	if got := strings.Join(ids, ","); got != "lang,security,tests" {
		t.Fatalf("rule order = %s, want lang,security,tests (first appearance)", got)
	}
	lang := m.Rules[0]
	if lang.Body != "Plain English, short sentences." || lang.Source.Level != Task {
		t.Fatalf("lang = %+v, want the task's text", lang)
	}
	if len(lang.Overrides) != 2 || lang.Overrides[0].Level != Organisation || lang.Overrides[1].Level != Project {
		t.Fatalf("lang overrides = %+v, want organisation then project", lang.Overrides)
	}
	if m.Rules[2].Source.File != "wf.md" || m.Rules[1].Source.Level != Organisation {
		t.Fatalf("sources = %+v", m.Rules)
	}
	out := m.Render()
	for _, want := range []string{
		"organisation (org.md), project (proj.md), workflow (wf.md), task (task.md)",
		"### Language {#lang}\n\n_Source: task — task.md:1; overrides organisation — org.md:1, project — proj.md:1_\n\nPlain English, short sentences.",
		"### Security {#security}\n\n_Source: organisation — org.md:4_",
		"### Tests {#tests}\n\n_Source: workflow — wf.md:1; overrides project — proj.md:4_",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered constitution lacks %q:\n%s", want, out)
		}
	}
	if out != m.Render() {
		t.Fatal("Render is not stable")
	}
	if _, err := Merge(task, org); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Merge out of order = %v, want ErrInvalid", err)
	}
	if got, _ := Merge(); got.Render() != "" {
		t.Fatal("empty merge renders text")
	}
}
