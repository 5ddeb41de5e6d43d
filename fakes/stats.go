package fakes

import (
	"errors"

	"github.com/shardlease/shardlease/engine"
)

// OpStats counts the calls of one operation of a fake.
type OpStats struct {
	// Calls counts every call, successful or not.
	Calls int64
	// Injected counts calls failed by an injected fault (Faults).
	Injected int64
	// ConditionFailed counts calls that failed with
	// engine.ErrConditionFailed on their own (not injected).
	ConditionFailed int64
	// Failed counts calls that failed on their own with any other error:
	// not found, expired iterator, malformed row, invalid argument.
	Failed int64
}

func (s *OpStats) add(o OpStats) {
	s.Calls += o.Calls
	s.Injected += o.Injected
	s.ConditionFailed += o.ConditionFailed
	s.Failed += o.Failed
}

// Stats counts the calls of a fake per operation. It is a value: a copy
// taken by Stats() does not change afterwards.
type Stats struct {
	ops [numOps]OpStats
}

// Of returns the counts of op.
func (s Stats) Of(op engine.Op) OpStats {
	if int(op) >= numOps {
		return OpStats{}
	}
	return s.ops[op]
}

// Total returns the counts summed over every op.
func (s Stats) Total() OpStats {
	var t OpStats
	for i := range s.ops {
		t.add(s.ops[i])
	}
	return t
}

// count records one call of op that ended with err; injected tells whether
// an injected fault decided err.
func (s *Stats) count(op engine.Op, err error, injected bool) {
	o := &s.ops[opIndex(op)]
	o.Calls++
	switch {
	case err == nil:
	case injected:
		o.Injected++
	case errors.Is(err, engine.ErrConditionFailed):
		o.ConditionFailed++
	default:
		o.Failed++
	}
}
