package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// lineEvery is how often a sweep or a soak whose stderr is not a
// terminal (a pipe, a file, CI) prints a progress line there.
var lineEvery = 10 * time.Second

// progress draws a one-line progress bar on a terminal (on), or prints a
// progress line every lineEvery elsewhere (lines); it does nothing when
// neither.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	on      bool
	lines   bool
	total   int
	n       int
	failed  int
	start   time.Time
	last    time.Time
	drawn   bool
	stopped bool
}

func newProgress(w io.Writer, total int, on, lines bool) *progress {
	now := time.Now()
	return &progress{w: w, on: on, lines: lines && !on, total: total, start: now, last: now}
}

// done counts one finished seed.
func (p *progress) done(failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if failed {
		p.failed++
	}
	if p.stopped {
		return
	}
	now := time.Now()
	switch {
	case p.lines && p.n < p.total && now.Sub(p.last) >= lineEvery:
		p.last = now
		fmt.Fprintf(p.w, "simrun: %s\n", p.status())
	case p.on && (!p.drawn || now.Sub(p.last) >= 100*time.Millisecond || p.n == p.total):
		// a bar that is not on the terminal (the first seed, or other
		// output erased it) is drawn at once; one that is, at most every
		// 100 ms
		p.last = now
		p.draw()
	}
}

// status is the progress in words: seeds done, failures, time, time left.
func (p *progress) status() string {
	el := time.Since(p.start)
	eta := ""
	if p.n > 0 && p.n < p.total {
		rest := time.Duration(float64(el) / float64(p.n) * float64(p.total-p.n))
		eta = ", ~" + rest.Round(time.Second).String() + " left"
	}
	fail := ""
	if p.failed > 0 {
		fail = fmt.Sprintf(", %d FAILED", p.failed)
	}
	return fmt.Sprintf("%d/%d seeds%s, %s%s", p.n, p.total, fail, el.Round(100*time.Millisecond), eta)
}

func (p *progress) draw() {
	const width = 30
	fill := width * p.n / p.total
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill), p.status())
	p.drawn = true
}

// clearLocked erases the bar; the next update draws it again.
func (p *progress) clearLocked() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

// print runs f, which prints other output, with the bar erased.
func (p *progress) print(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	f()
}

// finish erases the bar for good.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	p.stopped = true
}

// isTerminal reports whether w is a terminal (golang.org/x/term) and TERM
// is not "dumb".
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}
