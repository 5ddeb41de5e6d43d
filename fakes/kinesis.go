package fakes

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Kinesis defaults, as the service has them.
const (
	DefaultRetention   = 24 * time.Hour
	DefaultIteratorTTL = 5 * time.Minute
)

// maxGetRecordsLimit is the largest GetRecords limit Kinesis accepts.
const maxGetRecordsLimit = 10000

// KinesisOptions configures a Kinesis. The zero value has the service's
// defaults.
type KinesisOptions struct {
	// Clock is the stream's time source. nil: a new ManualClock reading
	// 2025-01-01T00:00:00Z, available from Kinesis.Clock.
	Clock Clock
	// Seed seeds the stream tags in sequence numbers and the iterator tag.
	Seed uint64
	// Retention is how long records stay readable, and closed shards
	// listed, after they arrive (close). Default DefaultRetention.
	Retention time.Duration
	// IteratorTTL is how long a shard iterator stays valid after it is
	// issued. Default DefaultIteratorTTL.
	IteratorTTL time.Duration
	// OmitChildShards makes GetRecords never return ChildShards at the end
	// of a closed shard, as kinesalite does.
	OmitChildShards bool
	// SeparateEndPage makes the page that returns the last records of a
	// closed shard still carry a NextIterator; the end (an empty
	// NextIterator) then comes on a following empty page. By default the
	// end comes with the last records.
	SeparateEndPage bool
	// OnTrim, if set, is called each time retention hides records of a
	// shard, with the records it has just hidden (oldest first; the
	// slice belongs to the callee, the records' Data is shared with the
	// fake and must not be modified). Retention is
	// applied lazily, when a call or accessor looks at the shard, so a
	// caller sees every trim no later than any reader could observe it. It
	// must not call back into the fake.
	OnTrim func(stream, shard string, trimmed []engine.Record)
	// OnTrimRange, if set, is called where OnTrim is, with the sequence
	// numbers of the first and last records just hidden and their count
	// only: it costs nothing per record (a generated stream's records
	// are made when they are read). The same rules hold.
	OnTrimRange func(stream, shard, first, last string, count int)
	// FreeTrimmed frees records past retention (in chunks of 64): a stream
	// then holds what retention keeps, not everything ever put, and
	// Records returns the records still held. Readers see no difference: a read never returns trimmed
	// records, and an iterator positioned among freed records reads from
	// the oldest retained one, as one among trimmed records does.
	FreeTrimmed bool
}

// Kinesis is an in-memory Kinesis Data Streams that implements
// engine.Stream, plus the producer and administrative calls a simulation
// needs: CreateStream, PutRecord, SplitShard, MergeShards, and accessors
// for checkers (Shards, Records, Trimmed).
//
// Records are kept forever, including those trimmed by retention (which
// only makes them unreadable), so that checkers can see everything ever
// put. They are stored compactly (a sequence counter, an arrival offset, a
// partition key index: 24 bytes, plus the data if any) and become
// engine.Records when read. A stream made by CreateGeneratedStream stores
// none: its records are derived again whenever they are read (see
// GeneratedRecords). Faults are injected through the embedded Faults on ListShards,
// GetShardIterator and GetRecords; ExpireIterators expires every issued
// iterator.
//
// A Kinesis is not safe for concurrent use. Create it with NewKinesis.
type Kinesis struct {
	Faults

	clock     Clock
	rng       *rand.Rand
	opts      KinesisOptions
	origin    time.Time // iterator issue times are offsets from it
	tag       uint64    // marks this fake's iterators
	streams   map[string]*kstream
	byIndex   []*kstream // creation order; the index is in iterators
	serial    uint64     // serial of the last iterator issued
	expiredTo uint64     // iterators with serial <= expiredTo are expired
	stats     Stats
	fo        *fanOut // enhanced fan-out (consumers.go), made on first use
}

// kstream is one stream.
type kstream struct {
	name    string
	created time.Time // see createdAt
	deleted bool      // by DeleteStream
	index   int
	seq     seqGen
	rng     *rand.Rand // the fake's: draws each new shard's sequence layout
	shards  []*kshard  // creation order: shards[i] is shardId-<i>
	byID    map[string]*kshard
	open    []*kshard    // open shards sorted by starting hash key
	listing shardListing // ListShards' answer, shared (listing.go)
	// the partition keys and data of its records, each stored once
	pkeys  []string
	pkeyOf map[string]uint32
	data   [][]byte   // data[0] is nil
	gen    *genStream // a generated stream's (generate.go); nil if stored
}

// kshard is one shard of a stream.
type kshard struct {
	index       int
	stream      *kstream
	info        engine.Shard
	start, end  hashKey
	children    []string
	created     time.Time
	closed      time.Time // zero while open
	log         recordLog // a stored stream's records
	gen         *genShard // a generated stream's (generate.go)
	seq         seqLayout // how its counters are written as sequence numbers
	trimmed     int       // records[:trimmed] are past retention
	lastArrival int64     // arrival times (from the origin) never decrease within a shard
	// trimmedBefore: a retention horizon at or below it trims nothing
	// more (the arrival of records[trimmed]; MaxInt64 if none, until a put)
	trimmedBefore int64
}

var _ engine.Stream = (*Kinesis)(nil)

// NewKinesis returns a Kinesis without streams, configured by opts.
func NewKinesis(opts KinesisOptions) *Kinesis {
	if opts.Clock == nil {
		opts.Clock = NewManualClock(defaultStart)
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.IteratorTTL <= 0 {
		opts.IteratorTTL = DefaultIteratorTTL
	}
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x6b696e65736973))
	return &Kinesis{
		clock:   opts.Clock,
		rng:     rng,
		opts:    opts,
		origin:  opts.Clock.Now(),
		tag:     rng.Uint64() >> 40,
		streams: make(map[string]*kstream),
	}
}

// Clock returns the stream's clock.
func (k *Kinesis) Clock() Clock { return k.clock }

// Stats returns the call counts so far, per engine.Op (ListShards,
// GetShardIterator, GetRecords).
func (k *Kinesis) Stats() Stats { return k.stats }

// CreateStream creates stream name with shardCount open shards that split
// the hash key space evenly, with ids shardId-000000000000 upwards.
func (k *Kinesis) CreateStream(name string, shardCount int) error {
	return k.createStream(name, shardCount, nil)
}

// createStream creates a stream, generated if gen is not nil.
func (k *Kinesis) createStream(name string, shardCount int, gen *genStream) error {
	if err := validStreamName(name); err != nil {
		return err
	}
	if _, ok := k.streams[name]; ok {
		return &callError{msg: "CreateStream " + name + ": stream exists", err: ErrInvalidArgument}
	}
	if shardCount < 1 || shardCount > 1<<20 {
		return &callError{msg: "CreateStream " + name + ": shard count " + strconv.Itoa(shardCount) + " out of [1, 2^20]", err: ErrInvalidArgument}
	}
	s := &kstream{name: name, index: len(k.byIndex), seq: newSeqGen(), rng: k.rng, byID: make(map[string]*kshard),
		pkeyOf: make(map[string]uint32), data: [][]byte{nil}, gen: gen}
	now := k.clock.Now()
	for _, r := range evenRanges(shardCount) {
		s.addShard(r[0], r[1], "", "", now)
	}
	s.reindexOpen()
	if gen != nil {
		for _, sh := range s.shards {
			k.startGen(s, sh, false, now)
		}
		gen.rebuild(s.open)
	}
	k.createdAt(s, now)
	k.streams[name] = s
	k.byIndex = append(k.byIndex, s)
	return nil
}

// validStreamName reports whether name is a valid Kinesis stream name.
func validStreamName(name string) error {
	ok := name != "" && len(name) <= 128
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
	}
	if !ok {
		return &callError{msg: "stream name " + strconv.Quote(name) + " is not 1 to 128 of [a-zA-Z0-9_.-]", err: ErrInvalidArgument}
	}
	return nil
}

// addShard creates an open shard of s covering [start, end] and returns
// it. The caller re-indexes the open shards.
func (s *kstream) addShard(start, end hashKey, parent, adjacent string, now time.Time) *kshard {
	sh := &kshard{index: len(s.shards), stream: s, start: start, end: end, created: now}
	n0 := s.seq.take()
	sh.seq = drawLayout(s.rng, n0)
	sh.info = engine.Shard{
		ID:               shardID(sh.index),
		Parent:           parent,
		AdjacentParent:   adjacent,
		StartingHashKey:  start.String(),
		EndingHashKey:    end.String(),
		StartingSequence: sh.seq.format(n0),
	}
	s.shards = append(s.shards, sh)
	s.byID[sh.info.ID] = sh
	s.listing.forget()
	return sh
}

// shardID returns the id of shard number i of a stream.
func shardID(i int) string {
	const prefix = "shardId-"
	b := []byte(prefix + "000000000000")
	for j := len(b) - 1; j >= len(prefix) && i > 0; j-- {
		b[j] = '0' + byte(i%10)
		i /= 10
	}
	return string(b)
}

// route returns the open shard whose hash range contains h. The open
// ranges always cover the whole hash key space.
func (s *kstream) route(h hashKey) *kshard {
	lo, hi := 0, len(s.open)-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s.open[mid].end.cmp(h) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return s.open[lo]
}

// reindexOpen rebuilds the list of open shards sorted by hash range.
func (s *kstream) reindexOpen() {
	s.open = s.open[:0]
	for _, sh := range s.shards {
		if sh.closed.IsZero() {
			s.open = append(s.open, sh)
		}
	}
	sort.Slice(s.open, func(i, j int) bool { return s.open[i].start.cmp(s.open[j].start) < 0 })
}

// PutRecord appends a record to the open shard of stream whose hash range
// contains MD5(partitionKey) and returns the shard's id and the record's
// sequence number. The record's Arrival is the clock's reading (never
// before the shard's previous record). data is copied. PutRecord is the
// workload, not an engine call: it is never faulted nor counted.
func (k *Kinesis) PutRecord(stream, partitionKey string, data []byte) (shardID, sequence string, err error) {
	s := k.streams[stream]
	if s == nil {
		return "", "", &callError{msg: "PutRecord " + stream + ": no such stream", err: engine.ErrNotFound}
	}
	if partitionKey == "" || len(partitionKey) > 256 {
		return "", "", &callError{msg: "PutRecord " + stream + ": partition key must have 1 to 256 characters", err: ErrInvalidArgument}
	}
	return k.put(s, partitionKey, hashOf(partitionKey), data)
}

// PutRecordWithHash is PutRecord with an explicit hash key (as the
// ExplicitHashKey parameter of PutRecord): the record goes to the open
// shard whose range contains the 128-bit hash key hi·2^64 + lo, whatever
// its partition key.
func (k *Kinesis) PutRecordWithHash(stream, partitionKey string, hi, lo uint64, data []byte) (shardID, sequence string, err error) {
	s := k.streams[stream]
	if s == nil {
		return "", "", &callError{msg: "PutRecord " + stream + ": no such stream", err: engine.ErrNotFound}
	}
	if partitionKey == "" || len(partitionKey) > 256 {
		return "", "", &callError{msg: "PutRecord " + stream + ": partition key must have 1 to 256 characters", err: ErrInvalidArgument}
	}
	return k.put(s, partitionKey, hashKey{hi, lo}, data)
}

// put appends a record with hash key h to the open shard of s that owns h.
func (k *Kinesis) put(s *kstream, partitionKey string, h hashKey, data []byte) (shardID, sequence string, err error) {
	sh := s.route(h)
	if sh.gen != nil {
		shardID, sequence = k.putStored(s, sh, partitionKey, data)
		return shardID, sequence, nil
	}
	now := int64(k.clock.Now().Sub(k.origin))
	if now < sh.lastArrival {
		now = sh.lastArrival
	}
	sh.lastArrival = now
	pk, ok := s.pkeyOf[partitionKey]
	if !ok {
		pk = uint32(len(s.pkeys))
		s.pkeys = append(s.pkeys, partitionKey)
		s.pkeyOf[partitionKey] = pk
	}
	var d uint32
	if data != nil {
		d = uint32(len(s.data))
		s.data = append(s.data, bytes.Clone(data))
	}
	n := s.seq.take()
	seq := sh.seq.format(n)
	sh.log.append(krec{n: n, arrival: now, pkey: pk, data: d})
	if sh.trimmed == sh.log.len()-1 {
		sh.trimmedBefore = now // the oldest retained record
	}
	return sh.info.ID, seq, nil
}

// ListShards returns the shards of stream that Kinesis lists: every open
// shard and every closed one closed within the retention period, sorted by
// id. The slice is shared by every caller until the stream's shards
// change (a shard added or closed, a closed one past retention) and must
// not be modified.
func (k *Kinesis) ListShards(ctx context.Context, stream string) ([]engine.Shard, error) {
	const op = engine.OpListShards
	now := k.clock.Now()
	if err := k.begin(ctx, op, stream, "", now); err != nil {
		return nil, err
	}
	var out []engine.Shard
	var err error
	if s := k.streams[stream]; s == nil {
		err = &callError{op: op, subject: stream, msg: "no such stream", err: engine.ErrNotFound}
	} else {
		out = k.listing(s, now)
	}
	if err = k.end(op, stream, "", err); err != nil {
		return nil, err
	}
	return out, nil
}

// listed reports whether sh is still listed at now: open, or closed within
// retention.
func (k *Kinesis) listed(sh *kshard, now time.Time) bool {
	return sh.closed.IsZero() || !sh.closed.Before(now.Add(-k.opts.Retention))
}

// trim advances sh's retention horizon to now and returns the index of
// its oldest retained record.
func (k *Kinesis) trim(sh *kshard, now time.Time) int {
	horizon := int64(now.Sub(k.origin)) - int64(k.opts.Retention)
	if horizon <= sh.trimmedBefore {
		return sh.trimmed // nothing new past retention
	}
	from := sh.trimmed
	if sh.gen != nil {
		sh.gen.genTrim(sh, horizon)
		k.onTrim(sh, from)
		return sh.trimmed
	}
	n := sh.log.len()
	if from < n {
		c := sh.log.at(from)
		for c.i < n && c.cur.arrival < horizon {
			c.next()
		}
		sh.trimmed = c.i
	}
	k.onTrim(sh, from)
	if k.opts.FreeTrimmed {
		sh.log.freeBefore(sh.trimmed)
	}
	// until the horizon passes the oldest retained record, nothing changes
	sh.trimmedBefore = math.MaxInt64
	if sh.trimmed < n {
		sh.trimmedBefore = sh.log.get(sh.trimmed).arrival
	}
	return sh.trimmed
}

// onTrim calls the trim hooks for the records from..sh.trimmed-1 just
// hidden, if any.
func (k *Kinesis) onTrim(sh *kshard, from int) {
	if sh.trimmed <= from {
		return
	}
	if k.opts.OnTrim != nil {
		k.opts.OnTrim(sh.stream.name, sh.info.ID, k.records(sh.stream, sh, from, sh.trimmed))
	}
	if k.opts.OnTrimRange != nil {
		k.opts.OnTrimRange(sh.stream.name, sh.info.ID, sh.sequenceAt(from), sh.sequenceAt(sh.trimmed-1), sh.trimmed-from)
	}
}

// ExpireIterators makes every shard iterator issued so far expired: a
// GetRecords with one fails with an error wrapping
// engine.ErrExpiredIterator. Iterators issued later are not affected.
func (k *Kinesis) ExpireIterators() { k.expiredTo = k.serial }

// begin starts an engine call: it fails it if ctx is done or an injected
// fault says so, counting the failure.
func (k *Kinesis) begin(ctx context.Context, op engine.Op, stream, shard string, now time.Time) error {
	if err := ctx.Err(); err != nil {
		err = &callError{op: op, subject: stream, sub: shard, err: err}
		k.stats.count(op, err, false)
		return err
	}
	if err := k.Faults.before(op, stream, shard, now); err != nil {
		k.stats.count(op, err, true)
		return err
	}
	return nil
}

// end finishes an engine call that executed with result err: a failure
// queued by FailNextApplied replaces it. It counts the call.
func (k *Kinesis) end(op engine.Op, stream, shard string, err error) error {
	if ferr := k.Faults.after(op, stream, shard); ferr != nil {
		k.stats.count(op, ferr, true)
		return ferr
	}
	k.stats.count(op, err, false)
	return err
}

// lookup returns the shard, or an error wrapping engine.ErrNotFound.
func (k *Kinesis) lookup(op engine.Op, stream, shard string) (*kstream, *kshard, error) {
	s := k.streams[stream]
	if s == nil {
		return nil, nil, &callError{op: op, subject: stream, sub: shard, msg: "no such stream", err: engine.ErrNotFound}
	}
	sh := s.byID[shard]
	if sh == nil {
		return s, nil, &callError{op: op, subject: stream, sub: shard, msg: "no such shard", err: engine.ErrNotFound}
	}
	return s, sh, nil
}

// ShardInfo is everything the fake knows about one shard, for checkers.
type ShardInfo struct {
	engine.Shard
	// Children are the shards made from this one by a split (two) or a
	// merge (one), in creation order.
	Children  []string
	CreatedAt time.Time
	ClosedAt  time.Time // zero while open
	// Listed reports whether ListShards still returns the shard.
	Listed bool
	// Records counts every record ever put to the shard; Trimmed those of
	// them past retention now.
	Records int
	Trimmed int
}

// Shards returns every shard stream ever had, listed or not, sorted by id:
// the shard graph. The slice and its Children belong to the caller.
func (k *Kinesis) Shards(stream string) ([]ShardInfo, error) {
	s := k.streams[stream]
	if s == nil {
		return nil, &callError{msg: "Shards " + stream + ": no such stream", err: engine.ErrNotFound}
	}
	now := k.clock.Now()
	out := make([]ShardInfo, len(s.shards))
	for i, sh := range s.shards {
		out[i] = ShardInfo{
			Shard:     sh.info,
			Children:  append([]string(nil), sh.children...),
			CreatedAt: sh.created,
			ClosedAt:  sh.closed,
			Listed:    k.listed(sh, now),
			Records:   sh.count(),
			Trimmed:   k.trim(sh, now),
		}
	}
	return out, nil
}

// Records returns every record ever put to the shard, including those
// trimmed by retention (with FreeTrimmed, from the oldest one still held),
// in sequence order. The slice belongs to the caller; the records' Data is
// shared with the fake and must not be modified.
func (k *Kinesis) Records(stream, shard string) ([]engine.Record, error) {
	s, sh, err := k.lookup(0, stream, shard)
	if err != nil {
		return nil, err
	}
	return k.records(s, sh, sh.held(), sh.count()), nil
}

// Retained returns the records of the shard that retention still keeps,
// in sequence order (the slice belongs to the caller, as with Records).
func (k *Kinesis) Retained(stream, shard string) ([]engine.Record, error) {
	s, sh, err := k.lookup(0, stream, shard)
	if err != nil {
		return nil, err
	}
	return k.records(s, sh, k.trim(sh, k.clock.Now()), sh.count()), nil
}

// RetainedRange returns the sequence numbers of the first and last
// records of the shard that retention still keeps, and how many there are
// ("", "", 0 if none): Retained's bounds, without making its records.
func (k *Kinesis) RetainedRange(stream, shard string) (first, last string, n int, err error) {
	_, sh, err := k.lookup(0, stream, shard)
	if err != nil {
		return "", "", 0, err
	}
	from, to := k.trim(sh, k.clock.Now()), sh.count()
	if from >= to {
		return "", "", 0, nil
	}
	return sh.sequenceAt(from), sh.sequenceAt(to - 1), to - from, nil
}

// Trimmed returns how many records of the shard are past retention now
// (unreadable: lost to a consumer that had not read them).
func (k *Kinesis) Trimmed(stream, shard string) (int, error) {
	_, sh, err := k.lookup(0, stream, shard)
	if err != nil {
		return 0, err
	}
	return k.trim(sh, k.clock.Now()), nil
}
