package linearizability_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/shardlease/shardlease/engine"
	lin "github.com/shardlease/shardlease/linearizability"
)

// Builders of hand-made histories. Times are small integers.

func row(key, owner string, counter int64) lin.Row {
	return lin.Row{Key: key, Owner: owner, Counter: counter, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
}

func exp(owner string, counter int64) engine.Expect {
	return engine.Expect{Owner: owner, Counter: counter}
}

func create(client int, call, ret int64, r lin.Row, out lin.Outcome) lin.Op {
	return lin.Op{Client: client, Call: call, Return: ret,
		Input: lin.Input{Op: engine.OpCreateLease, Row: r}, Output: lin.Output{Outcome: out}}
}

func update(client int, call, ret int64, e engine.Expect, r lin.Row, out lin.Outcome) lin.Op {
	return lin.Op{Client: client, Call: call, Return: ret,
		Input: lin.Input{Op: engine.OpUpdateLease, Expect: e, Row: r}, Output: lin.Output{Outcome: out}}
}

func del(client int, call, ret int64, key string, e engine.Expect, out lin.Outcome) lin.Op {
	return lin.Op{Client: client, Call: call, Return: ret,
		Input: lin.Input{Op: engine.OpDeleteLease, Key: key, Expect: e}, Output: lin.Output{Outcome: out}}
}

func get(client int, call, ret int64, r lin.Row) lin.Op {
	return lin.Op{Client: client, Call: call, Return: ret,
		Input: lin.Input{Op: engine.OpGetLease, Key: r.Key}, Output: lin.Output{Outcome: lin.OutcomeOK, Row: r}}
}

func getNone(client int, call, ret int64, key string) lin.Op {
	return lin.Op{Client: client, Call: call, Return: ret,
		Input: lin.Input{Op: engine.OpGetLease, Key: key}, Output: lin.Output{Outcome: lin.OutcomeNotFound}}
}

func scan(client int, call, ret int64, consistent bool, rows ...lin.Row) lin.Op {
	return lin.Op{Client: client, Call: call, Return: ret,
		Input: lin.Input{Op: engine.OpListLeases, Consistent: consistent}, Output: lin.Output{Outcome: lin.OutcomeOK, Rows: rows}}
}

const (
	ok      = lin.OutcomeOK
	cond    = lin.OutcomeConditionFailed
	unknown = lin.OutcomeUnknown
	never   = lin.Never
)

var (
	a1 = row("k", "", 1)   // created, unowned
	a2 = row("k", "w1", 2) // taken by w1
	b2 = row("k", "w2", 2) // taken by w2 (from the same counter)
	a3 = row("k", "w1", 3) // renewed by w1
)

// linearizable histories: each must check Ok.
var goodHistories = []struct {
	name    string
	initial []lin.Row
	h       []lin.Op
}{
	{name: "empty"},
	{name: "sequential lifecycle", h: []lin.Op{
		getNone(0, 0, 1, "k"),
		create(0, 2, 3, a1, ok),
		get(1, 4, 5, a1),
		update(1, 6, 7, exp("", 1), a2, ok),
		update(2, 8, 9, exp("", 1), b2, cond), // stale take
		create(2, 10, 11, a1, cond),           // already there
		get(2, 12, 13, a2),
		update(1, 14, 15, exp("w1", 2), a3, ok),
		del(2, 16, 17, "k", exp("w1", 2), cond),
		del(1, 18, 19, "k", exp("w1", 3), ok),
		getNone(2, 20, 21, "k"),
		update(1, 22, 23, exp("w1", 3), row("k", "w1", 4), cond), // the row is gone
		create(2, 24, 25, a1, ok),                                // re-created
	}},
	{name: "concurrent takes, one wins", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, 20, exp("", 1), a2, ok),
		update(2, 11, 19, exp("", 1), b2, cond),
		get(0, 12, 18, a1), // before both
		get(0, 21, 22, a2),
	}},
	{name: "the take that started later wins", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, 30, exp("", 1), a2, cond),
		update(2, 20, 25, exp("", 1), b2, ok),
		get(0, 31, 32, b2),
	}},
	{name: "reads concurrent with a write see old then new", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, 100, exp("", 1), a2, ok),
		get(2, 20, 30, a1),
		get(3, 25, 50, a2),
		get(2, 60, 70, a2),
	}},
	{name: "touching windows are concurrent", h: []lin.Op{
		create(0, 0, 10, a1, ok),
		getNone(1, 10, 20, "k"), // [0,10] and [10,20] overlap at 10
	}},
	{name: "consistent scans", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		create(0, 2, 3, row("j", "", 1), ok),
		scan(1, 4, 5, true, a1, row("j", "", 1)),
		del(0, 6, 7, "j", exp("", 1), ok),
		scan(1, 8, 9, true, a1),
		update(0, 10, 20, exp("", 1), a2, ok),
		scan(1, 11, 19, true, a1), // concurrent with the take: either
		scan(2, 12, 18, true, a2),
	}},
	{name: "a scan that omits a key during its deletion", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		del(0, 10, 20, "k", exp("", 1), ok),
		scan(1, 15, 25, true), // no rows
		getNone(1, 30, 31, "k"),
	}},
	{name: "stale eventually consistent scans are skipped", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		update(0, 2, 3, exp("", 1), a2, ok),
		scan(1, 10, 11, false, a1), // stale: allowed
		scan(1, 12, 13, false),     // missing: allowed
	}},
	{name: "a malformed row in a scan", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		{Client: 1, Call: 2, Return: 3, Input: lin.Input{Op: engine.OpListLeases, Consistent: true},
			Output: lin.Output{Outcome: ok, Malformed: []string{"k"}}},
	}},
	{name: "throttled calls are dropped", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 2, 3, exp("", 1), a2, lin.OutcomeThrottled),
		get(0, 4, 5, a1),
	}},
	{name: "initial rows", initial: []lin.Row{a2}, h: []lin.Op{
		get(0, 0, 1, a2),
		update(0, 2, 3, exp("w1", 2), a3, ok),
	}},
	// writes of unknown outcome
	{name: "unknown take that applied", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, never, exp("", 1), a2, unknown),
		get(0, 50, 60, a2),
		update(0, 61, 62, exp("w1", 2), a3, ok),
	}},
	{name: "unknown take that never applied", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, never, exp("", 1), a2, unknown),
		get(0, 50, 60, a1),
		update(2, 61, 62, exp("", 1), b2, ok),
		get(0, 70, 80, b2),
	}},
	{name: "unknown take that applied long after its caller gave up", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, never, exp("", 1), a2, unknown),
		get(0, 50, 60, a1),
		get(0, 70, 80, a2),
	}},
	{name: "unknown create never applied, another applied", h: []lin.Op{
		create(1, 0, never, a1, unknown),
		getNone(0, 5, 6, "k"),
		create(2, 10, 11, row("k", "w2", 1), ok),
		get(0, 12, 13, row("k", "w2", 1)),
	}},
	{name: "unknown delete applied", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		del(1, 2, never, "k", exp("", 1), unknown),
		getNone(0, 10, 11, "k"),
	}},
	{name: "two unknown writes in a chain", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 2, never, exp("", 1), a2, unknown),
		update(1, 3, never, exp("w1", 2), a3, unknown),
		get(0, 10, 11, a3),
	}},
	{name: "unknown reads are dropped", h: []lin.Op{
		create(0, 0, 1, a1, ok),
		{Client: 1, Call: 2, Return: never, Input: lin.Input{Op: engine.OpGetLease, Key: "k"}, Output: lin.Output{Outcome: unknown}},
	}},
}

// histories that are not linearizable: each must be flagged, on key "k".
var badHistories = []struct {
	name string
	h    []lin.Op
}{
	{"two concurrent takes of the same counter both ok", []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, 20, exp("", 1), a2, ok),
		update(2, 11, 21, exp("", 1), b2, ok),
	}},
	{"a read of a version overwritten before it started", []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, 20, exp("", 1), a2, ok),
		get(2, 30, 40, a1),
	}},
	{"a read of a version written after it returned", []lin.Op{
		create(0, 0, 1, a1, ok),
		get(2, 2, 5, a2),
		update(1, 10, 20, exp("", 1), a2, ok),
	}},
	{"a read of a version nobody wrote", []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 2, never, exp("", 1), a2, unknown),
		get(2, 10, 20, b2),
	}},
	{"a conditional update against a counter that was not current", []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 2, 3, exp("", 1), a2, ok),
		update(1, 4, 5, exp("w1", 2), a3, ok),
		update(2, 6, 7, exp("w1", 2), row("k", "w2", 3), ok), // counter 2 is gone
	}},
	{"a conditional update against the right counter but wrong owner", []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 2, 3, exp("", 1), a2, ok),
		update(2, 4, 5, exp("w2", 2), row("k", "w2", 3), ok),
	}},
	{"a create after a create, both ok", []lin.Op{
		create(1, 0, 1, a1, ok),
		create(2, 2, 3, row("k", "w2", 1), ok),
	}},
	{"two concurrent creates, both ok", []lin.Op{
		create(1, 0, 10, a1, ok),
		create(2, 1, 9, row("k", "w2", 1), ok),
	}},
	{"a condition failure when the condition held", []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 2, 3, exp("", 1), a2, cond),
	}},
	{"a create that failed on an absent row", []lin.Op{
		create(0, 0, 1, a1, cond),
	}},
	{"an update of an absent row ok", []lin.Op{
		update(1, 0, 1, exp("", 0), a1, ok),
	}},
	{"a delete of a deleted row ok", []lin.Op{
		create(0, 0, 1, a1, ok),
		del(1, 2, 3, "k", exp("", 1), ok),
		del(2, 4, 5, "k", exp("", 1), ok),
	}},
	{"a read of a deleted row", []lin.Op{
		create(0, 0, 1, a1, ok),
		del(1, 2, 3, "k", exp("", 1), ok),
		get(2, 4, 5, a1),
	}},
	{"not found for a row that exists", []lin.Op{
		create(0, 0, 1, a1, ok),
		getNone(1, 2, 3, "k"),
	}},
	{"new then old: reads going back in time", []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, 100, exp("", 1), a2, ok),
		get(2, 20, 30, a2),
		get(3, 40, 50, a1),
	}},
	{"new then old around an unknown write", []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, never, exp("", 1), a2, unknown),
		get(2, 20, 30, a2),
		get(3, 40, 50, a1),
	}},
	{"a consistent scan missing a row that existed throughout", []lin.Op{
		create(0, 0, 1, a1, ok),
		create(0, 2, 3, row("j", "", 1), ok),
		scan(1, 10, 20, true, row("j", "", 1)),
	}},
	{"a consistent scan returning an overwritten version", []lin.Op{
		create(0, 0, 1, a1, ok),
		update(0, 2, 3, exp("", 1), a2, ok),
		scan(1, 10, 20, true, a1),
	}},
	{"a consistent scan returning a deleted row", []lin.Op{
		create(0, 0, 1, a1, ok),
		del(0, 2, 3, "k", exp("", 1), ok),
		scan(1, 10, 20, true, a1),
	}},
	{"a malformed row where none exists", []lin.Op{
		{Client: 1, Call: 2, Return: 3, Input: lin.Input{Op: engine.OpListLeases, Consistent: true},
			Output: lin.Output{Outcome: ok, Malformed: []string{"k"}}},
	}},
}

func TestLinearizableHistories(t *testing.T) {
	for _, c := range goodHistories {
		t.Run(c.name, func(t *testing.T) {
			res, err := lin.Config{Timeout: 5 * time.Second, Initial: c.initial}.Check(c.h)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Ok || res.Unknown || len(res.Illegal) > 0 {
				t.Fatalf("flagged a linearizable history: %s", res.Info)
			}
		})
	}
}

func TestNonLinearizableHistories(t *testing.T) {
	for _, c := range badHistories {
		t.Run(c.name, func(t *testing.T) {
			// A second, healthy key must not be flagged with it (it is
			// created after every scan, which rightly do not return it).
			h := append(slices.Clone(c.h), create(9, 1000, 1001, row("other", "", 1), ok), get(9, 1002, 1003, row("other", "", 1)))
			res, err := lin.Check(h, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if res.Ok || res.Unknown {
				t.Fatalf("did not flag: %s", res.Info)
			}
			if !slices.Equal(res.Illegal, []string{"k"}) {
				t.Fatalf("illegal keys %v, want [k]", res.Illegal)
			}
			if !strings.HasPrefix(res.Info, "NOT linearizable") {
				t.Errorf("info %q", res.Info)
			}
			var b bytes.Buffer
			if err := lin.Visualize(&b, h, "k"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "<html") || !strings.Contains(b.String(), "lease key") {
				t.Errorf("visualization is not an HTML page naming the key (%d bytes)", b.Len())
			}
		})
	}
}

// Unknown writes get a return time after everything else whatever the
// history says: a real return time must not make them less permissive.
func TestUnknownReturnIgnored(t *testing.T) {
	h := []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, 11, exp("", 1), a2, unknown), // "returned" at 11
		get(0, 50, 60, a1),
		get(0, 70, 80, a2), // applied after its caller stopped waiting
	}
	res, err := lin.Check(h, 5*time.Second)
	if err != nil || !res.Ok {
		t.Fatalf("%v %s", err, res.Info)
	}
	if res.UnknownWrites != 1 || res.Ops != 4 || res.Keys != 1 {
		t.Errorf("counts: %+v", res)
	}
}

func TestTimeoutIsNotAPass(t *testing.T) {
	var h []lin.Op
	for i := range 200 {
		k := string(rune('a' + i%20))
		h = append(h, create(i, int64(i), int64(i)+1000, row(k, "", 1), unknown))
	}
	res, err := lin.Check(h, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ok || !res.Unknown || len(res.TimedOut) == 0 || !strings.HasPrefix(res.Info, "UNKNOWN") {
		t.Fatalf("a timed-out check passed: %+v", res)
	}
	res, err = lin.Check(h, 0)
	if err != nil || !res.Ok {
		t.Fatalf("without a time limit: %v %s", err, res.Info)
	}
}

func TestCounts(t *testing.T) {
	h := []lin.Op{
		create(0, 0, 1, a1, ok),
		create(0, 0, 1, row("j", "", 1), ok),
		scan(1, 2, 3, true, a1, row("j", "", 1)),              // 2 observations
		scan(1, 4, 5, false),                                  // skipped
		update(1, 6, 7, exp("", 1), a2, lin.OutcomeThrottled), // skipped
	}
	res, err := lin.Check(h, 0)
	if err != nil || !res.Ok {
		t.Fatal(err, res.Info)
	}
	if res.Ops != 4 || res.Keys != 2 || res.Skipped != 2 {
		t.Errorf("ops %d keys %d skipped %d, want 4 2 2", res.Ops, res.Keys, res.Skipped)
	}
}

func TestInvalidHistories(t *testing.T) {
	bad := map[string]lin.Op{
		"no kind":            {Call: 0, Return: 1, Output: lin.Output{Outcome: ok}},
		"stream call":        {Input: lin.Input{Op: engine.OpGetRecords}, Output: lin.Output{Outcome: ok}},
		"no key":             {Input: lin.Input{Op: engine.OpGetLease}, Output: lin.Output{Outcome: ok}},
		"no outcome":         {Input: lin.Input{Op: engine.OpGetLease, Key: "k"}},
		"read cond failed":   {Input: lin.Input{Op: engine.OpGetLease, Key: "k"}, Output: lin.Output{Outcome: cond}},
		"write not found":    del(0, 0, 1, "k", exp("", 1), lin.OutcomeNotFound),
		"return before call": get(0, 5, 4, a1),
		"known but never":    get(0, 5, never, a1),
		"row of another key": {Input: lin.Input{Op: engine.OpGetLease, Key: "j"}, Output: lin.Output{Outcome: ok, Row: a1}},
		"write key mismatch": {Input: lin.Input{Op: engine.OpUpdateLease, Key: "j", Row: a1}, Output: lin.Output{Outcome: ok}},
		"scan row no key":    scan(0, 0, 1, true, lin.Row{Owner: "x"}),
	}
	for name, op := range bad {
		if _, err := lin.Check([]lin.Op{create(0, 0, 1, a1, ok), op}, 0); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := (lin.Config{Initial: []lin.Row{a1, a1}}).Check(nil); err == nil {
		t.Error("repeated initial row: no error")
	}
}

func TestVisualizeUnknownKey(t *testing.T) {
	var b bytes.Buffer
	if err := lin.Visualize(&b, []lin.Op{create(0, 0, 1, a1, ok)}, "nope"); err == nil {
		t.Error("no error for a key without operations")
	}
	b.Reset()
	if err := lin.Visualize(&b, []lin.Op{create(0, 0, 1, a1, ok), get(1, 2, 3, a1)}, ""); err != nil || !strings.Contains(b.String(), "<html") {
		t.Errorf("whole history: %v", err)
	}
}

func TestWidenAndHiddenRetries(t *testing.T) {
	// Two processes whose clocks disagree by up to 5: the read seems to
	// start after the take returned, yet saw the old row.
	h := []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, 20, exp("", 1), a2, ok),
		get(2, 23, 30, a1),
	}
	if res, _ := lin.Check(h, 0); res.Ok {
		t.Fatal("the skewed history passed without widening")
	}
	if res, _ := lin.Check(lin.Widen(h, 5), 0); !res.Ok {
		t.Fatalf("widened: %s", res.Info)
	}
	// An SDK retry of an applied take comes back as a condition failure.
	h = []lin.Op{
		create(0, 0, 1, a1, ok),
		update(1, 10, 20, exp("", 1), a2, cond),
		get(2, 30, 40, a2),
	}
	if res, _ := lin.Check(h, 0); res.Ok {
		t.Fatal("passed without AssumeHiddenRetries")
	}
	if res, _ := lin.Check(lin.AssumeHiddenRetries(h), 0); !res.Ok {
		t.Fatalf("with AssumeHiddenRetries: %s", res.Info)
	}
}

// The porcupine model can be used directly.
func TestModelWithPorcupine(t *testing.T) {
	for _, c := range badHistories[:3] {
		ops, err := lin.Operations(c.h, nil)
		if err != nil {
			t.Fatal(err)
		}
		if porcupineOK(ops) {
			t.Errorf("%s: porcupine passed it", c.name)
		}
	}
	for _, c := range goodHistories {
		ops, err := lin.Operations(c.h, c.initial)
		if err != nil {
			t.Fatal(err)
		}
		if !porcupineOK(ops) {
			t.Errorf("%s: porcupine failed it", c.name)
		}
	}
}

func porcupineOK(ops []porcupine.Operation) bool { return porcupine.CheckOperations(lin.Model(), ops) }
