#!/usr/bin/env bash
# The distributed profile on one machine: the five services as separate processes (listings, media, leads, webhooks,
# then the gateway) on MongoDB, NATS and Elasticsearch, such as the engines scripts/engines/up.sh starts. Prints the
# gateway's address once it is ready; Ctrl-C (or SIGTERM) stops every process, and if one process exits the others
# are stopped too.
#
#   eval "$(scripts/engines/up.sh)"
#   npm run start:distributed            # the API on http://127.0.0.1:3000
#
# Environment:
#   MONGODB_URL, NATS_URL, ELASTICSEARCH_URL   the engines (required; up.sh exports them)
#   NATS_PASSWORD_<SERVICE>                    each service's NATS password (up.sh exports them; the user is the
#                                              service's name, scripts/engines/nats-users.conf)
#   INTERNAL_SIGNING_SECRET                    default: made once and kept in $DISTRIBUTED_STATE_DIR; feeds' and
#                                              webhooks' stored secrets are encrypted under keys derived from it, so
#                                              it must stay the same from one start to the next
#   DISTRIBUTED_STATE_DIR                      where that secret is kept (default ./data-distributed)
#   PORT                                       the gateway's port (3000); listings, media, leads and webhooks take
#                                              the four ports after it
#   MONGODB_DATABASE_PREFIX                    databases are <prefix>_<service> (default estate)
#   SKIP_BUILD=1                               dist/ is current: do not build first
# Every other setting a service reads (README, "Distributed configuration") is passed through from the environment:
# ADMIN_API_KEY, PLATFORM_API_KEY, LOG_LEVEL, PUBLIC_BASE_URL, FEEDS_ALLOW_PRIVATE_SOURCES, ...
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

for var in MONGODB_URL NATS_URL ELASTICSEARCH_URL; do
  if [ -z "${!var:-}" ]; then
    echo "start-distributed: $var is not set; start the engines first: eval \"\$(scripts/engines/up.sh)\"" >&2
    exit 2
  fi
done
SERVICES=(listings media leads webhooks)
for s in "${SERVICES[@]}" gateway; do
  var="NATS_PASSWORD_${s^^}"
  if [ -z "${!var:-}" ]; then
    echo "start-distributed: $var is not set (each service connects to NATS as its own user)" >&2
    exit 2
  fi
done

# Each service connects to NATS as its own user: credentials in the URL (a tools user) are left out.
NATS_URL="$(printf '%s' "$NATS_URL" | sed -E 's#(^|,)([a-z]+://)?[^/@,]*@#\1\2#g')"
export NATS_URL

STATE_DIR="${DISTRIBUTED_STATE_DIR:-./data-distributed}"
if [ -z "${INTERNAL_SIGNING_SECRET:-}" ]; then
  mkdir -p "$STATE_DIR"
  SECRET_FILE="$STATE_DIR/internal-signing-secret"
  if [ ! -s "$SECRET_FILE" ]; then
    (umask 077 && node -e 'process.stdout.write(require("crypto").randomBytes(32).toString("base64url"))' >"$SECRET_FILE")
  fi
  INTERNAL_SIGNING_SECRET="$(cat "$SECRET_FILE")"
fi
export INTERNAL_SIGNING_SECRET

[ "${SKIP_BUILD:-}" = 1 ] || npm run build --silent

GATEWAY_PORT="${PORT:-3000}"
declare -A PORTS=([listings]=$((GATEWAY_PORT + 1)) [media]=$((GATEWAY_PORT + 2)) [leads]=$((GATEWAY_PORT + 3)) [webhooks]=$((GATEWAY_PORT + 4)) [gateway]=$GATEWAY_PORT)
HOST="${HOST:-127.0.0.1}"
url() { echo "http://127.0.0.1:${PORTS[$1]}"; }
# Readable logs on a terminal, as `npm start` gives; each line names its process.
if [ -t 1 ]; then export LOG_PRETTY="${LOG_PRETTY:-1}"; fi

PIDS=()
stop() {
  trap - INT TERM EXIT
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

start() {
  local s="$1"
  local password="NATS_PASSWORD_${s^^}"
  (
    export NATS_USER="$s" NATS_PASSWORD="${!password}" PORT="${PORTS[$s]}" HOST="$HOST" \
      MONGODB_DATABASE="${MONGODB_DATABASE_PREFIX:-estate}_$s" \
      LISTINGS_URL="$(url listings)" MEDIA_URL="$(url media)" LEADS_URL="$(url leads)" WEBHOOKS_URL="$(url webhooks)"
    # The media process renders images on several threads: fewer malloc arenas keep its memory flat.
    [ "$s" = media ] && export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
    exec node "dist/services/$s/main.js" 2>&1
  ) > >(exec sed -u "s/^/[$s] /") &
  PIDS+=("$!")
}

for s in "${SERVICES[@]}"; do start "$s"; done
start gateway

ready() { node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$1"; }
for _ in $(seq 1 600); do
  if ready "$(url gateway)/health/ready"; then
    break
  fi
  for pid in "${PIDS[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "start-distributed: a process exited during start-up (its output is above)" >&2
      exit 1
    fi
  done
  sleep 0.5
done
if ! ready "$(url gateway)/health/ready"; then
  echo "start-distributed: the gateway was not ready after 5 minutes (the output above says why)" >&2
  exit 1
fi
echo "start-distributed: ready on $(url gateway) (listings, media, leads, webhooks on ports ${PORTS[listings]}-${PORTS[webhooks]}); Ctrl-C stops them"

# Runs until a signal, or until one process exits: then the others are stopped.
set +e
wait -n "${PIDS[@]}"
code=$?
echo "start-distributed: a process exited ($code); stopping the others" >&2
exit "$code"
