package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/history"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// linHistoryDir writes the histories of two workers into a directory, as
// their recorders do: w1 creates lease s0 and takes it; w2 reads it and
// takes it too. With overlap, both takes expect the row w1's create wrote
// and both succeed: two successful compare-and-swaps of one version, which
// no order of the calls explains.
//
// With staleRead, the takes do not overlap (w2's fails its condition) but
// w2 then reads the row as it was before w1's acknowledged take: a stale
// read, which only the linearizability check sees.
func linHistoryDir(t *testing.T, overlap, staleRead bool) string {
	t.Helper()
	dir := t.TempDir()
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	const cfg = "role=worker lease=3s renew=1s margin=300ms"
	type w struct {
		owner string
		pid   int32
		recs  []trace.Record
	}
	w1, w2 := &w{owner: "w1", pid: 101}, &w{owner: "w2", pid: 102}
	add := func(x *w, r trace.Record) {
		r.Owner, r.Proc, r.Worker = x.owner, x.pid, -1
		r.Wall = int64(r.T)
		x.recs = append(x.recs, r)
	}
	write := func(x *w, at float64, call uint64, op engine.Op, class string, exp engine.Expect, row engine.Lease, took float64, outcome string) {
		add(x, trace.Record{T: ms(at), Kind: trace.KindSend, Call: call, Op: op, Key: row.Key, Reason: class,
			ExpOwner: exp.Owner, ExpCounter: exp.Counter, RowOwner: row.Owner, Counter: row.Counter, Checkpoint: row.Checkpoint})
		add(x, trace.Record{T: ms(at + took), Kind: trace.KindReply, Call: call, Op: op, Key: row.Key, Reason: class,
			Sent: ms(at), Outcome: outcome})
	}
	th := engine.Checkpoint{Sequence: "TRIM_HORIZON"}
	add(w1, trace.Record{T: ms(1), Kind: trace.KindProcStart, Reason: cfg})
	add(w2, trace.Record{T: ms(2), Kind: trace.KindProcStart, Reason: cfg})
	write(w1, 10, 1, engine.OpCreateLease, "create", engine.Expect{}, engine.Lease{Key: "s0", Counter: 1, Checkpoint: th}, 5, trace.OutcomeOK)
	// a consistent scan and a read that see the created row
	listing := engine.Listing{Leases: []engine.Lease{{Key: "s0", Counter: 1, Checkpoint: th}}}
	add(w2, trace.Record{T: ms(40), Kind: trace.KindReply, Call: 1, Op: engine.OpListLeases, Sent: ms(30), Outcome: trace.OutcomeOK,
		Count: 1, Reason: history.ScanConsistent, Previous: history.EncodeScanRows(listing)})
	add(w2, trace.Record{T: ms(60), Kind: trace.KindReply, Call: 2, Op: engine.OpGetLease, Key: "s0", Sent: ms(50), Outcome: trace.OutcomeOK,
		Counter: 1, Checkpoint: th})
	write(w1, 1000, 2, engine.OpUpdateLease, "take", engine.Expect{Counter: 1}, engine.Lease{Key: "s0", Owner: "w1", Counter: 2, Checkpoint: th}, 10, trace.OutcomeOK)
	if overlap {
		write(w2, 1005, 3, engine.OpUpdateLease, "take", engine.Expect{Counter: 1}, engine.Lease{Key: "s0", Owner: "w2", Counter: 2, Checkpoint: th}, 10, trace.OutcomeOK)
	} else {
		// a stale take that failed its condition, and a later read
		write(w2, 1005, 3, engine.OpUpdateLease, "take", engine.Expect{Counter: 1}, engine.Lease{Key: "s0", Owner: "w2", Counter: 2, Checkpoint: th}, 10, trace.OutcomeCondition)
		read := trace.Record{T: ms(1200), Kind: trace.KindReply, Call: 4, Op: engine.OpGetLease, Key: "s0", Sent: ms(1190), Outcome: trace.OutcomeOK,
			RowOwner: "w1", Counter: 2, Checkpoint: th}
		if staleRead {
			read.RowOwner, read.Counter = "", 1
		}
		add(w2, read)
	}
	add(w1, trace.Record{T: ms(2000), Kind: trace.KindProcStop, Reason: "exit"})
	add(w2, trace.Record{T: ms(2001), Kind: trace.KindProcStop, Reason: "exit"})
	for _, x := range []*w{w1, w2} {
		f, err := os.Create(filepath.Join(dir, "worker-"+x.owner+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		tw := trace.NewWriter(f)
		for i := range x.recs {
			if err := tw.Write(&x.recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return dir
}

func linLine(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "Lin ") && i+1 < len(lines) {
			return strings.TrimSpace(l) + "\n" + strings.TrimSpace(lines[i+1])
		}
	}
	return ""
}

func TestCheckLinearizabilityCleanPasses(t *testing.T) {
	dir := linHistoryDir(t, false, false)
	code, out := runMain(t, "check", dir)
	t.Log(out)
	lin := linLine(out)
	if code != exitOK || !strings.Contains(lin, "ok; ") || !strings.Contains(lin, "1 consistent scans") || !strings.Contains(lin, "widened by 50ms") {
		t.Fatalf("exit %d, Lin:\n%s", code, lin)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "lin-*.html")); len(m) != 0 {
		t.Fatalf("visualizations written for a clean history: %v", m)
	}
}

func TestCheckLinearizabilityPlantedViolationsFail(t *testing.T) {
	t.Run("overlapping-takes", func(t *testing.T) { checkLinFails(t, linHistoryDir(t, true, false)) })
	t.Run("stale-read", func(t *testing.T) {
		dir := linHistoryDir(t, false, true)
		out := checkLinFails(t, dir)
		if !strings.Contains(out, "S2  fenced writes                                             0") {
			t.Errorf("a stale read is not an S2 violation:\n%s", out)
		}
	})
}

func checkLinFails(t *testing.T, dir string) string {
	t.Helper()
	code, out := runMain(t, "check", dir)
	t.Log(out)
	lin := linLine(out)
	if code != exitFailed || !strings.Contains(lin, "ILLEGAL keys: s0") {
		t.Fatalf("exit %d, Lin:\n%s", code, lin)
	}
	page := filepath.Join(dir, "lin-s0.html")
	if !strings.Contains(out, "visualization: "+page) {
		t.Fatalf("no visualization path printed:\n%s", out)
	}
	b, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(b), "<html") {
		t.Fatalf("visualization %s: %v (%d bytes)", page, err, len(b))
	}
	return out
}
