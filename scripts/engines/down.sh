#!/usr/bin/env bash
# Stop the engines started by scripts/engines/up.sh (found through their pid files).
#
# Usage:  scripts/engines/down.sh [--clean] [nats] [mongo] [es]     (default: all)
#   --clean   also delete the run dir (data, logs, pid files) after stopping;
#             only allowed when all engines are stopped (no engine list given).
#
# Engines not started by up.sh (no pid file) are left alone. See docs/engines.md.
set -euo pipefail

RUN_DIR="${ENGINES_RUN_DIR:-/tmp/estate-engines}"
STOP_TIMEOUT="${STOP_TIMEOUT:-30}"

log() { printf '[engines] %s\n' "$*" >&2; }
die() { printf '[engines] ERROR: %s\n' "$*" >&2; exit 1; }

clean=0 want_nats=0 want_mongo=0 want_es=0 explicit=0
for arg in "$@"; do
	case "$arg" in
	--clean) clean=1 ;;
	nats) want_nats=1 explicit=1 ;;
	mongo | mongodb | ferretdb) want_mongo=1 explicit=1 ;;
	es | elasticsearch) want_es=1 explicit=1 ;;
	all) want_nats=1 want_mongo=1 want_es=1 ;;
	-h | --help)
		sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown argument '$arg' (expected: --clean, nats, mongo, es)" ;;
	esac
done
if [ "$explicit" = 0 ]; then
	want_nats=1 want_mongo=1 want_es=1
elif [ "$clean" = 1 ]; then
	die "--clean wipes the whole run dir; use it without an engine list"
fi

# pid_matches PID PATTERN -> 0 if PID is alive and its command line matches PATTERN (a regex; read whole, then
# matched: `tr | grep -q` under pipefail fails when grep exits before tr has written all)
pid_matches() {
	local cmd
	[ -n "$1" ] && [ -r "/proc/$1/cmdline" ] || return 1
	cmd="$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null)" || return 1
	[[ $cmd =~ $2 ]]
}

# stop NAME PIDFILE PATTERN [SIGNAL]
stop() {
	local name="$1" pidfile="$2" pattern="$3" signal="${4:-TERM}" pid waited=0
	if [ ! -s "$pidfile" ]; then
		log "$name: no pid file ($pidfile), nothing to stop"
		return 0
	fi
	pid="$(cat "$pidfile")"
	if ! pid_matches "$pid" "$pattern"; then
		log "$name: pid $pid is not running (stale pid file removed)"
		rm -f "$pidfile"
		return 0
	fi
	log "$name: stopping pid $pid"
	kill -"$signal" "$pid" 2>/dev/null || true
	while pid_matches "$pid" "$pattern"; do
		if [ "$waited" -ge $((STOP_TIMEOUT * 10)) ]; then
			log "$name: still running after ${STOP_TIMEOUT}s, sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			sleep 0.5
			break
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	rm -f "$pidfile"
	log "$name: stopped"
}

if [ ! -d "$RUN_DIR" ]; then
	log "run dir $RUN_DIR does not exist, nothing to stop"
	exit 0
fi

if [ "$want_es" = 1 ]; then
	# The server JVM (its own pid file); the launcher (runuser + CLI JVM) exits with it.
	pidfile="$RUN_DIR/pids/elasticsearch.pid"
	[ -s "$pidfile" ] || pidfile="$RUN_DIR/es/es.pid"
	stop elasticsearch "$pidfile" org.elasticsearch
	rm -f "$RUN_DIR/es/es.pid"
	stop elasticsearch-launcher "$RUN_DIR/pids/elasticsearch-launcher.pid" elasticsearch >/dev/null 2>&1 || true
fi
if [ "$want_mongo" = 1 ]; then
	stop ferretdb "$RUN_DIR/pids/ferretdb.pid" ferretdb
	# SIGINT is PostgreSQL's fast shutdown (SIGTERM would wait for every client to leave).
	stop postgresql "$RUN_DIR/pids/postgresql.pid" postgres INT
fi
[ "$want_nats" = 1 ] && stop nats "$RUN_DIR/pids/nats.pid" nats-server

if [ "$clean" = 1 ]; then
	case "$RUN_DIR" in
	/ | "$HOME" | /tmp | /root | /home) die "refusing to delete $RUN_DIR" ;;
	esac
	log "removing $RUN_DIR"
	rm -rf "$RUN_DIR"
fi
exit 0
