package history

import (
	"encoding/json"
	"fmt"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// The read mode of a ListLeases call, in Reason of its KindReply.
const (
	ScanConsistent = "consistent"
	ScanEventual   = "eventual"
)

// sim/trace has no field for the rows a scan returned. The KindReply of a
// consistent ListLeases that succeeded carries them in Previous (a field
// the trace uses for engine events only), as a JSON array of scanRow.
// Eventually consistent scans carry no rows: the linearizability check
// skips them.
type scanRow struct {
	Key       string `json:"k"`
	Owner     string `json:"o,omitempty"`
	Counter   int64  `json:"c,omitempty"`
	Sequence  string `json:"s,omitempty"`
	Sub       int64  `json:"u,omitempty"`
	Undecoded bool   `json:"bad,omitempty"` // a row that could not be read as a lease
}

// EncodeScanRows returns the rows of l in the form ListLeases replies carry
// them (see DecodeScanRows).
func EncodeScanRows(l engine.Listing) string {
	rows := make([]scanRow, 0, len(l.Leases)+len(l.Malformed))
	for _, x := range l.Leases {
		rows = append(rows, scanRow{Key: x.Key, Owner: x.Owner, Counter: x.Counter, Sequence: x.Checkpoint.Sequence, Sub: x.Checkpoint.SubSequence})
	}
	for _, m := range l.Malformed {
		rows = append(rows, scanRow{Key: m.Key, Undecoded: true})
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return ""
	}
	return string(b)
}

// ScanRows is what a recorded ListLeases reply says the scan returned.
type ScanRows struct {
	// Known: the reply carries its rows (a consistent scan that
	// succeeded, recorded by a recorder that writes them).
	Known bool
	// Consistent is the scan's read mode (false also when not recorded).
	Consistent bool
	// Leases are the rows (key, owner, counter and checkpoint only).
	Leases []engine.Lease
	// Malformed are the keys of rows that could not be decoded.
	Malformed []string
}

// DecodeScanRows reads the rows a ListLeases KindReply carries.
func DecodeScanRows(r *trace.Record) (ScanRows, error) {
	var s ScanRows
	if r.Kind != trace.KindReply || r.Op != engine.OpListLeases || r.Outcome != trace.OutcomeOK {
		return s, nil
	}
	s.Consistent = r.Reason == ScanConsistent
	if !s.Consistent || r.Previous == "" {
		return s, nil
	}
	var rows []scanRow
	if err := json.Unmarshal([]byte(r.Previous), &rows); err != nil {
		return s, fmt.Errorf("history: record %d: the rows of a scan: %w", r.Seq, err)
	}
	s.Known = true
	for _, x := range rows {
		if x.Undecoded {
			s.Malformed = append(s.Malformed, x.Key)
			continue
		}
		s.Leases = append(s.Leases, engine.Lease{Key: x.Key, Owner: x.Owner, Counter: x.Counter,
			Checkpoint: engine.Checkpoint{Sequence: x.Sequence, SubSequence: x.Sub}})
	}
	if len(s.Leases) != r.Count {
		return s, fmt.Errorf("history: record %d: scan of %d rows carries %d", r.Seq, r.Count, len(s.Leases))
	}
	return s, nil
}
