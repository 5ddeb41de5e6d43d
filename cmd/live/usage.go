package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// envName is the environment variable of a flag: LIVE_<FLAG>.
func envName(flagName string) string {
	return "LIVE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// placeholders name the value of a flag in the usage; other flags are
// named by their type.
var placeholders = map[string]string{
	"stream": "STREAM", "table": "TABLE", "owner": "ID", "region": "REGION",
	"dynamodb-endpoint": "URL", "kinesis-endpoint": "URL", "initial-position": "POSITION",
	"at-timestamp": "TIME", "metrics-addr": "ADDR", "record": "DIR", "log-level": "LEVEL",
	"log-format": "FORMAT", "consumer": "MODE", "consumer-name": "NAME", "assignment": "MODE",
	"renewal": "MODE", "balance-by": "WHAT", "json": "FILE",
}

// placeholder names the value flag f takes ("" for a boolean).
func placeholder(f *flag.Flag) string {
	if p, ok := placeholders[f.Name]; ok {
		return p
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	switch f.Value.(flag.Getter).Get().(type) {
	case time.Duration:
		return "DURATION"
	case int, int64, uint, uint64:
		return "N"
	case float64:
		return "NUMBER"
	}
	return "VALUE"
}

// printUsage writes the usage of a command: its synopsis, then every flag
// with its value's name, its environment variable, what it does and its
// default.
func printUsage(fs *flag.FlagSet, synopsis string, w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\nFlags (each can also be set in the environment, as named in brackets; a flag on the\ncommand line wins; durations take a unit: 10s, 500ms, 1m):\n", synopsis)
	fs.VisitAll(func(f *flag.Flag) {
		name := "-" + f.Name
		if p := placeholder(f); p != "" {
			name += " " + p
		}
		fmt.Fprintf(w, "  %s  [%s]\n      %s", name, envName(f.Name), f.Usage)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" && !strings.Contains(f.Usage, "(default") {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

var invalidValue = regexp.MustCompile(`^invalid value "([^"]*)" for flag -([a-z0-9-]+): (.*)$`)

// flagError rewrites the flag package's parse error to name the flag and,
// for a duration without a unit, what to write.
func flagError(fs *flag.FlagSet, err error) error {
	m := invalidValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	f := fs.Lookup(m[2])
	if f != nil {
		if _, ok := f.Value.(flag.Getter).Get().(time.Duration); ok {
			return fmt.Errorf("-%s %q: not a duration; write it with a unit, such as %ss, 500ms or 1m", m[2], m[1], strings.TrimSuffix(m[1], "."))
		}
	}
	return fmt.Errorf("-%s %q: %s", m[2], m[1], m[3])
}

// parseFlags parses args into fs, then fills every flag not given on the
// command line from LIVE_<FLAG> in the environment. A parse error is
// returned alone, naming the flag (the usage is not printed: `-h` prints
// it); -h prints the usage and returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer, synopsis string) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, synopsis, stderr)
			return err
		}
		return fmt.Errorf("%w (see %s -h)", flagError(fs, err), fs.Name())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		env := envName(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if err := fs.Set(f.Name, v); err != nil {
				err = flagError(fs, fmt.Errorf("invalid value %q for flag -%s: %w", v, f.Name, err))
				errs = append(errs, fmt.Errorf("%s=%q (as %s): %w", env, v, "-"+f.Name, err))
			}
		}
	})
	return errors.Join(errs...)
}

// negativeDurations returns an error naming every duration flag of fs set
// to a negative value (set on the command line or from the environment).
func negativeDurations(fs *flag.FlagSet) error {
	var bad []string
	fs.VisitAll(func(f *flag.Flag) {
		if d, ok := f.Value.(flag.Getter).Get().(time.Duration); ok && d < 0 {
			bad = append(bad, fmt.Sprintf("-%s %v", f.Name, d))
		}
	})
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("durations must not be negative: %s", strings.Join(bad, ", "))
}

// configFlags maps the engine's configuration fields, as its errors name
// them, to the flags of live run.
var configFlags = map[string]string{
	"LeaseDuration": "-lease-duration", "RenewInterval": "-renew-interval", "SafetyMargin": "-safety-margin",
	"MaxClockDrift": "-max-clock-drift", "TakeInterval": "-take-interval", "ShardSyncInterval": "-shard-sync-interval",
	"MaxLeasesForWorker": "-max-leases", "MaxLeasesToStealAtOnce": "-max-steal", "GetRecordsLimit": "-get-records-limit",
	"IdleTimeBetweenReads": "-idle-time-between-reads", "AssignerScanInterval": "-assigner-scan-interval",
	"PendingPollInterval": "-pending-poll-interval", "BalanceBy": "-balance-by", "Assignment": "-assignment",
	"Renewal": "-renewal", "InitialPosition": "-initial-position", "ConsumerName": "-consumer-name", "Consumer": "-consumer",
	"DeregisterConsumer": "-deregister-consumer", "CallTimeout": "-call-timeout", "ShutdownTimeout": "-shutdown-timeout",
	"StartTimeout": "-start-timeout", "Owner": "-owner", "MaxAttempts": "-skip-failed-after",
	"AdoptUnverifiedRows": "-adopt-unverified-rows", "ConsistentTakeScans": "-consistent-take-scans",
}

var configField = func() *regexp.Regexp {
	names := make([]string, 0, len(configFlags))
	for k := range configFlags {
		names = append(names, regexp.QuoteMeta(k))
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	return regexp.MustCompile(`\b(?:ConsumerOptions\.|Config\.|FailurePolicy\.|Streams\[\d+\]\.)*(` + strings.Join(names, "|") + `)\b`)
}()

// inFlags rewrites an error of the engine's configuration to name the
// flags the user typed instead of the Go fields.
func inFlags(err error) string {
	s := configField.ReplaceAllStringFunc(err.Error(), func(s string) string {
		m := configField.FindStringSubmatch(s)
		return configFlags[m[1]]
	})
	// the engine's constants, as the flags spell their values
	return regexp.MustCompile(`\bFanOut\b`).ReplaceAllString(s, "fan-out")
}

// output writes a command's own lines (its errors, its summary) in the
// format of its logs: plain "live CMD: ..." lines, or with -log-format json
// one JSON object per line, as the log lines are.
type output struct {
	cmd  string
	json *slog.Logger // nil: text
	w    io.Writer
}

// newOutput reads -log-format from args (or LIVE_LOG_FORMAT) before the
// flags are parsed, so that even a flag error comes out as JSON.
func newOutput(cmd string, args []string, w io.Writer) *output {
	format := os.Getenv("LIVE_LOG_FORMAT")
	for i, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if v, ok := strings.CutPrefix(a, "log-format="); ok {
			format = v
		} else if a == "log-format" && i+1 < len(args) {
			format = args[i+1]
		}
	}
	o := &output{cmd: cmd, w: w}
	if format == "json" {
		o.json = slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: durationString}))
	}
	return o
}

// errorf writes an error line.
func (o *output) errorf(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if o.json != nil {
		o.json.Error(msg, "command", o.cmd)
		return
	}
	fmt.Fprintf(o.w, "%s: %s\n", o.cmd, msg)
}

// summary writes a command's result line to w: text as given, or a JSON
// object with msg and the attributes.
func (o *output) summary(w io.Writer, text string, msg string, attrs ...any) {
	if o.json != nil {
		slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: durationString})).Info(msg, append([]any{"command", o.cmd}, attrs...)...)
		return
	}
	fmt.Fprintln(w, text)
}
