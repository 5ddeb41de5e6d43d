package sim

import (
	"testing"

	"github.com/shardlease/shardlease/sim/trace"
)

// traceRecord is a hand-made trace record.
type traceRecord struct {
	kind, key, reason, outcome string
	proc, worker               int32
	call                       uint64
}

func (r traceRecord) record(t *testing.T) *trace.Record {
	t.Helper()
	k, ok := trace.ParseKind(r.kind)
	if !ok {
		t.Fatalf("unknown kind %q", r.kind)
	}
	return &trace.Record{Kind: k, Key: r.key, Reason: r.reason, Outcome: r.outcome, Proc: r.proc, Worker: r.worker, Call: r.call}
}
