#!/usr/bin/env bash
# prometheus.sh starts and stops a Prometheus server (Debian's prometheus
# package: `make prometheus` installs it) on 127.0.0.1 for the live tests:
# it scrapes every second, evaluates the repository's rules
# (deploy/prometheus/shardlease-rules.yaml) every second, and reads its
# targets from $STATE/targets/*.json (file_sd: write a file there, and the
# server scrapes its targets at once).
#
#   scripts/prometheus.sh start    start it on a free port, wait until ready
#   scripts/prometheus.sh stop     stop it (SIGTERM, SIGKILL after a few seconds)
#   scripts/prometheus.sh url      print its base URL
#   scripts/prometheus.sh status   say whether it runs
#
# State (PID, port, configuration, data, log) lives in
# $PROMETHEUS_STATE_DIR, default .tmp/prometheus under the repository root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${PROMETHEUS_STATE_DIR:-$ROOT/.tmp/prometheus}"
case "$STATE" in /*) ;; *) STATE="$ROOT/$STATE" ;; esac
PROMETHEUS="${PROMETHEUS:-prometheus}"
RULES="${PROMETHEUS_RULES:-$ROOT/deploy/prometheus/shardlease-rules.yaml}"
READY_TIMEOUT_S=30
STOP_TIMEOUT_S=5

die() { echo "prometheus.sh: $*" >&2; exit 1; }

# The server carries the marker of its state directory on its command line
# (its storage path), so a stop finds it even without a PID file.
is_ours() {
  [[ -r "/proc/$1/cmdline" ]] && tr '\0' '\n' <"/proc/$1/cmdline" | grep -qxF -- "--storage.tsdb.path=$STATE/data"
}

alive() {
  [[ -f "$STATE/prometheus.pid" ]] || return 1
  local pid
  pid="$(cat "$STATE/prometheus.pid")"
  [[ "$pid" =~ ^[0-9]+$ ]] && is_ours "$pid"
}

free_port() {
  local port
  for _ in $(seq 50); do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return 0; }
  done
  die "no free port found"
}

cmd_start() {
  command -v "$PROMETHEUS" >/dev/null || die "$PROMETHEUS is not installed (run: make prometheus)"
  [[ -f "$RULES" ]] || die "no rules file $RULES"
  if alive; then
    echo "prometheus.sh: already running (pid $(cat "$STATE/prometheus.pid"), port $(cat "$STATE/prometheus.port"))"
    return 0
  fi
  cmd_stop >/dev/null 2>&1 || true
  mkdir -p "$STATE/targets" "$STATE/data"
  cat >"$STATE/prometheus.yml" <<CONF
# written by scripts/prometheus.sh
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files:
  - $RULES
scrape_configs:
  - job_name: shardlease
    file_sd_configs:
      - files: ['$STATE/targets/*.json']
        refresh_interval: 1s
CONF
  local port try pid
  for try in 1 2 3; do
    port="$(free_port)"
    nohup "$PROMETHEUS" --config.file="$STATE/prometheus.yml" --storage.tsdb.path="$STATE/data" \
      --web.listen-address="127.0.0.1:$port" --storage.tsdb.retention.time=1d --log.level=warn \
      >"$STATE/prometheus.log" 2>&1 &
    pid=$!
    echo "$pid" >"$STATE/prometheus.pid"
    echo "$port" >"$STATE/prometheus.port"
    for ((i = 0; i < READY_TIMEOUT_S * 10; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      if [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$port/-/ready" || true)" == 200 ]]; then
        echo "prometheus.sh: listening on 127.0.0.1:$port (pid $pid), rules $RULES"
        return 0
      fi
      sleep 0.1
    done
    echo "prometheus.sh: not ready on port $port (try $try); log:" >&2
    tail -n 5 "$STATE/prometheus.log" >&2 || true
    kill -KILL "$pid" 2>/dev/null || true
  done
  die "could not start prometheus"
}

cmd_stop() {
  local pids="" pid dir i
  if [[ -f "$STATE/prometheus.pid" ]]; then
    pid="$(cat "$STATE/prometheus.pid")"
    [[ "$pid" =~ ^[0-9]+$ ]] && is_ours "$pid" && pids="$pid"
  fi
  for dir in /proc/[0-9]*; do
    pid="${dir#/proc/}"
    if is_ours "$pid" && [[ " $pids " != *" $pid "* ]]; then pids="$pids $pid"; fi
  done
  rm -f "$STATE/prometheus.pid" "$STATE/prometheus.port"
  [[ -n "${pids// /}" ]] || return 0
  # shellcheck disable=SC2086 # one PID per word
  kill -TERM $pids 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT_S * 10; i++)); do
    local left=""
    for pid in $pids; do kill -0 "$pid" 2>/dev/null && left="$left $pid"; done
    [[ -z "$left" ]] && break
    sleep 0.1
  done
  # shellcheck disable=SC2086
  [[ -z "${left:-}" ]] || kill -KILL $left 2>/dev/null || true
  echo "prometheus.sh: stopped (pid$(printf ' %s' $pids))"
}

cmd_url() {
  alive || die "not running (run: scripts/prometheus.sh start)"
  echo "http://127.0.0.1:$(cat "$STATE/prometheus.port")"
}

cmd_status() {
  if alive; then
    echo "prometheus: running (pid $(cat "$STATE/prometheus.pid"), port $(cat "$STATE/prometheus.port"))"
  else
    echo "prometheus: stopped"
    return 1
  fi
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
url) cmd_url ;;
status) cmd_status ;;
*) echo "usage: $0 start|stop|url|status" >&2; exit 2 ;;
esac
