package sim

import (
	"strconv"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// The stream-identity stories: the table must never be written on behalf
// of a stream it does not serve.
const (
	// ActForeignApp starts a worker of another application, whose stream
	// (otherStream, Value shards, 2 if 0) is not the table's: a typo in a
	// stream name, or two applications that picked the same table name. It
	// must stop at start without writing; it is never restarted.
	ActForeignApp ActionKind = "foreign-app"
	// ActRecreateStream deletes the stream and creates it again under its
	// name with Value shards (the old count less one if 0): its shard ids
	// start again at 0. The records of the old stream that were not read
	// are gone (recorded as trimmed) and producers stop. Every worker must
	// stop at its next shard sync without ending or deleting a row.
	ActRecreateStream ActionKind = "recreate-stream"
)

// otherStream is the stream of ActForeignApp's application.
const otherStream = "sim-other-app"

// configure adjusts a process's engine configuration to its slot.
func (s *simulator) configure(sl *slot, cfg *engine.Config) {
	switch {
	case sl.mode != "":
		cfg.Assignment = sl.mode
	case cfg.Assignment == "":
		cfg.Assignment = s.w.slotMode(sl.idx)
	}
	if cfg.Assignment != engine.AssignmentScan && cfg.Renewal == "" {
		// (an empty Assignment is the engine's default, the assigner)
		cfg.Renewal = s.w.slotRenewal(sl.idx)
	}
	if sl.consumes != "" {
		cfg.Streams[0].Name = sl.consumes
		cfg.LegacyStream = ""
	}
}

func (s *simulator) foreignApp(a Action) {
	n := int(a.Value)
	if n <= 0 {
		n = 2
	}
	if _, err := s.st.Shards(otherStream); err != nil {
		if err := s.st.CreateStream(otherStream, n); err != nil {
			panic("sim: " + err.Error())
		}
	}
	s.fault(a.String(), "")
	sl := s.addSlot(s.fs.rng)
	sl.consumes, sl.desired = otherStream, false
	sl.owner = "other-app-" + strconv.Itoa(sl.idx)
	s.startProc(sl)
}

func (s *simulator) recreateStream(a Action) {
	shards, err := s.st.Shards(streamName)
	if err != nil {
		panic("sim: " + err.Error())
	}
	s.fault(a.String(), "")
	open := 0
	for _, sh := range shards {
		if !sh.Closed() {
			open++
		}
		if first, last, n, _ := s.st.RetainedRange(streamName, sh.ID); n > 0 {
			s.emit(&trace.Record{Kind: trace.KindTrim, Worker: -1, Proc: -1, Key: s.shardKey(streamName, sh.ID), Reason: "the stream was deleted",
				First: first, Last: last, Count: n})
		}
	}
	n := int(a.Value)
	if n <= 0 {
		n = max(open-1, 1)
	}
	if err := s.st.DeleteStream(streamName); err != nil {
		panic("sim: " + err.Error())
	}
	if err := s.st.CreateStream(streamName, n); err != nil {
		panic("sim: " + err.Error())
	}
	s.wl.noPuts = true
	s.wl.putGen++ // the next put's event is stale
}
