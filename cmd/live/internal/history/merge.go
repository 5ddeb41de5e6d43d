package history

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// File is one process's history as read from disk.
type File struct {
	Path    string
	Records []trace.Record
}

// ReadDirs reads every *.jsonl history file in dirs (not recursively). A
// file cut short by a killed process loses at most its last, partial line.
func ReadDirs(dirs ...string) ([]File, error) {
	var out []File
	for _, dir := range dirs {
		names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		for _, name := range names {
			f, err := readFile(name)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("history: no *.jsonl files in %s", strings.Join(dirs, ", "))
	}
	return out, nil
}

func readFile(name string) (File, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return File{}, err
	}
	// A process killed mid-write leaves a partial last line: drop it.
	if i := strings.LastIndexByte(string(b), '\n'); i >= 0 && i < len(b)-1 {
		b = b[:i+1]
	}
	recs, err := trace.ReadAll(strings.NewReader(string(b)))
	if err != nil {
		return File{}, fmt.Errorf("history: %s: %w", name, err)
	}
	return File{Path: name, Records: recs}, nil
}

// Proc describes one process of a merged run.
type Proc struct {
	ID         int32
	Owner      string
	PID        int32
	Worker     int32
	Config     map[string]string
	Start      time.Duration
	Stop       time.Duration // -1 if it never stopped within the history
	StopReason string
}

// Merged is the history of a whole run, in time order, as the checkers
// read it.
type Merged struct {
	Records []trace.Record
	Procs   []Proc
	// Origin is the record time (since Epoch) that T = 0 stands for.
	Origin time.Duration
	// End is the time of the last record.
	End time.Duration
	// Writes counts the lease-table writes by how their outcome was known.
	Writes WriteCounts
}

// WriteCounts says how the applied writes were established.
type WriteCounts struct {
	Sent         int // writes sent
	Acknowledged int // applied, replied ok
	Inferred     int // outcome unknown to the writer (timeout, error, lost reply, or SDK retry condition), applied as the history shows
	NotApplied   int // rejected or not applied
	// Reordered counts applies moved after the write whose version they
	// expected (their send times disagreed with the version chain: clock
	// differences between hosts).
	Reordered int
}

// MergeOptions adjust Merge.
type MergeOptions struct {
	// Final is the lease table at the end of the run, if known: its rows
	// witness writes of unknown outcome.
	Final []engine.Lease
	// Shards lists the stream's shards (with parents), if known: each gets
	// a KindShardCreated record at the start of the history.
	Shards []engine.Shard
}

type procKey struct {
	owner string
	pid   int32
}

// Merge merges the histories of every process of a run into one, in time
// order, and derives what the processes could not see themselves:
//
//   - Process numbers become dense and unique per incarnation (Owner and
//     OS process id, a new number at each KindProcStart).
//   - A process with no KindProcStop (killed without a harness saying so)
//     gets one at its last record, reason "vanished".
//   - KindApply records for the lease-table writes that applied. A write
//     acknowledged ok applied; a throttled one did not; one of unknown
//     outcome (timeout, transport error, or a condition failure that an
//     SDK retry of an applied write also produces) applied if the history
//     witnesses the version it wrote: a later applied write expected it, a
//     strongly consistent read or the final table returned it, or the
//     writer's own re-read resolved it as applied. The apply is placed just
//     after the write was sent, and after the apply of the version it
//     expected: for compare-and-swap writes on one clock, that is a valid
//     linearization.
//   - Shard creations (with parents) from opts.Shards are placed at the
//     start, where the parentage checks (S5) can use them.
//
// Times are rebased so that T = 0 is the first record.
func Merge(files []File, opts MergeOptions) Merged {
	type tagged struct{ r trace.Record }
	var all []tagged
	for _, f := range files {
		for _, r := range f.Records {
			all = append(all, tagged{r: r})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].r.T < all[j].r.T })

	// dense process numbers
	var m Merged
	ids := map[procKey]int32{}
	next := int32(0)
	procOf := func(owner string, pid int32) int32 {
		k := procKey{owner, pid}
		if id, ok := ids[k]; ok {
			return id
		}
		id := next
		next++
		ids[k] = id
		m.Procs = append(m.Procs, Proc{ID: id, Owner: owner, PID: pid, Worker: -1, Stop: -1, Start: -1})
		return id
	}
	recs := make([]trace.Record, 0, len(all)+len(all)/4)
	for _, t := range all {
		r := t.r
		if r.Proc >= 0 {
			if r.Kind == trace.KindProcStart {
				delete(ids, procKey{r.Owner, r.Proc})
			}
			pid := r.Proc
			r.Proc = procOf(r.Owner, pid)
			p := &m.Procs[r.Proc]
			if r.Kind == trace.KindProcStart {
				p.Start, p.Worker, p.Config = r.T, r.Worker, ParseConfig(r.Reason)
			}
			if p.Start < 0 {
				p.Start = r.T
			}
			if r.Kind == trace.KindProcStop && p.Stop < 0 {
				p.Stop, p.StopReason = r.T, r.Reason
			}
		}
		recs = append(recs, r)
	}
	// processes that never said they stopped
	last := map[int32]time.Duration{}
	for i := range recs {
		if recs[i].Proc >= 0 {
			last[recs[i].Proc] = recs[i].T
		}
	}
	for i := range m.Procs {
		p := &m.Procs[i]
		if p.Stop < 0 {
			p.Stop, p.StopReason = last[p.ID]+1, "vanished"
			recs = append(recs, trace.Record{T: p.Stop, Kind: trace.KindProcStop, Worker: p.Worker, Proc: p.ID, Owner: p.Owner, Reason: "vanished"})
		}
	}

	recs = append(recs, deriveApplies(recs, opts.Final, &m.Writes)...)

	if len(recs) > 0 {
		sort.SliceStable(recs, func(i, j int) bool { return recs[i].T < recs[j].T })
		m.Origin = recs[0].T
	}
	// shard creations first
	var pre []trace.Record
	for _, s := range opts.Shards {
		pre = append(pre, trace.Record{T: m.Origin, Kind: trace.KindShardCreated, Worker: -1, Proc: -1, Key: s.ID, Parent: s.Parent, Parent2: s.AdjacentParent})
	}
	if len(pre) > 0 {
		recs = append(pre, recs...)
	}
	for i := range recs {
		r := &recs[i]
		r.Seq = uint64(i + 1)
		r.T -= m.Origin
		if r.Sent != 0 {
			r.Sent -= m.Origin
		}
		if r.Applied > 0 {
			r.Applied -= m.Origin
		}
	}
	for i := range m.Procs {
		p := &m.Procs[i]
		p.Start -= m.Origin
		if p.Stop >= 0 {
			p.Stop -= m.Origin
		}
	}
	if len(recs) > 0 {
		m.End = recs[len(recs)-1].T
	}
	m.Records = recs
	return m
}

type version struct {
	key     string
	owner   string
	counter int64
}

type wcall struct {
	send    *trace.Record
	reply   *trace.Record
	applied bool
	known   bool
	apply   time.Duration
}

func (w *wcall) produces() version {
	return version{w.send.Key, w.send.RowOwner, w.send.Counter}
}

func (w *wcall) expects() version {
	return version{w.send.Key, w.send.ExpOwner, w.send.ExpCounter}
}

// deriveApplies returns the KindApply records of the writes in recs (see
// Merge).
func deriveApplies(recs []trace.Record, final []engine.Lease, wc *WriteCounts) []trace.Record {
	type ck struct {
		proc int32
		call uint64
	}
	calls := map[ck]*wcall{}
	var order []*wcall
	witnessed := map[version]bool{}
	resolved := map[string]bool{} // applied, as the writer's re-read resolved it
	deleted := map[int32][]*trace.Record{}
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Kind == trace.KindSend && r.Op.IsWrite():
			w := &wcall{send: r}
			calls[ck{r.Proc, r.Call}] = w
			order = append(order, w)
		case r.Kind == trace.KindReply && r.Op.IsStore():
			if w := calls[ck{r.Proc, r.Call}]; w != nil {
				w.reply = r
			}
			if r.Op == engine.OpGetLease && r.Outcome == trace.OutcomeOK {
				witnessed[version{r.Key, r.RowOwner, r.Counter}] = true
			}
		case r.Kind == trace.Resolved:
			// Reason is "<write class> applied|not applied|superseded"
			if class, ok := strings.CutSuffix(r.Reason, " applied"); ok && !strings.HasSuffix(class, " not") {
				resolved[resolvedKey(r.Proc, r.Key, class, r.Counter)] = true
			}
		case r.Kind == trace.LeaseDeleted:
			deleted[r.Proc] = append(deleted[r.Proc], r)
		}
	}
	for _, l := range final {
		witnessed[version{l.Key, l.Owner, l.Counter}] = true
	}
	wc.Sent = len(order)
	// known outcomes; what applied writes expected witnesses versions, and
	// each version is replaced (or deleted) by one write only
	producedBy := map[version]*wcall{}
	consumed := map[version]bool{}
	for _, w := range order {
		if w.reply != nil && w.reply.Outcome == trace.OutcomeOK {
			w.applied, w.known = true, true
			if w.send.Op != engine.OpCreateLease {
				witnessed[w.expects()] = true
				consumed[w.expects()] = true
			}
			if w.send.Op != engine.OpDeleteLease {
				producedBy[w.produces()] = w
			}
		}
		if w.reply != nil && (w.reply.Outcome == trace.OutcomeThrottled || w.reply.Outcome == trace.OutcomeNotFound) {
			w.known = true
		}
	}
	// unknown outcomes, by what the history witnesses; a version is
	// produced by at most one write: the last one sent wins a tie
	for i := len(order) - 1; i >= 0; i-- {
		w := order[i]
		if w.known {
			continue
		}
		if w.send.Op != engine.OpCreateLease && consumed[w.expects()] {
			continue // another write replaced the version this one expected
		}
		switch w.send.Op {
		case engine.OpDeleteLease:
			// the writer traced the delete (directly or by its re-read)
			// after sending it and before its next send of the key
			for _, d := range deleted[w.send.Proc] {
				if d.Key == w.send.Key && d.T >= w.send.T && (w.reply == nil || d.T >= w.reply.T) {
					w.applied = true
					consumed[w.expects()] = true
					break
				}
			}
		default:
			v := w.produces()
			if producedBy[v] != nil {
				break
			}
			if witnessed[v] || resolved[resolvedKey(w.send.Proc, w.send.Key, w.send.Reason, w.send.Counter)] {
				w.applied = true
				producedBy[v] = w
				if w.send.Op != engine.OpCreateLease {
					witnessed[w.expects()] = true
					consumed[w.expects()] = true
				}
			}
		}
		if w.applied {
			wc.Inferred++
		}
	}
	// place applies: just after the send, and after the version expected
	for _, w := range order {
		if w.applied {
			wc.Acknowledged += b2i(w.known)
			w.apply = w.send.T + 1
		} else {
			wc.NotApplied++
		}
	}
	for pass := 0; pass < 8; pass++ {
		changed := false
		for _, w := range order {
			if !w.applied || w.send.Op == engine.OpCreateLease {
				continue
			}
			if p := producedBy[w.expects()]; p != nil && p != w && p.apply >= w.apply {
				w.apply = p.apply + 1
				changed = true
				if pass == 0 {
					wc.Reordered++
				}
			}
		}
		if !changed {
			break
		}
	}
	var out []trace.Record
	for _, w := range order {
		if !w.applied {
			continue
		}
		s := w.send
		out = append(out, trace.Record{T: w.apply, Kind: trace.KindApply, Worker: s.Worker, Proc: s.Proc, Owner: s.Owner,
			Key: s.Key, Counter: s.Counter, Checkpoint: s.Checkpoint, Reason: s.Reason, Call: s.Call, Op: s.Op,
			Sent: s.T, Outcome: trace.OutcomeOK, ExpOwner: s.ExpOwner, ExpCounter: s.ExpCounter, RowOwner: s.RowOwner,
			Fault: inferredNote(w)})
	}
	return out
}

func inferredNote(w *wcall) string {
	if w.known {
		return ""
	}
	if w.reply == nil {
		return "outcome unknown to the writer (no reply); applied as the history shows"
	}
	return "writer saw " + w.reply.Outcome + "; applied as the history shows"
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func resolvedKey(proc int32, key, class string, counter int64) string {
	return fmt.Sprint(proc, "\x00", key, "\x00", class, "\x00", counter)
}
