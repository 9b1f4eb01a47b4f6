// Package constitution reads constitutions — markdown rule files — and merges
// them by precedence: organisation, then project, then workflow, then task.
// A rule of a later level replaces the rule with the same id of an earlier
// level in place; new rules are added after the earlier ones. The merged
// result remembers where each rule came from and what it overrode, and
// renders it, so an agent (and a reviewer) sees the source of every rule.
//
// A constitution file is markdown. Each rule starts with a level-two heading,
// "## Title", optionally with an explicit id, "## Title {#id}"; without one
// the id is the title in lower case with runs of other characters turned to
// '-'. The rule's text runs to the next level-one or level-two heading
// outside a code fence. Text before the first rule (a title, an intro) is not
// a rule and is not merged.
package constitution

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Level is a precedence level.
type Level string

// The levels, lowest precedence first.
const (
	Organisation Level = "organisation"
	Project      Level = "project"
	Workflow     Level = "workflow"
	Task         Level = "task"
)

// rank orders levels by precedence.
func (l Level) rank() int {
	switch l {
	case Organisation:
		return 0
	case Project:
		return 1
	case Workflow:
		return 2
	case Task:
		return 3
	}
	return -1
}

// ErrInvalid is wrapped by every parse and merge error.
var ErrInvalid = errors.New("invalid constitution")

// ParseError is a problem at a line of a constitution file.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }
func (e *ParseError) Unwrap() error { return ErrInvalid }

// Source says where a rule was written.
type Source struct {
	Level Level  `json:"level"`
	File  string `json:"file"`
	Line  int    `json:"line"`
}

func (s Source) String() string { return fmt.Sprintf("%s — %s:%d", s.Level, s.File, s.Line) }

// Rule is one rule.
type Rule struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
	// Source is where the text in force was written.
	Source Source `json:"source"`
	// Overrides lists the earlier definitions this one replaced, oldest first.
	Overrides []Source `json:"overrides,omitempty"`
}

// Document is one parsed constitution file.
type Document struct {
	Level Level
	File  string
	Rules []Rule
}

var (
	heading   = regexp.MustCompile(`^(#{1,2})\s+(.*?)\s*$`)
	explicit  = regexp.MustCompile(`^(.*?)\s*\{#([A-Za-z0-9][A-Za-z0-9_-]*)\}$`)
	nonSlug   = regexp.MustCompile(`[^a-z0-9]+`)
	fenceOpen = regexp.MustCompile("^\\s*(```+|~~~+)")
)

// Parse reads one constitution file. file is the name shown in errors and
// in the merged result.
func Parse(level Level, file string, data []byte) (*Document, error) {
	if level.rank() < 0 {
		return nil, fmt.Errorf("%w: unknown level %q", ErrInvalid, level)
	}
	doc := &Document{Level: level, File: file}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	seen := map[string]int{}
	var (
		cur   *Rule
		body  []string
		fence string
	)
	flush := func() error {
		if cur == nil {
			return nil
		}
		cur.Body = strings.TrimSpace(strings.Join(body, "\n"))
		if cur.Body == "" {
			return &ParseError{File: file, Line: cur.Source.Line, Msg: fmt.Sprintf("rule %q has no text", cur.Title)}
		}
		doc.Rules = append(doc.Rules, *cur)
		cur, body = nil, nil
		return nil
	}
	for i, line := range lines {
		if fence != "" {
			if strings.HasPrefix(strings.TrimSpace(line), fence) {
				fence = ""
			}
			body = append(body, line)
			continue
		}
		if m := fenceOpen.FindStringSubmatch(line); m != nil {
			fence = m[1]
			body = append(body, line)
			continue
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			body = append(body, line)
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		// Text before the first rule, or after a level-one title, is an
		// intro, not part of a rule.
		body = nil
		if m[1] == "#" {
			continue
		}
		title, id := m[2], ""
		if e := explicit.FindStringSubmatch(title); e != nil {
			title, id = e[1], e[2]
		} else {
			id = strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(title), "-"), "-")
		}
		if id == "" {
			return nil, &ParseError{File: file, Line: i + 1, Msg: "rule heading has no title: write \"## Title\""}
		}
		if first, dup := seen[id]; dup {
			return nil, &ParseError{File: file, Line: i + 1,
				Msg: fmt.Sprintf("rule id %q is already used at line %d: give one an explicit id with {#other-id}", id, first)}
		}
		seen[id] = i + 1
		cur = &Rule{ID: id, Title: title, Source: Source{Level: level, File: file, Line: i + 1}}
	}
	if fence != "" {
		return nil, &ParseError{File: file, Line: len(lines), Msg: "code fence " + fence + " is never closed"}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(doc.Rules) == 0 {
		return nil, &ParseError{File: file, Line: 1, Msg: "no rules: start each rule with a \"## \" heading"}
	}
	return doc, nil
}

// Merged is the result of merging documents.
type Merged struct {
	// Sources are the merged files, lowest precedence first.
	Sources []Source `json:"sources"`
	// Rules are in force, in order of first appearance.
	Rules []Rule `json:"rules"`
}

// Merge merges documents. They must be given lowest precedence first, at
// most one per level (the loader guarantees both); a document out of order
// is an error rather than a silent change of who wins.
func Merge(docs ...*Document) (*Merged, error) {
	m := &Merged{}
	index := map[string]int{}
	last := -1
	for _, d := range docs {
		if d == nil {
			continue
		}
		if r := d.Level.rank(); r <= last {
			return nil, fmt.Errorf("%w: %s (%s) given after a level of equal or higher precedence", ErrInvalid, d.File, d.Level)
		} else {
			last = r
		}
		m.Sources = append(m.Sources, Source{Level: d.Level, File: d.File})
		for _, r := range d.Rules {
			if i, ok := index[r.ID]; ok {
				old := m.Rules[i]
				r.Overrides = append(append([]Source(nil), old.Overrides...), old.Source)
				m.Rules[i] = r
				continue
			}
			index[r.ID] = len(m.Rules)
			m.Rules = append(m.Rules, r)
		}
	}
	return m, nil
}

// Empty reports whether no rule is in force.
func (m *Merged) Empty() bool { return m == nil || len(m.Rules) == 0 }

// Render writes the merged constitution as markdown with each rule's source.
// The output depends only on the documents, so it is stable across runs.
func (m *Merged) Render() string {
	if m.Empty() {
		return ""
	}
	var b strings.Builder
	b.WriteString("Merged from, lowest precedence first: ")
	for i, s := range m.Sources {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", s.Level, s.File)
	}
	b.WriteString(". A later level overrides an earlier one rule by rule.\n")
	for _, r := range m.Rules {
		fmt.Fprintf(&b, "\n### %s {#%s}\n\n_Source: %s", r.Title, r.ID, r.Source)
		if len(r.Overrides) > 0 {
			b.WriteString("; overrides ")
			for i, o := range r.Overrides {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(o.String())
			}
		}
		b.WriteString("_\n\n")
		b.WriteString(r.Body)
		b.WriteString("\n")
	}
	return b.String()
}
