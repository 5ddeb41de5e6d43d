#!/usr/bin/env bash
# localaws.sh starts, stops and describes the local AWS-compatible servers
# the contract tests run against: dynalite (DynamoDB) and kinesalite
# (Kinesis), both bound to 127.0.0.1 on free ports.
#
#   scripts/localaws.sh start   install (npm ci) if needed, start both, wait until healthy
#   scripts/localaws.sh stop    stop every server of the state directory (SIGTERM,
#                               SIGKILL after a few seconds)
#   scripts/localaws.sh env     print the export line that points the AWS SDK at them
#   scripts/localaws.sh status  say whether they are running
#   scripts/localaws.sh run -- CMD...
#                               start a private pair, run CMD with the env
#                               exported, stop them whatever happens, exit
#                               with CMD's status
#
# State (PIDs, ports, logs) lives in $LOCALAWS_STATE_DIR, default
# .tmp/localaws under the repository root. Credentials printed by `env` are
# the dummy ones the local servers accept; nothing else is printed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${LOCALAWS_STATE_DIR:-$ROOT/.tmp/localaws}"
case "$STATE" in /*) ;; *) STATE="$ROOT/$STATE" ;; esac
HEALTH_TIMEOUT_S="${LOCALAWS_HEALTH_TIMEOUT_S:-20}"
STOP_TIMEOUT_S=5

die() { echo "localaws: $*" >&2; exit 1; }

# Every server this script starts carries the marker argument
# --localaws-state=$STATE on its command line, so that the servers of a state
# directory can be found (and stopped) even when a PID file is missing or
# names another process: a retry never leaves a stray behind.
MARK="--localaws-state=$STATE"

# has_arg PID ARG: the command line of PID has the exact argument ARG.
has_arg() {
  local arg
  [[ -r "/proc/$1/cmdline" ]] || return 1
  while IFS= read -r -d '' arg; do
    [[ "$arg" == "$2" ]] && return 0
  done <"/proc/$1/cmdline" 2>/dev/null
  return 1
}

# server_pids NAME: the PIDs of every NAME server of this state directory
# (node running scripts/NAME-server.js with this directory's marker).
server_pids() {
  local dir pid
  for dir in /proc/[0-9]*; do
    pid="${dir#/proc/}"
    has_arg "$pid" "$MARK" && has_arg "$pid" "$ROOT/scripts/$1-server.js" && echo "$pid"
  done
  return 0
}

# is_server NAME PID: PID is a NAME server of this state directory (guards
# against killing a recycled PID, and against the shell that has forked but
# not yet exec'd node).
is_server() { has_arg "$2" "$MARK" && has_arg "$2" "$ROOT/scripts/$1-server.js"; }

# alive NAME: the server NAME has a PID file and that PID is still our node
# process.
alive() {
  local pidfile="$STATE/$1.pid" pid
  [[ -f "$pidfile" ]] || return 1
  pid="$(cat "$pidfile")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  is_server "$1" "$pid"
}

# free_port prints a port on 127.0.0.1 that nothing listens on right now.
free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_healthy NAME PORT PID: wait until PID has become the NAME server
# (under load the forked shell can take a while to exec node), then until
# it is healthy. dynalite answers 200 on GET /; kinesalite answers 403
# there, so for it an open TCP port is the signal.
wait_healthy() {
  local name="$1" port="$2" pid="$3" deadline=$((SECONDS + HEALTH_TIMEOUT_S))
  while ((SECONDS < deadline)); do
    kill -0 "$pid" 2>/dev/null || return 1
    if is_server "$name" "$pid"; then
      if [[ "$name" == dynalite ]]; then
        [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$port/" || true)" == 200 ]] && return 0
      else
        tcp_open "$port" && return 0
      fi
    fi
    sleep 0.1
  done
  return 1
}

# launch NAME: start one server on a free port, retrying with another port
# if the first one was taken in between. Before each start every server of
# this name and state directory is stopped, so a retry never leaves a
# second server running.
launch() {
  local name="$1" port pid try
  if alive "$name"; then
    echo "localaws: $name already running (pid $(cat "$STATE/$name.pid"), port $(cat "$STATE/$name.port"))"
    return 0
  fi
  for try in 1 2 3; do
    stop_one "$name" >/dev/null 2>&1 || true
    port="$(free_port)"
    # $! is the forked shell, which becomes node once nohup has exec'd it
    # (wait_healthy waits for that).
    if [[ "$name" == dynalite ]]; then
      nohup node "$ROOT/scripts/dynalite-server.js" "$port" "$MARK" >"$STATE/$name.log" 2>&1 &
    else
      nohup node "$ROOT/scripts/kinesalite-server.js" "$port" "$MARK" >"$STATE/$name.log" 2>&1 &
    fi
    pid=$!
    echo "$pid" >"$STATE/$name.pid"
    echo "$port" >"$STATE/$name.port"
    if wait_healthy "$name" "$port" "$pid"; then
      echo "localaws: $name listening on 127.0.0.1:$port (pid $pid)"
      return 0
    fi
    echo "localaws: $name did not become healthy on port $port (try $try); log:" >&2
    tail -n 5 "$STATE/$name.log" >&2 || true
  done
  stop_one "$name" >/dev/null 2>&1 || true
  die "could not start $name"
}

# stop_one NAME: stop every NAME server of this state directory: the one
# the PID file names, and any other found by its marker (SIGTERM, then
# SIGKILL after a few seconds).
stop_one() {
  local name="$1" pid pids i left
  pids="$(server_pids "$name")"
  if [[ -f "$STATE/$name.pid" ]]; then
    pid="$(cat "$STATE/$name.pid")"
    # the PID file's process may still be the shell about to exec node
    if [[ "$pid" =~ ^[0-9]+$ ]] && ! grep -qx "$pid" <<<"$pids" && kill -0 "$pid" 2>/dev/null &&
      [[ "$(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ')" == "$$" ]]; then
      pids="$pids"$'\n'"$pid"
    fi
  fi
  pids="$(grep -E '^[0-9]+$' <<<"$pids" || true)"
  rm -f "$STATE/$name.pid" "$STATE/$name.port"
  [[ -n "$pids" ]] || return 0
  # shellcheck disable=SC2086 # one PID per word
  kill -TERM $pids 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT_S * 10; i++)); do
    left=""
    for pid in $pids; do kill -0 "$pid" 2>/dev/null && left="$left $pid"; done
    [[ -z "$left" ]] && break
    sleep 0.1
  done
  if [[ -n "$left" ]]; then
    echo "localaws: $name (pid$left) ignored SIGTERM for ${STOP_TIMEOUT_S}s; sending SIGKILL" >&2
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null || true
  fi
  echo "localaws: stopped $name (pid $(tr '\n' ' ' <<<"$pids" | sed 's/ $//'))"
}

cmd_start() {
  command -v node >/dev/null || die "node is not installed (Node 18+ is needed for dynalite and kinesalite)"
  mkdir -p "$STATE"
  if [[ ! -d "$ROOT/node_modules/dynalite" || ! -d "$ROOT/node_modules/kinesalite" ]]; then
    echo "localaws: installing dynalite and kinesalite (npm ci)"
    (cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error) >&2 || die "npm ci failed"
  fi
  launch dynalite
  launch kinesalite
}

cmd_stop() {
  stop_one kinesalite
  stop_one dynalite
}

cmd_env() {
  alive dynalite || die "dynalite is not running (run: scripts/localaws.sh start)"
  alive kinesalite || die "kinesalite is not running (run: scripts/localaws.sh start)"
  echo "export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$(cat "$STATE/dynalite.port")" \
    "AWS_ENDPOINT_URL_KINESIS=http://127.0.0.1:$(cat "$STATE/kinesalite.port")" \
    "AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1"
}

cmd_status() {
  local name rc=0
  for name in dynalite kinesalite; do
    if alive "$name"; then
      echo "$name: running (pid $(cat "$STATE/$name.pid"), port $(cat "$STATE/$name.port"))"
    else
      echo "$name: stopped"
      rc=1
    fi
  done
  return $rc
}

# cmd_run starts a pair of servers of its own (in a fresh state directory
# unless LOCALAWS_STATE_DIR is set), runs the command with their
# environment, and always stops them.
cmd_run() {
  [[ "${1:-}" == "--" ]] && shift
  (($# > 0)) || die "usage: $0 run -- COMMAND..."
  local own=""
  if [[ -z "${LOCALAWS_STATE_DIR:-}" ]]; then
    STATE="$ROOT/.tmp/localaws-run-$$"
    own=1
  fi
  # shellcheck disable=SC2064 # expand STATE and own now
  trap "cmd_stop >&2; [[ -z '$own' ]] || rm -rf '$STATE'" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  cmd_start >&2
  eval "$(cmd_env)"
  local rc=0
  "$@" || rc=$?
  exit "$rc"
}

case "${1:-}" in
start) cmd_start ;;
run) shift; cmd_run "$@" ;;
stop) cmd_stop ;;
env) cmd_env ;;
status) cmd_status ;;
*) echo "usage: $0 start|stop|env|status|run -- CMD..." >&2; exit 2 ;;
esac
