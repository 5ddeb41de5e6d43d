package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/internal/ddbcost"
	"github.com/shardlease/shardlease/sim/trace"
)

// The lease table's cost: every call the table executes is counted as
// DynamoDB on-demand would bill it (internal/ddbcost: a write's units
// from the larger of the row before and after it, whether its condition
// held or not; a read's from the rows it read, strongly consistent or
// not; a write that adds a row to the pending index, removes it or moves
// it there one or two more). Calls that never reach the table (throttled,
// a 500 that did not apply) cost nothing. Figures.Cost reports them per
// shard-hour; worlds whose leases live in etcd have none.

// writeClasses are the kinds of table writes the figures report, in
// their order (trace.Write*).
var writeClasses = [...]string{trace.WriteRenew, trace.WriteCheckpoint, trace.WriteTake, trace.WriteAssign, trace.WriteHello,
	trace.WriteRelease, trace.WriteShardEnd, trace.WriteCreate, trace.WriteDelete, SessionWrites, "other"}

// SessionWrites is the class of every write of a worker's session row
// (session renewal: its renewals, its take at start, its release, the
// assigner's end of it), whatever the write.
const SessionWrites = "session"

// tableCost counts what the table's calls cost.
type tableCost struct {
	writes      [len(writeClasses)]int64 // writes applied or refused by their condition, by class
	writeUnits  [len(writeClasses)]int64
	indexWrites int64 // pending index entries written
	reads       int64 // reads (scans, gets, index queries)
	readHalves  int64 // read request units, in halves
}

func classIndex(reason string) int {
	for i, c := range writeClasses[:len(writeClasses)-1] {
		if c == reason {
			return i
		}
	}
	return len(writeClasses) - 1
}

// rowBytes returns the size of key's row now (0: none) and its pending
// index entry's.
func (s *simulator) rowBytes(key string) (row, index int, pending string) {
	l, reason, ok := s.tbl.Current(key)
	if !ok {
		if reason != "" {
			return len(key) + len(reason), 0, "" // a malformed row: its key and what is wrong with it, roughly
		}
		return 0, 0, ""
	}
	return ddbcost.ItemSize(&l), ddbcost.IndexEntrySize(&l), l.Pending
}

// costRead counts a read that returned res.
func (s *simulator) costRead(c *engine.Call, res *engine.Result) {
	tc := &s.cost
	tc.reads++
	switch c.Op {
	case engine.OpListLeases:
		// a scan reads every row (in pages of at most 1 MB)
		n := 0
		for i := range res.Listing.Leases {
			n += ddbcost.ItemSize(&res.Listing.Leases[i])
		}
		for _, m := range res.Listing.Malformed {
			n += len(m.Key) + len(m.Reason)
		}
		for ; n > 1<<20; n -= 1 << 20 {
			tc.readHalves += ddbcost.ReadUnits(1<<20, c.Consistent)
		}
		tc.readHalves += ddbcost.ReadUnits(n, c.Consistent)
	case engine.OpGetLease:
		n := 0
		if res.Err == nil {
			n = ddbcost.ItemSize(&res.Lease)
		}
		tc.readHalves += ddbcost.ReadUnits(n, true)
	case engine.OpListPending:
		// a query of the index (eventually consistent only)
		n := 0
		for i := range res.Listing.Leases {
			n += ddbcost.IndexEntrySize(&res.Listing.Leases[i])
		}
		tc.readHalves += ddbcost.ReadUnits(n, false)
	}
}

// costWrite counts a write of key that the table executed, given its row's
// size and pending entry before it.
func (s *simulator) costWrite(reason, key string, before int, pendingBefore string) {
	after, _, pendingAfter := s.rowBytes(key)
	i := classIndex(reason)
	if engine.IsSessionRow(key) {
		i = classIndex(SessionWrites)
	}
	s.cost.writes[i]++
	s.cost.writeUnits[i] += ddbcost.WriteUnits(before, after)
	if pendingBefore != pendingAfter {
		// keys only: every entry written is one unit
		if pendingBefore != "" {
			s.cost.indexWrites++
		}
		if pendingAfter != "" {
			s.cost.indexWrites++
		}
	}
}

// TableCost is what a run's lease-table calls would cost on DynamoDB
// on-demand, per shard-hour (see internal/ddbcost for the rules).
type TableCost struct {
	// Measured is false when there is nothing to report: the leases
	// live in etcd, or no shard was open.
	Measured bool
	// Writes are the writes per shard-hour of each class, in the order
	// of WriteClasses; WriteUnits their write request units.
	Writes, WriteUnits [len(writeClasses)]float64
	// IndexWriteUnits are the pending index's write units; ReadUnits the
	// read request units of every scan, get and index query; Reads the
	// reads (calls).
	IndexWriteUnits, ReadUnits, Reads float64
	// PerShardMonth is the price of all of it per shard-month (730
	// hours), in US dollars, at Options.Prices.
	PerShardMonth float64
	// RenewPerShardMonth is the part of it that the renewals' writes
	// cost.
	RenewPerShardMonth float64
}

// WriteClasses names the classes of TableCost.Writes.
func WriteClasses() []string { return writeClasses[:] }

// figures returns the table's cost per shard-hour (not Measured if no
// shard was open).
func (tc *tableCost) figures(shardHours float64, p ddbcost.Prices) TableCost {
	if shardHours <= 0 {
		return TableCost{}
	}
	out := TableCost{Measured: true}
	var units int64
	for i := range writeClasses {
		out.Writes[i] = float64(tc.writes[i]) / shardHours
		out.WriteUnits[i] = float64(tc.writeUnits[i]) / shardHours
		units += tc.writeUnits[i]
	}
	units += tc.indexWrites
	out.IndexWriteUnits = float64(tc.indexWrites) / shardHours
	out.ReadUnits = float64(tc.readHalves) / 2 / shardHours
	out.Reads = float64(tc.reads) / shardHours
	month := ddbcost.HoursPerMonth / shardHours
	out.PerShardMonth = p.Cost(units, tc.readHalves) * month
	// renewals: of leases' rows, and of session rows (session renewal)
	out.RenewPerShardMonth = p.Cost(tc.writeUnits[classIndex(trace.WriteRenew)]+tc.writeUnits[classIndex(SessionWrites)], 0) * month
	return out
}

// WritesPerShardHour returns the writes per shard-hour of every class but
// those named in except (e.g. trace.WriteCheckpoint).
func (c TableCost) WritesPerShardHour(except ...string) float64 {
	var n float64
	for i, w := range writeClasses {
		if !slices.Contains(except, w) {
			n += c.Writes[i]
		}
	}
	return n
}

// String is the cost in one line: writes per shard-hour by class (those
// with any), read units, and the price per shard-month.
func (c TableCost) String() string {
	var parts []string
	for i, w := range writeClasses {
		if c.Writes[i] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", w, c.Writes[i]))
		}
	}
	return fmt.Sprintf("writes/shard-hour %.0f (%s), index write units %.0f, read units/shard-hour %.0f, USD %.4f per shard-month (renewals %.4f)",
		c.WritesPerShardHour(), strings.Join(parts, ", "), c.IndexWriteUnits, c.ReadUnits, c.PerShardMonth, c.RenewPerShardMonth)
}
