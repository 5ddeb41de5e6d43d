package trace

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/shardlease/shardlease/engine"
)

func sample() []Record {
	return []Record{
		{Seq: 1, T: 5, Kind: KindApply, Worker: 2, Proc: 3, Owner: "w2", Key: "s0", Counter: 4, Checkpoint: engine.Checkpoint{Sequence: "123", SubSequence: 2},
			Op: engine.OpUpdateLease, Reason: WriteCheckpoint, Outcome: OutcomeOK, ExpOwner: "w2", ExpCounter: 3, RowOwner: "w2", Unconditional: true, Sent: 2, Applied: 5},
		{Seq: 2, T: 6, Kind: Acting, Worker: -1, Proc: -1, Key: "s0", Reason: `quote " and \ back`},
		{Seq: 3, T: 7, Kind: KindShardCreated, Worker: -1, Proc: -1, Key: "s5", Parent: "s1", Parent2: "s2"},
		{Seq: 4, T: 8, Kind: KindReceived, Worker: 1, Proc: 2, Key: "s0", First: "10", FirstSub: 3, Last: "12", LastSub: 1, Count: 5},
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
	// every field, changed alone, changes the hash
	base := HashRecords(a)
	for i := range a {
		for f := 0; f < reflect.TypeOf(Record{}).NumField(); f++ {
			m := sample()
			v := reflect.ValueOf(&m[i]).Elem().Field(f)
			name := reflect.TypeOf(Record{}).Field(f).Name
			switch v.Kind() {
			case reflect.String:
				v.SetString(v.String() + "z")
			case reflect.Int64, reflect.Int32, reflect.Int:
				v.SetInt(v.Int() + 1)
			case reflect.Uint64, reflect.Uint8:
				v.SetUint(v.Uint() + 1)
			case reflect.Bool:
				v.SetBool(!v.Bool())
			case reflect.Struct: // the checkpoint
				v.Field(0).SetString(v.Field(0).String() + "9")
			default:
				t.Fatalf("field %s of kind %s: extend the test", name, v.Kind())
			}
			if HashRecords(m) == base {
				t.Errorf("record %d: changing %s leaves the hash unchanged", i, name)
			}
		}
	}
	// bytes moved from one string to the next, or across the 8-byte
	// words, change it too
	d, e := sample(), sample()
	d[1].Owner, d[1].Key = "abcdefgh", "s0"
	e[1].Owner, e[1].Key = "abcdefghs", "0"
	if HashRecords(d) == HashRecords(e) {
		t.Error("hash does not separate adjacent strings")
	}
	// a pure function of the records
	if HashRecords(sample()) != base {
		t.Error("hash differs for equal records")
	}
}

func TestKindNames(t *testing.T) {
	for k := Kind(1); k <= CallSent; k++ {
		if got, ok := ParseKind(k.String()); !ok || got != k {
			t.Errorf("kind %d %q does not round trip", k, k.String())
		}
	}
	for k := KindSend; k <= KindCallEnd; k++ {
		if got, ok := ParseKind(k.String()); !ok || got != k {
			t.Errorf("kind %d %q does not round trip", k, k.String())
		}
	}
}

// BenchmarkHashRecord: hashing one record of the kinds a run has most of
// (a reply, a batch received with two 56-digit sequence numbers).
func BenchmarkHashRecord(b *testing.B) {
	seq := "49590338271490256608559692538361571095921575989136588898"
	recs := []Record{
		{Seq: 1, T: 5, Kind: KindReply, Worker: 2, Proc: 3, Owner: "w2", Key: "shardId-000000000007", Op: engine.OpGetRecords, Outcome: OutcomeOK, Sent: 2, Applied: 4, Mono: 77, Wall: 1 << 60},
		{Seq: 2, T: 6, Kind: KindReceived, Worker: 2, Proc: 3, Owner: "w2", Key: "shardId-000000000007", First: seq, Last: seq, Count: 1, Mono: 78, Wall: 1 << 60},
	}
	h := NewHash()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Add(&recs[i&1])
	}
}
