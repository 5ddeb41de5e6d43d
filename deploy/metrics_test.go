package deploy

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardlease/shardlease/metrics"
)

// recorder registers collectors and records the names of the metrics
// they describe.
type recorder struct {
	prometheus.Registerer
	names map[string]bool
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return r.Registerer.Register(c)
}

func (r recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// exportedNames returns the names of the metrics package's metrics, read
// from what metrics.New registers.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	r := recorder{Registerer: prometheus.NewRegistry(), names: map[string]bool{}}
	if _, err := metrics.New(metrics.Options{Owner: "w", Registerer: r}); err != nil {
		t.Fatal(err)
	}
	if len(r.names) < 20 {
		t.Fatalf("only %d metric names registered: %v", len(r.names), r.names)
	}
	return r.names
}

var metricRef = regexp.MustCompile(`\bshardlease_[a-z0-9_]+`)

// unknownMetrics returns the shardlease_ names text refers to that no
// metric of the package has (a histogram's _bucket, _sum and _count
// count as its name).
func unknownMetrics(text string, names map[string]bool) []string {
	var bad []string
	for _, ref := range metricRef.FindAllString(text, -1) {
		base := ref
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(ref, suf); ok && names[b] {
				base = b
			}
		}
		if !names[base] && !slices.Contains(bad, ref) {
			bad = append(bad, ref)
		}
	}
	return bad
}

func TestUnknownMetricsFails(t *testing.T) {
	names := map[string]bool{"shardlease_leases_held": true, "shardlease_renew_duration_seconds": true}
	if bad := unknownMetrics(`sum(shardlease_leases_held) / rate(shardlease_renew_duration_seconds_count[1m]) + shardlease_leases_hold + shardlease:x:rate1m`, names); !slices.Equal(bad, []string{"shardlease_leases_hold"}) {
		t.Fatalf("unknownMetrics = %v, want [shardlease_leases_hold]", bad)
	}
}
