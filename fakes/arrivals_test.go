package fakes

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// moments returns the mean and variance of xs.
func moments(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}

// within fails t unless got is within tol (relative) of want.
func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Abs(want) {
		t.Errorf("%s = %.4g, want %.4g ± %.0f%%", what, got, want, 100*tol)
	} else {
		t.Logf("%s = %.4g (want %.4g)", what, got, want)
	}
}

// TestSamplers: the binomial and Poisson draws have their distributions'
// means and variances, on both sides of each sampler's switch (popcount
// and BTRS, multiplication and PTRS), and the BTRS draws' histogram
// matches the binomial probabilities.
func TestSamplers(t *testing.T) {
	const draws = 20000
	for _, n := range []int{9, 64, 100, 1024, 1025, 5000, 1 << 20} {
		xs := make([]float64, draws)
		for i := range xs {
			g := newCounterRNG(mix64(uint64(n)<<20 + uint64(i)))
			k := binomialHalf(n, &g)
			if k < 0 || k > n {
				t.Fatalf("Binomial(%d, 1/2) drew %d", n, k)
			}
			xs[i] = float64(k)
		}
		m, v := moments(xs)
		within(t, fmt.Sprintf("mean of Binomial(%d, 1/2)", n), m, float64(n)/2, 4*math.Sqrt(float64(n)/4/draws)/(float64(n)/2)+1e-9)
		within(t, fmt.Sprintf("variance of Binomial(%d, 1/2)", n), v, float64(n)/4, 0.05)
	}
	// the histogram of BTRS draws against the binomial probabilities
	const n = 2000
	hist := map[int]int{}
	for i := 0; i < draws; i++ {
		g := newCounterRNG(mix64(0xb175 + uint64(i)))
		hist[btrs(n, 0.5, &g)]++
	}
	chi, bins := 0.0, 0
	for k := n/2 - 60; k <= n/2+60; k += 10 { // bins of 10 values
		exp, got := 0.0, 0
		for j := k; j < k+10; j++ {
			exp += draws * math.Exp(lgamma(n+1)-lgamma(float64(j)+1)-lgamma(float64(n-j)+1)-n*math.Ln2)
			got += hist[j]
		}
		chi += (float64(got) - exp) * (float64(got) - exp) / exp
		bins++
	}
	if chi > 2*float64(bins)+20 { // far in the tail of chi-square with 12 degrees of freedom
		t.Errorf("BTRS histogram: chi-square %.1f over %d bins", chi, bins)
	}
	for _, mu := range []float64{0.5, 3, 9.9, 10, 57, 1e4, 1e7} {
		xs := make([]float64, draws)
		for i := range xs {
			g := newCounterRNG(mix64(math.Float64bits(mu) + uint64(i)))
			xs[i] = float64(poisson(mu, &g))
		}
		m, v := moments(xs)
		within(t, fmt.Sprintf("mean of Poisson(%g)", mu), m, mu, 4*math.Sqrt(mu/draws)/mu)
		within(t, fmt.Sprintf("variance of Poisson(%g)", mu), v, mu, 0.05)
	}
}

// TestProcessPoisson: a process's points are a Poisson process of its
// rate: counts in windows have mean and variance λT, gaps are exponential
// (mean 1/λ, a gap over 3/λ with probability e^-3), across roots.
func TestProcessPoisson(t *testing.T) {
	const rate = 2e-9 // 2 per second
	var counts, gaps []float64
	long := 0
	for key := uint64(1); key <= 400; key++ {
		var c arrCursor
		c.reset(process{key: key, rate: rate})
		// windows of 100 s, on both sides of the first root boundary
		for _, w0 := range []int64{0, 1<<rootBits - 50e9} {
			counts = append(counts, float64(c.countBefore(w0+100e9)-c.countBefore(w0)))
		}
		first := c.countBefore(1<<rootBits - 100e9)
		prev := c.point(first)
		for i := first + 1; i < first+400; i++ {
			p := c.point(i)
			if p < prev {
				t.Fatalf("key %d: point %d at %d before point %d at %d", key, i, p, i-1, prev)
			}
			gaps = append(gaps, float64(p-prev))
			if float64(p-prev) > 3/rate {
				long++
			}
			prev = p
		}
	}
	m, v := moments(counts)
	within(t, "mean count in 100 s", m, 200, 0.02)
	within(t, "variance of the count in 100 s", v, 200, 0.12)
	gm, gv := moments(gaps)
	within(t, "mean gap", gm, 1/rate, 0.02)
	within(t, "gap variance", gv, 1/rate/rate, 0.06)
	within(t, "share of gaps over 3/λ", float64(long)/float64(len(gaps)), math.Exp(-3), 0.08)
}

// TestProcessConsistent: a point's index and time agree both ways, and
// any order of questions, from any cursor, gets the same answers as
// reading the points in order: nothing depends on a cursor's path.
func TestProcessConsistent(t *testing.T) {
	for _, p := range []process{{key: 7, rate: 3e-9}, {key: 8, rate: 1e-6}, {key: 9, rate: 2e-13}, {key: 10, rate: 5e-9}} {
		var seq arrCursor
		seq.reset(p)
		n := seq.countBefore(3<<rootBits + 12345) // three roots and a bit
		if n == 0 {
			t.Fatalf("%+v: %d points in three roots", p, n)
		}
		n = min(n, 200000)
		pts := make([]int64, n)
		for i := range pts {
			pts[i] = seq.point(i)
			if i > 0 && pts[i] < pts[i-1] {
				t.Fatalf("%+v: point %d before point %d", p, i, i-1)
			}
		}
		r := rand.New(rand.NewPCG(p.key, 1))
		var jump arrCursor
		jump.reset(p)
		for range 3000 {
			i := r.IntN(n)
			if got := jump.point(i); got != pts[i] {
				t.Fatalf("%+v: point %d is %d read at random, %d in order", p, i, got, pts[i])
			}
			// countBefore(pts[i]) counts the points strictly before it
			lo := i
			for lo > 0 && pts[lo-1] == pts[i] {
				lo--
			}
			if got := jump.countBefore(pts[i]); got != lo {
				t.Fatalf("%+v: countBefore(point %d) = %d, want %d", p, i, got, lo)
			}
			hi := i + 1
			for hi < n && pts[hi] == pts[i] {
				hi++
			}
			if hi < n {
				if got := jump.countBefore(pts[i] + 1); got != hi {
					t.Fatalf("%+v: countBefore(point %d + 1ns) = %d, want %d", p, i, got, hi)
				}
			}
			var fresh arrCursor
			fresh.reset(p)
			if got := fresh.point(i); got != pts[i] {
				t.Fatalf("%+v: point %d is %d from a fresh cursor, %d in order", p, i, got, pts[i])
			}
		}
	}
	if !(process{key: 1, rate: minRate / 2}).none() || (process{key: 1, rate: minRate}).none() {
		t.Error("a rate below minRate must have no points, one at it must")
	}
}
