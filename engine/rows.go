package engine

// rowID is a lease key interned by a worker (see rowTable): a small
// integer, the index of the key's state in the worker's table.
type rowID int32

// rowState is everything one worker keeps of one row of the lease table:
// its observation, the holding if the worker holds the lease, the write
// in flight if it does not, the ghosts of its writes of unknown outcome,
// and whether a confirming read of it is in flight. Keeping it in one
// place, found once per input (by the call's pendingCall, or by one probe
// of the key), spares the step a map probe by key string for each of
// them; the per-key state a later feature adds (a worker's session row,
// say) goes here too.
//
// A rowState is allocated once per interning and never moves: pointers to
// it (a pendingCall's, a holding's) stay valid. When it holds nothing any
// more it is freed (rowTable.tidy): taken out of the table, its id
// reused, and marked freed, so that a pointer kept past that (a reply to a
// call about a row forgotten since) falls back to the table by key.
type rowState struct {
	key   string
	id    rowID
	freed bool
	// ref and ok are the key parsed (KeyFormat.Parse) and whether it names
	// a shard of a consumed stream: fixed for the key, parsed once
	ref ShardRef
	ok  bool

	observed bool
	obs      observation // valid while observed

	held *holding
	// write is a write in flight on a row this worker does not hold (a
	// take, create, delete, assignment or hello); writing is its index in
	// Worker.writing
	write   *write
	writing int32

	ghosts     []ghost
	confirming bool // assigned mode: a strongly consistent read is in flight (confirm)
}

// empty reports whether rs holds nothing: it may be freed.
func (rs *rowState) empty() bool {
	return !rs.observed && rs.held == nil && rs.write == nil && len(rs.ghosts) == 0 && !rs.confirming
}

// heldOrNil returns rs.held, nil if rs is nil.
func (rs *rowState) heldOrNil() *holding {
	if rs == nil {
		return nil
	}
	return rs.held
}

// writeOrNil returns rs.write, nil if rs is nil.
func (rs *rowState) writeOrNil() *write {
	if rs == nil {
		return nil
	}
	return rs.write
}

// rowTable interns the lease keys one worker deals with and keeps their
// states, indexed by rowID. Iterating over all rows (every), in id order,
// is deterministic; decisions that depend on an order among keys sort.
type rowTable struct {
	ids  map[string]rowID
	all  []*rowState // by id; nil: free
	free []rowID
	live int // rows in use
	// emptyKey: the empty key was interned once (a row without a key, which
	// stores report as malformed: so far never); until then get("") needs
	// no probe
	emptyKey bool
	// parse fills a new row's ref and ok
	parse func(key string) (ShardRef, bool)
}

func newRowTable(parse func(string) (ShardRef, bool)) rowTable {
	return rowTable{ids: make(map[string]rowID), parse: parse}
}

// get returns the state of key, nil if the key is not interned.
func (t *rowTable) get(key string) *rowState {
	if key == "" && !t.emptyKey {
		return nil // no lease key (a tick, a scan's result): no probe
	}
	if id, ok := t.ids[key]; ok {
		return t.all[id]
	}
	return nil
}

// intern returns the state of key, interning it if needed.
func (t *rowTable) intern(key string) *rowState {
	if id, ok := t.ids[key]; ok {
		return t.all[id]
	}
	if key == "" {
		t.emptyKey = true
	}
	rs := &rowState{key: key, writing: -1}
	rs.ref, rs.ok = t.parse(key)
	if n := len(t.free); n > 0 {
		rs.id = t.free[n-1]
		t.free = t.free[:n-1]
		t.all[rs.id] = rs
	} else {
		rs.id = rowID(len(t.all))
		t.all = append(t.all, rs)
	}
	t.ids[key] = rs.id
	t.live++
	return rs
}

// tidy frees rs if it holds nothing.
func (t *rowTable) tidy(rs *rowState) {
	if rs == nil || rs.freed || !rs.empty() {
		return
	}
	rs.freed = true
	delete(t.ids, rs.key)
	t.all[rs.id] = nil
	t.free = append(t.free, rs.id)
	t.live--
}

// current returns rs if it is still the key's state, else the key's
// state in the table (nil if none): rs was freed since it was kept.
func (t *rowTable) current(rs *rowState, key string) *rowState {
	if rs != nil && !rs.freed {
		return rs
	}
	return t.get(key)
}
