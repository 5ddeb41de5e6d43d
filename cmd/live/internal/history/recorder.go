// Package history records what one live process did, in the plain trace
// format (sim/trace Records as JSON Lines) that the simulator's checkers
// read, and merges the histories of every process of a run into one.
//
// Each process writes its own file. Times are the process's wall clock:
// T is nanoseconds since Epoch (a fixed instant), so the files of several
// processes on one host, or on hosts whose clocks are synchronised, merge
// by T. Real processes have no true time; Merge says so and the figures it
// feeds treat S1 (which needs true time) as informational.
//
// A worker records its engine trace (Config.Trace), every lease-table call
// (a KindSend when a write leaves, a KindReply with Sent when any call
// returns), the GetShardIterator replies, and what its record processors
// saw (KindInitialized, KindReceived, KindDone, KindCheckpointAck,
// KindNotice). The apply records the checkers need (KindApply) are not
// written by the workers, which cannot see when the table applied a write;
// Merge derives them (see Merge).
//
// Every record is written through to the file at once, so a process killed
// with SIGKILL loses nothing it had recorded.
package history

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// Epoch is the fixed instant record times count from: T = wall clock -
// Epoch. Every process uses the same one so their histories merge.
var Epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Stamp returns t as a record time.
func Stamp(t time.Time) time.Duration { return time.Duration(t.UnixNano() - Epoch.UnixNano()) }

// Recorder writes one process's history to a file. It is safe for
// concurrent use. A nil *Recorder records nothing.
type Recorder struct {
	mu     sync.Mutex
	f      *os.File
	w      *trace.Writer
	err    error
	owner  string
	proc   int32
	worker int32
	now    func() time.Time
	path   string
}

// Options name the process a Recorder writes for.
type Options struct {
	// Role is the kind of process: "worker", "producer", "harness".
	Role string
	// Owner is the worker's owner id (or a name for other roles).
	Owner string
	// Worker is the worker slot (-1 for none): several processes over a
	// run (restarts) can fill one slot.
	Worker int32
	// Proc identifies the process; 0 means the OS process id. Merge makes
	// process numbers dense and unique per (Owner, Proc, start).
	Proc int32
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Create makes dir if needed and opens a new history file in it, named
// after the role, owner and process.
func Create(dir string, o Options) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if o.Proc == 0 {
		o.Proc = int32(os.Getpid())
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	name := fmt.Sprintf("%s-%s-%d-%d.jsonl", safe(o.Role), safe(o.Owner), o.Proc, o.Now().UnixNano())
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &Recorder{f: f, w: trace.NewWriter(f), owner: o.Owner, proc: o.Proc, worker: o.Worker, now: o.Now, path: path}, nil
}

func safe(s string) string {
	if s == "" {
		return "x"
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Path returns the file the recorder writes.
func (r *Recorder) Path() string {
	if r == nil {
		return ""
	}
	return r.path
}

// Proc returns the recorder's process number.
func (r *Recorder) Proc() int32 {
	if r == nil {
		return -1
	}
	return r.proc
}

// Now returns the recorder's current record time.
func (r *Recorder) Now() time.Duration {
	if r == nil {
		return 0
	}
	return Stamp(r.now())
}

// Write stamps rec as this process's (its Proc and Worker, its Owner
// unless set, T and Wall from the clock unless T is set) and writes it
// through.
func (r *Recorder) Write(rec trace.Record) {
	if r == nil {
		return
	}
	if rec.Owner == "" {
		rec.Owner = r.owner
	}
	rec.Proc = r.proc
	rec.Worker = r.worker
	r.WriteAs(rec)
}

// WriteAs writes rec as it is, with T and Wall from the clock unless T is
// set: for records about other processes (a harness recording a kill).
func (r *Recorder) WriteAs(rec trace.Record) {
	if r == nil {
		return
	}
	if rec.T == 0 {
		now := r.now()
		rec.T = Stamp(now)
		rec.Wall = now.UnixNano()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	if err := r.w.Write(&rec); err != nil {
		r.err = err
		return
	}
	r.err = r.w.Flush()
}

// Err returns the first write error, if any.
func (r *Recorder) Err() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close flushes and closes the file.
func (r *Recorder) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.err
	if e := r.w.Flush(); err == nil {
		err = e
	}
	if e := r.f.Close(); err == nil {
		err = e
	}
	return err
}

// ProcStart records that this process started; config describes its
// settings (it lands in Reason, e.g. "lease=3s renew=1s margin=301ms").
func (r *Recorder) ProcStart(config string) {
	r.Write(trace.Record{Kind: trace.KindProcStart, Reason: config})
}

// ProcStop records that this process is ending (reason: exit, error).
func (r *Recorder) ProcStop(reason string) {
	r.Write(trace.Record{Kind: trace.KindProcStop, Reason: reason})
}

// ConfigString formats settings for ProcStart: "k=v k=v" in the given
// order.
func ConfigString(kv ...any) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%v=%v", kv[i], kv[i+1])
	}
	return b.String()
}

// ParseConfig reads a ConfigString back.
func ParseConfig(s string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

// ConfigDuration returns the duration setting name of a ConfigString, or
// def.
func ConfigDuration(m map[string]string, name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(m[name]); err == nil {
		return d
	}
	return def
}

// ConfigInt returns the integer setting name, or def.
func ConfigInt(m map[string]string, name string, def int) int {
	if n, err := strconv.Atoi(m[name]); err == nil {
		return n
	}
	return def
}
