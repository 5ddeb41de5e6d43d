// Package planted is the hook through which the simulator's tests plant
// known bugs inside the engine, to show that the checkers catch them.
//
// Planted bugs exist only in binaries built with the build tag
// shardlease_mutations (go test -tags shardlease_mutations, make mutants):
// without it the engine registers none, Set fails with ErrDisabled, and the
// engine's checks for a planted bug are constant false. The package is
// internal to the module, so no application built on the engine can reach
// it either way.
package planted

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Tag is the build tag that enables planted bugs.
const Tag = "shardlease_mutations"

// ErrDisabled is the error of Set in a binary built without Tag.
var ErrDisabled = errors.New("planted bugs are not built in: build with -tags " + Tag)

var (
	setter func(cfg any, name string)
	bugs   map[string]string
)

// Register is called once, from an init function of the engine built with
// Tag, with the engine's planted bugs (name: what it breaks) and the
// function that plants one in an engine configuration.
func Register(engineBugs map[string]string, set func(cfg any, name string)) {
	bugs, setter = engineBugs, set
}

// Enabled reports whether this binary has planted bugs built in.
func Enabled() bool { return setter != nil }

// Bugs returns the engine's planted bugs, name to description (empty
// without Tag).
func Bugs() map[string]string { return maps.Clone(bugs) }

// Names returns the names of Bugs, sorted.
func Names() []string { return slices.Sorted(maps.Keys(bugs)) }

// Set plants bug name in cfg, which must be a *engine.Config.
func Set(cfg any, name string) error {
	if setter == nil {
		return fmt.Errorf("planted bug %q: %w", name, ErrDisabled)
	}
	if _, ok := bugs[name]; !ok {
		return fmt.Errorf("planted bug %q: not one of the engine's planted bugs %v", name, Names())
	}
	setter(cfg, name)
	return nil
}

// Skipper is the part of testing.TB that SkipUnlessEnabled uses.
type Skipper interface {
	Helper()
	Skipf(format string, args ...any)
}

// SkipUnlessEnabled skips a test that plants an engine bug in a binary
// built without Tag.
func SkipUnlessEnabled(t Skipper) {
	t.Helper()
	if !Enabled() {
		t.Skipf("plants a bug inside the engine: run with -tags %s (make test does)", Tag)
	}
}
