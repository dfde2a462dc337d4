#!/usr/bin/env bash
# Install (if missing) and start the local engines used by the estate services:
#
#   nats   NATS server 2.9 with JetStream          (Debian package nats-server),
#          a user per service (scripts/engines/nats-users.conf; passwords
#          generated into the run dir, printed as NATS_USER/NATS_PASSWORD for
#          tests and tools and NATS_PASSWORD_<SERVICE> for each service)
#   mongo  FerretDB v1.24.2, MongoDB wire (built from tools/ferretdb), on
#          PostgreSQL 15 (Debian package; FERRETDB_BACKEND=sqlite for SQLite)
#   es     Elasticsearch 8.19 integ-test build      (zip from Maven Central)
#
# Usage:  eval "$(scripts/engines/up.sh [nats] [mongo] [es])"     (default: all)
#
# Only `export NAME=value` lines go to stdout; progress and errors go to stderr.
# Idempotent: an engine that already answers on its port is left alone.
# See docs/engines.md for details, environment variables and known limitations.
set -euo pipefail

# Everything but the final export lines goes to stderr; fd 3 is the real stdout.
exec 3>&1 1>&2

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"

HOST=127.0.0.1
NATS_PORT="${NATS_PORT:-4222}"
MONGO_PORT="${MONGO_PORT:-27017}"
ES_PORT="${ES_PORT:-9200}"
ES_TRANSPORT_PORT="${ES_TRANSPORT_PORT:-9300-9400}"
MONGO_DB="${MONGO_DB:-estate}"
PG_PORT="${PG_PORT:-5432}"
FERRETDB_BACKEND="${FERRETDB_BACKEND:-postgresql}"

FERRETDB_VERSION="v1.24.2" # must match tools/ferretdb/go.mod
ES_VERSION="${ES_VERSION:-8.19.21}"
ES_USER="${ES_USER:-estate-es}"
ES_JAVA_OPTS="${ES_JAVA_OPTS:--Xms512m -Xmx512m}"
FERRETDB_LOG_LEVEL="${FERRETDB_LOG_LEVEL:-warn}"
PG_VERSION=15 # Debian bookworm's PostgreSQL
PG_USER="${PG_USER:-postgres}"

NATS_TIMEOUT="${NATS_TIMEOUT:-30}"
MONGO_TIMEOUT="${MONGO_TIMEOUT:-60}"
PG_TIMEOUT="${PG_TIMEOUT:-60}"
ES_TIMEOUT="${ES_TIMEOUT:-180}"

RUN_DIR="${ENGINES_RUN_DIR:-/tmp/estate-engines}"
CACHE_DIR="${ENGINES_CACHE_DIR:-$HOME/.cache/estate-engines}"

MAVEN_BASE="https://repo1.maven.org/maven2"
ES_GAV_PATH="org/elasticsearch/distribution/integ-test-zip/elasticsearch"

log() { printf '[engines] %s\n' "$*" >&2; }
die() { printf '[engines] ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- arguments
want_nats=0 want_mongo=0 want_es=0
if [ $# -eq 0 ]; then
	want_nats=1 want_mongo=1 want_es=1
fi
for arg in "$@"; do
	case "$arg" in
	nats) want_nats=1 ;;
	mongo | mongodb | ferretdb) want_mongo=1 ;;
	es | elasticsearch) want_es=1 ;;
	all) want_nats=1 want_mongo=1 want_es=1 ;;
	-h | --help)
		sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown engine '$arg' (expected: nats, mongo, es)" ;;
	esac
done

mkdir -p "$RUN_DIR/logs" "$RUN_DIR/pids" "$CACHE_DIR"
chmod 755 "$RUN_DIR"

# Serialise concurrent runs (two shells running up.sh at once). The engines we
# start never inherit this descriptor (see spawn), so the lock ends with this run.
LOCK_FILE="$RUN_DIR/pids/up.lock"
if command -v flock >/dev/null 2>&1; then
	exec 9>"$LOCK_FILE"
	if ! flock -w "${ENGINES_LOCK_TIMEOUT:-300}" 9; then
		holders="$(exec 9>&-; for fd in /proc/[0-9]*/fd/*; do
			[ "$(readlink "$fd" 2>/dev/null)" = "$LOCK_FILE" ] && { p="${fd#/proc/}"; echo "${p%%/*}"; }
		done | sort -u | grep -vx "$$" | tr '\n' ' ' || true)"
		die "could not lock $LOCK_FILE within ${ENGINES_LOCK_TIMEOUT:-300}s; held by pid(s): ${holders:-?}"
	fi
fi

# ---------------------------------------------------------------- helpers
SECONDS=0
apt_updated=0
apt_install() {
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install $* by hand"
	if [ "$apt_updated" -eq 0 ]; then
		log "apt-get update"
		apt-get update -qq >&2 || die "apt-get update failed"
		apt_updated=1
	fi
	log "apt-get install $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 ||
		die "apt-get install $* failed"
}

need_cmd() { # need_cmd COMMAND DEBIAN_PACKAGE
	command -v "$1" >/dev/null 2>&1 || apt_install "$2"
}

tcp_open() { # tcp_open PORT -> 0 when something accepts on HOST:PORT
	timeout 2 bash -c "exec 7<>/dev/tcp/$HOST/$1" 2>/dev/null
}

pid_alive() { # pid_alive PIDFILE PATTERN -> 0 if the pid runs a command matching PATTERN (a regex)
	local pid cmd
	[ -s "$1" ] || return 1
	pid="$(cat "$1" 2>/dev/null)" || return 1
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	# Read whole, then matched: `tr | grep -q` under pipefail fails when grep exits before tr has written all.
	cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
	[[ $cmd =~ $2 ]]
}

# spawned_alive PIDFILE -> 0 while the process `spawn` started has not ended. For the start-up waits: it reads the
# process's state, not its command line, which reads empty for an instant while nohup and setsid exec the engine
# (pid_alive would then take a starting engine for dead).
spawned_alive() {
	local pid stat state
	[ -s "$1" ] || return 1
	pid="$(cat "$1" 2>/dev/null)" || return 1
	[ -n "$pid" ] || return 1
	stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
	# The state follows the command name, which is in parentheses and may hold spaces.
	state="${stat##*) }"
	state="${state%% *}"
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# spawn LOGFILE PIDFILE CMD... : start CMD detached (own session, stdin /dev/null,
# stdout+stderr to LOGFILE) and write its pid to PIDFILE. All other inherited file
# descriptors (our stdout on fd 3, the lock on fd 9, a caller's pipes) are closed
# first, so the daemon never keeps a caller's `$(...)` or pipe open.
spawn() {
	local logfile="$1" pidfile="$2" fd
	shift 2
	(
		for fd in "/proc/$BASHPID/fd/"*; do
			fd="${fd##*/}"
			[ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"
		done
		exec nohup setsid "$@" >"$logfile" 2>&1 </dev/null
	) &
	local pid=$! self
	echo "$pid" >"$pidfile"
	# Until the subshell has exec'd, its command line is this script's, and
	# pid_alive would take the engine for dead: wait for the exec (or its end).
	self="$(readlink "/proc/$$/exe")"
	while [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$self" ]; do
		sleep 0.05
	done
}

fail_with_log() { # fail_with_log MESSAGE LOGFILE...
	local f
	printf '[engines] ERROR: %s\n' "$1" >&2
	shift
	for f in "$@"; do
		if [ -s "$f" ]; then
			printf '[engines] ---- last lines of %s ----\n' "$f" >&2
			tail -n 40 "$f" >&2
		else
			printf '[engines] (%s is empty or missing)\n' "$f" >&2
		fi
	done
	exit 1
}

# ---------------------------------------------------------------- NATS
nats_info() { # the server's INFO greeting
	timeout 3 bash -c "exec 7<>/dev/tcp/$HOST/$NATS_PORT && IFS= read -r -t 2 l <&7 && printf '%s' \"\$l\"" 2>/dev/null || true
}

nats_auth_required() {
	case "$(nats_info)" in *'"auth_required":true'*) return 0 ;; *) return 1 ;; esac
}

nats_answers() {
	local line
	line="$(nats_info)"
	case "$line" in
	INFO*'"jetstream":true'*) return 0 ;;
	INFO*)
		log "nats: WARNING: the server on $HOST:$NATS_PORT does not have JetStream enabled"
		return 0
		;;
	*) return 1 ;;
	esac
}

# ---- NATS users: one per service, allowed only its subjects, plus `tools` for tests, benchmarks and
# operators (scripts/engines/nats-users.conf). Passwords are generated once per run dir, kept there
# (mode 600, never in the repository) and handed to nats-server through its environment.
NATS_USERS="gateway listings media leads webhooks tools"
NATS_AUTH_DIR="$RUN_DIR/nats-auth"
NATS_CREDENTIALS="$NATS_AUTH_DIR/credentials"

nats_password() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

nats_ensure_credentials() {
	local user
	mkdir -p "$NATS_AUTH_DIR"
	chmod 700 "$NATS_AUTH_DIR"
	touch "$NATS_CREDENTIALS"
	chmod 600 "$NATS_CREDENTIALS"
	for user in $NATS_USERS; do
		grep -q "^$user=" "$NATS_CREDENTIALS" || echo "$user=$(nats_password)" >>"$NATS_CREDENTIALS"
	done
}

nats_password_of() { grep "^$1=" "$NATS_CREDENTIALS" | head -n 1 | cut -d= -f2-; }
nats_password_var() { printf 'NATS_PASSWORD_%s' "$(printf '%s' "$1" | tr '[:lower:]' '[:upper:]')"; }

nats_start() {
	if nats_answers; then
		log "nats: already answering on $HOST:$NATS_PORT, leaving it"
		nats_auth_required || log "nats: WARNING: that server does not require authentication (started before users were configured?); the credentials printed are not enforced"
		return
	fi
	tcp_open "$NATS_PORT" && die "nats: port $NATS_PORT is taken by something that is not NATS"
	if ! command -v nats-server >/dev/null 2>&1; then
		apt_install nats-server
	fi
	# The Debian package ships a systemd unit; we never rely on it (no systemd here anyway).
	mkdir -p "$RUN_DIR/nats"
	nats_ensure_credentials
	log "nats: starting $(nats-server --version 2>/dev/null) on $HOST:$NATS_PORT (JetStream store $RUN_DIR/nats, users from $NATS_CREDENTIALS)"
	(
		# nats-server parses a variable's value as configuration: quoted, a password is always a string
		# (unquoted, a hex password such as 5e3a… is read as a malformed number and the server will not start).
		for user in $NATS_USERS; do export "$(nats_password_var "$user")=\"$(nats_password_of "$user")\""; done
		spawn "$RUN_DIR/logs/nats.log" "$RUN_DIR/pids/nats.pid" \
			nats-server -c "$SCRIPT_DIR/nats-users.conf" -js -a "$HOST" -p "$NATS_PORT" -sd "$RUN_DIR/nats"
	)
	nats_started=1
}

nats_wait() {
	local deadline=$((SECONDS + NATS_TIMEOUT))
	until nats_answers; do
		if [ "${nats_started:-0}" = 1 ] && ! spawned_alive "$RUN_DIR/pids/nats.pid"; then
			fail_with_log "nats: server exited during start-up" "$RUN_DIR/logs/nats.log"
		fi
		[ "$SECONDS" -lt "$deadline" ] || fail_with_log "nats: not answering after ${NATS_TIMEOUT}s" "$RUN_DIR/logs/nats.log"
		sleep 0.3
	done
	log "nats: ready on $HOST:$NATS_PORT"
}

# ---------------------------------------------------------------- PostgreSQL (FerretDB's backend)
PG_BIN="/usr/lib/postgresql/$PG_VERSION/bin"
PG_RUN="$RUN_DIR/postgresql"
PG_DB=ferretdb
PG_URL="postgres://$PG_USER@$HOST:$PG_PORT/$PG_DB"

pg_has_db() { # the ferretdb database exists
	[ "$("$PG_BIN/psql" -h "$HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -Atc \
		"select 1 from pg_database where datname = '$PG_DB'" 2>/dev/null)" = 1 ]
}

pg_start() {
	if tcp_open "$PG_PORT"; then
		log "pg: something already answers on $HOST:$PG_PORT, leaving it (database $PG_DB must exist)"
		return
	fi
	[ -x "$PG_BIN/postgres" ] || apt_install "postgresql-$PG_VERSION"
	id "$PG_USER" >/dev/null 2>&1 || die "pg: user $PG_USER does not exist (the postgresql package creates postgres)"
	mkdir -p "$PG_RUN"
	chown "$PG_USER" "$PG_RUN"
	if [ ! -s "$PG_RUN/data/PG_VERSION" ]; then
		log "pg: initdb in $PG_RUN/data"
		# Trust on loopback only: a throw-away engine for development and tests.
		runuser -u "$PG_USER" -- "$PG_BIN/initdb" -D "$PG_RUN/data" -U "$PG_USER" --auth=trust \
			--encoding=UTF8 --locale=C.UTF-8 >"$RUN_DIR/logs/postgresql-initdb.log" 2>&1 ||
			fail_with_log "pg: initdb failed" "$RUN_DIR/logs/postgresql-initdb.log"
	fi
	log "pg: starting PostgreSQL $PG_VERSION on $HOST:$PG_PORT (data in $PG_RUN/data)"
	# fsync off: a crash of this process loses nothing (the OS has the writes); only a machine crash would.
	spawn "$RUN_DIR/logs/postgresql.log" "$RUN_DIR/pids/postgresql.pid" \
		runuser -u "$PG_USER" -- "$PG_BIN/postgres" -D "$PG_RUN/data" -h "$HOST" -p "$PG_PORT" \
		-k "$PG_RUN" -c fsync=off -c max_connections=200 -c shared_buffers=256MB
	pg_started=1
}

pg_wait() {
	local deadline=$((SECONDS + PG_TIMEOUT))
	until "$PG_BIN/pg_isready" -q -h "$HOST" -p "$PG_PORT" -t 2 2>/dev/null; do
		if [ "${pg_started:-0}" = 1 ] && ! spawned_alive "$RUN_DIR/pids/postgresql.pid"; then
			fail_with_log "pg: PostgreSQL exited during start-up" "$RUN_DIR/logs/postgresql.log"
		fi
		[ "$SECONDS" -lt "$deadline" ] || fail_with_log "pg: not answering after ${PG_TIMEOUT}s" "$RUN_DIR/logs/postgresql.log"
		sleep 0.3
	done
	if ! pg_has_db; then
		log "pg: creating database $PG_DB"
		"$PG_BIN/createdb" -h "$HOST" -p "$PG_PORT" -U "$PG_USER" "$PG_DB" 2>&1 | grep -v 'already exists' >&2 || true
	fi
	pg_has_db || fail_with_log "pg: database $PG_DB not reachable" "$RUN_DIR/logs/postgresql.log"
	# Before FerretDB connects: indexes that serve the filters it sends (ferretdb-indexes.sql).
	"$PG_BIN/psql" -h "$HOST" -p "$PG_PORT" -U "$PG_USER" -d "$PG_DB" -v ON_ERROR_STOP=1 -q \
		-c 'SET client_min_messages = warning' -f "$SCRIPT_DIR/ferretdb-indexes.sql" >"$RUN_DIR/logs/postgresql-indexes.log" 2>&1 ||
		fail_with_log "pg: ferretdb-indexes.sql failed" "$RUN_DIR/logs/postgresql-indexes.log"
	if [ "${pg_started:-0}" = 1 ] && [ -s "$PG_RUN/data/postmaster.pid" ]; then
		# The server's own pid (not runuser's), so that down.sh signals PostgreSQL itself.
		head -n 1 "$PG_RUN/data/postmaster.pid" >"$RUN_DIR/pids/postgresql.pid"
	fi
	log "pg: ready on $HOST:$PG_PORT"
}

# ---------------------------------------------------------------- FerretDB
FERRETDB_SRC="$REPO_ROOT/tools/ferretdb"

ferretdb_src_hash() {
	cat "$FERRETDB_SRC/go.mod" "$FERRETDB_SRC/go.sum" "$FERRETDB_SRC"/*.go | sha256sum | cut -c1-16
}

# One binary per source hash: checkouts of different versions never rebuild each other's binary.
FERRETDB_DIR="$CACHE_DIR/ferretdb-$FERRETDB_VERSION-$(ferretdb_src_hash)"
FERRETDB_BIN="$FERRETDB_DIR/ferretdb"

ferretdb_build() {
	[ -f "$FERRETDB_SRC/go.mod" ] || die "mongo: $FERRETDB_SRC/go.mod not found"
	grep -q "github.com/FerretDB/FerretDB $FERRETDB_VERSION" "$FERRETDB_SRC/go.mod" ||
		die "mongo: tools/ferretdb/go.mod does not require FerretDB $FERRETDB_VERSION; update FERRETDB_VERSION in up.sh"
	[ -x "$FERRETDB_BIN" ] && return
	command -v go >/dev/null 2>&1 || die "mongo: Go toolchain not found (needed to build tools/ferretdb)"
	log "mongo: building FerretDB $FERRETDB_VERSION ($(go version | cut -d' ' -f3)) into $FERRETDB_BIN (first time takes ~1.5 min)"
	mkdir -p "$FERRETDB_DIR"
	local t0=$SECONDS
	(cd "$FERRETDB_SRC" && go build -buildvcs=false -trimpath -o "$FERRETDB_BIN.tmp.$$" .) >&2 ||
		die "mongo: go build of tools/ferretdb failed"
	mv -f "$FERRETDB_BIN.tmp.$$" "$FERRETDB_BIN"
	log "mongo: built in $((SECONDS - t0))s"
}

# ferretdb_backend_of PIDFILE -> the backend the FerretDB we started runs (postgresql or sqlite)
ferretdb_backend_of() {
	local cmd
	cmd="$(tr '\0' ' ' <"/proc/$(cat "$1")/cmdline" 2>/dev/null)" || return 1
	case "$cmd" in
	*"-handler postgresql"*) echo postgresql ;;
	*) echo sqlite ;; # older builds knew only SQLite
	esac
}

mongo_start() {
	local pidfile="$RUN_DIR/pids/ferretdb.pid" running pid
	if tcp_open "$MONGO_PORT" && pid_alive "$pidfile" ferretdb &&
		running="$(ferretdb_backend_of "$pidfile")" && [ "$running" != "$FERRETDB_BACKEND" ] &&
		[ "${FERRETDB_KEEP_RUNNING:-0}" != 1 ]; then
		# Ours (this run dir started it) but on another backend: tests would not run on the engine asked for.
		pid="$(cat "$pidfile")"
		log "mongo: the FerretDB this run dir started (pid $pid) runs on $running, not $FERRETDB_BACKEND; restarting it (FERRETDB_KEEP_RUNNING=1 keeps it)"
		kill -TERM "$pid" 2>/dev/null || true
		local deadline=$((SECONDS + 30))
		while tcp_open "$MONGO_PORT" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
		tcp_open "$MONGO_PORT" && die "mongo: FerretDB (pid $pid) did not stop within 30 s"
	fi
	if tcp_open "$MONGO_PORT"; then
		log "mongo: something already answers on $HOST:$MONGO_PORT, leaving it"
		return
	fi
	ferretdb_build
	local -a backend
	case "$FERRETDB_BACKEND" in
	postgresql)
		pg_start
		pg_wait
		backend=(-handler postgresql -postgresql-url "$PG_URL")
		log "mongo: starting FerretDB $FERRETDB_VERSION (PostgreSQL on $HOST:$PG_PORT) on $HOST:$MONGO_PORT"
		;;
	sqlite)
		mkdir -p "$RUN_DIR/ferretdb"
		backend=(-handler sqlite -sqlite-dir "$RUN_DIR/ferretdb")
		log "mongo: starting FerretDB $FERRETDB_VERSION (SQLite in $RUN_DIR/ferretdb) on $HOST:$MONGO_PORT"
		;;
	*) die "mongo: unknown FERRETDB_BACKEND '$FERRETDB_BACKEND' (expected postgresql or sqlite)" ;;
	esac
	# FERRETDB_DEBUG_ADDR (host:port): serve FerretDB's Go profiles there, to see where the engine's time goes.
	[ -n "${FERRETDB_DEBUG_ADDR:-}" ] && backend+=(-debug-addr "$FERRETDB_DEBUG_ADDR")
	spawn "$RUN_DIR/logs/ferretdb.log" "$RUN_DIR/pids/ferretdb.pid" \
		"$FERRETDB_BIN" -listen "$HOST:$MONGO_PORT" "${backend[@]}" -log-level "$FERRETDB_LOG_LEVEL"
	mongo_started=1
}

mongo_wait() {
	local deadline=$((SECONDS + MONGO_TIMEOUT))
	until tcp_open "$MONGO_PORT"; do
		if [ "${mongo_started:-0}" = 1 ] && ! spawned_alive "$RUN_DIR/pids/ferretdb.pid"; then
			fail_with_log "mongo: FerretDB exited during start-up" "$RUN_DIR/logs/ferretdb.log"
		fi
		[ "$SECONDS" -lt "$deadline" ] || fail_with_log "mongo: not answering after ${MONGO_TIMEOUT}s" "$RUN_DIR/logs/ferretdb.log"
		sleep 0.3
	done
	log "mongo: ready on $HOST:$MONGO_PORT"
}

# ---------------------------------------------------------------- Elasticsearch
ES_CACHE="$CACHE_DIR/elasticsearch-$ES_VERSION"
ES_RUN="$RUN_DIR/es"

es_health() { # es_health [extra curl args] -> prints the health JSON
	curl -fsS -m 5 "$@" "http://$HOST:$ES_PORT/_cluster/health" 2>/dev/null
}

es_download() {
	local zip="$ES_CACHE/elasticsearch-$ES_VERSION.zip" url sha_expected sha_actual
	[ -x "$ES_CACHE/home/bin/elasticsearch" ] && return
	need_cmd curl curl
	need_cmd unzip unzip
	mkdir -p "$ES_CACHE"
	url="$MAVEN_BASE/$ES_GAV_PATH/$ES_VERSION/elasticsearch-$ES_VERSION.zip"
	if [ ! -s "$zip" ]; then
		log "es: downloading $url"
		if ! curl -fsSL --retry 3 -m 600 -o "$zip.part" "$url"; then
			log "es: curl failed, trying mvn dependency:copy"
			command -v mvn >/dev/null 2>&1 || die "es: download failed and mvn is not installed"
			mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
				-Dartifact="org.elasticsearch.distribution.integ-test-zip:elasticsearch:$ES_VERSION:zip" \
				-DoutputDirectory="$ES_CACHE/mvn" >&2 || die "es: mvn dependency:copy failed"
			mv -f "$ES_CACHE/mvn/elasticsearch-$ES_VERSION.zip" "$zip.part"
			rmdir "$ES_CACHE/mvn" 2>/dev/null || true
		fi
		sha_expected="$(curl -fsS -m 60 "$url.sha1" 2>/dev/null | cut -c1-40 || true)"
		if [ -n "$sha_expected" ]; then
			sha_actual="$(sha1sum "$zip.part" | cut -c1-40)"
			[ "$sha_actual" = "$sha_expected" ] || die "es: checksum mismatch for $url ($sha_actual != $sha_expected)"
		fi
		mv -f "$zip.part" "$zip"
	fi
	log "es: unpacking into $ES_CACHE/home"
	rm -rf "${ES_CACHE:?}/home" "${ES_CACHE:?}/unpack"
	mkdir -p "$ES_CACHE/unpack"
	unzip -q "$zip" -d "$ES_CACHE/unpack"
	mv "$ES_CACHE/unpack/elasticsearch-$ES_VERSION" "$ES_CACHE/home"
	rmdir "$ES_CACHE/unpack"
	chmod -R a+rX "$ES_CACHE/home"
	rm -f "$zip" # the unpacked tree is the cache; keep the disk use down
}

es_java_home() {
	local java
	if [ -n "${ES_JAVA_HOME:-}" ]; then
		echo "$ES_JAVA_HOME"
		return
	fi
	if ! command -v java >/dev/null 2>&1; then
		apt_install openjdk-17-jre-headless
	fi
	java="$(readlink -f "$(command -v java)")"
	echo "${java%/bin/java}"
}

es_start() {
	local health home java_home
	if health="$(es_health)"; then
		log "es: already answering on $HOST:$ES_PORT (status $(printf '%s' "$health" | grep -o '"status":"[a-z]*"' | cut -d'"' -f4)), leaving it"
		return
	fi
	tcp_open "$ES_PORT" && die "es: port $ES_PORT is taken by something that is not Elasticsearch"
	[ "$(id -u)" = 0 ] || die "es: up.sh must run as root to start Elasticsearch as user $ES_USER"
	need_cmd curl curl
	es_download
	java_home="$(es_java_home)"
	[ -x "$java_home/bin/java" ] || die "es: no java at $java_home/bin/java (set ES_JAVA_HOME)"

	# Elasticsearch refuses to run as root.
	if ! id -u "$ES_USER" >/dev/null 2>&1; then
		log "es: creating system user $ES_USER"
		useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$ES_USER"
	fi

	# ES_HOME is read-only for the ES user. If the cache is not reachable by that
	# user (e.g. it lives under /root, mode 700), use a hard-linked mirror in RUN_DIR.
	home="$ES_CACHE/home"
	if ! runuser -u "$ES_USER" -- test -r "$home/lib/elasticsearch-$ES_VERSION.jar" 2>/dev/null; then
		home="$RUN_DIR/es-home-$ES_VERSION"
		if [ ! -x "$home/bin/elasticsearch" ]; then
			log "es: $ES_CACHE is not readable by $ES_USER; mirroring it to $home"
			rm -rf "$home"
			cp -al "$ES_CACHE/home" "$home" 2>/dev/null || cp -a "$ES_CACHE/home" "$home"
		fi
	fi

	mkdir -p "$ES_RUN/data" "$ES_RUN/logs" "$ES_RUN/tmp"
	if [ ! -f "$ES_RUN/config/jvm.options" ]; then
		rm -rf "$ES_RUN/config"
		cp -a "$home/config" "$ES_RUN/config"
	fi
	cat >"$ES_RUN/config/elasticsearch.yml" <<-EOF
		# Written by scripts/engines/up.sh; overwritten on every start.
		cluster.name: estate-dev
		node.name: estate-dev-1
		discovery.type: single-node
		network.host: $HOST
		http.port: $ES_PORT
		transport.port: $ES_TRANSPORT_PORT
		path.data: $ES_RUN/data
		path.logs: $ES_RUN/logs
		xpack.security.enabled: false
		cluster.routing.allocation.disk.threshold_enabled: false
		action.destructive_requires_name: false
	EOF
	chown -R "$ES_USER:" "$ES_RUN"
	runuser -u "$ES_USER" -- test -w "$ES_RUN/data" ||
		die "es: $ES_RUN is not writable by $ES_USER (is ENGINES_RUN_DIR inside a private directory?)"

	log "es: starting Elasticsearch $ES_VERSION (java $java_home, $ES_JAVA_OPTS) on $HOST:$ES_PORT"
	rm -f "$ES_RUN/es.pid"
	ulimit -n "$(ulimit -Hn)" 2>/dev/null || true # ES wants >= 65535; only a warning below that
	# Foreground mode in the background (not -d) so start-up errors land in the log.
	# (cwd matters: the JVM writes hs_err/replay files relative to it.)
	(cd "$ES_RUN" && spawn "$RUN_DIR/logs/elasticsearch.log" "$RUN_DIR/pids/elasticsearch-launcher.pid" \
		runuser -u "$ES_USER" -- env \
		ES_JAVA_HOME="$java_home" ES_PATH_CONF="$ES_RUN/config" ES_TMPDIR="$ES_RUN/tmp" \
		ES_JAVA_OPTS="$ES_JAVA_OPTS" \
		"$home/bin/elasticsearch" -p "$ES_RUN/es.pid")
	es_started=1
}

es_wait() {
	local deadline=$((SECONDS + ES_TIMEOUT)) health
	until health="$(es_health -G -d wait_for_status=yellow -d timeout=3s)" &&
		case "$health" in *'"status":"green"'* | *'"status":"yellow"'*) true ;; *) false ;; esac; do
		if [ "${es_started:-0}" = 1 ] && ! spawned_alive "$RUN_DIR/pids/elasticsearch-launcher.pid" &&
			! pid_alive "$ES_RUN/es.pid" org.elasticsearch; then
			fail_with_log "es: Elasticsearch exited during start-up" \
				"$RUN_DIR/logs/elasticsearch.log" "$ES_RUN/logs/estate-dev.log"
		fi
		[ "$SECONDS" -lt "$deadline" ] ||
			fail_with_log "es: not healthy after ${ES_TIMEOUT}s" "$RUN_DIR/logs/elasticsearch.log" "$ES_RUN/logs/estate-dev.log"
		sleep 1
	done
	if [ "${es_started:-0}" = 1 ] && [ -s "$ES_RUN/es.pid" ]; then
		cp "$ES_RUN/es.pid" "$RUN_DIR/pids/elasticsearch.pid"
	fi
	log "es: ready on $HOST:$ES_PORT"
}

# ---------------------------------------------------------------- main
# Start the slow ones first so Elasticsearch boots while FerretDB compiles.
[ "$want_es" = 1 ] && es_start
[ "$want_nats" = 1 ] && nats_start
[ "$want_mongo" = 1 ] && mongo_start

[ "$want_nats" = 1 ] && nats_wait
[ "$want_mongo" = 1 ] && mongo_wait
[ "$want_es" = 1 ] && es_wait

log "all requested engines ready in ${SECONDS}s (run dir $RUN_DIR, cache $CACHE_DIR)"

if [ "$want_nats" = 1 ]; then
	echo "export NATS_URL=nats://$HOST:$NATS_PORT" >&3
	if [ -s "$NATS_CREDENTIALS" ]; then
		# Tests and tools connect as `tools`; each service process gets NATS_USER=<service> and its own password.
		echo "export NATS_USER=tools" >&3
		echo "export NATS_PASSWORD=$(nats_password_of tools)" >&3
		for user in $NATS_USERS; do
			[ "$user" = tools ] || echo "export $(nats_password_var "$user")=$(nats_password_of "$user")" >&3
		done
	fi
fi
[ "$want_mongo" = 1 ] && echo "export MONGODB_URL=mongodb://$HOST:$MONGO_PORT/$MONGO_DB" >&3
[ "$want_es" = 1 ] && echo "export ELASTICSEARCH_URL=http://$HOST:$ES_PORT" >&3
exit 0
