package engine

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// validConfig is the smallest valid configuration.
func validConfig() Config {
	return Config{Owner: "w1", Streams: []StreamConfig{{Name: "orders"}}}
}

// configErrors returns the rules cfg breaks, one error each.
func configErrors(t *testing.T, cfg Config) []error {
	t.Helper()
	_, err := cfg.Validate()
	if err == nil {
		return nil
	}
	joined := errors.Unwrap(err)
	if joined == nil {
		t.Fatalf("error %v does not wrap the rules", err)
	}
	m, ok := joined.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %v does not join the rules", err)
	}
	return m.Unwrap()
}

// Each rule, broken alone, yields one error that names it.
func TestConfigRules(t *testing.T) {
	cases := []struct {
		name   string
		change func(c *Config)
		want   string // in the one error
	}{
		{"missing_owner", func(c *Config) { c.Owner = "" }, "Owner is required"},
		{"no_streams", func(c *Config) { c.Streams = nil }, "Streams is required"},
		{"two_streams_without_multistream", func(c *Config) {
			c.Streams = append(c.Streams, StreamConfig{Name: "payments"})
		}, "MultiStream is required"},
		{"stream_named_twice", func(c *Config) {
			c.MultiStream = true
			c.Streams = append(c.Streams, StreamConfig{Name: "orders"})
		}, "named twice"},
		{"empty_stream_name", func(c *Config) { c.Streams[0].Name = ""; c.LegacyStream = "" }, "1 to 128 characters"},
		{"long_stream_name", func(c *Config) { c.Streams[0].Name = strings.Repeat("a", 129) }, "1 to 128 characters"},
		{"stream_name_with_colon", func(c *Config) { c.Streams[0].Name = "a:b" }, "only letters, digits"},
		{"stream_name_with_space", func(c *Config) { c.Streams[0].Name = "a b" }, "only letters, digits"},
		{"stream_name_with_slash", func(c *Config) { c.Streams[0].Name = "a/b" }, "only letters, digits"},
		{"at_timestamp_without_timestamp", func(c *Config) { c.Streams[0].InitialPosition = AtTimestamp }, "needs a Timestamp"},
		{"unknown_initial_position", func(c *Config) { c.Streams[0].InitialPosition = "EARLIEST" }, "is not TRIM_HORIZON, LATEST or AT_TIMESTAMP"},
		{"shard_end_is_no_initial_position", func(c *Config) { c.Streams[0].InitialPosition = ShardEnd }, "is not TRIM_HORIZON"},
		{"legacy_stream_not_consumed", func(c *Config) { c.MultiStream = true; c.LegacyStream = "old" }, "LegacyStream \"old\" is not one of the consumed streams"},
		{"lease_duration_below_3_renewals", func(c *Config) {
			c.LeaseDuration, c.RenewInterval = 8*time.Second, 3*time.Second
		}, "at least 3 x RenewInterval"},
		{"renew_interval_too_long_for_default_lease", func(c *Config) { c.RenewInterval = 4 * time.Second }, "at least 3 x RenewInterval"},
		{"margin_below_drift_bound", func(c *Config) {
			c.MaxClockDrift, c.SafetyMargin = 0.05, 900*time.Millisecond // needs 10s·0.1/1.05 ≈ 953 ms
		}, "must be at least LeaseDuration·2·MaxClockDrift/(1+MaxClockDrift)"},
		{"margin_below_default_drift_bound", func(c *Config) { c.SafetyMargin = 150 * time.Millisecond }, "for a drift bound of 0.01"},
		{"margin_not_below_lease_minus_renew", func(c *Config) { c.SafetyMargin = 7 * time.Second }, "must be less than LeaseDuration - RenewInterval"},
		{"drift_too_large", func(c *Config) {
			c.MaxClockDrift, c.LeaseDuration, c.SafetyMargin = 0.5, 30*time.Second, 21*time.Second
		}, "MaxClockDrift (0.5) must be in [0, 0.5)"},
		{"negative_drift", func(c *Config) { c.MaxClockDrift = -0.01 }, "MaxClockDrift"},
		{"negative_duration", func(c *Config) { c.IdleTimeBetweenReads = -time.Second }, "must not be negative"},
		{"negative_take_interval", func(c *Config) { c.TakeInterval = -time.Second }, "must not be negative"},
		{"negative_max_leases", func(c *Config) { c.MaxLeasesForWorker = -1 }, "MaxLeasesForWorker"},
		{"get_records_limit_too_high", func(c *Config) { c.GetRecordsLimit = 10001 }, "GetRecordsLimit"},
		{"get_records_limit_negative", func(c *Config) { c.GetRecordsLimit = -5 }, "GetRecordsLimit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig()
			tc.change(&cfg)
			plantFromEnv(&cfg)
			errs := configErrors(t, cfg)
			if len(errs) != 1 {
				t.Fatalf("%d errors, want exactly one naming %q: %v", len(errs), tc.want, errs)
			}
			if !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("error %q does not name the rule %q", errs[0], tc.want)
			}
			if _, err := NewWorker(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewWorker accepted it or hid the rule: %v", err)
			}
		})
	}
}

func TestConfigValidEdges(t *testing.T) {
	cases := []struct {
		name   string
		change func(c *Config)
	}{
		{"minimal", func(c *Config) {}},
		{"lease_exactly_3_renewals", func(c *Config) { c.LeaseDuration, c.RenewInterval = 9*time.Second, 3*time.Second }},
		{"margin_exactly_the_drift_bound", func(c *Config) {
			c.MaxClockDrift = 0.05
			c.SafetyMargin = MinSafetyMargin(DefaultLeaseDuration, 0.05)
		}},
		{"margin_just_below_lease_minus_renew", func(c *Config) { c.SafetyMargin = 7*time.Second - time.Millisecond }},
		{"margin_below_the_default_but_above_the_drift_bound", func(c *Config) { c.SafetyMargin = 500 * time.Millisecond }},
		{"zero_drift", func(c *Config) { c.MaxClockDrift = 0 }}, // zero means the default
		{"at_timestamp", func(c *Config) {
			c.Streams[0].InitialPosition, c.Streams[0].Timestamp = AtTimestamp, time.Unix(1_700_000_000, 0)
		}},
		{"two_streams_multistream", func(c *Config) {
			c.MultiStream = true
			c.Streams = append(c.Streams, StreamConfig{Name: "payments.v2_x-y"})
		}},
		{"multistream_with_legacy", func(c *Config) {
			c.MultiStream, c.LegacyStream = true, "orders"
			c.Streams = append(c.Streams, StreamConfig{Name: "payments"})
		}},
		{"stream_name_128", func(c *Config) { c.Streams[0].Name = strings.Repeat("a", 128) }},
		{"get_records_limits", func(c *Config) { c.GetRecordsLimit = 1 }},
		{"get_records_max", func(c *Config) { c.GetRecordsLimit = 10000 }},
		{"stealing_disabled", func(c *Config) { c.MaxLeasesToStealAtOnce = -1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig()
			tc.change(&cfg)
			if errs := configErrors(t, cfg); len(errs) != 0 {
				t.Errorf("rejected: %v", errs)
			}
		})
	}
}

// Several broken rules are all named in one error.
func TestConfigNamesEveryBrokenRule(t *testing.T) {
	errs := configErrors(t, Config{RenewInterval: 5 * time.Second, GetRecordsLimit: 20000})
	if len(errs) < 4 {
		t.Errorf("%d errors: %v", len(errs), errs)
	}
	_, err := Config{}.Validate()
	for _, want := range []string{"Owner is required", "Streams is required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := validConfig().Validate()
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"LeaseDuration", c.LeaseDuration, 10 * time.Second},
		{"RenewInterval", c.RenewInterval, 3 * time.Second},
		{"ShardSyncInterval", c.ShardSyncInterval, 10 * time.Second},
		{"TakeInterval", c.TakeInterval, 10 * time.Second},
		{"SafetyMargin", c.SafetyMargin, time.Second},
		{"MaxClockDrift", c.MaxClockDrift, 0.01},
		{"GetRecordsLimit", c.GetRecordsLimit, 10000},
		{"IdleTimeBetweenReads", c.IdleTimeBetweenReads, time.Second},
		{"MaxLeasesToStealAtOnce", c.MaxLeasesToStealAtOnce, 1},
		{"MaxLeasesForWorker", c.MaxLeasesForWorker, 0},
		{"InitialPosition", c.Streams[0].InitialPosition, Latest},
		{"LegacyStream", c.LegacyStream, "orders"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("default %s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	// The margin default grows with the drift bound.
	c2, err := Config{Owner: "w", Streams: []StreamConfig{{Name: "s"}}, MaxClockDrift: 0.1}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if want := MinSafetyMargin(10*time.Second, 0.1); c2.SafetyMargin != want || want <= time.Second {
		t.Errorf("margin for 10%% drift = %v, want %v (> 1 s)", c2.SafetyMargin, want)
	}
	// TakeInterval follows LeaseDuration.
	c3, _ := Config{Owner: "w", Streams: []StreamConfig{{Name: "s"}}, LeaseDuration: 30 * time.Second}.Validate()
	if c3.TakeInterval != 30*time.Second || c3.SafetyMargin != 3*time.Second {
		t.Errorf("LeaseDuration 30 s: TakeInterval %v, SafetyMargin %v", c3.TakeInterval, c3.SafetyMargin)
	}
	// Multi-stream mode has no implicit legacy stream.
	c4, _ := Config{Owner: "w", MultiStream: true, Streams: []StreamConfig{{Name: "s"}}}.Validate()
	if c4.LegacyStream != "" {
		t.Errorf("multi-stream LegacyStream %q", c4.LegacyStream)
	}
}

func TestMinSafetyMargin(t *testing.T) {
	cases := []struct {
		lease time.Duration
		drift float64
		want  time.Duration
	}{
		{10 * time.Second, 0, time.Millisecond},
		{10 * time.Second, 0.01, 199019801 * time.Nanosecond}, // 10 s·0.02/1.01 + 1 ms
		{10 * time.Second, 0.05, 953380952 * time.Nanosecond}, // 10 s·0.1/1.05 + 1 ms
		{60 * time.Second, 0.01, 1189118811 * time.Nanosecond},
	}
	for _, tc := range cases {
		if got := MinSafetyMargin(tc.lease, tc.drift); got != tc.want {
			t.Errorf("MinSafetyMargin(%v, %v) = %v, want %v", tc.lease, tc.drift, got, tc.want)
		}
	}
}
