package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// fixedClock returns times 1 ms apart from a fixed instant.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func newRecorder(t *testing.T, owner string, pid int32, clk *fixedClock) *Recorder {
	t.Helper()
	r, err := Create(t.TempDir(), Options{Role: "worker", Owner: owner, Proc: pid, Worker: 0, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func readBack(t *testing.T, r *Recorder) []trace.Record {
	t.Helper()
	f, err := readFile(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	return f.Records
}

type obs struct {
	mu    sync.Mutex
	calls []string
	recs  int
}

func (o *obs) Trace(engine.TraceEvent) {}
func (o *obs) StoreCall(op engine.Op, class string, d time.Duration, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, fmt.Sprintf("%s/%s/%s", op, class, outcome))
}
func (o *obs) Processed(_ engine.ShardRef, n int, _ int64) { o.recs += n }

func TestTapStoreRecordsWritesWithTheirClass(t *testing.T) {
	clk := &fixedClock{t: Epoch.Add(time.Hour)}
	rec := newRecorder(t, "w1", 42, clk)
	o := &obs{}
	tap := NewTap(rec, o)
	tap.now = clk.now
	store := tap.Store(engine.NewMemStore())
	tr := tap.Tracer()
	ctx := context.Background()

	row := engine.Lease{Key: "s0", Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
	if err := store.CreateLease(ctx, row); err != nil {
		t.Fatal(err)
	}
	// the engine names the write before the driver makes the call
	next := row.Clone()
	next.Owner, next.Counter = "w1", 2
	tr(engine.TraceEvent{Kind: engine.TraceCallSent, Key: "s0", Counter: 2, Reason: "take"})
	if err := store.UpdateLease(ctx, engine.ExpectOf(row), next); err != nil {
		t.Fatal(err)
	}
	// a stale write: condition failed
	stale := next.Clone()
	stale.Counter = 3
	tr(engine.TraceEvent{Kind: engine.TraceCallSent, Key: "s0", Counter: 3, Reason: "renew"})
	err := store.UpdateLease(ctx, engine.Expect{Owner: "w1", Counter: 9}, stale)
	if !errors.Is(err, engine.ErrConditionFailed) {
		t.Fatalf("stale update: %v", err)
	}
	if _, err := store.GetLease(ctx, "s0"); err != nil {
		t.Fatal(err)
	}

	recs := readBack(t, rec)
	var got []string
	for _, r := range recs {
		if r.Kind == trace.KindSend || r.Kind == trace.KindReply {
			got = append(got, fmt.Sprintf("%s %s %s %s c=%d exp=%s/%d", r.Kind, r.Op, r.Reason, r.Outcome, r.Counter, r.ExpOwner, r.ExpCounter))
		}
		if r.Proc != 42 || r.Owner != "w1" {
			t.Errorf("record %v: want proc 42 owner w1", r.String())
		}
	}
	want := []string{
		"send CreateLease create  c=1 exp=/0",
		"reply CreateLease create ok c=0 exp=/0",
		"send UpdateLease take  c=2 exp=/1",
		"reply UpdateLease take ok c=0 exp=/0",
		"send UpdateLease renew  c=3 exp=w1/9",
		"reply UpdateLease renew condition-failed c=0 exp=/0",
		"reply GetLease  ok c=2 exp=/0",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records:\n%q\nwant\n%q", got, want)
	}
	wantCalls := []string{"CreateLease/create/ok", "UpdateLease/take/ok", "UpdateLease/renew/condition-failed", "GetLease//ok"}
	if fmt.Sprint(o.calls) != fmt.Sprint(wantCalls) {
		t.Fatalf("observer got %v, want %v", o.calls, wantCalls)
	}
}

type fakeProc struct {
	fail bool
	cp   engine.Checkpoint
}

func (p *fakeProc) Initialize(context.Context, engine.InitInput) error { return nil }
func (p *fakeProc) ProcessRecords(ctx context.Context, in engine.RecordsInput) error {
	if p.fail {
		p.fail = false
		return errors.New("boom")
	}
	return in.Checkpointer.Checkpoint(ctx, p.cp)
}
func (p *fakeProc) ShardEnded(context.Context, engine.ShardEndedInput) error      { return nil }
func (p *fakeProc) ShutdownRequested(context.Context, engine.ShutdownInput) error { return nil }
func (p *fakeProc) LeaseLost(context.Context, engine.LeaseLostInput)              {}

type fakeCP struct{ err error }

func (c fakeCP) Checkpoint(context.Context, engine.Checkpoint) error { return c.err }

func TestTapProcessorsRecordWhatTheProcessorSees(t *testing.T) {
	clk := &fixedClock{t: Epoch.Add(time.Hour)}
	rec := newRecorder(t, "w1", 7, clk)
	o := &obs{}
	tap := NewTap(rec, o)
	fp := &fakeProc{fail: true, cp: engine.SequenceCheckpoint("12")}
	p := tap.Processors(func(engine.ShardRef) engine.Processor { return fp })(engine.ShardRef{Stream: "s", Shard: "sh"})
	ctx := context.Background()
	_ = p.Initialize(ctx, engine.InitInput{Key: "sh", Start: engine.SentinelCheckpoint(engine.TrimHorizon)})
	batch := engine.RecordsInput{Records: []engine.Record{{Sequence: "11"}, {Sequence: "12"}}, Checkpointer: fakeCP{}}
	if err := p.ProcessRecords(ctx, batch); err == nil {
		t.Fatal("the first batch should fail")
	}
	if err := p.ProcessRecords(ctx, batch); err != nil {
		t.Fatal(err)
	}
	batch.Checkpointer = fakeCP{err: fmt.Errorf("x: %w", engine.ErrLeaseLost)}
	_ = p.ProcessRecords(ctx, batch)
	p.LeaseLost(ctx, engine.LeaseLostInput{})

	var got []string
	for _, r := range readBack(t, rec) {
		got = append(got, fmt.Sprintf("%s %s %s..%s %s %s", r.Kind, r.Key, r.First, r.Last, r.Reason, r.Outcome))
	}
	want := []string{
		"initialized sh ..  ",
		"received sh 11..12  ", "done sh 11..12 failed ",
		"received sh 11..12  ", "checkpoint-ack sh ..  ok", "done sh .. ok ",
		"received sh 11..12  ", "checkpoint-ack sh ..  lease-lost", "done sh 11..12 failed ",
		"notice sh .. LeaseLost ",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records:\n%q\nwant\n%q", got, want)
	}
	if o.recs != 2 {
		t.Fatalf("observer counted %d records processed, want 2", o.recs)
	}
}

func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, trace.OutcomeOK},
		{fmt.Errorf("a: %w", engine.ErrConditionFailed), trace.OutcomeCondition},
		{fmt.Errorf("a: %w", engine.ErrThrottled), trace.OutcomeThrottled},
		{fmt.Errorf("a: %w", engine.ErrNotFound), trace.OutcomeNotFound},
		{fmt.Errorf("a: %w", context.DeadlineExceeded), trace.OutcomeTimeout},
		{errors.New("connection refused"), trace.OutcomeError},
	} {
		if got := Outcome(c.err); got != c.want {
			t.Errorf("Outcome(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

func TestReadDirsDropsAPartialLastLine(t *testing.T) {
	dir := t.TempDir()
	rec := trace.Record{T: 5, Kind: trace.KindPut, Key: "s", First: "1", Worker: -1, Proc: 3}
	line := string(trace.AppendJSON(nil, &rec))
	if err := os.WriteFile(filepath.Join(dir, "p.jsonl"), []byte(line+"\n"+line[:10]), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := ReadDirs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || len(files[0].Records) != 1 {
		t.Fatalf("got %+v", files)
	}
}

// ---- Merge ----

type hb struct {
	recs []trace.Record
}

// add appends a raw record at ms milliseconds.
func (b *hb) add(ms float64, k trace.Kind, owner string, pid int32, key string, f func(r *trace.Record)) {
	r := trace.Record{T: time.Duration(ms * float64(time.Millisecond)), Kind: k, Owner: owner, Proc: pid, Worker: -1, Key: key}
	if f != nil {
		f(&r)
	}
	b.recs = append(b.recs, r)
}

func write(call uint64, op engine.Op, class, expOwner string, expCounter int64, rowOwner string, counter int64, cp string) func(r *trace.Record) {
	return func(r *trace.Record) {
		r.Call, r.Op, r.Reason = call, op, class
		r.ExpOwner, r.ExpCounter, r.RowOwner, r.Counter = expOwner, expCounter, rowOwner, counter
		r.Checkpoint = engine.Checkpoint{Sequence: cp}
	}
}

func reply(call uint64, op engine.Op, outcome string) func(r *trace.Record) {
	return func(r *trace.Record) { r.Call, r.Op, r.Outcome = call, op, outcome }
}

func applies(m Merged) []string {
	var out []string
	for _, r := range m.Records {
		if r.Kind == trace.KindApply {
			out = append(out, fmt.Sprintf("%s#%d %s %s/%d->%s/%d", r.Owner, r.Proc, r.Reason, r.ExpOwner, r.ExpCounter, r.RowOwner, r.Counter))
		}
	}
	return out
}

func TestMergeDerivesAppliesFromOutcomesAndWitnesses(t *testing.T) {
	var a, b hb
	a.add(0, trace.KindProcStart, "w1", 100, "", nil)
	b.add(1, trace.KindProcStart, "w2", 200, "", nil)
	// w1 takes s0: acknowledged
	a.add(10, trace.KindSend, "w1", 100, "s0", write(1, engine.OpUpdateLease, "take", "", 1, "w1", 2, "TRIM_HORIZON"))
	a.add(12, trace.KindReply, "w1", 100, "s0", reply(1, engine.OpUpdateLease, trace.OutcomeOK))
	// a renew that timed out but applied: w2's later take expects its version
	a.add(20, trace.KindSend, "w1", 100, "s0", write(2, engine.OpUpdateLease, "renew", "w1", 2, "w1", 3, "TRIM_HORIZON"))
	a.add(30, trace.KindReply, "w1", 100, "s0", reply(2, engine.OpUpdateLease, trace.OutcomeTimeout))
	// a throttled renew never applied
	a.add(31, trace.KindSend, "w1", 100, "s0", write(3, engine.OpUpdateLease, "renew", "w1", 3, "w1", 4, "TRIM_HORIZON"))
	a.add(32, trace.KindReply, "w1", 100, "s0", reply(3, engine.OpUpdateLease, trace.OutcomeThrottled))
	// a renew whose reply never came (the process died), not witnessed
	a.add(33, trace.KindSend, "w1", 100, "s0", write(4, engine.OpUpdateLease, "renew", "w1", 3, "w1", 4, "TRIM_HORIZON"))
	b.add(40, trace.KindSend, "w2", 200, "s0", write(1, engine.OpUpdateLease, "take", "w1", 3, "w2", 4, "TRIM_HORIZON"))
	b.add(41, trace.KindReply, "w2", 200, "s0", reply(1, engine.OpUpdateLease, trace.OutcomeOK))
	// an SDK retry of an applied checkpoint: condition failed, the
	// writer's re-read resolved it as applied
	b.add(50, trace.KindSend, "w2", 200, "s0", write(2, engine.OpUpdateLease, "checkpoint", "w2", 4, "w2", 5, "17"))
	b.add(52, trace.KindReply, "w2", 200, "s0", reply(2, engine.OpUpdateLease, trace.OutcomeCondition))
	b.add(53, trace.Resolved, "w2", 200, "s0", func(r *trace.Record) { r.Counter, r.Reason = 5, "checkpoint applied" })
	// a renew resolved "not applied" (the suffix must not read as applied)
	b.add(60, trace.KindSend, "w2", 200, "s0", write(3, engine.OpUpdateLease, "renew", "w2", 5, "w2", 6, "17"))
	b.add(61, trace.KindReply, "w2", 200, "s0", reply(3, engine.OpUpdateLease, trace.OutcomeTimeout))
	b.add(62, trace.Resolved, "w2", 200, "s0", func(r *trace.Record) { r.Counter, r.Reason = 6, "renew not applied" })
	// two workers delete the finished row: one acknowledged, the other
	// saw its condition fail and traced the delete after re-reading
	// nothing; only one delete applied
	b.add(64, trace.KindSend, "w2", 200, "s9", write(4, engine.OpDeleteLease, "delete", "", 8, "", 0, ""))
	b.add(65, trace.KindReply, "w2", 200, "s9", reply(4, engine.OpDeleteLease, trace.OutcomeOK))
	a.add(64.5, trace.KindSend, "w1", 100, "s9", write(5, engine.OpDeleteLease, "delete", "", 8, "", 0, ""))
	a.add(66, trace.KindReply, "w1", 100, "s9", reply(5, engine.OpDeleteLease, trace.OutcomeCondition))
	a.add(67, trace.LeaseDeleted, "w1", 100, "s9", nil)
	b.add(70, trace.KindProcStop, "w2", 200, "", func(r *trace.Record) { r.Reason = "exit" })

	m := Merge([]File{{Records: a.recs}, {Records: b.recs}}, MergeOptions{})
	want := []string{"w1#0 take /1->w1/2", "w1#0 renew w1/2->w1/3", "w2#1 take w1/3->w2/4", "w2#1 checkpoint w2/4->w2/5", "w2#1 delete /8->/0"}
	if got := applies(m); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("applies:\n%q\nwant\n%q", got, want)
	}
	if m.Writes.Sent != 9 || m.Writes.Acknowledged != 3 || m.Writes.Inferred != 2 || m.Writes.NotApplied != 4 {
		t.Fatalf("write counts %+v", m.Writes)
	}
	// w1 never said it stopped: it vanished after its last record
	if len(m.Procs) != 2 || m.Procs[0].StopReason != "vanished" || m.Procs[1].StopReason != "exit" {
		t.Fatalf("procs %+v", m.Procs)
	}
	if m.Records[0].T != 0 || m.Records[0].Seq != 1 {
		t.Fatalf("times not rebased: first record %v", m.Records[0].String())
	}
}

func TestMergeOrdersAppliesByVersionAndNumbersIncarnations(t *testing.T) {
	var a, b hb
	// w1's clock runs 5 ms ahead of w2's: its take of w2's version looks
	// sent before w2's write that produced that version
	b.add(0, trace.KindProcStart, "w2", 200, "", nil)
	b.add(10, trace.KindSend, "w2", 200, "s0", write(1, engine.OpUpdateLease, "release", "w2", 4, "", 5, "9"))
	b.add(11, trace.KindReply, "w2", 200, "s0", reply(1, engine.OpUpdateLease, trace.OutcomeOK))
	a.add(1, trace.KindProcStart, "w1", 100, "", nil)
	a.add(8, trace.KindSend, "w1", 100, "s0", write(1, engine.OpUpdateLease, "take", "", 5, "w1", 6, "9"))
	a.add(9, trace.KindReply, "w1", 100, "s0", reply(1, engine.OpUpdateLease, trace.OutcomeOK))
	// w1 restarts under the same owner id and the same pid (reuse)
	a.add(20, trace.KindProcStop, "w1", 100, "", func(r *trace.Record) { r.Reason = "crash" })
	a.add(21, trace.KindProcStart, "w1", 100, "", nil)
	a.add(22, trace.KindSend, "w1", 100, "s0", write(1, engine.OpUpdateLease, "take", "w1", 6, "w1", 7, "9"))
	a.add(23, trace.KindReply, "w1", 100, "s0", reply(1, engine.OpUpdateLease, trace.OutcomeOK))

	m := Merge([]File{{Records: a.recs}, {Records: b.recs}}, MergeOptions{})
	want := []string{"w2#0 release w2/4->/5", "w1#1 take /5->w1/6", "w1#2 take w1/6->w1/7"}
	if got := applies(m); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("applies:\n%q\nwant\n%q", got, want)
	}
	if m.Writes.Reordered != 1 {
		t.Fatalf("reordered %d, want 1", m.Writes.Reordered)
	}
	if len(m.Procs) != 3 {
		t.Fatalf("want 3 incarnations, got %+v", m.Procs)
	}
}

func TestMergePutsShardParentageFirst(t *testing.T) {
	var a hb
	a.add(5, trace.KindPut, "producer", 9, "s1", func(r *trace.Record) { r.First = "1" })
	m := Merge([]File{{Records: a.recs}}, MergeOptions{Shards: []engine.Shard{{ID: "s1"}, {ID: "s2", Parent: "s1"}}})
	if m.Records[0].Kind != trace.KindShardCreated || m.Records[1].Parent != "s1" || m.Records[2].Kind != trace.KindPut {
		t.Fatalf("records: %v", m.Records)
	}
}

func TestConfigString(t *testing.T) {
	s := ConfigString("role", "worker", "lease", 3*time.Second)
	m := ParseConfig(s)
	if m["role"] != "worker" || ConfigDuration(m, "lease", 0) != 3*time.Second || ConfigDuration(m, "renew", time.Second) != time.Second {
		t.Fatalf("%q -> %v", s, m)
	}
	if ConfigInt(map[string]string{"n": "4"}, "n", 0) != 4 {
		t.Fatal("ConfigInt")
	}
}

// checkingStore is a store with a table check that fails.
type checkingStore struct{ engine.LeaseStore }

func (checkingStore) CheckTable(context.Context) error { return engine.ErrTableSchema }

// The tap passes the table check of the store it wraps through, so that
// live run's Consumer runs it.
func TestTapPassesTheTableCheckThrough(t *testing.T) {
	s := NewTap(nil, nil).Store(checkingStore{engine.NewMemStore()})
	tc, ok := s.(engine.TableChecker)
	if !ok || !errors.Is(tc.CheckTable(context.Background()), engine.ErrTableSchema) {
		t.Fatalf("the tapped store's table check was not passed through (implements: %v)", ok)
	}
}
