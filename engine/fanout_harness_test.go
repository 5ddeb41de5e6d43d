package engine

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// tFanOut is tStream's enhanced fan-out: consumers that are ACTIVE as
// soon as they are registered (unless creating is set), and subscriptions
// that read the shard's records from a position. Time plays no part:
// tests end subscriptions (end) and inject ResourceInUse through faults.
type tFanOut struct {
	consumers map[string]StreamConsumer // by stream/name
	subs      map[string]*tSub
	next      int
	creating  int // Describe answers CREATING this many times after a Register
	// unsubscribed lists the handles given up, in order.
	unsubscribed []string
	// noContinuation strips ContinuationSequenceNumber from events.
	noContinuation bool
}

type tSub struct {
	stream, shard string
	pos           int // index of the next record
	cont          string
	err           error // set by end: what NextEvent answers
	done          bool  // the shard's end was sent
}

var _ FanOutStream = (*tStream)(nil)

func (s *tStream) fanOut() *tFanOut {
	if s.fo == nil {
		s.fo = &tFanOut{consumers: map[string]StreamConsumer{}, subs: map[string]*tSub{}}
	}
	return s.fo
}

func (s *tStream) DescribeConsumer(ctx context.Context, stream, name string) (StreamConsumer, error) {
	fo := s.fanOut()
	c, ok := fo.consumers[stream+"/"+name]
	if !ok {
		return StreamConsumer{}, fmt.Errorf("consumer %s of %s: %w", name, stream, ErrNotFound)
	}
	if fo.creating > 0 {
		fo.creating--
		c.Status = ConsumerCreating
		return c, nil
	}
	c.Status = ConsumerActive
	fo.consumers[stream+"/"+name] = c
	return c, nil
}

func (s *tStream) RegisterConsumer(ctx context.Context, stream, name string) (StreamConsumer, error) {
	fo := s.fanOut()
	if _, ok := fo.consumers[stream+"/"+name]; ok {
		return StreamConsumer{}, fmt.Errorf("consumer %s of %s exists: %w", name, stream, ErrResourceInUse)
	}
	c := StreamConsumer{Name: name, ARN: "arn:test:" + stream + "/consumer/" + name, Status: ConsumerActive}
	if fo.creating > 0 {
		c.Status = ConsumerCreating
	}
	fo.consumers[stream+"/"+name] = c
	return c, nil
}

func (s *tStream) DeregisterConsumer(ctx context.Context, stream, name string) error {
	fo := s.fanOut()
	if _, ok := fo.consumers[stream+"/"+name]; !ok {
		return fmt.Errorf("consumer %s of %s: %w", name, stream, ErrNotFound)
	}
	delete(fo.consumers, stream+"/"+name)
	return nil
}

func (s *tStream) Subscribe(ctx context.Context, arn, stream, shard string, pos Position) (string, error) {
	fo := s.fanOut()
	if !strings.HasPrefix(arn, "arn:test:"+stream+"/consumer/") {
		return "", fmt.Errorf("consumer %s: %w", arn, ErrNotFound)
	}
	it, err := s.GetShardIterator(ctx, stream, shard, pos)
	if err != nil {
		return "", err
	}
	_, idx, _ := strings.Cut(it, "|")
	var i int
	fmt.Sscan(idx, &i)
	fo.next++
	h := fmt.Sprintf("sub-%d", fo.next)
	fo.subs[h] = &tSub{stream: stream, shard: shard, pos: i}
	return h, nil
}

// end makes subscription h end: its next NextEvent fails with err.
func (s *tStream) end(h string, err error) { s.fanOut().subs[h].err = err }

// lastSub returns the handle of the newest subscription.
func (s *tStream) lastSub() string { return fmt.Sprintf("sub-%d", s.fanOut().next) }

func (s *tStream) NextEvent(ctx context.Context, h string, wait time.Duration) (SubscriptionEvent, error) {
	sub := s.fanOut().subs[h]
	if sub == nil || sub.done {
		return SubscriptionEvent{}, fmt.Errorf("subscription %s: %w", h, ErrSubscriptionEnded)
	}
	if sub.err != nil {
		return SubscriptionEvent{}, sub.err
	}
	recs := s.recs[sub.shard]
	ev := SubscriptionEvent{Records: append([]Record(nil), recs[sub.pos:]...)}
	sub.pos = len(recs)
	if len(ev.Records) > 0 {
		sub.cont = ev.Records[len(ev.Records)-1].Sequence
	} else {
		// Nothing new: the continuation covers every sequence number
		// taken so far (the stream's are global, as Kinesis's are).
		sub.cont = fmt.Sprintf("4959%052d", s.seq)
	}
	ev.Continuation = sub.cont
	if s.fanOut().noContinuation {
		ev.Continuation = ""
	}
	if sh := s.shard(sub.shard); sh != nil && sh.Closed() {
		ev.Continuation, ev.End = "", true
		sub.done = true
		if s.childShards {
			for _, c := range s.shards {
				if c.Parent == sub.shard || c.AdjacentParent == sub.shard {
					ev.ChildShards = append(ev.ChildShards, c)
				}
			}
		}
	}
	return ev, nil
}

func (s *tStream) Unsubscribe(ctx context.Context, h string) error {
	fo := s.fanOut()
	fo.unsubscribed = append(fo.unsubscribed, h)
	delete(fo.subs, h)
	return nil
}
