package check

import (
	"reflect"
	"testing"
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// The hand-made histories of the checkers' tests go through both the
// batch functions and an Online with Forget, fed record by record: the
// two must report the same.

func onlineOf(h History, o Options) (Report, Figures) {
	o.Forget = true
	c := NewOnline(o)
	for i := range h.Records {
		c.Observe(&h.Records[i])
	}
	return c.Finish(h.Final, h.FinalKnown)
}

func agree(t *testing.T, inv string, h History, o Options, batch []Violation) {
	t.Helper()
	rep, _ := onlineOf(h, o)
	var got []Violation
	for _, v := range rep.Violations {
		if v.Invariant == inv {
			got = append(got, v)
		}
	}
	if !reflect.DeepEqual(got, batch) && !(len(got) == 0 && len(batch) == 0) {
		t.Errorf("%s online with Forget: %v; batch: %v", inv, got, batch)
	}
}

func checkS1T(t *testing.T, recs []trace.Record, o Options) []Violation {
	t.Helper()
	vs := CheckS1(recs, o)
	agree(t, S1, History{Records: recs}, o, vs)
	return vs
}

func checkS2T(t *testing.T, recs []trace.Record, o Options) []Violation {
	t.Helper()
	vs := CheckS2(recs, o)
	agree(t, S2, History{Records: recs}, o, vs)
	return vs
}

func checkS3T(t *testing.T, h History, o Options) []Violation {
	t.Helper()
	vs := CheckS3(h, o)
	agree(t, S3, h, o, vs)
	return vs
}

func checkS4T(t *testing.T, h History, o Options) ([]Violation, int) {
	t.Helper()
	vs, lost := CheckS4(h, o)
	agree(t, S4, h, o, vs)
	if rep, _ := onlineOf(h, o); rep.LostToRetention != lost {
		t.Errorf("lost to retention online %d, batch %d", rep.LostToRetention, lost)
	}
	return vs, lost
}

func checkS5T(t *testing.T, recs []trace.Record, o Options) []Violation {
	t.Helper()
	vs := CheckS5(recs, o)
	agree(t, S5, History{Records: recs}, o, vs)
	return vs
}

func checkS6T(t *testing.T, recs []trace.Record, o Options) []Violation {
	t.Helper()
	vs := CheckS6(recs, o)
	agree(t, S6, History{Records: recs}, o, vs)
	return vs
}

func checkL1T(t *testing.T, h History, o Options) []Violation {
	t.Helper()
	vs := CheckL1(h, o)
	agree(t, L1, h, o, vs)
	return vs
}

func measureT(t *testing.T, recs []trace.Record, end time.Duration) Figures {
	t.Helper()
	f := Measure(recs, end)
	if _, g := onlineOf(History{Records: recs}, Options{End: end}); !reflect.DeepEqual(g, f) {
		t.Errorf("figures online with Forget %+v, batch %+v", g, f)
	}
	return f
}
