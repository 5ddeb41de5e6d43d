package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// startState is the start-up check that comes before anything else a
// worker does, and before any write to the table:
//
//  1. describe every consumed stream (its identity: ARN and creation time)
//     and list its shards;
//  2. read the stream marker rows (see KeyFormat.MarkerKey) strongly
//     consistently: a marker that names another identity stops the worker
//     with a StreamMismatchError;
//  3. if a marker is missing: scan the table strongly consistently and
//     check its rows (none may name another identity; unless
//     AdoptUnverifiedRows, every unfinished row without one must be of a
//     shard the stream lists or descends from), then create the marker
//     with a conditional write, and read it again if that write's outcome
//     is unknown or another worker created it first.
//
// A missing stream or table and rejected credentials stop the worker too
// (ErrStreamMissing, ErrTableMissing, ErrAccessDenied); other failures
// are retried with backoff.
type startState struct {
	done    bool
	phase   startPhase
	waiting int
	failed  bool
	retryAt time.Duration
	backoff time.Duration
	ids     map[string]string // stream -> verified identity
	markers []*marker         // sorted by key
}

type startPhase uint8

const (
	startDescribe startPhase = iota + 1
	startMarkers
	startScan
	startCreate
)

// marker is the check of one stream marker row.
type marker struct {
	key     string
	stream  string // the stream whose rows it covers
	absent  bool
	settled bool
}

// Started reports whether the worker has passed its start-up checks.
func (w *Worker) Started() bool { return w.start.done }

// Err returns the error the worker stopped with, if any: a start-up check
// that failed (ErrStreamMissing, ErrTableMissing, ErrAccessDenied, a
// StreamMismatchError), or a stream re-created while it ran.
func (w *Worker) Err() error { return w.err }

func (w *Worker) beginStart() {
	s := &w.start
	s.ids = make(map[string]string, len(w.cfg.Streams))
	seen := map[string]bool{}
	for _, sc := range w.cfg.Streams {
		k := w.keys.MarkerKey(sc.Name)
		if !seen[k] {
			seen[k] = true
			s.markers = append(s.markers, &marker{key: k, stream: sc.Name})
		}
	}
	slices.SortFunc(s.markers, func(a, b *marker) int { return strings.Compare(a.key, b.key) })
	w.startDescribe()
}

func (w *Worker) startDescribe() {
	s := &w.start
	s.phase, s.failed = startDescribe, false
	for _, sc := range w.cfg.Streams {
		s.waiting += 2
		w.call(Call{Op: OpDescribeStream, Stream: sc.Name}, pendingCall{purpose: forStart, key: sc.Name})
		w.call(Call{Op: OpListShards, Stream: sc.Name}, pendingCall{purpose: forStart, key: sc.Name})
	}
}

func (w *Worker) startMarkers() {
	s := &w.start
	s.phase, s.failed = startMarkers, false
	for _, m := range s.markers {
		if !m.settled {
			s.waiting++
			w.call(Call{Op: OpGetLease, Key: m.key}, pendingCall{purpose: forStart, key: m.key})
		}
	}
	if s.waiting == 0 {
		w.startDone()
	}
}

// onStartResult handles the result of a start-up call.
func (w *Worker) onStartResult(pc pendingCall, op Op, r *Result) {
	s := &w.start
	s.waiting--
	if r.Err != nil {
		w.startError(op, pc.key, r.Err)
	} else {
		switch op {
		case OpDescribeStream:
			s.ids[pc.key] = r.Stream.Identity()
		case OpListShards:
			w.sync.listed(pc.key, r.Shards)
		case OpGetLease:
			w.checkMarker(w.findMarker(pc.key), r.Lease)
		case OpListLeases:
			w.checkRows(r.Listing)
		case OpCreateLease:
			if m := w.findMarker(pc.key); m != nil {
				m.absent, m.settled = false, true
			}
		}
	}
	if s.waiting > 0 || w.stopped {
		return
	}
	if s.failed {
		s.backoff = w.nextBackoff(s.backoff)
		s.retryAt = w.now.Mono + s.backoff
		return
	}
	s.backoff = 0
	w.startNext()
}

// startNext moves the start-up check to its next phase.
func (w *Worker) startNext() {
	s := &w.start
	switch s.phase {
	case startDescribe:
		w.startMarkers()
	case startMarkers:
		absent := false
		for _, m := range s.markers {
			absent = absent || m.absent
		}
		if !absent {
			w.startDone()
			return
		}
		s.phase = startScan
		s.waiting++
		w.call(Call{Op: OpListLeases, Consistent: true}, pendingCall{purpose: forStart})
	case startScan:
		s.phase = startCreate
		for _, m := range s.markers {
			if m.absent {
				s.waiting++
				w.call(Call{Op: OpCreateLease, Key: m.key, Lease: markerRow(m.key, s.ids[m.stream])},
					pendingCall{purpose: forStart, key: m.key})
			}
		}
	case startCreate:
		// Created, or read again below when the create's outcome was not
		// a success (another worker created it first, or unknown).
		w.startMarkers()
	}
}

// startError records a failed start-up call: fatal for the conditions a
// person must fix, else the phase is retried.
func (w *Worker) startError(op Op, key string, err error) {
	switch {
	case op == OpDescribeStream && errors.Is(err, ErrNotFound):
		w.fail(fmt.Errorf("stream %s: %w: %w", key, ErrStreamMissing, err))
	case fatal(err):
		w.fail(fmt.Errorf("start-up check (%s): %w", op, err))
	case op == OpGetLease && errors.Is(err, ErrNotFound):
		if m := w.findMarker(key); m != nil {
			m.absent = true
		}
	default:
		// OpCreateLease: the condition failed (another worker created
		// it) or the outcome is unknown: read the marker again.
		w.start.failed = w.start.failed || op != OpCreateLease
	}
}

func (w *Worker) findMarker(key string) *marker {
	for _, m := range w.start.markers {
		if m.key == key {
			return m
		}
	}
	return nil
}

// checkMarker compares a marker row with the stream's identity.
func (w *Worker) checkMarker(m *marker, row Lease) {
	if m == nil {
		return
	}
	want := w.start.ids[m.stream]
	if row.StreamID != want {
		w.fail(&StreamMismatchError{Stream: m.stream, Want: DescribeIdentity(want), Found: DescribeIdentity(row.StreamID), Key: m.key})
		return
	}
	m.absent, m.settled = false, true
}

// checkRows checks, before a marker is created, that the table's rows may
// be this worker's streams': none names another identity and, unless
// AdoptUnverifiedRows, every unfinished row without an identity is of a
// shard its stream lists or descends from.
func (w *Worker) checkRows(l Listing) {
	var unverified []string
	for _, row := range l.Leases {
		if IsReserved(row.Key) {
			continue
		}
		ref, ok := w.keys.Parse(row.Key)
		if !ok || w.streams[ref.Stream] == nil {
			continue
		}
		m := w.findMarker(w.keys.MarkerKey(ref.Stream))
		if m == nil || !m.absent {
			continue
		}
		want := w.start.ids[ref.Stream]
		switch {
		case row.StreamID != "" && row.StreamID != want:
			w.fail(&StreamMismatchError{Stream: ref.Stream, Want: DescribeIdentity(want), Found: DescribeIdentity(row.StreamID), Key: row.Key})
			return
		case row.StreamID == "" && !row.Checkpoint.IsShardEnd() && !w.cfg.AdoptUnverifiedRows && !w.provenOursAt(ref):
			unverified = append(unverified, row.Key)
		}
	}
	if len(unverified) > 0 {
		stream := w.cfg.Streams[0].Name
		if ref, ok := w.keys.Parse(unverified[0]); ok {
			stream = ref.Stream
		}
		w.fail(&StreamMismatchError{Stream: stream, Want: DescribeIdentity(w.start.ids[stream]), Rows: unverified})
	}
}

// provenOursAt reports whether the latest listing shows shard ref or a
// child of it.
func (w *Worker) provenOursAt(ref ShardRef) bool { return w.provenOurs(ref, Lease{}) }

// startDone ends the start-up check: the worker starts scanning and
// syncing now.
func (w *Worker) startDone() {
	s := &w.start
	s.done = true
	ids := make([]string, 0, len(w.cfg.Streams))
	for _, sc := range w.cfg.Streams {
		ids = append(ids, sc.Name+"="+DescribeIdentity(s.ids[sc.Name]))
	}
	w.emit(TraceEvent{Kind: TraceStarted, Reason: strings.Join(ids, "; ")})
	w.nextScan = w.now.Mono
	w.sync.next = w.now.Mono
}

// fail stops the worker on an error it cannot recover from. Leases it
// holds are dropped without a write (they expire): their processors are
// told the lease is lost.
func (w *Worker) fail(err error) {
	if w.stopped {
		return
	}
	w.err = err
	for _, h := range slices.Clone(w.held) {
		if cur := w.holdingOf(h.key); cur != nil {
			w.loseLease(cur, "the worker stopped: "+err.Error())
			w.tick(cur)
		}
	}
	w.emit(TraceEvent{Kind: TraceFailed, Reason: err.Error()})
	w.stopped = true
}
