package doccmd

import (
	"encoding/json"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

var goBlock = regexp.MustCompile("(?s)```go\n(package main\n.*?)```")

// TestREADMEProgramBuilds builds the README's program (its go
// block that starts with "package main") as it is written there, as a
// package of this module (go build -overlay puts it in place without
// writing into the checkout).
func TestREADMEProgramBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := goBlock.FindSubmatch(b)
	if m == nil {
		t.Fatal(`README.md has no go block that starts with "package main"`)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	virtual := filepath.Join(root, "internal", "doccmd", "readmeprogram", "main.go")
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{virtual: src}})
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-overlay", ov, "-o", os.DevNull, "./internal/doccmd/readmeprogram")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the README's program: %v\n%s", err, out)
	}
	if f, err := format.Source(m[1]); err != nil || string(f) != string(m[1]) {
		t.Errorf("the README's program is not gofmt-formatted (%v)", err)
	}
}
