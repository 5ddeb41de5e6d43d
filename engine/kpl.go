package engine

import (
	"fmt"

	"github.com/shardlease/shardlease/engine/kpl"
)

// Reasons of TraceAggregateDropped events start with one of these.
const (
	// DropCorrupt: the record has the KPL magic bytes but fails its MD5
	// check or does not parse.
	DropCorrupt = "corrupt"
	// DropHashRange: a user record's hash key lies outside the shard's
	// hash key range, so the aggregate was put while the producer's shard
	// map was stale; the KPL puts such records again, to the right shard.
	DropHashRange = "hash range"
)

// aggregateDrop is an aggregated record whose user records deaggregate
// does not return (or returns as one raw record, delivered).
type aggregateDrop struct {
	sequence  string
	count     int // user records in it; 0 if it did not decode
	reason    string
	delivered bool // handed over as one record, as it was read
}

// deaggregate returns the records of a page as the processor gets them:
// every record aggregated by the KPL replaced by its user records, in
// order, each with the aggregate's sequence number and arrival, its index
// in the aggregate as SubSequence, its own partition key and explicit hash
// key, and Aggregated set. Other records pass through untouched (recs
// itself is returned when the page holds no aggregate).
//
// Two kinds of aggregate yield no user records, and are reported in drops:
//   - a corrupt one (the magic bytes, then an MD5 digest that does not
//     match or a message that does not parse): dropped, or, with
//     deliverCorrupt, handed over as one record as it was read (the KCL's
//     way: a record that merely starts with the magic bytes is then not
//     lost);
//   - one with a user record whose hash key (explicit, or the MD5 of its
//     partition key) lies outside keys, the shard's range: the whole
//     aggregate is dropped, as the KCL does. It was put while the
//     producer's shard map was stale (a reshard), and the KPL puts every
//     user record that lands in an unexpected shard again.
//
// deaggregate is pure: the same page gives the same records.
func deaggregate(recs []Record, keys kpl.HashRange, deliverCorrupt bool) (out []Record, drops []aggregateDrop) {
	first := -1
	for i := range recs {
		if kpl.IsAggregated(recs[i].Data) {
			first = i
			break
		}
	}
	if first < 0 {
		return recs, nil
	}
	out = append(make([]Record, 0, len(recs)), recs[:first]...)
	for _, r := range recs[first:] {
		if !kpl.IsAggregated(r.Data) {
			out = append(out, r)
			continue
		}
		users, err := kpl.Decode(r.Data)
		if err != nil {
			drops = append(drops, aggregateDrop{sequence: r.Sequence, reason: DropCorrupt + ": " + err.Error(), delivered: deliverCorrupt})
			if deliverCorrupt {
				out = append(out, r)
			}
			continue
		}
		if why := outsideRange(users, keys); why != "" {
			drops = append(drops, aggregateDrop{sequence: r.Sequence, count: len(users), reason: DropHashRange + ": " + why})
			continue
		}
		for i, u := range users {
			out = append(out, Record{
				Sequence:        r.Sequence,
				SubSequence:     int64(i),
				PartitionKey:    u.PartitionKey,
				ExplicitHashKey: u.ExplicitHashKey,
				Data:            u.Data,
				Arrival:         r.Arrival,
				Aggregated:      true,
			})
		}
	}
	return out, drops
}

// outsideRange returns why a user record of users lies outside keys, or "".
func outsideRange(users []kpl.UserRecord, keys kpl.HashRange) string {
	if keys.IsFull() {
		return ""
	}
	var lastPK string
	var lastHash kpl.HashKey
	for i, u := range users {
		var h kpl.HashKey
		switch {
		case u.ExplicitHashKey != "":
			var err error
			if h, err = kpl.ParseHashKey(u.ExplicitHashKey); err != nil {
				return fmt.Sprintf("user record %d of %d: %v", i, len(users), err) // Decode checked it: never
			}
		case i > 0 && u.PartitionKey == lastPK:
			h = lastHash
		default:
			h = kpl.PartitionKeyHash(u.PartitionKey)
			lastPK, lastHash = u.PartitionKey, h
		}
		if !keys.Contains(h) {
			return fmt.Sprintf("user record %d of %d has hash key %s, outside the shard's range %s", i, len(users), h, keys)
		}
	}
	return ""
}

// userRecords de-aggregates a page read from h's shard (deaggregate) and
// reports what it dropped. Every reader of records (GetRecords pages,
// subscription events) hands its records through it.
func (w *Worker) userRecords(h *holding, recs []Record) []Record {
	if !anyAggregated(recs) {
		return recs // deaggregate's answer, without parsing the shard's range
	}
	out, drops := deaggregate(recs, w.hashRange(h), w.cfg.DeliverCorruptAggregates)
	pos := h.c.position
	for _, d := range drops {
		if pos.rank() == 1 && w.order(Checkpoint{Sequence: d.sequence}, Checkpoint{Sequence: pos.Sequence}) <= 0 {
			// Read again (a resume at the checkpoint): reported before.
			continue
		}
		kind := TraceAggregateDropped
		if d.delivered {
			kind = TraceAggregateUndecoded
		}
		w.emit(TraceEvent{Kind: kind, Key: h.key, Shard: h.ref, Counter: h.row.Counter, First: d.sequence, Count: d.count, Reason: d.reason})
	}
	return out
}

// anyAggregated reports whether some record of recs is a KPL aggregate
// (deaggregate returns the others unchanged).
func anyAggregated(recs []Record) bool {
	for i := range recs {
		if kpl.IsAggregated(recs[i].Data) {
			return true
		}
	}
	return false
}

// hashRange returns the hash key range of h's shard: the lease row's, else
// the latest listing's, else the whole space (no filtering, as the KCL
// when it cannot find the shard).
func (w *Worker) hashRange(h *holding) kpl.HashRange {
	if r, err := kpl.ParseHashRange(h.row.StartingHashKey, h.row.EndingHashKey); err == nil {
		return r
	}
	for _, s := range w.sync.shards[h.ref.Stream] {
		if s.ID == h.ref.Shard {
			if r, err := kpl.ParseHashRange(s.StartingHashKey, s.EndingHashKey); err == nil {
				return r
			}
			break
		}
	}
	return kpl.FullRange
}
