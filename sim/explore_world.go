package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// WorldSpec is a world as a value: a seed, the option overrides simrun
// has flags for, and, optionally, a fault schedule that replaces the one
// the seed draws for its fault classes (Options.Schedule). It is what the
// explorer keeps in its corpus and what a world file (simrun -world FILE)
// holds; RunOptions turns it into a run, and the run of the same WorldSpec
// is the same run (the same trace hash).
type WorldSpec struct {
	Seed       uint64        `json:"seed"`
	Workers    int           `json:"workers,omitempty"`
	Shards     int           `json:"shards,omitempty"`
	Chaos      time.Duration `json:"-"`
	Quiet      time.Duration `json:"-"`
	Retention  time.Duration `json:"-"`
	Faults     string        `json:"faults,omitempty"`
	Store      string        `json:"store,omitempty"`
	Consumer   string        `json:"consumer,omitempty"`
	Assignment string        `json:"assignment,omitempty"`
	Boundary   string        `json:"boundary,omitempty"`
	Aim        string        `json:"aim,omitempty"`
	Targeted   string        `json:"targeted,omitempty"`
	KPL        string        `json:"kpl,omitempty"`
	Options    string        `json:"options,omitempty"`
	Combo      string        `json:"combo,omitempty"`
	Mutation   string        `json:"mutation,omitempty"`
	// Replace: Schedule replaces the drawn fault schedule (an empty one
	// runs none); without it the seed draws its own.
	Replace  bool     `json:"replace,omitempty"`
	Schedule []Action `json:"-"`
	// Note says where the world came from (the explorer's mutation); it
	// does not change the run.
	Note string `json:"note,omitempty"`
}

// RunOptions returns the run options of the world (the swarm scenario's,
// with w's overrides).
func (w WorldSpec) RunOptions() Options {
	o := Options{Seed: w.Seed, Workers: w.Workers, Shards: w.Shards, Chaos: w.Chaos, Quiet: w.Quiet, Retention: w.Retention,
		Faults: w.Faults, Store: w.Store, Consumer: w.Consumer, Assignment: w.Assignment, Boundary: w.Boundary, Aim: w.Aim,
		Targeted: w.Targeted, KPL: w.KPL, Options: w.Options, Combo: w.Combo, Mutation: w.Mutation}
	if o.Faults == "" {
		o.Faults = "swarm"
	}
	if w.Replace {
		o.Schedule = append([]Action{}, w.Schedule...)
	}
	return o
}

// SpecOf returns the world of a run of o whose result is res, with the
// schedule it drew made explicit (Replace): the explorer's starting
// point. The two run the same (TestWorldSpecReplaysTheSeed).
func SpecOf(o Options, res *Result) WorldSpec {
	w := WorldSpec{Seed: o.Seed, Workers: o.Workers, Shards: o.Shards, Chaos: o.Chaos, Quiet: o.Quiet, Retention: o.Retention,
		Faults: o.Faults, Store: o.Store, Consumer: o.Consumer, Assignment: o.Assignment, Boundary: o.Boundary, Aim: o.Aim,
		Targeted: o.Targeted, KPL: o.KPL, Options: o.Options, Combo: o.Combo, Mutation: o.Mutation, Replace: true,
		Schedule: slices.Clone(res.Drawn)}
	if len(w.Schedule) == 0 {
		w.Schedule = nil // a file tells no empty schedule from none
	}
	if w.Faults == "swarm" {
		w.Faults = ""
	}
	return w
}

// actionJSON is an Action in a world file: durations as Go duration
// strings ("1.5s"), empty fields left out.
type actionJSON struct {
	At       string     `json:"at"`
	Kind     ActionKind `json:"kind"`
	Worker   int        `json:"worker,omitempty"`
	Workers  []int      `json:"workers,omitempty"`
	Shard    string     `json:"shard,omitempty"`
	Role     string     `json:"role,omitempty"`
	Target   string     `json:"target,omitempty"`
	Dir      string     `json:"dir,omitempty"`
	Dur      string     `json:"dur,omitempty"`
	Extra    string     `json:"extra,omitempty"`
	Value    float64    `json:"value,omitempty"`
	NewOwner bool       `json:"new_owner,omitempty"`
	MidAct   bool       `json:"mid_act,omitempty"`
}

// specVersion is the world file's format version.
const specVersion = 1

func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// MarshalJSON encodes w as a world file (durations as strings).
func (w WorldSpec) MarshalJSON() ([]byte, error) {
	type plain WorldSpec // no methods: no recursion
	j := struct {
		Version int `json:"version"`
		plain
		Chaos     string       `json:"chaos,omitempty"`
		Quiet     string       `json:"quiet,omitempty"`
		Retention string       `json:"retention,omitempty"`
		Schedule  []actionJSON `json:"schedule"`
	}{Version: specVersion, plain: plain(w), Chaos: durString(w.Chaos), Quiet: durString(w.Quiet), Retention: durString(w.Retention),
		Schedule: []actionJSON{}}
	for _, a := range w.Schedule {
		j.Schedule = append(j.Schedule, actionJSON{At: a.At.String(), Kind: a.Kind, Worker: a.Worker, Workers: a.Workers, Shard: a.Shard,
			Role: a.Role, Target: a.Target, Dir: a.Dir, Dur: durString(a.Dur), Extra: durString(a.Extra), Value: a.Value,
			NewOwner: a.NewOwner, MidAct: a.MidAct})
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes a world file, rejecting unknown fields, kinds
// and roles, and durations that do not parse.
func (w *WorldSpec) UnmarshalJSON(b []byte) error {
	type plain WorldSpec
	var j struct {
		Version int `json:"version"`
		plain
		Chaos     string       `json:"chaos"`
		Quiet     string       `json:"quiet"`
		Retention string       `json:"retention"`
		Schedule  []actionJSON `json:"schedule"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&j); err != nil {
		return err
	}
	if j.Version != specVersion {
		return fmt.Errorf("world file version %d: this simrun reads version %d", j.Version, specVersion)
	}
	out := WorldSpec(j.plain)
	var err error
	dur := func(what, s string) time.Duration {
		if s == "" || err != nil {
			return 0
		}
		v, e := time.ParseDuration(s)
		if e != nil {
			err = fmt.Errorf("%s %q: %w", what, s, e)
		}
		return v
	}
	out.Chaos, out.Quiet, out.Retention = dur("chaos", j.Chaos), dur("quiet", j.Quiet), dur("retention", j.Retention)
	out.Schedule = nil
	for i, a := range j.Schedule {
		if !slices.Contains(ActionKinds, a.Kind) {
			return fmt.Errorf("schedule[%d]: unknown action kind %q", i, a.Kind)
		}
		switch a.Role {
		case "", RoleAssigner, RoleHolder, RoleObserver:
		default:
			return fmt.Errorf("schedule[%d]: unknown role %q (want %s, %s or %s)", i, a.Role, RoleAssigner, RoleHolder, RoleObserver)
		}
		act := Action{At: dur("at", a.At), Kind: a.Kind, Worker: a.Worker, Workers: a.Workers, Shard: a.Shard, Role: a.Role,
			Target: a.Target, Dir: a.Dir, Dur: dur("dur", a.Dur), Extra: dur("extra", a.Extra), Value: a.Value, NewOwner: a.NewOwner, MidAct: a.MidAct}
		if err != nil {
			return fmt.Errorf("schedule[%d]: %w", i, err)
		}
		if act.At < 0 || act.Dur < 0 || act.Worker < 0 {
			return fmt.Errorf("schedule[%d]: negative time, duration or worker", i)
		}
		out.Schedule = append(out.Schedule, act)
	}
	if err != nil {
		return err
	}
	*w = out
	return nil
}

// ActionKinds are the action kinds a world file may name.
var ActionKinds = []ActionKind{ActCrash, ActRestart, ActPause, ActShutdown, ActScaleOut, ActScaleIn, ActPartition, ActClog,
	ActClockStep, ActSplit, ActMerge, ActTableThrottle, ActStreamThrottle, ActBurst, ActSDKRetry, ActDupOwner,
	ActCutAfterRenew, ActCrashAfterRenew, ActSwitchMode, ActLeaderChange, ActForeignApp, ActRecreateStream, actHealLink}

// ReadWorld reads a world file.
func ReadWorld(path string) (WorldSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return WorldSpec{}, fmt.Errorf("world file: %w", err)
	}
	var w WorldSpec
	if err := json.Unmarshal(b, &w); err != nil {
		return WorldSpec{}, fmt.Errorf("world file %s: %w", path, err)
	}
	return w, nil
}

// WriteWorld writes w to path as an indented world file.
func WriteWorld(path string, w WorldSpec) error {
	b, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WorldReplayCommand is the command that replays a world file at path
// (relative to the checkout's root).
func WorldReplayCommand(path, mutation string) string {
	s := "go run ./cmd/simrun -world " + path
	if strings.HasPrefix(mutation, EngineMutationPrefix) {
		s = strings.Replace(s, "go run ", "go run -tags "+MutationTag+" ", 1)
	}
	return s
}
