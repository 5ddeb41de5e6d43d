package claims

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/internal/mutants"
	"github.com/shardlease/shardlease/sim"
	"github.com/shardlease/shardlease/sim/check"
)

var flagUpdate = flag.Bool("claims.update", false, "rewrite the \"stated in\" column of docs/claims.md from where each fragment is found")

const (
	root      = "../.."
	tablePath = "docs/claims.md"
)

// claim is one row of a table of docs/claims.md.
type claim struct {
	line     int // index in the file's lines
	id       string
	fragment string
	stated   []string
	checkers []string
	bugs     []string // nil for the harness's rows
	harness  bool
	// open: the row's planted bugs cell ends with openMark: no run
	// catches them yet (make mutants says so), so the claim is stated and
	// checked but not yet shown to be: TestClaimsCaught requires it to
	// stay uncaught until the mark is removed.
	open bool
}

// openMark ends the planted bugs cell of a claim whose planted bugs no run
// catches yet.
const openMark = "(not caught yet)"

var rowRE = regexp.MustCompile(`^\| ([CH]\d+) "([^"]+)" \| ([^|]*) \| ([^|]*) \|(?: ([^|]*) \|)?$`)

// readTables parses the rows of the claims table and the harness's table.
func readTables(t *testing.T) ([]string, []claim) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, tablePath))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var claims []claim
	in := ""
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "<!-- claims:"):
			in = "claims"
			continue
		case strings.HasPrefix(l, "<!-- harness:"):
			in = "harness"
			continue
		case strings.HasPrefix(l, "<!-- /"):
			in = ""
			continue
		}
		if in == "" || !strings.HasPrefix(l, "| C") && !strings.HasPrefix(l, "| H") {
			continue
		}
		m := rowRE.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("%s:%d: a row not of the form | ID \"fragment\" | stated in | checked by | planted bugs |: %s", tablePath, i+1, l)
			continue
		}
		c := claim{line: i, id: m[1], fragment: m[2], stated: list(m[3]), checkers: list(m[4]), harness: in == "harness"}
		if !c.harness {
			cell := strings.TrimSpace(m[5])
			if b, ok := strings.CutSuffix(cell, openMark); ok {
				c.open, cell = true, b
			}
			c.bugs = list(cell)
		}
		claims = append(claims, c)
	}
	if len(claims) == 0 {
		t.Fatalf("%s has no claims between its markers", tablePath)
	}
	return lines, claims
}

// list splits a cell into its comma-separated items, without backquotes.
func list(cell string) []string {
	var out []string
	for _, f := range strings.Split(cell, ",") {
		if f = strings.Trim(strings.TrimSpace(f), "`"); f != "" && f != "—" {
			out = append(out, f)
		}
	}
	return out
}

// normalize collapses every run of white space to one space.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// docs returns the documentation a claim may be stated in, by path
// relative to the root: README.md, docs/*.md (this table aside) and the
// package documentation of every package (the comment before its package
// clause), each normalized.
func docs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(rel, text string) { out[rel] = normalize(text) }
	if b, err := os.ReadFile(filepath.Join(root, "README.md")); err == nil {
		add("README.md", string(b))
	} else {
		t.Fatal(err)
	}
	mds, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, p := range mds {
		rel, _ := filepath.Rel(root, p)
		if rel == tablePath {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		add(filepath.ToSlash(rel), string(b))
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil || f.Doc == nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		add(filepath.ToSlash(rel), f.Doc.Text())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tests returns the names of every test function of the module.
func tests(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// plantedBugs returns every planted bug as simrun names it: the engine's
// (read from engine/planted_on.go, whatever the build's tag), with the
// prefix engine:, and the simulator's tamperings (sim.Mutations).
func plantedBugs(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "engine", "planted_on.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "plantedBugs" || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.CompositeLit)
		if !ok {
			return true
		}
		for _, e := range lit.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			if bl, ok := kv.Key.(*ast.BasicLit); ok {
				name, err := strconv.Unquote(bl.Value)
				if err == nil {
					out[sim.EngineMutationPrefix+name] = true
				}
			}
		}
		return false
	})
	if len(out) == 0 {
		t.Fatal("no planted bugs found in engine/planted_on.go")
	}
	for m := range sim.Mutations {
		if !strings.HasPrefix(m, sim.EngineMutationPrefix) {
			out[m] = true
		}
	}
	return out
}

// TestClaimsTable checks docs/claims.md (see the package documentation
// and the page itself).
func TestClaimsTable(t *testing.T) {
	lines, claims := readTables(t)
	text := docs(t)
	known := tests(t)
	bugs := plantedBugs(t)
	paths := make([]string, 0, len(text))
	for p := range text {
		paths = append(paths, p)
	}
	slices.Sort(paths)

	ids := map[string]bool{}
	usedBug := map[string]bool{}
	usedInv := map[string]bool{}
	changed := false
	for _, c := range claims {
		if ids[c.id] {
			t.Errorf("%s: two rows have the id", c.id)
		}
		ids[c.id] = true
		// the fragment is still stated somewhere
		frag := normalize(c.fragment)
		var where []string
		for _, p := range paths {
			if strings.Contains(text[p], frag) {
				where = append(where, p)
			}
		}
		if len(where) == 0 {
			t.Errorf("%s: %q is stated in none of README.md, docs/*.md and the package docs: the guarantee was dropped or reworded (update the row)", c.id, c.fragment)
		} else if !slices.Equal(where, c.stated) {
			if *flagUpdate {
				lines[c.line] = strings.Replace(lines[c.line], " | "+strings.Join(c.stated, ", ")+" | ", " | "+strings.Join(where, ", ")+" | ", 1)
				changed = true
			} else {
				t.Logf("%s: stated in %v, the table says %v (go test ./internal/claims -claims.update rewrites the column)", c.id, where, c.stated)
			}
		}
		// checkers exist
		if len(c.checkers) == 0 {
			t.Errorf("%s: no checker", c.id)
		}
		for _, k := range c.checkers {
			switch {
			case check.Invariants[k] != "":
				usedInv[k] = true
			case known[strings.SplitN(k, "/", 2)[0]]:
			default:
				t.Errorf("%s: %q is neither an invariant (check.Invariants) nor a test of the module", c.id, k)
			}
		}
		if c.harness {
			continue
		}
		// planted bugs exist
		if len(c.bugs) == 0 {
			t.Errorf("%s: no planted bug shows that its checker fires", c.id)
		}
		for _, b := range c.bugs {
			if !bugs[b] {
				t.Errorf("%s: %q is not a planted bug (engine/planted_on.go, sim.Mutations)", c.id, b)
			}
			usedBug[b] = true
		}
	}
	for b := range bugs {
		if !usedBug[b] {
			t.Errorf("planted bug %s is in no claim's row", b)
		}
	}
	for inv := range check.Invariants {
		if !usedInv[inv] {
			t.Errorf("invariant %s checks no claim", inv)
		}
	}
	if changed {
		if err := os.WriteFile(filepath.Join(root, tablePath), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the \"stated in\" column of %s", tablePath)
	}
}

// TestClaimsCaught: for every claim, one of its planted bugs is caught by
// one of its checkers in reports/mutants.json (make mutants): by one of
// its invariants on the simulators' seeds, or by its named test.
func TestClaimsCaught(t *testing.T) {
	_, claims := readTables(t)
	rows, err := mutants.Read(filepath.Join(root, "reports", "mutants.json"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]mutants.Row{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	for _, c := range claims {
		if c.harness {
			continue
		}
		var missing []string
		caught := false
		for _, b := range c.bugs {
			r, ok := byName[b]
			if !ok {
				missing = append(missing, b)
				continue
			}
			for _, k := range c.checkers {
				caught = caught || r.Invariants[k] > 0 || (r.Caught && slices.Contains(strings.Fields(r.Invariant), k))
			}
		}
		switch {
		case c.open && caught:
			t.Errorf("%s: marked %q but reports/mutants.json shows one of %v caught by %v: remove the mark", c.id, openMark, c.bugs, c.checkers)
		case c.open && len(missing) > 0:
			t.Errorf("%s: %v not measured; run make mutants", c.id, missing)
		case c.open:
			t.Logf("%s: open: none of %v is caught by %v yet", c.id, c.bugs, c.checkers)
		case !caught:
			t.Errorf("%s: none of %v is caught by %v in reports/mutants.json (not measured: %v; run make mutants; a claim no run shows yet ends its planted bugs with %q)", c.id, c.bugs, c.checkers, missing, openMark)
		}
	}
}
