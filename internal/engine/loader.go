package engine

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/praetorhq/praetor/internal/yamlsyntax"
)

// MaxFileSize bounds an engine file.
const MaxFileSize = 1 << 20

// Parse decodes one engine file strictly: unknown keys, wrong shapes and
// YAML syntax errors are reported with the file, the path and line:col. It
// does not validate the definition; Validate does. def is nil when the file
// could not be decoded.
func Parse(file string, data []byte) (*Definition, Report) { return parseFile(file, data, false) }

// parseFile is Parse; lenient, it also returns the definition of a file whose
// only errors are unknown keys, with those errors.
func parseFile(file string, data []byte, lenient bool) (*Definition, Report) {
	var rep Report
	fail := func(line int, rule, format string, args ...any) (*Definition, Report) {
		rep.Add(Issue{Severity: SeverityError, File: file, Pos: Pos{Line: line}, Rule: rule,
			Message: fmt.Sprintf(format, args...)})
		return nil, rep
	}
	if len(data) > MaxFileSize {
		return fail(0, "size", "file is %d bytes, more than the %d allowed", len(data), MaxFileSize)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return fail(0, "empty", "file is empty: an engine definition is a YAML mapping")
		}
		line, msg := yamlsyntax.Locate(data, err)
		return fail(line, "yaml-syntax", "%s", msg)
	}
	var second yaml.Node
	if err := dec.Decode(&second); err == nil {
		return fail(second.Line, "one-document", "file holds more than one YAML document; put one engine per file")
	} else if !errors.Is(err, io.EOF) {
		line, msg := yamlsyntax.Locate(data, err)
		return fail(line, "yaml-syntax", "%s", msg)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return fail(0, "empty", "file is empty: an engine definition is a YAML mapping")
		}
		root = root.Content[0]
	}
	w := &strictWalker{file: file, pos: map[string]Pos{}}
	w.walk(root, reflect.TypeOf(Definition{}), "")
	if isNull(root) {
		return fail(root.Line, "empty", "file is empty: an engine definition is a YAML mapping")
	}
	if !w.report.Valid() {
		// Unknown keys alone still leave a definition to check: a lenient
		// parse (Load's) returns it with them, so that its other errors are
		// reported too, rather than one round of fixes at a time.
		if !lenient || slices.ContainsFunc(w.report.Errors, func(i Issue) bool { return i.Rule != "unknown-key" }) {
			return nil, w.report
		}
		rep = w.report
	}
	var def Definition
	if err := root.Decode(&def); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, e := range te.Errors {
				line, msg := yamlErrorLine(errors.New(e))
				rep.Add(Issue{Severity: SeverityError, File: file, Pos: Pos{Line: line}, Rule: "type", Message: msg})
			}
			return nil, rep
		}
		line, msg := yamlErrorLine(err)
		return fail(line, "yaml", "%s", msg)
	}
	def.file = file
	def.positions = w.pos
	if canonical, err := CanonicalJSON(&def); err == nil {
		def.digest = HashCanonical(canonical)
	}
	return &def, rep
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?(?:unmarshal errors:\s*)?line (\d+): `)

// yamlErrorLine splits a decoding error, "line 3: cannot unmarshal ...", into
// 3 and the rest; its line is its node's. A syntax error's line is not where
// the error is: yamlsyntax.Locate places those.
func yamlErrorLine(err error) (int, string) {
	msg := strings.TrimSpace(err.Error())
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, strings.TrimPrefix(msg, m[0])
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
}

// PosOf returns the line:col of a path inside the definition's file, or of
// its nearest ancestor; zero when the definition was not loaded from a file.
func (d *Definition) PosOf(path string) Pos {
	return lookupPos(d.positions, path)
}

// locate fills in file and position of issues found on a loaded definition.
func (d *Definition) locate(r Report) Report {
	fix := func(is []Issue) {
		for i := range is {
			if is[i].File == "" {
				is[i].File = d.file
			}
			if is[i].Pos.Line == 0 {
				is[i].Pos = d.PosOf(is[i].Path)
			}
		}
	}
	fix(r.Errors)
	fix(r.Warnings)
	return r
}

// Source is a directory of engine files: every *.yaml and *.yml file directly
// in Dir of FS.
type Source struct {
	FS  fs.FS
	Dir string
	// Label prefixes file names in issues (e.g. "engines"); default Dir.
	Label string
	// Files, when set, are the only files of Dir loaded; else every
	// .yaml and .yml file of it.
	Files []string
}

// DirSource is a directory of the local file system.
func DirSource(dir string) Source {
	return Source{FS: os.DirFS(dir), Dir: ".", Label: dir}
}

// FileSource is one engine file of the local file system.
func FileSource(file string) Source {
	dir, name := filepath.Split(file)
	if dir == "" {
		dir = "."
	}
	return Source{FS: os.DirFS(dir), Dir: ".", Label: filepath.Clean(dir), Files: []string{name}}
}

// Catalog is a validated set of engines, by id.
type Catalog struct {
	defs map[string]*Definition
	// versions holds every valid version of each engine the sources
	// defined, overridden and frozen ones too (a later source's same
	// version wins, and an engine file's wins over a frozen copy's).
	versions map[string]map[string]*Definition
	// revisions holds every valid definition of each version, in load
	// order: an engine file and a copy that differ at the same version.
	revisions map[string]map[string][]*Definition
}

// Version returns an engine at a version: the one Get returns, one a
// later source overrode, or a frozen one. A replay of a session that went
// on under a new version of its engine needs each version it ran.
func (c *Catalog) Version(id, version string) (*Definition, bool) {
	d, ok := c.versions[id][version]
	return d, ok
}

// Revisions returns every definition of an engine at a version the
// sources held, one per digest, the one Version returns first: a file
// edited without a new version and a copy of it from before the edit are
// two. A replay takes the one of the digest the live run recorded.
func (c *Catalog) Revisions(id, version string) []*Definition {
	first, ok := c.versions[id][version]
	if !ok {
		return nil
	}
	out := []*Definition{first}
	for _, d := range c.revisions[id][version] {
		if !slices.ContainsFunc(out, func(o *Definition) bool { return o.Digest() == d.Digest() }) {
			out = append(out, d)
		}
	}
	return out
}

// Versions returns the versions of an engine the catalog holds, sorted.
func (c *Catalog) Versions(id string) []string { return sortedKeys(c.versions[id]) }

// Get returns an engine by id.
func (c *Catalog) Get(id string) (*Definition, bool) {
	d, ok := c.defs[id]
	return d, ok
}

// IDs returns the engine ids, sorted.
func (c *Catalog) IDs() []string { return sortedKeys(c.defs) }

// All returns the engines sorted by id.
func (c *Catalog) All() []*Definition {
	out := make([]*Definition, 0, len(c.defs))
	for _, id := range c.IDs() {
		out = append(out, c.defs[id])
	}
	return out
}

// Len is the number of engines.
func (c *Catalog) Len() int { return len(c.defs) }

// Load reads every engine file of the sources, validates each against the
// registry and the whole set (exit transition targets must be loaded
// engines), and returns the engines that have no errors. The report holds
// every error and warning, sorted; err is non-nil (an *InvalidError wrapping
// ErrInvalid) when there is any error, or when a source cannot be read.
//
// A file named ENGINE_ID@VERSION.yaml is a frozen version (engines/history
// holds the shipped ones): a copy of an engine as it was released, kept so
// that sessions recorded on it replay. It is loaded at its version only
// (Version, Revisions), never as the engine Get returns, nor as a
// duplicate of the engine's file; where an engine file defines the same
// version, Version returns the file's.
func Load(reg *Registry, sources ...Source) (*Catalog, Report, error) {
	var rep Report
	type parsed struct {
		def    *Definition
		file   string
		bad    bool
		frozen bool
		source int
		sum    [sha256.Size]byte
	}
	var all []parsed
	for si, src := range sources {
		files, err := listEngineFiles(src)
		if err != nil {
			return nil, rep, fmt.Errorf("load engines: %w", err)
		}
		for _, name := range files {
			data, err := readLimited(src.FS, path.Join(src.Dir, name))
			display := path.Join(labelOf(src), name)
			if err != nil {
				rep.Add(Issue{Severity: SeverityError, File: display, Rule: "read", Message: err.Error()})
				continue
			}
			def, r := parseFile(display, data, true)
			rep.Merge(r)
			if def != nil {
				_, _, frozen := FrozenName(path.Base(name))
				all = append(all, parsed{def: def, file: display, bad: !r.Valid(), frozen: frozen, source: si,
					sum: sha256.Sum256(data)})
			}
		}
	}
	// An engine defined twice in one source is an error; a later source
	// (--engines-dir) overrides an earlier one's engine of the same id.
	known := map[string]string{}
	from := map[string]int{}
	sums := map[string][sha256.Size]byte{}
	for _, p := range all {
		if p.def.EngineID == "" || p.frozen {
			continue
		}
		if prev, dup := known[p.def.EngineID]; dup {
			if from[p.def.EngineID] == p.source {
				rep.Add(Issue{Severity: SeverityError, File: p.file, Path: "engine_id", Pos: p.def.PosOf("engine_id"),
					Rule: "duplicate-engine", Message: fmt.Sprintf("engine %q is already defined in %s", p.def.EngineID, prev)})
				continue
			}
			if sums[p.def.EngineID] != p.sum { // the same file again (validate engines/) overrides nothing
				rep.Add(Issue{Severity: SeverityWarning, File: p.file, Path: "engine_id", Pos: p.def.PosOf("engine_id"),
					Rule: "override-engine", Message: fmt.Sprintf("engine %q overrides the one in %s", p.def.EngineID, prev)})
			}
		}
		known[p.def.EngineID], from[p.def.EngineID], sums[p.def.EngineID] = p.file, p.source, p.sum
	}
	// A frozen version may hand off to an engine that is itself only
	// frozen now: its sessions did.
	frozenIDs := map[string]bool{}
	for _, p := range all {
		frozenIDs[p.def.EngineID] = frozenIDs[p.def.EngineID] || p.frozen
	}
	cat := &Catalog{defs: map[string]*Definition{}, versions: map[string]map[string]*Definition{},
		revisions: map[string]map[string][]*Definition{}}
	var frozen []*Definition
	for _, p := range all {
		r := p.def.locate(Validate(p.def, ValidateEnv{Registry: reg, Engines: func(id string) bool {
			_, ok := known[id]
			return ok || p.frozen && frozenIDs[id]
		}}))
		if id, version, ok := FrozenName(path.Base(p.file)); ok && p.def.EngineID != "" &&
			(id != p.def.EngineID || version != p.def.Version) {
			r.Add(Issue{Severity: SeverityError, File: p.file, Path: "version", Pos: p.def.PosOf("version"), Rule: "frozen-name",
				Message: fmt.Sprintf("the file of a frozen version is named ENGINE_ID@VERSION.yaml, and this one defines %s %s",
					p.def.EngineID, p.def.Version)})
		}
		rep.Merge(r)
		if !r.Valid() || p.bad || p.def.EngineID == "" {
			continue
		}
		id := p.def.EngineID
		if cat.revisions[id] == nil {
			cat.versions[id], cat.revisions[id] = map[string]*Definition{}, map[string][]*Definition{}
		}
		cat.revisions[id][p.def.Version] = append(cat.revisions[id][p.def.Version], p.def)
		if p.frozen {
			frozen = append(frozen, p.def)
			continue
		}
		if known[id] == p.file {
			cat.defs[id] = p.def
		}
		if from[id] != p.source || known[id] == p.file { // not a duplicate within a source
			cat.versions[id][p.def.Version] = p.def
		}
	}
	// The engine Get returns is its version's, whatever a source before
	// it defined at that version; a frozen copy stands for a version no
	// engine file defines.
	for id, d := range cat.defs {
		cat.versions[id][d.Version] = d
	}
	for _, d := range frozen {
		if _, ok := cat.versions[d.EngineID][d.Version]; !ok {
			cat.versions[d.EngineID][d.Version] = d
		}
	}
	rep.Sort()
	return cat, rep, rep.Err()
}

func labelOf(s Source) string {
	if s.Label != "" {
		return s.Label
	}
	return s.Dir
}

func listEngineFiles(src Source) ([]string, error) {
	if src.Files != nil {
		return src.Files, nil
	}
	entries, err := fs.ReadDir(src.FS, src.Dir)
	if err != nil {
		// The error's path is the one inside src.FS ("." for a
		// DirSource); the label is the one its user gave.
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		return nil, fmt.Errorf("%s: %w", labelOf(src), err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if ext := path.Ext(e.Name()); ext == ".yaml" || ext == ".yml" {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

func readLimited(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	return data, nil
}

// FrozenName splits the name of a frozen version's file,
// ENGINE_ID@VERSION.yaml (or .yml), into its engine id and version; ok is
// false for any other name.
func FrozenName(name string) (id, version string, ok bool) {
	base, found := strings.CutSuffix(name, ".yaml")
	if !found {
		base, found = strings.CutSuffix(name, ".yml")
	}
	if !found {
		return "", "", false
	}
	id, version, ok = strings.Cut(base, "@")
	if !ok || id == "" || version == "" {
		return "", "", false
	}
	return id, version, true
}

// ListEngineFiles returns the engine files a source would load.
func ListEngineFiles(src Source) ([]string, error) { return listEngineFiles(src) }
