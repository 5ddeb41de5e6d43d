#!/usr/bin/env bash
# live-local.sh runs shardlease on this machine so you can watch it work:
# it starts the local AWS-compatible servers (dynalite, kinesalite), creates
# a lease table and a stream, and runs a producer and WORKERS workers, each
# with its Prometheus metrics on 127.0.0.1:9464, :9465, ...
#
# Stop it with Ctrl-C (or let DURATION seconds pass): the producer stops,
# the workers drain and shut down gracefully (checkpoint, release), `live
# check` prints the figures of the run, and the servers are stopped.
#
#   WORKERS=3 SHARDS=4 RATE=50 DURATION=0 cmd/live/live-local.sh
#   (make live-local runs it with these defaults)
#
# While it runs, from another shell:
#   curl -s 127.0.0.1:9464/metrics | grep ^shardlease_
#   kill -TERM <a worker pid>    # graceful: its shards move at once
#   kill -KILL <a worker pid>    # crash: its shards move after the lease duration
# Histories and logs go to .tmp/live-local/<time>/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
WORKERS="${WORKERS:-3}"
SHARDS="${SHARDS:-4}"
RATE="${RATE:-50}"
DURATION="${DURATION:-0}"
METRICS_BASE="${METRICS_BASE:-9464}"
export LOCALAWS_STATE_DIR="${LOCALAWS_STATE_DIR:-$ROOT/.tmp/localaws-live}"
OUT="$ROOT/.tmp/live-local/$(date +%Y%m%d-%H%M%S)"
LIVE="$ROOT/.tmp/live-local/live"
TABLE="live-local-leases"
STREAM="live-local"
mkdir -p "$OUT"

echo "live-local: building cmd/live"
go build -o "$LIVE" ./cmd/live
go build -o "$ROOT/.tmp/live-local/shield" ./cmd/live/internal/shield/cmd
scripts/localaws.sh start
eval "$(scripts/localaws.sh env)"

PRODUCER=""
WORKER_PIDS=()
SHIELD_PIDS=()
# start_shield NAME UPSTREAM: a proxy that keeps a worker killed mid-request
# from crashing the local server (dynalite and kinesalite die on aborted
# requests); its URL lands in $OUT/shield-NAME.url.
start_shield() {
  local out="$OUT/shield-$1.url"
  setsid "$ROOT/.tmp/live-local/shield" -upstream "$2" >"$out" 2>>"$OUT/shield.log" &
  SHIELD_PIDS+=("$!")
  for _ in $(seq 50); do [[ -s "$out" ]] && break; sleep 0.1; done
  [[ -s "$out" ]] || { echo "live-local: the $1 shield did not start" >&2; exit 1; }
}
cleanup() {
  trap - EXIT INT TERM
  echo
  if [[ -n "$PRODUCER" ]] && kill -0 "$PRODUCER" 2>/dev/null; then
    echo "live-local: stopping the producer"
    kill -TERM "$PRODUCER" 2>/dev/null || true
    wait "$PRODUCER" 2>/dev/null || true
    # 10s: more than the lease duration (6s), so that a lease stolen for
    # balance just before the stop is acted on and its shard read to the end.
    echo "live-local: letting the workers drain for 10s"
    sleep 10
  fi
  echo "live-local: stopping the workers gracefully (SIGTERM)"
  for pid in "${WORKER_PIDS[@]}"; do kill -CONT "$pid" 2>/dev/null || true; kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${WORKER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "live-local: live check"
  "$LIVE" check -table "$TABLE" -stream "$STREAM" "$OUT" || true
  echo "live-local: histories and logs in $OUT"
  for pid in "${SHIELD_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  scripts/localaws.sh stop
}
trap cleanup EXIT INT TERM

start_shield dynamodb "$AWS_ENDPOINT_URL_DYNAMODB"
start_shield kinesis "$AWS_ENDPOINT_URL_KINESIS"
AWS_ENDPOINT_URL_DYNAMODB="$(head -n 1 "$OUT/shield-dynamodb.url")"
AWS_ENDPOINT_URL_KINESIS="$(head -n 1 "$OUT/shield-kinesis.url")"
export AWS_ENDPOINT_URL_DYNAMODB AWS_ENDPOINT_URL_KINESIS
# The servers keep data in memory only: a new run starts empty.
"$LIVE" create -table "$TABLE" -stream "$STREAM" -shards "$SHARDS"
for ((i = 0; i < WORKERS; i++)); do
  # setsid: Ctrl-C reaches this script only; the workers are stopped in order.
  setsid "$LIVE" run -stream "$STREAM" -table "$TABLE" -owner "worker-$i" -worker "$i" \
    -initial-position TRIM_HORIZON -lease-duration 6s -renew-interval 2s \
    -metrics-addr "127.0.0.1:$((METRICS_BASE + i))" -record "$OUT" >"$OUT/worker-$i.log" 2>&1 &
  WORKER_PIDS+=("$!")
  echo "live-local: worker-$i pid $! metrics http://127.0.0.1:$((METRICS_BASE + i))/metrics log $OUT/worker-$i.log"
done
sleep 2
setsid "$LIVE" produce -stream "$STREAM" -rate "$RATE" -record "$OUT" >"$OUT/producer.log" 2>&1 &
PRODUCER="$!"
echo "live-local: producer pid $PRODUCER, $RATE records/s"
if ((DURATION > 0)); then
  echo "live-local: running for ${DURATION}s (Ctrl-C to stop earlier)"
  sleep "$DURATION"
else
  echo "live-local: running; Ctrl-C to stop"
  while kill -0 "$PRODUCER" 2>/dev/null; do sleep 1; done
fi
