// Package grafana builds the Grafana dashboard of a shardlease fleet
// (shardlease-dashboard.json beside it, written by ./gen) with the Grafana
// Foundation SDK: the fleet signals the assigner exports, leases and their
// acquire latency and renewals, throughput and lag, checkpoints and call
// errors. Every query aggregates by job, chosen by the dashboard's job
// variable (one job per application: see deploy/prometheus).
package grafana

import (
	"encoding/json"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// UID is the dashboard's uid.
const UID = "shardlease-fleet"

// File is the generated dashboard, relative to the repository's root.
const File = "deploy/grafana/shardlease-dashboard.json"

var ds = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Expr(expr).LegendFormat(legend).Datasource(ds)
}

// series is a time series panel of the queries (expression, legend pairs).
func series(title, desc, unit string, width uint32, queries ...[2]string) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(desc).Unit(unit).Height(8).Span(width).Datasource(ds)
	for _, q := range queries {
		p = p.WithTarget(query(q[0], q[1]))
	}
	return p
}

// single is a stat panel of one query, red from threshold red on.
func single(title, desc, unit, expr string, red float64) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Title(title).Description(desc).Unit(unit).Height(4).Span(4).Datasource(ds).
		WithTarget(query(expr, "")).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		Thresholds(dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps([]dashboard.Threshold{
			{Value: nil, Color: "green"}, {Value: cog.ToPtr(red), Color: "red"}}))
}

// Dashboard builds the dashboard, in the classic JSON model (schema
// version 42) that every Grafana imports; the SDK marks it deprecated in
// favour of the v2 resource, which only Grafana 12 with its feature flag
// reads.
//
//lint:ignore SA1019 the classic model is the one Grafana's import reads
func Dashboard() (dashboard.Dashboard, error) {
	const job = `job="$job"`
	//lint:ignore SA1019 the classic model (see above)
	b := dashboard.NewDashboardBuilder("shardlease fleet").
		Uid(UID).
		Description("The fleet of workers of one application built on shardlease (github.com/shardlease/shardlease): the assigner's view of the fleet, leases, throughput, lag and checkpoints.").
		Tags([]string{"shardlease", "kinesis"}).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("job").Label("Job").Datasource(ds).
			Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(shardlease_leases_held, job)")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged))

	b = b.WithRow(dashboard.NewRowBuilder("Fleet (exported by the worker holding the assigner row)")).
		WithPanel(single("Shards without an owner", "Unfinished leases with no acting owner at the assigner's latest two scans (ShardleaseOwnershipGap goes pending when above 0, fires after 30 s).", "short",
			`max(shardlease_fleet_shards_without_owner{`+job+`})`, 1)).
		WithPanel(single("Ownership gap", "How long the lease without an acting owner the longest has been so.", "s",
			`max(shardlease_fleet_ownership_gap_seconds{`+job+`})`, 30)).
		WithPanel(single("Awaiting assignment", "Unowned leases no worker is assigned to yet.", "short",
			`max(shardlease_fleet_leases_awaiting_assignment{`+job+`})`, 1)).
		WithPanel(single("Assigned, not taken", "Leases assigned to a worker that has not taken them yet.", "short",
			`max(shardlease_fleet_leases_assigned_untaken{`+job+`})`, 1)).
		WithPanel(single("Handoffs in flight", "Cooperative handoffs (balance moves) requested and not finished.", "short",
			`max(shardlease_fleet_handoffs_in_flight{`+job+`})`, 10)).
		WithPanel(single("Assigners", "Workers holding the assigner row (1 in a healthy fleet; the series' assigner label names it).", "short",
			`count(shardlease_assigner_info{`+job+`})`, 2)).
		WithPanel(series("Fleet over time", "The assigner's view: leases, those without an owner, waiting, in a handoff.", "short", 16,
			[2]string{`max(shardlease_fleet_leases{` + job + `})`, "leases"},
			[2]string{`max(shardlease_fleet_shards_without_owner{` + job + `})`, "without an owner"},
			[2]string{`max(shardlease_fleet_leases_awaiting_assignment{` + job + `})`, "awaiting assignment"},
			[2]string{`max(shardlease_fleet_leases_assigned_untaken{` + job + `})`, "assigned, not taken"},
			[2]string{`max(shardlease_fleet_handoffs_in_flight{` + job + `})`, "handoffs"})).
		WithPanel(series("Ownership gap and scan age", "The longest gap, and how old the assigner's latest scan is.", "s", 8,
			[2]string{`max(shardlease_fleet_ownership_gap_seconds{` + job + `})`, "gap"},
			[2]string{`max(shardlease_fleet_scan_age_seconds{` + job + `})`, "scan age"}))

	b = b.WithRow(dashboard.NewRowBuilder("Leases")).
		WithPanel(series("Leases held", "Per worker.", "short", 8,
			[2]string{`sum by (owner) (shardlease_leases_held{` + job + `})`, "{{owner}}"})).
		WithPanel(series("Takes and losses", "Leases taken by reason, lost by cause, released, per second.", "ops", 8,
			[2]string{`sum by (reason) (rate(shardlease_leases_taken_total{` + job + `}[$__rate_interval]))`, "taken: {{reason}}"},
			[2]string{`sum by (cause) (rate(shardlease_leases_lost_total{` + job + `}[$__rate_interval]))`, "lost: {{cause}}"},
			[2]string{`sum(rate(shardlease_leases_released_total{` + job + `}[$__rate_interval]))`, "released"})).
		WithPanel(series("Lease acquire latency", "From when a worker may take a lease to its first delivery (ShardleaseLeaseAcquireSlow: p99 over 1 s).", "s", 8,
			[2]string{`histogram_quantile(0.5, sum by (le) (rate(shardlease_lease_acquire_duration_seconds_bucket{` + job + `}[$__rate_interval])))`, "p50"},
			[2]string{`histogram_quantile(0.99, sum by (le) (rate(shardlease_lease_acquire_duration_seconds_bucket{` + job + `}[$__rate_interval])))`, "p99"})).
		WithPanel(series("Renew failures", "The share of renewals that failed (ShardleaseRenewFailures: over 5% at three evaluations in a row), and failures by outcome.", "percentunit", 12,
			[2]string{`sum(rate(shardlease_renew_failures_total{` + job + `}[$__rate_interval])) / sum(rate(shardlease_renew_duration_seconds_count{` + job + `}[$__rate_interval]))`, "failed share"},
			[2]string{`sum by (outcome) (rate(shardlease_renew_failures_total{` + job + `}[$__rate_interval])) / scalar(sum(rate(shardlease_renew_duration_seconds_count{` + job + `}[$__rate_interval])))`, "{{outcome}}"})).
		WithPanel(series("Renew latency", "Conditional writes that renew leases.", "s", 12,
			[2]string{`histogram_quantile(0.99, sum by (le) (rate(shardlease_renew_duration_seconds_bucket{` + job + `}[$__rate_interval])))`, "p99"},
			[2]string{`histogram_quantile(0.5, sum by (le) (rate(shardlease_renew_duration_seconds_bucket{` + job + `}[$__rate_interval])))`, "p50"}))

	b = b.WithRow(dashboard.NewRowBuilder("Throughput and lag")).
		WithPanel(series("Records processed", "Records the processors handled without error, per second, per worker.", "rps", 12,
			[2]string{`sum by (owner) (rate(shardlease_records_processed_total{` + job + `}[$__rate_interval]))`, "{{owner}}"},
			[2]string{`sum(rate(shardlease_records_processed_total{` + job + `}[$__rate_interval]))`, "all"})).
		WithPanel(series("Millis behind latest", "How far each shard's reader is behind the tip of the stream (MillisBehindLatest).", "ms", 12,
			[2]string{`max by (stream, shard) (shardlease_millis_behind_latest{` + job + `})`, "{{stream}}/{{shard}}"})).
		WithPanel(series("Failed batches", "Failed deliveries per second, skipped batches, and the longest run of failures of one shard (a poison record).", "short", 12,
			[2]string{`sum(rate(shardlease_batches_failed_total{` + job + `}[$__rate_interval]))`, "failed/s"},
			[2]string{`sum by (decision) (rate(shardlease_batches_skipped_total{` + job + `}[$__rate_interval]))`, "skipped/s: {{decision}}"},
			[2]string{`max(shardlease_batch_failures_in_a_row{` + job + `})`, "most failures in a row"})).
		WithPanel(series("Batches processed", "Batches the processors handled without error, per second.", "ops", 12,
			[2]string{`sum(rate(shardlease_batches_processed_total{` + job + `}[$__rate_interval]))`, "batches/s"}))

	b = b.WithRow(dashboard.NewRowBuilder("Checkpoints and calls")).
		WithPanel(series("Checkpoints", "Checkpoint writes by result (written, rejected by the engine), and failed checkpoint writes to the table.", "ops", 8,
			[2]string{`sum by (result) (rate(shardlease_checkpoints_total{` + job + `}[$__rate_interval]))`, "{{result}}"},
			[2]string{`sum by (outcome) (rate(shardlease_store_call_duration_seconds_count{` + job + `,write="checkpoint",outcome!="ok"}[$__rate_interval]))`, "write error: {{outcome}}"})).
		WithPanel(series("Lease-table calls", "Calls per second by operation and outcome other than ok.", "ops", 8,
			[2]string{`sum by (op, outcome) (rate(shardlease_store_call_duration_seconds_count{` + job + `,outcome!="ok"}[$__rate_interval]))`, "{{op}} {{outcome}}"},
			[2]string{`histogram_quantile(0.99, sum by (le) (rate(shardlease_store_call_duration_seconds_bucket{` + job + `}[$__rate_interval])))`, "p99 latency (s)"})).
		WithPanel(series("Stream calls", "Kinesis calls per second by operation and outcome other than ok.", "ops", 8,
			[2]string{`sum by (op, outcome) (rate(shardlease_stream_call_duration_seconds_count{` + job + `,outcome!="ok"}[$__rate_interval]))`, "{{op}} {{outcome}}"},
			[2]string{`histogram_quantile(0.99, sum by (le) (rate(shardlease_stream_call_duration_seconds_bucket{` + job + `}[$__rate_interval])))`, "p99 latency (s)"})).
		WithPanel(single("Malformed rows", "Rows of the lease table that are not leases: skipped, never changed (fix or delete them by hand).", "short",
			`max(shardlease_malformed_rows{`+job+`})`, 1))
	return b.Build()
}

// JSON returns the dashboard as the file holds it.
func JSON() ([]byte, error) {
	d, err := Dashboard()
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
