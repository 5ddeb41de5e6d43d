package fakes

import (
	"math"
	"math/bits"
)

// The arrival times of a generated stream's records (generate.go) come
// from Poisson processes that are pure functions of a key: any record's
// arrival, and how many records arrive before any time, are computed
// again whenever they are needed, in a few steps, and nothing is stored
// per record.
//
// A process of rate λ (points per nanosecond) on [0, ∞) is cut into roots
// of 2^rootBits ns. Root r holds Poisson(λ·2^rootBits) points, drawn from
// the key and r. A node holding c points splits them between its halves:
// Binomial(c, 1/2) to the lower one, drawn from the key and the node's
// number; a node of at most leafMax points (or of one nanosecond) places
// them uniformly in its span, sorted. Given the count of a span, the
// counts of its halves and the positions in a leaf are what a Poisson
// process has, so the points are one exactly. The k-th point is found by
// going down from its root by counts, the count before a time by going
// down by halves: O(log(points per root)) draws, most of them popcounts.
// A cursor (arrCursor) keeps its path, so that reading points in order
// costs O(1) draws each.
//
// Every draw is a counter-based stream (SplitMix64 from a base that
// mixes the key with the node's identity), so no draw depends on the
// order in which points are asked for.
const (
	rootBits = 42 // a root spans 2^42 ns, about 73 minutes
	leafMax  = 8
	// minRate is the smallest rate a process has (points per ns): 10^-6
	// per second. A lower one is none at all: a cursor looking for the
	// next point must find a root that holds one.
	minRate = 1e-15
)

const golden = 0x9e3779b97f4a7c15 // 2^64 / φ, SplitMix64's increment

// mix64 is SplitMix64's finalizer: a bijection of 64-bit words whose
// outputs for consecutive inputs look independent.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// counterRNG is a counter-based stream of uniform words: word j is
// mix64(base + j·golden), SplitMix64 started at base.
type counterRNG struct{ base, j uint64 }

func newCounterRNG(base uint64) counterRNG { return counterRNG{base: base} }

func (r *counterRNG) next() uint64 {
	r.j++
	return mix64(r.base + r.j*golden)
}

// float returns a uniform float64 in [0, 1).
func (r *counterRNG) float() float64 { return float64(r.next()>>11) * 0x1p-53 }

// binomialHalf draws Binomial(n, 1/2): the popcount of n random bits for
// n up to 1024, Hörmann's BTRS beyond.
func binomialHalf(n int, r *counterRNG) int {
	if n <= 1024 {
		k := 0
		for ; n >= 64; n -= 64 {
			k += bits.OnesCount64(r.next())
		}
		if n > 0 {
			k += bits.OnesCount64(r.next() & (1<<n - 1))
		}
		return k
	}
	return btrs(n, 0.5, r)
}

// btrs draws Binomial(n, p) for n·p >= 10 and p <= 1/2 by transformed
// rejection with squeeze (W. Hörmann, "The generation of binomial random
// variates", J. Statist. Comput. Simul. 46, 1993).
func btrs(n int, p float64, r *counterRNG) int {
	nf := float64(n)
	q := 1 - p
	spq := math.Sqrt(nf * p * q)
	b := 1.15 + 2.53*spq
	a := -0.0873 + 0.0248*b + 0.01*p
	c := nf*p + 0.5
	vr := 0.92 - 4.2/b
	alpha := (2.83 + 5.1/b) * spq
	lpq := math.Log(p / q)
	m := math.Floor((nf + 1) * p)
	h := lgamma(m+1) + lgamma(nf-m+1)
	for {
		u := r.float() - 0.5
		v := r.float()
		us := 0.5 - math.Abs(u)
		if us <= 0 {
			continue
		}
		k := math.Floor((2*a/us+b)*u + c)
		if k < 0 || k > nf {
			continue
		}
		if us >= 0.07 && v <= vr {
			return int(k)
		}
		v = math.Log(v * alpha / (a/(us*us) + b))
		if v <= h-lgamma(k+1)-lgamma(nf-k+1)+(k-m)*lpq {
			return int(k)
		}
	}
}

// poisson draws Poisson(mu): by multiplying uniforms below 10, by
// Hörmann's PTRS above ("The transformed rejection method for generating
// Poisson random variables", Insurance: Mathematics and Economics 12,
// 1993).
func poisson(mu float64, r *counterRNG) int {
	if mu <= 0 {
		return 0
	}
	if mu < 10 {
		limit, prod, k := math.Exp(-mu), r.float(), 0
		for prod > limit {
			k++
			prod *= r.float()
		}
		return k
	}
	slam, loglam := math.Sqrt(mu), math.Log(mu)
	b := 0.931 + 2.53*slam
	a := -0.059 + 0.02483*b
	invalpha := 1.1239 + 1.1328/(b-3.4)
	vr := 0.9277 - 3.6224/(b-2)
	for {
		u := r.float() - 0.5
		v := r.float()
		us := 0.5 - math.Abs(u)
		if us <= 0 {
			continue
		}
		k := math.Floor((2*a/us+b)*u + mu + 0.43)
		if us >= 0.07 && v <= vr {
			return int(k)
		}
		if k < 0 || us < 0.013 && v > us {
			continue
		}
		if math.Log(v)+math.Log(invalpha)-math.Log(a/(us*us)+b) <= -mu+k*loglam-lgamma(k+1) {
			return int(k)
		}
	}
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}

// process is one Poisson process: its key and rate (points per ns).
type process struct {
	key  uint64
	rate float64
}

// none reports whether the process has no points.
func (p process) none() bool { return !(p.rate >= minRate) }

// rng returns the draws of node id (1 the root, 2i and 2i+1 the halves of
// node i) of root r; id 0 draws the root's count.
func (p process) rng(r int64, id uint64) counterRNG {
	return newCounterRNG(mix64(p.key^mix64(uint64(r)*golden+0x726f6f74)) + id*0xd1b54a32d192ed03)
}

func (p process) rootCount(r int64) int {
	if p.none() {
		return 0
	}
	g := p.rng(r, 0)
	return poisson(p.rate*(1<<rootBits), &g)
}

// frame is a node on a cursor's path: its number, span (offset in its
// root and size 2^bits) and points (the index in the root of its first
// one, and how many).
type frame struct {
	id    uint64
	start int64
	bits  uint8
	first int
	c     int
}

func (f *frame) leaf() bool { return f.c <= leafMax || f.bits == 0 }

// arrCursor is a position in a process: a root and a path down from it.
// Its operations move it along (forwards or back); nearby moves are cheap.
// The zero value is unset: set it with reset.
type arrCursor struct {
	p         process
	root      int64
	rootFirst int     // index of the root's first point in the process
	path      []frame // the root's frame, then down to the current node
	leafOK    bool    // leafPts holds the points of the current node (a leaf)
	leafPts   [leafMax]int64
}

// reset puts c at the start of p.
func (c *arrCursor) reset(p process) {
	c.p, c.root, c.rootFirst = p, 0, 0
	c.setRoot()
}

func (c *arrCursor) setRoot() {
	c.path = append(c.path[:0], frame{id: 1, bits: rootBits, c: c.p.rootCount(c.root)})
	c.leafOK = false
}

func (c *arrCursor) top() *frame { return &c.path[len(c.path)-1] }

// toRoot moves to root r.
func (c *arrCursor) toRoot(r int64) {
	for c.root < r {
		c.rootFirst += c.path[0].c
		c.root++
		c.setRoot()
	}
	for c.root > r {
		c.root--
		c.setRoot()
		c.rootFirst -= c.path[0].c
	}
}

// down pushes the half of the current node (which is not a leaf) that
// right chooses, given the count of its lower half.
func (c *arrCursor) down(right bool, left int) {
	f := *c.top()
	half := f.bits - 1
	child := frame{id: 2 * f.id, start: f.start, bits: half, first: f.first, c: left}
	if right {
		child = frame{id: 2*f.id + 1, start: f.start + 1<<half, bits: half, first: f.first + left, c: f.c - left}
	}
	c.path = append(c.path, child)
	c.leafOK = false
}

// lowerCount draws how many of the current node's points are in its lower
// half.
func (c *arrCursor) lowerCount() int {
	f := c.top()
	g := c.p.rng(c.root, f.id)
	return binomialHalf(f.c, &g)
}

// points returns the sorted offsets (in the root) of the current node's
// points; it is a leaf of at most leafMax points, or of one nanosecond
// (whose points are all at its start: nil then).
func (c *arrCursor) points() []int64 {
	f := c.top()
	if f.bits == 0 {
		return nil
	}
	pts := c.leafPts[:f.c]
	if !c.leafOK {
		g := c.p.rng(c.root, f.id)
		mask := uint64(1)<<f.bits - 1
		for i := range pts {
			x := f.start + int64(g.next()&mask)
			j := i
			for ; j > 0 && pts[j-1] > x; j-- {
				pts[j] = pts[j-1]
			}
			pts[j] = x
		}
		c.leafOK = true
	}
	return pts
}

// point returns the offset from the process's start of point i (>= 0).
// The process must have points (!p.none()).
func (c *arrCursor) point(i int) int64 {
	for i < c.rootFirst {
		c.toRoot(c.root - 1)
	}
	for i >= c.rootFirst+c.path[0].c {
		c.toRoot(c.root + 1)
	}
	j := i - c.rootFirst
	for len(c.path) > 1 {
		if f := c.top(); j >= f.first && j < f.first+f.c {
			break
		}
		c.path = c.path[:len(c.path)-1]
		c.leafOK = false
	}
	for !c.top().leaf() {
		left := c.lowerCount()
		c.down(j >= c.top().first+left, left)
	}
	f := c.top()
	base := c.root << rootBits
	if pts := c.points(); pts != nil {
		return base + pts[j-f.first]
	}
	return base + f.start
}

// countBefore returns how many points of the process lie before offset t
// (>= 0) from its start.
func (c *arrCursor) countBefore(t int64) int {
	c.toRoot(t >> rootBits)
	off := t & (1<<rootBits - 1)
	for len(c.path) > 1 {
		if f := c.top(); off >= f.start && off < f.start+1<<f.bits {
			break
		}
		c.path = c.path[:len(c.path)-1]
		c.leafOK = false
	}
	for !c.top().leaf() {
		f := c.top()
		left := c.lowerCount()
		c.down(off >= f.start+1<<(f.bits-1), left)
	}
	f := c.top()
	n := 0
	if pts := c.points(); pts != nil {
		for n < len(pts) && pts[n] < off {
			n++
		}
	} else if f.start < off {
		n = f.c
	}
	return c.rootFirst + f.first + n
}
