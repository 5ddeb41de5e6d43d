package history

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// The rows of a consistent scan survive the JSON Lines round trip.
func TestScanRowsRoundTrip(t *testing.T) {
	l := engine.Listing{
		Leases: []engine.Lease{
			{Key: "shardId-0", Owner: `host-"a"|b`, Counter: 7, Checkpoint: engine.Checkpoint{Sequence: "4960", SubSequence: 2}},
			{Key: "shardId-1", Counter: 1, Checkpoint: engine.Checkpoint{Sequence: "TRIM_HORIZON"}},
		},
		Malformed: []engine.MalformedRow{{Key: "shardId-2"}},
	}
	rec := trace.Record{Kind: trace.KindReply, Op: engine.OpListLeases, Outcome: trace.OutcomeOK, Worker: -1, Proc: 1,
		Count: len(l.Leases), Reason: ScanConsistent, Previous: EncodeScanRows(l)}
	var buf bytes.Buffer
	w := trace.NewWriter(&buf)
	if err := w.Write(&rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	recs, err := trace.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeScanRows(&recs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !s.Known || !s.Consistent || !reflect.DeepEqual(s.Leases, l.Leases) || !reflect.DeepEqual(s.Malformed, []string{"shardId-2"}) {
		t.Fatalf("decoded %+v", s)
	}
	rec.Reason, rec.Previous = ScanEventual, ""
	if s, err := DecodeScanRows(&rec); err != nil || s.Known || s.Consistent {
		t.Fatalf("eventual scan: %+v %v", s, err)
	}
}
