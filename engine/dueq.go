package engine

import "time"

// dueQueue is a min-heap of held leases by the time each next needs the
// worker (ties broken by key, for determinism). It makes a step cost what
// the input and the due leases need, not the number of leases held. Each
// entry carries its holding's due time and key, so that ordering the heap
// reads the heap's own array, not every holding it points to.
type dueQueue []dueEntry

type dueEntry struct {
	due time.Duration // h.due
	key string        // h.key
	h   *holding
}

func (q dueQueue) less(i, j int) bool {
	a, b := &q[i], &q[j]
	return a.due < b.due || a.due == b.due && a.key < b.key
}

func (q dueQueue) swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].h.qidx = i
	q[j].h.qidx = j
}

func (q dueQueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q dueQueue) down(i int) {
	n := len(q)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			return
		}
		q.swap(i, m)
		i = m
	}
}

// first returns the holding due first (the queue must not be empty).
func (q dueQueue) first() *holding { return q[0].h }

// firstDue returns when the first holding is due (the queue must not be
// empty).
func (q dueQueue) firstDue() time.Duration { return q[0].due }

// set puts h in the queue at time due, or moves it there.
func (q *dueQueue) set(h *holding, due time.Duration) {
	h.due = due
	if h.qidx < 0 {
		h.qidx = len(*q)
		*q = append(*q, dueEntry{due: due, key: h.key, h: h})
		q.up(h.qidx)
		return
	}
	(*q)[h.qidx].due = due
	q.up(h.qidx)
	q.down(h.qidx)
}

// remove takes h out of the queue.
func (q *dueQueue) remove(h *holding) {
	i := h.qidx
	if i < 0 {
		return
	}
	last := len(*q) - 1
	if i != last {
		q.swap(i, last)
	}
	(*q)[last] = dueEntry{}
	*q = (*q)[:last]
	h.qidx = -1
	if i != last {
		q.up(i)
		q.down(i)
	}
}
