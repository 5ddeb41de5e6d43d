package sim

import "time"

// evKind is the kind of a simulator event.
type evKind uint8

const (
	evTick            evKind = iota + 1 // wake a process (a = tick generation)
	evApply                             // a call reaches the table or the stream (a = call slot)
	evReply                             // a call's reply reaches its process (a = call slot)
	evTimeout                           // a call's timeout fires at its process (a = call slot)
	evJob                               // the processor finishes a job (a = job slot)
	evCheckpointTimer                   // the processor's periodic checkpoint
	evPut                               // a producer puts the records arrived (a = put generation; see workload.go)
	evRetention                         // retention trimming pass
	evAction                            // a scheduled action (a = index)
	evResume                            // a pause ends (a = pause id)
	evHeal                              // the healing phase starts
	evRetry                             // an SDK retry of a write reaches the table (a = call slot)
	evKill                              // a graceful shutdown took too long
	evSubWake                           // a parked NextEvent is answered (a = call slot<<32 | wake generation; see fanout.go)
	evHeldApply                         // a call held back by boundary seeking reaches the table (a = call slot<<32 | hold generation; see boundary.go)
	evPutRate                           // a burst ends: the put rate changes
	evSettle                            // a probe of whether the world has settled (see settle.go)
	evPutSecond                         // the second stream's producer puts the records arrived (a = put generation; see streams.go)
	// etcd worlds (etcd.go, watch.go): a = watch slot<<32 | generation
	evWatchOpen    // a watch's request reaches the store
	evWatchStarted // its confirmation reaches its process
	evWatchReport  // it reports what the store's log holds
	evWatchResume  // a cut stream reconnects
	evWatchCut     // a random cut of its stream
	evWatchRetry   // the next attempt to open it
	evCompact      // the store compacts its old revisions
)

// event is one entry of the queue, a plain value.
type event struct {
	at   time.Duration
	seq  uint64
	kind evKind
	proc int32
	a    uint64
}

// queue is a 4-ary min-heap of events ordered by (at, seq): a total
// order, so the events come out in the same order whatever the heap's
// shape. Four children a node make the heap half as deep as a binary one,
// and a node's children share a cache line or two.
type queue struct {
	h   []event
	seq uint64
}

func (q *queue) len() int { return len(q.h) }

func less(a, b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (q *queue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.h = append(q.h, e)
	h := q.h
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !less(&e, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

func (q *queue) pop() event {
	h := q.h
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	q.h = h
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for j := c + 1; j < c+4 && j < n; j++ {
			if less(&h[j], &h[m]) {
				m = j
			}
		}
		if !less(&h[m], &last) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = last
	return top
}
