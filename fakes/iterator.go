package fakes

import (
	"context"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// iterState is what a shard iterator encodes: the shard, the index of the
// next record to return, when and in what order it was issued. Records are
// never removed from a shard (trimming only hides them), so an index stays
// valid for the life of the fake.
type iterState struct {
	stream int    // index of the stream in creation order
	shard  int    // index of the shard in its stream
	pos    int    // index of the next record
	issued int64  // nanoseconds from the fake's origin
	serial uint64 // issue order, for ExpireIterators
}

// iterPrefix starts every iterator string.
const iterPrefix = "AAAA"

// An iterator string is iterPrefix and four 64-bit words, 11 characters of
// 6 bits each (iterDigits): the fake's tag, the stream's and the shard's
// indexes; the record index; the issue time; the serial.
const (
	iterDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	iterWord   = 11
	iterLen    = len(iterPrefix) + 4*iterWord
	iterShards = 1 << 24 // shard indexes fit in 24 bits, stream indexes in 16
)

// iterValue maps a character of iterDigits to its value, others to 0xff.
var iterValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := 0; i < len(iterDigits); i++ {
		t[iterDigits[i]] = byte(i)
	}
	return t
}()

// encodeIterator returns the opaque iterator string of st.
func (k *Kinesis) encodeIterator(st iterState) string {
	var b [iterLen]byte
	copy(b[:], iterPrefix)
	words := [4]uint64{k.tag<<40 | uint64(st.stream)<<24 | uint64(st.shard), uint64(st.pos), uint64(st.issued), st.serial}
	for w, v := range words {
		at := len(iterPrefix) + w*iterWord
		for i := iterWord - 1; i >= 0; i-- {
			b[at+i] = iterDigits[v&63]
			v >>= 6
		}
	}
	return string(b[:])
}

// decodeIterator parses an iterator string of this fake; ok is false for
// anything else.
func (k *Kinesis) decodeIterator(it string) (st iterState, ok bool) {
	if len(it) != iterLen || it[:len(iterPrefix)] != iterPrefix {
		return st, false
	}
	var words [4]uint64
	for w := range words {
		at := len(iterPrefix) + w*iterWord
		var v uint64
		for i := 0; i < iterWord; i++ {
			d := iterValue[it[at+i]]
			if d == 0xff {
				return st, false
			}
			v = v<<6 | uint64(d)
		}
		words[w] = v
	}
	tag, stream, shard := words[0]>>40, int(words[0]>>24&0xffff), int(words[0]&(iterShards-1))
	if tag != k.tag || stream >= len(k.byIndex) {
		return st, false
	}
	s := k.byIndex[stream]
	if shard >= len(s.shards) || words[1] > uint64(s.shards[shard].count()) || words[3] > k.serial {
		return st, false
	}
	st.stream, st.shard, st.pos, st.issued, st.serial = stream, shard, int(words[1]), int64(words[2]), words[3]
	return st, true
}

// issue returns a new iterator at record index pos of sh, issued now.
func (k *Kinesis) issue(s *kstream, sh *kshard, pos int, now time.Time) string {
	k.serial++
	return k.encodeIterator(iterState{
		stream: s.index,
		shard:  sh.index,
		pos:    pos,
		issued: int64(now.Sub(k.origin)),
		serial: k.serial,
	})
}

// GetShardIterator returns an iterator at pos in the shard, valid for
// IteratorTTL:
//
//   - TRIM_HORIZON: the oldest record within retention;
//   - LATEST: just after the last record present now;
//   - AT_TIMESTAMP: the first record with Arrival at or after
//     pos.Timestamp (the end of the shard if there is none);
//   - AT_SEQUENCE_NUMBER / AFTER_SEQUENCE_NUMBER: the first record with a
//     sequence number at or above (above) pos.Sequence, which must lie
//     within the shard's sequence range.
//
// A position before the trim horizon reads from the oldest retained
// record. A missing stream or shard, or a closed shard past retention, is
// an error wrapping engine.ErrNotFound; an invalid position one wrapping
// ErrInvalidArgument.
func (k *Kinesis) GetShardIterator(ctx context.Context, stream, shard string, pos engine.Position) (string, error) {
	const op = engine.OpGetIterator
	now := k.clock.Now()
	if err := k.begin(ctx, op, stream, shard, now); err != nil {
		return "", err
	}
	it, err := k.iteratorAt(stream, shard, pos, now)
	if err = k.end(op, stream, shard, err); err != nil {
		return "", err
	}
	return it, nil
}

func (k *Kinesis) iteratorAt(stream, shard string, pos engine.Position, now time.Time) (string, error) {
	const op = engine.OpGetIterator
	s, sh, err := k.lookup(op, stream, shard)
	if err != nil {
		return "", err
	}
	if !k.listed(sh, now) {
		return "", &callError{op: op, subject: stream, sub: shard, msg: "shard closed beyond retention", err: engine.ErrNotFound}
	}
	first := k.trim(sh, now)
	at := int64(pos.Timestamp.Sub(k.origin))
	var i int
	switch pos.Type {
	case engine.IterTrimHorizon:
		i = first
	case engine.IterLatest:
		i = sh.count()
	case engine.IterAtTimestamp:
		if pos.Timestamp.IsZero() {
			return "", &callError{op: op, subject: stream, sub: shard, msg: "AT_TIMESTAMP without a timestamp", err: ErrInvalidArgument}
		}
		if sh.gen != nil {
			i = max(first, sh.gen.firstFrom(at, &sh.gen.read))
		} else {
			i = max(first, sh.log.search(func(r *krec) bool { return r.arrival >= at }))
		}
	case engine.IterAtSequenceNumber, engine.IterAfterSequenceNumber:
		if msg := k.checkSequence(s, sh, pos.Sequence); msg != "" {
			return "", &callError{op: op, subject: stream, sub: shard, msg: msg, err: ErrInvalidArgument}
		}
		i = s.search(sh, pos.Sequence, pos.Type == engine.IterAfterSequenceNumber)
	default:
		return "", &callError{op: op, subject: stream, sub: shard, msg: "unknown iterator type " + strconv.Quote(string(pos.Type)), err: ErrInvalidArgument}
	}
	return k.issue(s, sh, i, now), nil
}

// checkSequence returns why seq cannot position an iterator in sh, or "".
// Like Kinesis, it accepts any number within the shard's sequence range,
// whether or not a record has it.
func (k *Kinesis) checkSequence(s *kstream, sh *kshard, seq string) string {
	if err := engine.ValidateSequence(seq); err != nil {
		return err.Error()
	}
	if compareDecimal([]byte(seq), sh.info.StartingSequence) < 0 {
		return "sequence number " + seq + " is before the shard's first " + sh.info.StartingSequence
	}
	end := sh.info.EndingSequence
	if end == "" {
		end = sh.seq.format(sh.lastNumber())
	}
	if compareDecimal([]byte(seq), end) > 0 {
		return "sequence number " + seq + " is after the shard's last " + end
	}
	return ""
}

// GetRecords returns up to limit records (1 to 10000) from iterator, in
// sequence order, and the iterator that continues after them.
//
// Records before the trim horizon are skipped. At the end of a closed
// shard (once its last record has been returned, on the same page unless
// SeparateEndPage) NextIterator is "" and ChildShards lists the children
// (unless OmitChildShards). MillisBehind is 0 when the page reaches the
// last record of the shard, else how long ago the last returned record
// arrived.
//
// The page's Records belong to the caller, except their Data, which is
// shared with the fake and must not be modified. ChildShards belongs to
// the caller.
//
// An iterator older than IteratorTTL, or issued before ExpireIterators,
// fails with an error wrapping engine.ErrExpiredIterator; a string that is
// not an iterator of this fake, or a limit out of range, with one wrapping
// ErrInvalidArgument.
func (k *Kinesis) GetRecords(ctx context.Context, iterator string, limit int) (engine.RecordsPage, error) {
	const op = engine.OpGetRecords
	now := k.clock.Now()
	st, ok := k.decodeIterator(iterator)
	var stream, shard string
	if ok {
		s := k.byIndex[st.stream]
		stream, shard = s.name, s.shards[st.shard].info.ID
	}
	if err := k.begin(ctx, op, stream, shard, now); err != nil {
		return engine.RecordsPage{}, err
	}
	page, err := k.read(st, ok, limit, now)
	if err = k.end(op, stream, shard, err); err != nil {
		return engine.RecordsPage{}, err
	}
	return page, nil
}

func (k *Kinesis) read(st iterState, ok bool, limit int, now time.Time) (engine.RecordsPage, error) {
	const op = engine.OpGetRecords
	if !ok {
		return engine.RecordsPage{}, &callError{op: op, msg: "not a shard iterator of this stream", err: ErrInvalidArgument}
	}
	s := k.byIndex[st.stream]
	sh := s.shards[st.shard]
	switch {
	case s.deleted:
		return engine.RecordsPage{}, &callError{op: op, subject: s.name, sub: sh.info.ID, msg: "the stream was deleted", err: engine.ErrNotFound}
	case limit < 1 || limit > maxGetRecordsLimit:
		return engine.RecordsPage{}, &callError{op: op, subject: s.name, sub: sh.info.ID, msg: "limit " + strconv.Itoa(limit) + " out of [1, 10000]", err: ErrInvalidArgument}
	case st.serial <= k.expiredTo:
		return engine.RecordsPage{}, &callError{op: op, subject: s.name, sub: sh.info.ID, msg: "expired by ExpireIterators", err: engine.ErrExpiredIterator}
	case time.Duration(int64(now.Sub(k.origin))-st.issued) > k.opts.IteratorTTL:
		return engine.RecordsPage{}, &callError{op: op, subject: s.name, sub: sh.info.ID, msg: "older than the iterator TTL", err: engine.ErrExpiredIterator}
	}
	pos := max(st.pos, k.trim(sh, now))
	n := sh.count()
	end := min(pos+limit, n)
	var page engine.RecordsPage
	if end > pos {
		page.Records = k.records(s, sh, pos, end)
	}
	if end < n { // then end > pos
		page.MillisBehind = max(now.Sub(page.Records[len(page.Records)-1].Arrival).Milliseconds(), 0)
	}
	if !sh.closed.IsZero() && end == n && (pos == end || !k.opts.SeparateEndPage) {
		if !k.opts.OmitChildShards {
			page.ChildShards = s.childInfos(sh)
		}
		return page, nil
	}
	page.NextIterator = k.issue(s, sh, end, now)
	return page, nil
}
