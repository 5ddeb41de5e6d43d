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
	evPut                               // a producer puts a record
	evRetention                         // retention trimming pass
	evAction                            // a scheduled action (a = index)
	evResume                            // a pause ends (a = pause id)
	evHeal                              // the healing phase starts
	evRetry                             // an SDK retry of a write reaches the table (a = call slot)
	evKill                              // a graceful shutdown took too long
	evSubWake                           // a parked NextEvent is answered (a = call slot<<32 | wake generation; see fanout.go)
)

// event is one entry of the queue, a plain value.
type event struct {
	at   time.Duration
	seq  uint64
	kind evKind
	proc int32
	a    uint64
}

// queue is a binary min-heap of events ordered by (at, seq).
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
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(&q.h[i], &q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *queue) pop() event {
	h := q.h
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(&h[r], &h[l]) {
			m = r
		}
		if !less(&h[m], &h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	q.h = h
	return top
}
