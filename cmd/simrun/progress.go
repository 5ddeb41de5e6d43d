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

// progress draws a one-line progress bar on a terminal; it does nothing
// when disabled.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	on      bool
	total   int
	n       int
	failed  int
	start   time.Time
	last    time.Time
	drawn   bool
	stopped bool
}

func newProgress(w io.Writer, total int, on bool) *progress {
	return &progress{w: w, on: on, total: total, start: time.Now()}
}

// done counts one finished seed.
func (p *progress) done(failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if failed {
		p.failed++
	}
	if !p.on || p.stopped {
		return
	}
	if now := time.Now(); now.Sub(p.last) >= 100*time.Millisecond || p.n == p.total {
		p.last = now
		p.draw()
	}
}

func (p *progress) draw() {
	const width = 30
	fill := width * p.n / p.total
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
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d seeds%s, %s%s", strings.Repeat("#", fill), strings.Repeat(".", width-fill), p.n, p.total, fail, el.Round(100*time.Millisecond), eta)
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
