package reports

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/sim"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// Limits that keep a report of a big run readable and its file small.
const (
	// MaxShardLanes caps the shard lanes drawn (lanes with a violation are
	// kept first).
	MaxShardLanes = 160
	// MaxBars caps the owner bars drawn; beyond it, bars of one owner on
	// one lane closer than minGapPx are merged.
	MaxBars = 6000
)

// geometry of the timeline, in SVG user units (pixels at 100%).
const (
	labelW  = 168.0
	plotW   = 1000.0
	rightW  = 12.0
	axisH   = 30.0
	laneH   = 12.0
	lanePit = 16.0
	gapH    = 22.0
)

var palette = []string{
	"#4e79a7", "#f28e2b", "#59a14f", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
	"#86bcb6", "#8cd17d", "#499894", "#d4a6c8", "#79706e", "#a0cbe8", "#ffbe7d", "#b6992d",
}

// ownerColor returns the colour of the i-th owner.
func ownerColor(i int) string {
	if i < len(palette) {
		return palette[i]
	}
	return fmt.Sprintf("hsl(%d,55%%,52%%)", (i*137)%360)
}

// timeline is the drawable content of one run.
type timeline struct {
	end, chaos time.Duration
	owners     []string
	ownerIdx   map[string]int
	slots      []*slotLane
	shards     []*shardLane
	shardIdx   map[string]int
	omitted    int
	global     []band // table/stream throttles, bursts
	across     []band // partitions, pauses and crashes drawn across the shard lanes
	links      []link // split and merge connectors
	viols      []violMark
	bars       int
	merged     bool
	// split, when set, is where the scale changes: [0, split] takes
	// splitFrac of the width, the long healing phase after it the rest.
	split time.Duration
}

// splitFrac is the part of the width the time before the split takes.
const splitFrac = 0.75

type slotLane struct {
	slot  int
	procs []procSpan
	bands []band
	marks []mark
}

type procSpan struct {
	id          int32
	owner       string
	start, stop time.Duration
	stopped     bool
	reason      string
}

type shardLane struct {
	id             string
	created, ended time.Duration
	closed         bool
	parents        []string
	bars           []bar
	holds          []hold
	marks          []mark
	violation      bool
}

type bar struct {
	owner      string
	proc       int32
	start, end time.Duration // first to last act
	endedBy    string
	n          int // tenures merged into it
}

// hold is a stretch in which the lease table named one owner in the row
// of a shard.
type hold struct {
	owner      string
	start, end time.Duration
	how, why   string // the writes that began and ended it
	n          int
}

func orNobody(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

type band struct {
	from, to time.Duration
	class    string
	title    string
	slot     int
}

type mark struct {
	at    time.Duration
	class string
	glyph string
	title string
}

type link struct {
	at       time.Duration
	from, to string
	class    string
}

type violMark struct {
	n         int
	inv, key  string
	from, to  time.Duration
	title     string
	tolerated bool
}

func buildTimeline(res *sim.Result) *timeline {
	tl := &timeline{end: time.Duration(res.VirtualSeconds * float64(time.Second)), chaos: res.World.Chaos,
		ownerIdx: map[string]int{}, shardIdx: map[string]int{}}
	recs := res.Trace
	if n := len(recs); n > 0 && recs[n-1].T > tl.end {
		tl.end = recs[n-1].T
	}
	if tl.end <= 0 {
		tl.end = time.Second
	}
	addOwner := func(o string) {
		if _, ok := tl.ownerIdx[o]; !ok {
			tl.ownerIdx[o] = len(tl.owners)
			tl.owners = append(tl.owners, o)
		}
	}
	slotOf := func(i int) *slotLane {
		for len(tl.slots) <= i {
			tl.slots = append(tl.slots, &slotLane{slot: len(tl.slots)})
		}
		return tl.slots[i]
	}
	applied := map[string]int32{}
	procs := map[int32]*procSpan{}
	procSlot := map[int32]int{}
	// the number of worker slots over time, to resolve action worker indexes
	type slotCount struct {
		at time.Duration
		n  int
	}
	var counts []slotCount
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case trace.KindShardCreated:
			if _, ok := tl.shardIdx[r.Key]; !ok {
				tl.shardIdx[r.Key] = len(tl.shards)
				tl.shards = append(tl.shards, &shardLane{id: r.Key, created: r.T, ended: -1})
			}
			sl := tl.shards[tl.shardIdx[r.Key]]
			for _, p := range []string{r.Parent, r.Parent2} {
				if p != "" {
					sl.parents = append(sl.parents, p)
					cls := "split"
					if r.Parent2 != "" {
						cls = "merge"
					}
					tl.links = append(tl.links, link{at: r.T, from: p, to: r.Key, class: cls})
				}
			}
		case trace.KindShardClosed:
			if i, ok := tl.shardIdx[r.Key]; ok {
				tl.shards[i].closed = true
				tl.shards[i].ended = r.T
			}
		case trace.KindShardExpired:
			if i, ok := tl.shardIdx[r.Key]; ok && tl.shards[i].ended < 0 {
				tl.shards[i].ended = r.T
			}
		case trace.KindProcStart:
			addOwner(r.Owner)
			p := &procSpan{id: r.Proc, owner: r.Owner, start: r.T, stop: -1}
			procs[r.Proc] = p
			procSlot[r.Proc] = int(r.Worker)
			sl := slotOf(int(r.Worker))
			sl.procs = append(sl.procs, *p)
			if len(counts) == 0 || counts[len(counts)-1].n < len(tl.slots) {
				counts = append(counts, slotCount{r.T, len(tl.slots)})
			}
		case trace.KindProcStop:
			if p := procs[r.Proc]; p != nil {
				sl := slotOf(procSlot[r.Proc])
				for j := range sl.procs {
					if sl.procs[j].id == r.Proc {
						sl.procs[j].stop, sl.procs[j].stopped, sl.procs[j].reason = r.T, true, r.Reason
					}
				}
				if r.Reason == "crash" {
					sl.marks = append(sl.marks, mark{at: r.T, class: "crash", glyph: "✕", title: fmt.Sprintf("%s#%d crashed at %s", r.Owner, r.Proc, secs(r.T))})
				}
			}
		case trace.KindFault:
			applied[faultKey(r.T, r.Reason)] = r.Worker // a shard's owner the action resolved to, or -1
		}
	}
	slotsAt := func(t time.Duration) int {
		n := 1
		for _, c := range counts {
			if c.at <= t {
				n = c.n
			}
		}
		return n
	}
	resolve := func(w int, t time.Duration) int {
		if w < 0 {
			w = -w
		}
		return w % slotsAt(t)
	}
	clip := func(from, dur time.Duration) time.Duration {
		to := from + dur
		if to > tl.chaos && from < tl.chaos {
			to = tl.chaos // healing ends every fault
		}
		if to > tl.end {
			to = tl.end
		}
		return to
	}

	// faults of the schedule that took effect
	for _, a := range res.Schedule {
		target, ok := applied[faultKey(a.At, a.String())]
		if !ok {
			continue
		}
		if target >= 0 {
			a.Worker = int(target) // aimed at the owner of a.Shard
		}
		desc := strings.TrimSpace(a.String())
		switch a.Kind {
		case sim.ActPause:
			w := resolve(a.Worker, a.At)
			b := band{from: a.At, to: clip(a.At, a.Dur), class: "pause", title: desc, slot: w}
			slotOf(w).bands = append(slotOf(w).bands, b)
			tl.across = append(tl.across, b)
		case sim.ActPartition, sim.ActClog:
			cls := "partition"
			if a.Kind == sim.ActClog {
				cls = "clog"
			}
			for _, wi := range a.Workers {
				w := resolve(wi, a.At)
				b := band{from: a.At, to: clip(a.At, a.Dur), class: cls, title: desc, slot: w}
				slotOf(w).bands = append(slotOf(w).bands, b)
				if cls == "partition" {
					tl.across = append(tl.across, b)
				}
			}
		case sim.ActClockStep:
			w := resolve(a.Worker, a.At)
			g := "▲"
			if a.Extra < 0 {
				g = "▼"
			}
			slotOf(w).marks = append(slotOf(w).marks, mark{at: a.At, class: "clock", glyph: g, title: desc})
		case sim.ActTableThrottle, sim.ActStreamThrottle, sim.ActBurst, sim.ActSDKRetry:
			cls := map[sim.ActionKind]string{sim.ActTableThrottle: "tthrottle", sim.ActStreamThrottle: "sthrottle", sim.ActBurst: "burst", sim.ActSDKRetry: "sdkretry"}[a.Kind]
			tl.global = append(tl.global, band{from: a.At, to: clip(a.At, a.Dur), class: cls, title: desc, slot: -1})
		case sim.ActShutdown, sim.ActScaleIn:
			w := resolve(a.Worker, a.At)
			slotOf(w).marks = append(slotOf(w).marks, mark{at: a.At, class: "shutdown", glyph: "○", title: desc})
		case sim.ActScaleOut, sim.ActDupOwner:
			// shown by the new slot's process bar
		}
	}
	// crashes: the slot is down from the crash to its next start
	for _, sl := range tl.slots {
		for j, p := range sl.procs {
			if !p.stopped || p.reason != "crash" {
				continue
			}
			to := tl.end
			if j+1 < len(sl.procs) {
				to = sl.procs[j+1].start
			}
			b := band{from: p.stop, to: to, class: "crash", title: fmt.Sprintf("w%d down after a crash of %s#%d, %s..%s", sl.slot, p.owner, p.id, secs(p.stop), secs(to)), slot: sl.slot}
			sl.bands = append(sl.bands, b)
			tl.across = append(tl.across, b)
		}
	}

	// ownership bars: the tenures of the checkers (first to last act)
	for _, t := range check.Tenures(recs) {
		i, ok := tl.shardIdx[t.Key]
		if !ok {
			tl.shardIdx[t.Key] = len(tl.shards)
			tl.shards = append(tl.shards, &shardLane{id: t.Key, ended: -1})
			i = tl.shardIdx[t.Key]
		}
		addOwner(t.Owner)
		b := bar{owner: t.Owner, proc: t.Proc, start: t.Start, end: t.End, n: 1}
		if t.Open {
			b.endedBy = "still acting at the end"
		} else {
			b.endedBy = t.EndedBy.String()
		}
		tl.shards[i].bars = append(tl.shards[i].bars, b)
		tl.bars++
	}
	// the lease table's view: who the row of each shard names as owner,
	// from the applied writes (a renew by the same owner continues it)
	type rowOwner struct {
		owner string
		since time.Duration
		how   string
	}
	rows := map[string]*rowOwner{}
	var keys []string
	flush := func(key string, ro *rowOwner, at time.Duration, why string) {
		if ro.owner == "" {
			return
		}
		if i, ok := tl.shardIdx[key]; ok {
			addOwner(ro.owner)
			tl.shards[i].holds = append(tl.shards[i].holds, hold{owner: ro.owner, start: ro.since, end: at, how: ro.how, why: why, n: 1})
		}
	}
	for i := range recs {
		r := &recs[i]
		if r.Kind != trace.KindApply || r.Outcome != trace.OutcomeOK || r.Key == "" {
			continue
		}
		ro := rows[r.Key]
		if ro == nil {
			ro = &rowOwner{}
			rows[r.Key] = ro
			keys = append(keys, r.Key)
		}
		if r.RowOwner == ro.owner {
			continue
		}
		flush(r.Key, ro, r.T, "then "+r.Reason+" by "+orNobody(r.Owner))
		ro.owner, ro.since, ro.how = r.RowOwner, r.T, r.Reason+" by "+orNobody(r.Owner)
		if r.Unconditional {
			ro.how += ", unconditional"
		}
	}
	for _, k := range keys {
		flush(k, rows[k], tl.end, "still at the end")
	}

	// split and merge marks on the parents
	for _, l := range tl.links {
		if i, ok := tl.shardIdx[l.from]; ok {
			sl := tl.shards[i]
			g, what := "◆", "merged into "+l.to
			if l.class == "split" {
				g, what = "◀", "split into "+l.to
			}
			dup := false
			for _, m := range sl.marks {
				if m.at == l.at && m.class == l.class {
					dup = true
				}
			}
			if !dup {
				sl.marks = append(sl.marks, mark{at: l.at, class: l.class, glyph: g, title: fmt.Sprintf("%s %s at %s", l.from, what, secs(l.at))})
			} else {
				for k := range sl.marks {
					if sl.marks[k].at == l.at && sl.marks[k].class == l.class {
						sl.marks[k].title += ", " + l.to
					}
				}
			}
		}
	}
	// violations
	n := 0
	for _, group := range []struct {
		vs  []check.Violation
		tol bool
	}{{res.Violations, false}, {res.Tolerated, true}} {
		for _, v := range group.vs {
			n++
			tl.viols = append(tl.viols, violMark{n: n, inv: v.Invariant, key: v.Key, from: v.From, to: v.To, title: v.String(), tolerated: group.tol})
			if i, ok := tl.shardIdx[v.Key]; ok {
				tl.shards[i].violation = true
			}
		}
	}
	// a long healing phase would squeeze the chaos phase, where the faults
	// are, into a corner: compress what comes after it
	if sp := tl.chaos + tl.chaos/2; tl.chaos > 0 && sp < tl.end && tl.end-sp > sp/3 {
		tl.split = sp
	}
	tl.capLanes()
	tl.capBars()
	return tl
}

func faultKey(t time.Duration, reason string) string {
	return strconv.FormatInt(int64(t), 10) + "|" + reason
}

// capLanes keeps at most MaxShardLanes lanes: those with a violation first,
// then the others in order of creation.
func (tl *timeline) capLanes() {
	if len(tl.shards) <= MaxShardLanes {
		return
	}
	keep := map[string]bool{}
	k := 0
	for _, s := range tl.shards {
		if s.violation && k < MaxShardLanes {
			keep[s.id] = true
			k++
		}
	}
	for _, s := range tl.shards {
		if !keep[s.id] && k < MaxShardLanes {
			keep[s.id] = true
			k++
		}
	}
	var out []*shardLane
	bars := 0
	for _, s := range tl.shards {
		if keep[s.id] {
			out = append(out, s)
			bars += len(s.bars)
		}
	}
	tl.omitted = len(tl.shards) - len(out)
	tl.shards = out
	tl.bars = bars
	tl.shardIdx = map[string]int{}
	for i, s := range tl.shards {
		tl.shardIdx[s.id] = i
	}
}

// capBars merges bars of one owner on one lane separated by less than a
// gap that doubles until the total fits MaxBars.
func (tl *timeline) capBars() {
	gapPx := 0.5
	for tl.bars > MaxBars && gapPx < plotW {
		gap := time.Duration(gapPx / plotW * float64(tl.end))
		tl.bars = 0
		for _, s := range tl.shards {
			var out []bar
			for _, b := range s.bars {
				if m := len(out) - 1; m >= 0 && out[m].owner == b.owner && b.start-out[m].end <= gap {
					if b.end > out[m].end {
						out[m].end = b.end
					}
					out[m].n += b.n
					out[m].endedBy = b.endedBy
					continue
				}
				out = append(out, b)
			}
			s.bars = out
			tl.bars += len(out)
			var hs []hold
			for _, h := range s.holds {
				if m := len(hs) - 1; m >= 0 && hs[m].owner == h.owner && h.start-hs[m].end <= gap {
					if h.end > hs[m].end {
						hs[m].end, hs[m].why = h.end, h.why
					}
					hs[m].n += h.n
					continue
				}
				hs = append(hs, h)
			}
			s.holds = hs
		}
		tl.merged = true
		gapPx *= 2
	}
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + "s" }

func esc(s string) string { return html.EscapeString(s) }

// x maps a true time to the plot.
func (tl *timeline) x(t time.Duration) float64 {
	if t < 0 {
		t = 0
	}
	if t > tl.end {
		t = tl.end
	}
	if tl.split > 0 {
		if t <= tl.split {
			return labelW + float64(t)/float64(tl.split)*plotW*splitFrac
		}
		return labelW + plotW*splitFrac + float64(t-tl.split)/float64(tl.end-tl.split)*plotW*(1-splitFrac)
	}
	return labelW + float64(t)/float64(tl.end)*plotW
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// tickStep picks a round time step for at most max ticks over span.
func tickStep(span time.Duration, max int) time.Duration {
	for _, s := range []int{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400} {
		st := time.Duration(s) * time.Second
		if span/st <= time.Duration(max) {
			return st
		}
	}
	return span / time.Duration(max)
}

func fmtTick(t time.Duration) string {
	s := int(math.Round(t.Seconds()))
	switch {
	case s == 0:
		return "0"
	case s%3600 == 0:
		return strconv.Itoa(s/3600) + "h"
	case s%60 == 0 && s >= 120:
		return strconv.Itoa(s/60) + "m"
	}
	return strconv.Itoa(s) + "s"
}

// svg renders the timeline.
func (tl *timeline) svg() string {
	var b strings.Builder
	nSlots := len(tl.slots)
	yGlobal := axisH
	ySlots := yGlobal + lanePit + 6
	yShards := ySlots + float64(nSlots)*lanePit + gapH
	height := yShards + float64(len(tl.shards))*lanePit + 24
	width := labelW + plotW + rightW
	laneY := func(i int) float64 { return yShards + float64(i)*lanePit }
	slotY := func(i int) float64 { return ySlots + float64(i)*lanePit }

	fmt.Fprintf(&b, `<svg id="timeline" class="timeline" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="timeline of the run" data-x0="%s" data-w="%s" data-end="%s" data-chaos="%s" data-split="%s" data-split-frac="%s" data-lanes="%d">`,
		f1(width), f1(height), f1(width), f1(height), f1(labelW), f1(plotW), strconv.FormatFloat(tl.end.Seconds(), 'f', 3, 64), strconv.FormatFloat(tl.chaos.Seconds(), 'f', 3, 64),
		strconv.FormatFloat(tl.split.Seconds(), 'f', 3, 64), strconv.FormatFloat(splitFrac, 'f', 2, 64), len(tl.shards))
	b.WriteString(`<defs><pattern id="hatch" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="2" height="4" fill="#555" fill-opacity=".55"/></pattern>` +
		`<pattern id="stripes" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="2" height="6" fill="#a0522d" fill-opacity=".6"/></pattern></defs>`)

	// phases: chaos shading and the healing line
	xc := tl.x(tl.chaos)
	fmt.Fprintf(&b, `<rect class="chaos" x="%s" y="%s" width="%s" height="%s"><title>chaos phase: 0..%s, faults in force</title></rect>`, f1(labelW), f1(axisH-4), f1(xc-labelW), f1(height-axisH-16+4), secs(tl.chaos))
	// axis
	tick := func(t time.Duration) {
		x := tl.x(t)
		fmt.Fprintf(&b, `<line class="tick" x1="%s" y1="%s" x2="%s" y2="%s"/><text class="ticklabel" x="%s" y="%s">%s</text>`,
			f1(x), f1(axisH-6), f1(x), f1(height-16), f1(x), f1(axisH-10), fmtTick(t))
	}
	if tl.split > 0 {
		step := tickStep(tl.split, 10)
		for t := time.Duration(0); t <= tl.split-step/2; t += step {
			tick(t)
		}
		step2 := tickStep(tl.end-tl.split, 3)
		for t := (tl.split/step2 + 1) * step2; t <= tl.end; t += step2 {
			if tl.x(t)-tl.x(tl.split) > 24 {
				tick(t)
			}
		}
		xs := tl.x(tl.split)
		fmt.Fprintf(&b, `<line class="scalebreak" x1="%s" y1="%s" x2="%s" y2="%s"/><text class="scalebreaklabel" x="%s" y="%s">%s: scale compressed after this<title>the time after %s is drawn %.0fx more compressed than the time before it</title></text>`,
			f1(xs), f1(axisH-20), f1(xs), f1(height-16), f1(xs+3), f1(axisH-20), fmtTick(tl.split), secs(tl.split),
			(float64(tl.end-tl.split)/(1-splitFrac))/(float64(tl.split)/splitFrac))
	} else {
		step := tickStep(tl.end, 12)
		for t := time.Duration(0); t <= tl.end; t += step {
			tick(t)
		}
	}
	fmt.Fprintf(&b, `<text class="axistitle" x="4" y="%s">true time</text>`, f1(axisH-10))
	fmt.Fprintf(&b, `<line class="heal" x1="%s" y1="%s" x2="%s" y2="%s"/><text class="heallabel" x="%s" y="%s">faults stop</text>`,
		f1(xc), f1(axisH-4), f1(xc), f1(height-16), f1(xc+3), f1(height-5))

	// the global lane: table and stream throttling, bursts
	fmt.Fprintf(&b, `<text class="lanelabel" x="%s" y="%s">table / stream</text>`, f1(labelW-6), f1(yGlobal+laneH-1))
	fmt.Fprintf(&b, `<rect class="laneback" x="%s" y="%s" width="%s" height="%s"/>`, f1(labelW), f1(yGlobal), f1(plotW), f1(laneH))
	for _, g := range tl.global {
		x1, x2 := tl.x(g.from), tl.x(g.to)
		fmt.Fprintf(&b, `<rect class="band %s" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`, g.class, f1(x1), f1(yGlobal), f1(math.Max(x2-x1, 1.5)), f1(laneH), esc(g.title))
	}

	// bands across the shard lanes (under the bars)
	b.WriteString(`<g class="across">`)
	for _, a := range tl.across {
		x1, x2 := tl.x(a.from), tl.x(a.to)
		fmt.Fprintf(&b, `<rect class="across %s" data-slot="%d" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`,
			a.class, a.slot, f1(x1), f1(yShards-3), f1(math.Max(x2-x1, 1.5)), f1(float64(len(tl.shards))*lanePit+2), esc(a.title))
	}
	b.WriteString(`</g>`)

	// worker lanes
	fmt.Fprintf(&b, `<text class="sectionlabel" x="4" y="%s">workers</text>`, f1(ySlots+laneH-1))
	for i, sl := range tl.slots {
		y := slotY(i)
		fmt.Fprintf(&b, `<g class="slot" data-slot="%d"><text class="lanelabel" x="%s" y="%s">w%d</text><rect class="laneback" x="%s" y="%s" width="%s" height="%s"/>`,
			sl.slot, f1(labelW-6), f1(y+laneH-1), sl.slot, f1(labelW), f1(y), f1(plotW), f1(laneH))
		for _, p := range sl.procs {
			stop := p.stop
			if !p.stopped {
				stop = tl.end
			}
			x1, x2 := tl.x(p.start), tl.x(stop)
			why := "running at the end"
			if p.stopped {
				why = "stopped at " + secs(p.stop) + " (" + p.reason + ")"
			}
			fmt.Fprintf(&b, `<rect class="proc o%d" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>process %s#%d in slot w%d: started %s, %s</title></rect>`,
				tl.ownerIdx[p.owner], f1(x1), f1(y+2), f1(math.Max(x2-x1, 1)), f1(laneH-4), ownerColor(tl.ownerIdx[p.owner]), esc(p.owner), p.id, sl.slot, secs(p.start), esc(why))
		}
		for _, bd := range sl.bands {
			x1, x2 := tl.x(bd.from), tl.x(bd.to)
			fmt.Fprintf(&b, `<rect class="band %s" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`, bd.class, f1(x1), f1(y), f1(math.Max(x2-x1, 1.5)), f1(laneH), esc(bd.title))
		}
		for _, m := range sl.marks {
			x := tl.x(m.at)
			fmt.Fprintf(&b, `<text class="mark %s" x="%s" y="%s">%s<title>%s</title></text>`, m.class, f1(x), f1(y+laneH-1), m.glyph, esc(m.title))
		}
		b.WriteString(`</g>`)
	}

	// shard lanes
	label := "shards"
	if tl.omitted > 0 {
		label = fmt.Sprintf("shards (%d more not drawn)", tl.omitted)
	}
	fmt.Fprintf(&b, `<text class="sectionlabel" x="4" y="%s">%s</text>`, f1(yShards-8), esc(label))
	for i, s := range tl.shards {
		y := laneY(i)
		cls := "lane"
		if s.violation {
			cls += " violating"
		}
		short := strings.TrimPrefix(s.id, "shardId-")
		short = strings.TrimLeft(short, "0")
		if short == "" {
			short = "0"
		}
		fmt.Fprintf(&b, `<g class="%s" data-shard="%s"><text class="lanelabel" x="%s" y="%s">%s<title>%s</title></text>`, cls, esc(s.id), f1(labelW-6), f1(y+laneH-1), esc("shard "+short), esc(s.id))
		end := s.ended
		if end < 0 {
			end = tl.end
		}
		life := fmt.Sprintf("%s: created %s", s.id, secs(s.created))
		if len(s.parents) > 0 {
			life += " from " + strings.Join(s.parents, " + ")
		}
		if s.closed {
			life += ", closed " + secs(s.ended)
		} else if s.ended >= 0 {
			life += ", expired " + secs(s.ended)
		}
		x1, x2 := tl.x(s.created), tl.x(end)
		fmt.Fprintf(&b, `<rect class="life" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`, f1(x1), f1(y), f1(math.Max(x2-x1, 1)), f1(laneH), esc(life))
		for _, h := range s.holds {
			oi := tl.ownerIdx[h.owner]
			x1, x2 := tl.x(h.start), tl.x(h.end)
			title := fmt.Sprintf("the table names %s owner of %s %s..%s (%s; %s)", h.owner, s.id, secs(h.start), secs(h.end), h.how, h.why)
			if h.n > 1 {
				title += fmt.Sprintf("; %d stretches merged", h.n)
			}
			fmt.Fprintf(&b, `<rect class="held o%d" x="%s" y="%s" width="%s" height="3" fill="%s"><title>%s</title></rect>`,
				oi, f1(x1), f1(y+laneH-3), f1(math.Max(x2-x1, 1)), ownerColor(oi), esc(title))
		}
		for _, br := range s.bars {
			oi := tl.ownerIdx[br.owner]
			x1, x2 := tl.x(br.start), tl.x(br.end)
			title := fmt.Sprintf("%s#%d acted on %s %s..%s (%s)", br.owner, br.proc, s.id, secs(br.start), secs(br.end), br.endedBy)
			if br.n > 1 {
				title += fmt.Sprintf("; %d tenures merged", br.n)
			}
			fmt.Fprintf(&b, `<rect class="bar o%d" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
				oi, f1(x1), f1(y), f1(math.Max(x2-x1, 1)), f1(laneH-4), ownerColor(oi), esc(title))
		}
		for _, m := range s.marks {
			x := tl.x(m.at)
			fmt.Fprintf(&b, `<text class="mark %s" x="%s" y="%s">%s<title>%s</title></text>`, m.class, f1(x), f1(y+laneH-1), m.glyph, esc(m.title))
		}
		b.WriteString(`</g>`)
	}
	// split and merge connectors
	for _, l := range tl.links {
		i, ok1 := tl.shardIdx[l.from]
		j, ok2 := tl.shardIdx[l.to]
		if !ok1 || !ok2 {
			continue
		}
		x := tl.x(l.at)
		y1, y2 := laneY(i)+laneH/2, laneY(j)+laneH/2
		fmt.Fprintf(&b, `<line class="link %s" x1="%s" y1="%s" x2="%s" y2="%s"/><circle class="link %s" cx="%s" cy="%s" r="2.2"/>`, l.class, f1(x), f1(y1), f1(x), f1(y2), l.class, f1(x), f1(y2))
	}
	// violations
	for _, v := range tl.viols {
		cls := "viol"
		if v.tolerated {
			cls += " tolerated"
		}
		x1, x2 := tl.x(v.from), tl.x(v.to)
		if i, ok := tl.shardIdx[v.key]; ok {
			y := laneY(i)
			fmt.Fprintf(&b, `<g class="%s" id="tv%d"><rect x="%s" y="%s" width="%s" height="%s"/><text x="%s" y="%s">%s</text><title>%s</title></g>`,
				cls, v.n, f1(x1-1), f1(y-2), f1(math.Max(x2-x1, 2)+2), f1(laneH+4), f1(x1), f1(y-3), esc(v.inv), esc(v.title))
		} else {
			fmt.Fprintf(&b, `<g class="%s" id="tv%d"><line x1="%s" y1="%s" x2="%s" y2="%s"/><text x="%s" y="%s">%s</text><title>%s</title></g>`,
				cls, v.n, f1(x1), f1(yShards-4), f1(x1), f1(height-16), f1(x1+2), f1(yShards-6), esc(v.inv), esc(v.title))
		}
	}
	// the cursor (moved by the script)
	fmt.Fprintf(&b, `<g id="cursor" visibility="hidden"><line x1="0" y1="%s" x2="0" y2="%s"/><text x="0" y="%s"></text></g>`, f1(axisH-4), f1(height-16), f1(height-5))
	b.WriteString(`</svg>`)
	return b.String()
}

// legend lists the owners with their colours.
func (tl *timeline) legend() []legendItem {
	var out []legendItem
	for i, o := range tl.owners {
		out = append(out, legendItem{Idx: i, Owner: o, Color: ownerColor(i)})
	}
	return out
}

type legendItem struct {
	Idx   int
	Owner string
	Color string
}
