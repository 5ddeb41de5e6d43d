package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCoreReadsNoWallClock: the decision core reads Now.Wall in one place
// only, Step, which keeps it for wallClock (the read the trace reports).
// The production driver (driver*.go) and the health checks may read the
// wall clock: they decide nothing about leases.
func TestCoreReadsNoWallClock(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "driver") || name == "health.go" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, _ := d.(*ast.FuncDecl)
			ast.Inspect(d, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Wall" {
					return true
				}
				if name == "worker.go" && fd != nil && fd.Name.Name == "Step" && fd.Recv != nil {
					return true // the one read: kept for wallClock
				}
				t.Errorf("%s: the core reads .Wall outside Step: use Worker.wallClock, which the trace reports", fset.Position(sel.Pos()))
				return true
			})
		}
	}
}

// TestWallClockRead: a read of the wall clock is reported once per
// purpose and step, with the reading of that step.
func TestWallClockRead(t *testing.T) {
	var evs []TraceEvent
	w := &Worker{trace: func(e TraceEvent) { evs = append(evs, e) }}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w.now, w.wall, w.wallRead = Now{Mono: time.Second}, at, ""
	if got := w.wallClock("a"); !got.Equal(at) {
		t.Fatalf("wallClock = %v, want %v", got, at)
	}
	w.wallClock("a")
	w.wallClock("b")
	if len(evs) != 2 || evs[0].Kind != TraceWallRead || evs[0].Reason != "a" || evs[1].Reason != "b" || evs[0].Mono != time.Second {
		t.Fatalf("trace %+v, want one wall-read for a and one for b", evs)
	}
}
