#!/usr/bin/env bash
# hashes.sh BIN [MUTBIN] prints the trace hash of a fixed set of worlds, one
# line each ("world seed hash events"), with the simrun binary BIN (and
# MUTBIN, a simrun built with -tags shardlease_mutations, for the planted
# bugs). A speed-up that must not change the engine's or the simulator's
# decisions shows the same output before and after:
#
#   go build -o /tmp/old ./cmd/simrun   # on the old commit
#   go build -o /tmp/new ./cmd/simrun   # on the new one
#   diff <(sim/testdata/hashes.sh /tmp/old) <(sim/testdata/hashes.sh /tmp/new)
#
# FULL=1 prints each seed's whole summary (verdicts, violations, figures)
# but its wall time: a change to the checkers must leave that alone too.
set -euo pipefail
bin=$1
mut=${2:-}
j() { # name, then simrun flags: one line per seed
	local name=$1
	shift
	"$bin" "$@" -json -report=false -parallel "${PAR:-1}" |
		if [ -n "${FULL:-}" ]; then
			jq -c --arg n "$name" '{world: $n} + del(.wall_seconds)'
		else
			jq -r --arg n "$name" '"\($n) \(.seed) \(.trace_hash) \(.events) \(.ok)"'
		fi
}
j swarm -seeds 1-48 || echo "exit $?"
j swarm-scan -seeds 1-8 -assignment scan || echo "exit $?"
j swarm-mixed -seeds 1-8 -assignment mixed || echo "exit $?"
for a in assigner scan mixed; do
	j "10x100-$a" -seed 1 -workers 10 -shards 100 -duration 200s -quiet 100s -faults none -assignment $a || echo "exit $?"
done
j 10x100-swarmfaults -seed 1 -workers 10 -shards 100 -duration 200s -quiet 100s -faults swarm || echo "exit $?"
for a in assigner scan; do
	j "100x2000-$a" -seed 1 -workers 100 -shards 2000 -duration 120s -quiet 60s -faults none -assignment $a || echo "exit $?"
done
j fanout -seeds 1-4 -consumer fan-out || echo "exit $?"
j etcd -seeds 1-4 -store etcd || echo "exit $?"
j clock -seeds 1-3 -scenario slow-clock-holder-cut-off || echo "exit $?"
j migrate -seeds 1-3 -scenario migrate-to-assigner-and-back || echo "exit $?"
for m in etcd-owner-only-compare etcd-watch-resume-at-current; do
	j "mut-$m" -seeds 1-3 -store etcd -mutation $m || echo "exit $?"
done
for m in unfenced-take unfenced-checkpoint skip-on-resume orphan-children; do
	j "mut-$m" -seeds 1-3 -mutation $m || echo "exit $?"
done
if [ -n "$mut" ]; then
	bin=$mut
	j mut-engine:parents-unchecked -seeds 1-3 -mutation engine:parents-unchecked -faults split,merge || echo "exit $?"
	j mut-engine:steal-acts-at-once -seeds 1-3 -mutation engine:steal-acts-at-once -faults scale,rolling -assignment scan || echo "exit $?"
	j mut-engine:validity-from-reply -seeds 1-3 -mutation engine:validity-from-reply -faults latency,clog,partition,pause || echo "exit $?"
fi
