package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardlease/shardlease/engine"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func wantLines(t *testing.T, got string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(got, l+"\n") {
			t.Errorf("scrape lacks %s", l)
		}
	}
}

// fakeStream answers ListShards with err, GetRecords with a page.
type fakeStream struct{ err error }

func (f fakeStream) DescribeStream(context.Context, string) (engine.StreamInfo, error) {
	return engine.StreamInfo{}, nil
}
func (f fakeStream) ListShards(context.Context, string) ([]engine.Shard, error) { return nil, f.err }
func (f fakeStream) GetShardIterator(context.Context, string, string, engine.Position) (string, error) {
	return "it", nil
}
func (f fakeStream) GetRecords(context.Context, string, int) (engine.RecordsPage, error) {
	return engine.RecordsPage{}, fmt.Errorf("get records: %w", engine.ErrExpiredIterator)
}

// malformedStore adds a malformed row to every listing.
type malformedStore struct{ engine.LeaseStore }

func (s malformedStore) ListLeases(ctx context.Context, c bool) (engine.Listing, error) {
	l, err := s.LeaseStore.ListLeases(ctx, c)
	l.Malformed = append(l.Malformed, engine.MalformedRow{Key: "x", Reason: "bad"}, engine.MalformedRow{Key: "y", Reason: "bad"})
	return l, err
}

type okProc struct{}

func (okProc) Initialize(context.Context, engine.InitInput) error { return nil }
func (okProc) ProcessRecords(context.Context, engine.RecordsInput) error {
	return nil
}
func (okProc) ShardEnded(context.Context, engine.ShardEndedInput) error { return nil }
func (okProc) ShutdownRequested(context.Context, engine.ShutdownInput) error {
	return nil
}
func (okProc) LeaseLost(context.Context, engine.LeaseLostInput) {}

func TestMetricsFromTraceCallsAndProcessors(t *testing.T) {
	m, err := New(Options{Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	tr := m.Tracer(nil)
	ref := engine.ShardRef{Stream: "s", Shard: "sh0"}
	tr(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: "sh0", Shard: ref, Reason: "unowned"})
	tr(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: "sh1", Shard: engine.ShardRef{Stream: "s", Shard: "sh1"}, Reason: "stolen"})
	tr(engine.TraceEvent{Kind: engine.TraceLeaseLost, Key: "sh1", Reason: "expired: no renewal applied within the lease duration"})
	tr(engine.TraceEvent{Kind: engine.TraceCheckpointWritten, Key: "sh0"})
	tr(engine.TraceEvent{Kind: engine.TraceCheckpointRejected, Key: "sh0"})
	tr(engine.TraceEvent{Kind: engine.TraceBatchFailed, Key: "sh0", Shard: ref, Count: 1})
	tr(engine.TraceEvent{Kind: engine.TraceBatchFailed, Key: "sh0", Shard: ref, Count: 2})

	// the store: a create, a renew named by the engine, a condition failure, a malformed scan
	st := m.Store(malformedStore{engine.NewMemStore()})
	ctx := context.Background()
	row := engine.Lease{Key: "sh0", Owner: "w1", Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
	if err := st.CreateLease(ctx, row); err != nil {
		t.Fatal(err)
	}
	next := row.Clone()
	next.Counter = 2
	tr(engine.TraceEvent{Kind: engine.TraceCallSent, Key: "sh0", Counter: 2, Reason: "checkpoint"})
	if err := st.UpdateLease(ctx, engine.ExpectOf(row), next); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateLease(ctx, engine.ExpectOf(row), next); !errors.Is(err, engine.ErrConditionFailed) {
		t.Fatal(err)
	}
	if _, err := st.ListLeases(ctx, true); err != nil {
		t.Fatal(err)
	}
	// the stream
	sm := m.Stream(fakeStream{err: fmt.Errorf("list: %w", engine.ErrThrottled)})
	_, _ = sm.ListShards(ctx, "s")
	_, _ = sm.GetShardIterator(ctx, "s", "sh0", engine.Position{Type: engine.IterLatest})
	_, _ = sm.GetRecords(ctx, "it", 10)
	// a processed batch resets the failures in a row
	before := scrape(t, m)
	wantLines(t, before, `shardlease_batch_failures_in_a_row{owner="w1",shard="sh0",stream="s"} 2`)
	p := m.Processors(func(engine.ShardRef) engine.Processor { return okProc{} })(ref)
	if err := p.ProcessRecords(ctx, engine.RecordsInput{Shard: ref, Records: make([]engine.Record, 7), MillisBehind: 1500}); err != nil {
		t.Fatal(err)
	}
	tr(engine.TraceEvent{Kind: engine.TraceBatchSkipped, Key: "sh0", Shard: ref, Count: 3, Reason: "handed-off"})

	wantLines(t, scrape(t, m),
		`shardlease_leases_held{owner="w1"} 1`,
		`shardlease_leases_taken_total{owner="w1",reason="stolen"} 1`,
		`shardlease_leases_stolen_total{owner="w1"} 1`,
		`shardlease_leases_lost_total{cause="expired",owner="w1"} 1`,
		`shardlease_checkpoints_total{owner="w1",result="written"} 1`,
		`shardlease_checkpoints_total{owner="w1",result="rejected"} 1`,
		`shardlease_records_processed_total{owner="w1"} 7`,
		`shardlease_batches_processed_total{owner="w1"} 1`,
		`shardlease_millis_behind_latest{owner="w1",shard="sh0",stream="s"} 1500`,
		`shardlease_store_call_duration_seconds_count{op="CreateLease",outcome="ok",owner="w1",write="create"} 1`,
		`shardlease_store_call_duration_seconds_count{op="UpdateLease",outcome="ok",owner="w1",write="checkpoint"} 1`,
		`shardlease_store_call_duration_seconds_count{op="UpdateLease",outcome="condition-failed",owner="w1",write="renew"} 1`,
		`shardlease_store_call_duration_seconds_count{op="ListLeases",outcome="ok",owner="w1",write=""} 1`,
		`shardlease_malformed_rows{owner="w1"} 2`,
		`shardlease_stream_call_duration_seconds_count{op="ListShards",outcome="throttled",owner="w1"} 1`,
		`shardlease_stream_call_duration_seconds_count{op="GetShardIterator",outcome="ok",owner="w1"} 1`,
		`shardlease_stream_call_duration_seconds_count{op="GetRecords",outcome="expired-iterator",owner="w1"} 1`,
		`shardlease_batches_failed_total{owner="w1"} 3`,
		`shardlease_batches_skipped_total{decision="handed-off",owner="w1"} 1`,
		`shardlease_batch_failures_in_a_row{owner="w1",shard="sh0",stream="s"} 0`,
		`shardlease_renew_duration_seconds_count{owner="w1"} 1`,
	)
	if !strings.Contains(scrape(t, m), "go_goroutines") {
		t.Error("no Go collector on the metrics' own registry")
	}
}

// TestMetricsOnTheCallersRegistry: with a Registerer given, the metrics go
// there, twice is an error, and there is no owner label when none is set.
func TestMetricsOnTheCallersRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	m.Tracer(nil)(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: "k", Reason: "unowned"})
	got := scrape(t, m)
	wantLines(t, got, `shardlease_leases_held 1`)
	if strings.Contains(got, "go_goroutines") {
		t.Error("Go collector registered on the caller's registry")
	}
	if _, err := New(Options{Registerer: reg}); err == nil {
		t.Error("registering twice on one registry succeeded")
	}
}

func TestOutcome(t *testing.T) {
	for err, want := range map[error]string{
		nil: "ok", fmt.Errorf("x: %w", engine.ErrConditionFailed): "condition-failed",
		fmt.Errorf("x: %w", context.DeadlineExceeded): "timeout", errors.New("boom"): "error",
		fmt.Errorf("x: %w", engine.ErrNotFound): "not-found",
	} {
		if got := Outcome(err); got != want {
			t.Errorf("Outcome(%v) = %s, want %s", err, got, want)
		}
	}
}

type checkingStore struct {
	engine.LeaseStore
	checked bool
}

func (c *checkingStore) CheckTable(context.Context) error { c.checked = true; return nil }

// TestStoreKeepsTheTableCheck: the wrapper passes the table check and the
// pending index of the store it wraps through.
func TestStoreKeepsTheTableCheck(t *testing.T) {
	m, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	inner := &checkingStore{LeaseStore: engine.NewMemStore()}
	tc, ok := m.Store(inner).(engine.TableChecker)
	if !ok {
		t.Fatal("the wrapper of a TableChecker is not one")
	}
	if err := tc.CheckTable(context.Background()); err != nil || !inner.checked {
		t.Fatalf("CheckTable: %v, reached the store: %v", err, inner.checked)
	}
	// The wrapper of a store without a check checks nothing (and fails
	// nothing); its pending index is the store's.
	if err := m.Store(engine.NewMemStore()).(engine.TableChecker).CheckTable(context.Background()); err != nil {
		t.Errorf("the wrapper of a MemStore failed a table check: %v", err)
	}
	if _, err := m.Store(engine.NewMemStore()).(engine.PendingIndex).ListPending(context.Background(), "w"); err != nil {
		t.Errorf("the wrapper of a MemStore lost its pending index: %v", err)
	}
	if _, err := m.Store(noIndexStore{}).(engine.PendingIndex).ListPending(context.Background(), "w"); !errors.Is(err, engine.ErrNoIndex) {
		t.Errorf("the wrapper of a store without an index: %v, want ErrNoIndex", err)
	}
}

// noIndexStore is a store without a pending index.
type noIndexStore struct{ engine.LeaseStore }
