package sim

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/engine"
)

var flagUpdateDocs = flag.Bool("sim.update-docs", false, "TestConfigShares: rewrite the generated tables of docs/simulator.md")

// configRow is one value of one engine option (or one world draw) and the
// worlds that draw it.
type configRow struct {
	option, value string
	has           func(w *World, c *engine.Config) bool
}

func always(*World, *engine.Config) bool { return true }

// configRows lists every option of engine.Config and every value its
// documentation names (or a range the swarm draws from), with how to tell
// a world that draws it. c is the configuration of the world's first
// process, as the simulator builds it (before defaults).
var configRows = []configRow{
	{"Owner", "one id per worker slot (w0, w1, ...), a new one on some restarts", always},
	{"Streams", "one stream", func(w *World, c *engine.Config) bool { return len(c.Streams) == 1 }},
	{"Streams", "two streams", func(w *World, c *engine.Config) bool { return len(c.Streams) == 2 }},
	{"MultiStream", "false", func(w *World, c *engine.Config) bool { return !c.MultiStream }},
	{"MultiStream", "true", func(w *World, c *engine.Config) bool { return c.MultiStream }},
	{"LegacyStream", "empty (single stream: the one stream)", func(w *World, c *engine.Config) bool { return !c.MultiStream && c.LegacyStream == "" }},
	{"LegacyStream", "empty with MultiStream (every row stream:shardId)", func(w *World, c *engine.Config) bool { return c.MultiStream && c.LegacyStream == "" }},
	{"LegacyStream", "the first stream, with MultiStream (its rows bare shard ids)", func(w *World, c *engine.Config) bool { return c.MultiStream && c.LegacyStream == streamName }},
	{"StreamConfig.InitialPosition", "TRIM_HORIZON", func(w *World, c *engine.Config) bool { return c.Streams[0].InitialPosition == engine.TrimHorizon }},
	{"StreamConfig.InitialPosition", "LATEST", func(w *World, c *engine.Config) bool { return c.Streams[0].InitialPosition == engine.Latest }},
	{"StreamConfig.InitialPosition", "empty (the default: LATEST)", func(w *World, c *engine.Config) bool { return c.Streams[0].InitialPosition == "" }},
	{"StreamConfig.InitialPosition", "AT_TIMESTAMP", func(w *World, c *engine.Config) bool { return c.Streams[0].InitialPosition == engine.AtTimestamp }},
	{"StreamConfig.Timestamp", "before the run's first record (AT_TIMESTAMP)", func(w *World, c *engine.Config) bool {
		return c.Streams[0].InitialPosition == engine.AtTimestamp && w.Config.Timestamp <= 0
	}},
	{"StreamConfig.Timestamp", "during the run (AT_TIMESTAMP: earlier records not owed)", func(w *World, c *engine.Config) bool {
		return c.Streams[0].InitialPosition == engine.AtTimestamp && w.Config.Timestamp > 0
	}},
	{"LeaseDuration", "the default (10 s)", func(w *World, c *engine.Config) bool { return c.LeaseDuration == 0 }},
	{"LeaseDuration", "3 s to 20 s", func(w *World, c *engine.Config) bool { return c.LeaseDuration > 0 }},
	{"RenewInterval", "the default (3 s)", func(w *World, c *engine.Config) bool { return c.RenewInterval == 0 }},
	{"RenewInterval", "LeaseDuration/6 to LeaseDuration/3", func(w *World, c *engine.Config) bool { return c.RenewInterval > 0 }},
	{"SafetyMargin", "the default (LeaseDuration/10, or the drift's minimum)", func(w *World, c *engine.Config) bool { return c.SafetyMargin == 0 }},
	{"SafetyMargin", "from the drift's minimum to half of LeaseDuration-RenewInterval", func(w *World, c *engine.Config) bool { return c.SafetyMargin > 0 }},
	{"MaxClockDrift", "the default (0.01)", func(w *World, c *engine.Config) bool { return c.MaxClockDrift == 0 }},
	{"MaxClockDrift", "0.001 to 0.05", func(w *World, c *engine.Config) bool { return c.MaxClockDrift > 0 }},
	{"TakeInterval", "the default (LeaseDuration)", func(w *World, c *engine.Config) bool { return c.TakeInterval == 0 }},
	{"TakeInterval", "LeaseDuration/2 to 1.5 LeaseDuration", func(w *World, c *engine.Config) bool { return c.TakeInterval > 0 }},
	{"ShardSyncInterval", "the default (10 s)", func(w *World, c *engine.Config) bool { return c.ShardSyncInterval == 0 }},
	{"ShardSyncInterval", "3 s to 30 s", func(w *World, c *engine.Config) bool { return c.ShardSyncInterval > 0 }},
	{"MaxLeasesForWorker", "0 (no cap)", func(w *World, c *engine.Config) bool { return c.MaxLeasesForWorker == 0 }},
	{"MaxLeasesForWorker", "a cap (room for every shard on the initial workers)", func(w *World, c *engine.Config) bool { return c.MaxLeasesForWorker > 0 }},
	{"MaxLeasesToStealAtOnce", "the default (1)", func(w *World, c *engine.Config) bool { return c.MaxLeasesToStealAtOnce == 0 }},
	{"MaxLeasesToStealAtOnce", "2", func(w *World, c *engine.Config) bool { return c.MaxLeasesToStealAtOnce > 1 }},
	{"MaxLeasesToStealAtOnce", "negative (no stealing)", func(w *World, c *engine.Config) bool { return c.MaxLeasesToStealAtOnce < 0 }},
	{"Assignment", "assigner (the default) in every worker", func(w *World, c *engine.Config) bool { return w.Assignment.Mode == engine.AssignmentAssigner }},
	{"Assignment", "scan in every worker", func(w *World, c *engine.Config) bool { return w.Assignment.Mode == engine.AssignmentScan }},
	{"Assignment", "both, worker by worker (a rolling deploy between them)", func(w *World, c *engine.Config) bool { return w.Assignment.Mode == AssignmentMixed }},
	{"Renewal", "lease in every worker (the simulator's default)", func(w *World, c *engine.Config) bool { return w.Renewal.Mode == "" }},
	{"Renewal", "auto (the engine's default) in every assigner-mode worker", func(w *World, c *engine.Config) bool { return w.Renewal.Mode == engine.RenewalAuto }},
	{"Renewal", "session in every assigner-mode worker", func(w *World, c *engine.Config) bool { return w.Renewal.Mode == engine.RenewalSession }},
	{"Renewal", "both, worker by worker (a rolling deploy between them)", func(w *World, c *engine.Config) bool { return w.Renewal.Mode == RenewalMixed }},
	{"AssignerScanInterval", "the default (LeaseDuration/3; /2 in session renewal and auto)", func(w *World, c *engine.Config) bool { return c.AssignerScanInterval == 0 }},
	{"AssignerScanInterval", "LeaseDuration/10 to LeaseDuration/2", func(w *World, c *engine.Config) bool { return c.AssignerScanInterval > 0 }},
	{"PendingPollInterval", "the default (LeaseDuration/8)", func(w *World, c *engine.Config) bool { return c.PendingPollInterval == 0 }},
	{"PendingPollInterval", "LeaseDuration/20 to LeaseDuration/2", func(w *World, c *engine.Config) bool { return c.PendingPollInterval > 0 }},
	{"BalanceBy", "empty (the default: leases)", func(w *World, c *engine.Config) bool { return c.BalanceBy == "" }},
	{"BalanceBy", "throughput", func(w *World, c *engine.Config) bool { return c.BalanceBy == engine.BalanceThroughput }},
	{"GetRecordsLimit", "10", func(w *World, c *engine.Config) bool { return c.GetRecordsLimit == 10 }},
	{"GetRecordsLimit", "50", func(w *World, c *engine.Config) bool { return c.GetRecordsLimit == 50 }},
	{"GetRecordsLimit", "100", func(w *World, c *engine.Config) bool { return c.GetRecordsLimit == 100 }},
	{"GetRecordsLimit", "1000", func(w *World, c *engine.Config) bool { return c.GetRecordsLimit == 1000 }},
	{"GetRecordsLimit", "10000 (the default's value)", func(w *World, c *engine.Config) bool { return c.GetRecordsLimit == 10000 }},
	{"IdleTimeBetweenReads", "the default (1 s)", func(w *World, c *engine.Config) bool { return c.IdleTimeBetweenReads == 0 }},
	{"IdleTimeBetweenReads", "100 ms to 1.5 s", func(w *World, c *engine.Config) bool { return c.IdleTimeBetweenReads > 0 }},
	{"Consumer", "Polling (the default)", func(w *World, c *engine.Config) bool { return c.Consumer == engine.Polling }},
	{"Consumer", "FanOut", func(w *World, c *engine.Config) bool { return c.Consumer == engine.FanOut }},
	{"ConsumerName", "set (every fan-out world)", func(w *World, c *engine.Config) bool { return c.ConsumerName != "" }},
	{"DeregisterConsumer", "false", func(w *World, c *engine.Config) bool { return !c.DeregisterConsumer }},
	{"DeregisterConsumer", "true (fan-out)", func(w *World, c *engine.Config) bool { return c.DeregisterConsumer }},
	{"ConsistentTakeScans", "false", func(w *World, c *engine.Config) bool { return !c.ConsistentTakeScans }},
	{"ConsistentTakeScans", "true", func(w *World, c *engine.Config) bool { return c.ConsistentTakeScans }},
	{"WatchPending", "false (DynamoDB worlds)", func(w *World, c *engine.Config) bool { return !c.WatchPending }},
	{"WatchPending", "true (etcd worlds: pushed assignments)", func(w *World, c *engine.Config) bool { return c.WatchPending }},
	{"Seed", "one per process (a restart gets its own)", always},
	{"AdoptUnverifiedRows", "false", func(w *World, c *engine.Config) bool { return !c.AdoptUnverifiedRows }},
	{"AdoptUnverifiedRows", "true", func(w *World, c *engine.Config) bool { return c.AdoptUnverifiedRows }},
	{"AdoptUnverifiedRows", "true, with rows of shards the stream no longer lists", func(w *World, c *engine.Config) bool {
		return c.AdoptUnverifiedRows && w.Config.Legacy.Unlisted > 0
	}},
	{"Trace", "set (the simulator's trace)", always},
	{"DeliverCorruptAggregates", "false, with corrupt aggregates put (dropped)", func(w *World, c *engine.Config) bool {
		return !c.DeliverCorruptAggregates && w.Config.CorruptShare > 0
	}},
	{"DeliverCorruptAggregates", "true, with corrupt aggregates put (delivered)", func(w *World, c *engine.Config) bool {
		return c.DeliverCorruptAggregates && w.Config.CorruptShare > 0
	}},
}

// worldRows are the swarm's other draws that docs/simulator.md lists.
var worldRows = []configRow{
	{"boundary seeking", "on", func(w *World, _ *engine.Config) bool { return w.Boundary.On }},
	{"aimed faults", "on", func(w *World, _ *engine.Config) bool { return w.Aim.On }},
	{"targeted fault", "on", func(w *World, _ *engine.Config) bool { return w.Target.On }},
	{"KPL aggregates", "on", func(w *World, _ *engine.Config) bool { return w.KPL.Share > 0 }},
	{"a KCL table adopted", "on", func(w *World, _ *engine.Config) bool { return w.Config.Legacy.On }},
	{"lease table an etcd store", "on", func(w *World, _ *engine.Config) bool { return w.Etcd.On }},
	{"outside the assumptions (an outside fault class drawn)", "yes", func(w *World, _ *engine.Config) bool {
		return w.has("drift-beyond") || w.has("long-pause") || w.has("dup-owner")
	}},
}

func init() {
	for _, c := range Combos {
		name := c.Name
		if c.Share == 0 {
			continue // pinned only (-combo NAME): not a swarm draw
		}
		worldRows = append(worldRows, configRow{"combination", name, func(w *World, _ *engine.Config) bool { return w.Combo.Name == name }})
	}
}

const configSeeds = 1000

// configTables computes the shares of configRows and worldRows over swarm
// seeds 1..configSeeds and renders them as the tables of
// docs/simulator.md.
func configTables(t *testing.T) (string, map[string]int) {
	t.Helper()
	counts := map[string]int{}
	key := func(r configRow) string { return r.option + "\x00" + r.value }
	for seed := uint64(1); seed <= configSeeds; seed++ {
		w, err := drawWorld(Options{Seed: seed, Faults: "swarm"})
		if err != nil {
			t.Fatal(err)
		}
		c := w.engineConfig("w0", 1)
		for _, rows := range [][]configRow{configRows, worldRows} {
			for _, r := range rows {
				if r.has(&w, &c) {
					counts[key(r)]++
				}
			}
		}
	}
	var b strings.Builder
	table := func(head string, rows []configRow) {
		fmt.Fprintf(&b, "| %s | value | share of swarm worlds |\n| --- | --- | ---: |\n", head)
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s | %.1f%% |\n", r.option, r.value, 100*float64(counts[key(r)])/configSeeds)
		}
	}
	table("engine.Config option", configRows)
	b.WriteString("\n")
	table("world draw", worldRows)
	return b.String(), counts
}

// configDoc is the page whose tables TestConfigShares keeps, relative to
// package sim.
var configDoc = filepath.Join("..", "docs", "simulator.md")

const (
	configBegin = "<!-- config-shares:begin (go test ./sim -run TestConfigShares -sim.update-docs) -->\n"
	configEnd   = "<!-- config-shares:end -->"
)

// TestConfigShares: every option of engine.Config and every value its
// documentation names is drawn by some of the swarm's worlds (seeds 1 to
// 1,000), and docs/simulator.md's tables show the shares these draws give
// (go test ./sim -run TestConfigShares -sim.update-docs rewrites them).
func TestConfigShares(t *testing.T) {
	tables, counts := configTables(t)
	for _, rows := range [][]configRow{configRows, worldRows} {
		for _, msg := range undrawn(rows, counts) {
			t.Error(msg)
		}
	}
	for _, msg := range unlisted(configRows, configFields()) {
		t.Error(msg)
	}
	doc, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := spliceTables(doc, tables)
	if err != nil {
		t.Fatalf("%s: %v", configDoc, err)
	}
	if bytes.Equal(doc, want) {
		return
	}
	if *flagUpdateDocs {
		if err := os.WriteFile(configDoc, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the configuration tables are stale; run go test ./sim -run TestConfigShares -sim.update-docs", configDoc)
}

// undrawn returns a message for each row no world drew.
func undrawn(rows []configRow, counts map[string]int) []string {
	var out []string
	for _, r := range rows {
		if counts[r.option+"\x00"+r.value] == 0 {
			out = append(out, fmt.Sprintf("%s = %s: drawn by none of swarm seeds 1-%d", r.option, r.value, configSeeds))
		}
	}
	return out
}

// unlisted returns a message for each field of engine.Config without a
// row.
func unlisted(rows []configRow, fields []string) []string {
	have := map[string]bool{}
	for _, r := range rows {
		have[strings.SplitN(r.option, ".", 2)[0]] = true
	}
	var out []string
	for _, f := range fields {
		if !have[f] {
			out = append(out, fmt.Sprintf("engine.Config.%s has no row in the configuration table", f))
		}
	}
	return out
}

// spliceTables returns doc with the text between its config-shares
// markers replaced by tables.
func spliceTables(doc []byte, tables string) ([]byte, error) {
	i, j := bytes.Index(doc, []byte(configBegin)), bytes.Index(doc, []byte(configEnd))
	if i < 0 || j < i {
		return nil, fmt.Errorf("no generated tables between %q and %q", configBegin, configEnd)
	}
	return append(append(append([]byte(nil), doc[:i+len(configBegin)]...), tables...), doc[j:]...), nil
}

// TestConfigSharesChecks: the checks of TestConfigShares fail on a value
// no world draws, on an option without a row, on a page without the
// markers and on a stale table.
func TestConfigSharesChecks(t *testing.T) {
	never := configRow{"MaxLeasesForWorker", "negative", func(w *World, c *engine.Config) bool { return c.MaxLeasesForWorker < 0 }}
	counts := map[string]int{"LeaseDuration\x003 s to 20 s": 5}
	if got := undrawn([]configRow{configRows[0], never}, counts); len(got) != 2 || !strings.Contains(got[1], "MaxLeasesForWorker = negative") {
		t.Errorf("undrawn: %q, want both rows (neither counted), the second naming MaxLeasesForWorker = negative", got)
	}
	if got := undrawn([]configRow{{"LeaseDuration", "3 s to 20 s", always}}, counts); len(got) != 0 {
		t.Errorf("undrawn: %q for a row drawn 5 times", got)
	}
	if got := unlisted(configRows, append(configFields(), "NewOption")); len(got) != 1 || !strings.Contains(got[0], "engine.Config.NewOption") {
		t.Errorf("unlisted: %q, want one message naming engine.Config.NewOption", got)
	}
	if _, err := spliceTables([]byte("# a page\n"+configEnd+"\n"), "| t |\n"); err == nil {
		t.Error("spliceTables: no error for a page without the begin marker")
	}
	doc := []byte("intro\n" + configBegin + "| old |\n" + configEnd + "\nafter\n")
	got, err := spliceTables(doc, "| new |\n")
	if err != nil || bytes.Equal(got, doc) || string(got) != "intro\n"+configBegin+"| new |\n"+configEnd+"\nafter\n" {
		t.Errorf("spliceTables: %q, %v", got, err)
	}
}

// configFields returns the names of engine.Config's exported fields.
func configFields() []string {
	var out []string
	t := reflect.TypeOf(engine.Config{})
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() {
			out = append(out, f.Name)
		}
	}
	return out
}
