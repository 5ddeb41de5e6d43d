package metrics

import (
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Acquire latency: from the moment this worker may take a lease (it read
// the assignment naming it, or, taking leases itself, it sent the take:
// the lease had expired in its view, or was free) to its first delivery of
// the shard's records, or to its first read of the shard that found
// nothing to deliver (the shard is idle and the worker is reading it):
// how long a shard waits for its new owner, as this worker sees it.

// maxPending bounds the remembered starts of acquisitions that never
// happened (an assignment another worker took first).
const maxPending = 4096

// acquiring is an acquisition waiting for its first delivery or read.
type acquiring struct {
	key    string
	start  time.Time
	reason string
}

// mayTake records that this worker may take key from now (the earliest
// such moment counts).
func (m *Metrics) mayTake(key string, at time.Time) {
	if engine.IsReserved(key) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mayTakeAt[key]; ok {
		return
	}
	if len(m.mayTakeAt) >= maxPending {
		clear(m.mayTakeAt)
	}
	m.mayTakeAt[key] = at
}

// acquired starts timing the acquisition of key (under m.mu).
func (m *Metrics) acquiredLocked(e engine.TraceEvent, at time.Time) {
	start, ok := m.mayTakeAt[e.Key]
	if !ok {
		start = at
	}
	delete(m.mayTakeAt, e.Key)
	m.acquiring[e.Shard] = acquiring{key: e.Key, start: start, reason: e.Reason}
}

// firstRead ends the acquisition of ref, if one is being timed: its
// first delivery, or a read that found nothing to deliver.
func (m *Metrics) firstRead(ref engine.ShardRef, at time.Time) {
	m.mu.Lock()
	a, ok := m.acquiring[ref]
	delete(m.acquiring, ref)
	m.mu.Unlock()
	if ok {
		m.acquire.WithLabelValues(a.reason).Observe(at.Sub(a.start).Seconds())
	}
}

// endAcquiring forgets the acquisition of ref (the lease went before a
// read: lost, released).
func (m *Metrics) endAcquiringLocked(ref engine.ShardRef) { delete(m.acquiring, ref) }

// maxIterators bounds the iterators remembered for the shard they read
// (an iterator the engine abandons is never read again).
const maxIterators = 8192

// iterator remembers which shard it reads.
func (m *Metrics) iterator(it string, ref engine.ShardRef) {
	if it == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.iterators) >= maxIterators {
		clear(m.iterators)
	}
	m.iterators[it] = ref
}

// page takes in a page read with iterator it: its shard's lag, the next
// iterator, and, for a page without records, the end of an acquisition.
func (m *Metrics) page(it string, p engine.RecordsPage, at time.Time) {
	m.mu.Lock()
	ref, ok := m.iterators[it]
	delete(m.iterators, it)
	m.mu.Unlock()
	if !ok {
		return
	}
	m.iterator(p.NextIterator, ref)
	m.setMillisBehind(ref, p.MillisBehind)
	if len(p.Records) == 0 {
		m.firstRead(ref, at)
	}
}
