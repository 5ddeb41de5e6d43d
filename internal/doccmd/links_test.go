package doccmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
)

// slug is GitHub's anchor of a heading: lower case, punctuation other than
// - and _ dropped, spaces as -.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// brokenLinks returns the relative links of the document at root/doc
// whose file or heading anchor is missing.
func brokenLinks(root, doc string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		return nil, err
	}
	var bad []string
	for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
		link := m[1]
		if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
			continue
		}
		file, anchor, _ := strings.Cut(link, "#")
		target := filepath.Join(root, doc)
		if file != "" {
			target = filepath.Join(filepath.Dir(target), filepath.FromSlash(file))
		}
		if _, err := os.Stat(target); err != nil {
			bad = append(bad, doc+": "+link+": no such file")
			continue
		}
		if anchor == "" {
			continue
		}
		tb, err := os.ReadFile(target)
		if err != nil {
			bad = append(bad, doc+": "+link+": "+err.Error())
			continue
		}
		found := false
		for _, h := range mdHeading.FindAllStringSubmatch(string(tb), -1) {
			if slug(h[1]) == anchor {
				found = true
			}
		}
		if !found {
			bad = append(bad, doc+": "+link+": no heading #"+anchor+" in "+file)
		}
	}
	return bad, nil
}

// TestDocLinks checks every relative link of README.md and docs/*.md: the
// file exists and, with an anchor, has that heading.
func TestDocLinks(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := Docs(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 2 {
		t.Fatalf("documents: %v", docs)
	}
	for _, d := range docs {
		bad, err := brokenLinks(root, d)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bad {
			t.Error(b)
		}
	}
}

func TestBrokenLinksFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	must := func(p, s string) {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must("docs/a.md", "# A page\n\n## The lease rules, in short\n")
	must("README.md", "[ok](docs/a.md#the-lease-rules-in-short) [ok](docs/a.md) [self](#top) [web](https://example.com/x)\n"+
		"[gone](docs/b.md) [anchor](docs/a.md#no-such) \n# Top\n")
	bad, err := brokenLinks(dir, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 2 || !strings.Contains(bad[0], "docs/b.md") || !strings.Contains(bad[1], "#no-such") {
		t.Fatalf("brokenLinks = %q, want the missing file and the missing anchor", bad)
	}
}

func TestCommandsAndFields(t *testing.T) {
	blocks, err := parseBlocks("x.md", "text\n```sh\nmake a   # comment\nfoo \\\n  --bar 'x # y'\n\n```\n```go\nnot a command\n```\n```sh\necho \"#no\" # yes\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	cmds := Commands(blocks)
	want := []string{"make a", "foo --bar 'x # y'", `echo "#no"`}
	if len(cmds) != len(want) {
		t.Fatalf("Commands = %v, want %q", cmds, want)
	}
	for i, c := range cmds {
		if c.Text != want[i] {
			t.Errorf("command %d = %q, want %q", i, c.Text, want[i])
		}
	}
	if cmds[0].Line != 3 || cmds[1].Line != 4 || cmds[2].Block != 11 {
		t.Errorf("lines: %+v", cmds)
	}
	w, out, err := Fields(`go run ./cmd/simrun -seeds 1-2 -json > runs.jsonl`)
	if err != nil || out != "runs.jsonl" || strings.Join(w, "|") != "go|run|./cmd/simrun|-seeds|1-2|-json" {
		t.Fatalf("Fields = %q %q %v", w, out, err)
	}
	for _, bad := range []string{`echo $HOME`, `a && b`, `a | b`, `a > b c`, `a "unterminated`, `a >b`} {
		if _, _, err := Fields(bad); err == nil {
			t.Errorf("Fields(%q) accepted", bad)
		}
	}
	if _, err := parseBlocks("x.md", "```sh\nopen\n"); err == nil {
		t.Error("an unclosed block was accepted")
	}
}
