package trace

import (
	"bytes"
	"testing"

	"github.com/shardlease/shardlease/engine"
)

func sample() []Record {
	return []Record{
		{Seq: 1, T: 5, Kind: KindApply, Worker: 2, Proc: 3, Owner: "w2", Key: "s0", Counter: 4, Checkpoint: engine.Checkpoint{Sequence: "123", SubSequence: 2},
			Op: engine.OpUpdateLease, Reason: WriteCheckpoint, Outcome: OutcomeOK, ExpOwner: "w2", ExpCounter: 3, RowOwner: "w2", Unconditional: true, Sent: 2, Applied: 5},
		{Seq: 2, T: 6, Kind: Acting, Worker: -1, Proc: -1, Key: "s0", Reason: `quote " and \ back`},
		{Seq: 3, T: 7, Kind: KindShardCreated, Worker: -1, Proc: -1, Key: "s5", Parent: "s1", Parent2: "s2"},
	}
}

func TestJSONRoundTrip(t *testing.T) {
	recs := sample()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) {
		t.Fatalf("got %d records", len(got))
	}
	for i := range recs {
		if got[i] != recs[i] {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got[i], recs[i])
		}
	}
	if HashRecords(got) != HashRecords(recs) {
		t.Error("hash differs after round trip")
	}
}

func TestHashSensitive(t *testing.T) {
	a := sample()
	b := sample()
	b[1].Reason += "x"
	if HashRecords(a) == HashRecords(b) {
		t.Error("hash ignores a field change")
	}
	c := sample()
	c[0].Checkpoint.SubSequence = 0
	if HashRecords(a) == HashRecords(c) {
		t.Error("hash ignores the sub-sequence")
	}
}

func TestKindNames(t *testing.T) {
	for k := Kind(1); k <= CallSent; k++ {
		if got, ok := ParseKind(k.String()); !ok || got != k {
			t.Errorf("kind %d %q does not round trip", k, k.String())
		}
	}
	for k := KindSend; k <= KindPhase; k++ {
		if got, ok := ParseKind(k.String()); !ok || got != k {
			t.Errorf("kind %d %q does not round trip", k, k.String())
		}
	}
}
