package engine

import (
	"context"
	"errors"
	"slices"
	"time"
)

// watchRunner keeps one of the watches a worker asks for (Ready.Watch) on
// its own goroutine, and feeds what it learns to the loop as InputWatch.
type watchRunner struct {
	cancel context.CancelFunc
}

// watchBackoff bounds the wait between attempts to start a watch.
const (
	watchBackoffMin = 100 * time.Millisecond
	watchBackoffMax = 5 * time.Second
)

// keepWatches opens a watch for every value of want that has none and
// closes those want no longer names (see Ready.Watch).
func (c *Consumer) keepWatches(ctx context.Context, want []string) {
	pw, ok := c.opts.Store.(PendingWatcher)
	if !ok {
		return
	}
	for who, r := range c.watches { // order does not matter: each is independent
		if !slices.Contains(want, who) {
			r.cancel()
			delete(c.watches, who)
		}
	}
	for _, who := range want {
		if c.watches[who] == nil {
			wctx, cancel := context.WithCancel(ctx)
			c.watches[who] = &watchRunner{cancel: cancel}
			go c.runWatch(wctx, pw, who)
		}
	}
}

// stopWatches closes every watch.
func (c *Consumer) stopWatches() {
	for who, r := range c.watches {
		r.cancel()
		delete(c.watches, who)
	}
}

// runWatch keeps a watch of who's pending rows until ctx ends: it starts
// one (retrying with backoff), reports it Started, feeds its changes, and
// when it is lost reports that and starts another. While none is up the
// worker polls the index as it would without a watch.
func (c *Consumer) runWatch(ctx context.Context, pw PendingWatcher, who string) {
	backoff := watchBackoffMin
	for ctx.Err() == nil {
		sctx, cancel := c.clk.WithTimeout(ctx, c.opts.CallTimeout)
		w, err := pw.WatchPending(sctx, who)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("the pending watch did not start; the worker polls the index meanwhile", "who", who, "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-c.clk.After(backoff):
			}
			backoff = min(2*backoff, watchBackoffMax)
			continue
		}
		backoff = watchBackoffMin
		c.log.Debug("pending watch started", "who", who)
		c.feed(Input{Kind: InputWatch, Watch: WatchInput{Who: who, Started: true}})
		for {
			cs, err := w.Next(ctx)
			if err != nil {
				_ = w.Close()
				if ctx.Err() != nil {
					return
				}
				if !errors.Is(err, ErrWatchLost) {
					err = errors.Join(ErrWatchLost, err)
				}
				c.log.Warn("the pending watch was lost; the worker reads the index and watches again", "who", who, "err", err)
				c.feed(Input{Kind: InputWatch, Watch: WatchInput{Who: who, Lost: err}})
				break
			}
			c.feed(Input{Kind: InputWatch, Watch: WatchInput{Who: who, Changes: cs}})
		}
	}
}
