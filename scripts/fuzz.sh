#!/usr/bin/env bash
# Fuzzes the HTTP API against its own OpenAPI document with Schemathesis: starts the embedded product on a
# throwaway data folder (with a little sandbox data), then runs Schemathesis with a valid admin key and again
# without one. Fails (exit 1) on any 5xx answer, any answer the document does not describe, or a request the
# document allows that the API refuses (with the exceptions in scripts/fuzz/schemathesis.toml and why).
#
#   scripts/fuzz.sh                      # default: 25 cases per operation and phase, both runs
#   FUZZ_MAX_EXAMPLES=200 scripts/fuzz.sh
#   scripts/fuzz.sh --include-tag leads  # extra arguments go to `st run` (both runs)
#
# Environment: FUZZ_MAX_EXAMPLES (25), FUZZ_WORKERS (1), FUZZ_SEED (random), FUZZ_RUNS ("key anonymous"),
# FUZZ_CHECKS (the conformance checks below), FUZZ_SKIP_BUILD=1 (dist/ is current), FUZZ_REPORT_DIR (reports kept
# there), FUZZ_KEEP=1 (keep the data folder and server log), ESTATE_TOOLS_DIR (where the Schemathesis virtualenv is cached, default ~/.cache/estate-tools).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SCHEMATHESIS_VERSION=4.32.5
TOOLS_DIR="${ESTATE_TOOLS_DIR:-$HOME/.cache/estate-tools}"
VENV="$TOOLS_DIR/schemathesis-$SCHEMATHESIS_VERSION"
MAX_EXAMPLES="${FUZZ_MAX_EXAMPLES:-25}"
WORKERS="${FUZZ_WORKERS:-1}"
RUNS="${FUZZ_RUNS:-key anonymous}"
CHECKS="${FUZZ_CHECKS:-not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection,positive_data_acceptance,missing_required_header,unsupported_method,allow_header_conformance}"

if [ ! -x "$VENV/bin/st" ]; then
  echo "==> installing Schemathesis $SCHEMATHESIS_VERSION into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

[ "${FUZZ_SKIP_BUILD:-}" = 1 ] || npm run build --silent

WORK="$(mktemp -d "${TMPDIR:-/tmp}/estate-fuzz.XXXXXX")"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [ "${FUZZ_KEEP:-}" = 1 ]; then echo "==> kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

ADMIN_KEY="ek_fuzz_$(node -e "console.log(require('crypto').randomBytes(24).toString('base64url'))")"

echo "==> starting the embedded product (data in $WORK/data)" >&2
# On port 0: the product says which port it got over an IPC channel, written to $WORK/url by this launcher (a port
# picked free here could be taken by another process before the product binds it). Signals reach the product.
DATA_DIR="$WORK/data" PORT=0 HOST=127.0.0.1 ADMIN_API_KEY="$ADMIN_KEY" LOG_LEVEL=warn LOG_PRETTY=0 \
  RATE_LIMIT_PER_MINUTE=1000000 RATE_LIMIT_ANONYMOUS_PER_MINUTE=1000000 \
  node -e '
    const child = require("node:child_process").spawn(process.execPath, ["dist/apps/embedded/main.js"], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    child.on("message", (m) => m && m.type === "listening" && require("node:fs").writeFileSync(process.argv[1], m.url));
    child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
    for (const s of ["SIGTERM", "SIGINT"]) process.on(s, () => child.kill(s));
  ' "$WORK/url" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
BASE=""
for _ in $(seq 1 300); do
  [ -z "$BASE" ] && [ -s "$WORK/url" ] && BASE="$(cat "$WORK/url")"
  [ -n "$BASE" ] && curl -fsS "$BASE/health/ready" >/dev/null 2>&1 && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
  sleep 0.2
done
[ -n "$BASE" ] || { echo "==> the product did not start within 60 s" >&2; cat "$WORK/server.log" >&2; exit 1; }
echo "==> the embedded product listens on $BASE" >&2
curl -fsS "$BASE/openapi.json" >"$WORK/openapi.json"

# Something to find: listings with photos, agents, rules and leads, so that not every id is unknown.
node dist/tools/seed/main.js --url "$BASE" --key "$ADMIN_KEY" --listings 4 >"$WORK/seed.log" 2>&1 || {
  cat "$WORK/seed.log" >&2
  exit 1
}

REPORTS="${FUZZ_REPORT_DIR:-$WORK/reports}"
mkdir -p "$REPORTS"

# "N cases, N failed" from Schemathesis's JUnit report (one test case per operation) and its log's case count.
fuzz_figures() {
  python3 - "$1" "$2" <<'PY'
import glob, re, sys, xml.etree.ElementTree as ET
log, report_dir = sys.argv[1], sys.argv[2]
ops = failed = 0
for f in glob.glob(report_dir + "/*.xml"):
    for case in ET.parse(f).getroot().iter("testcase"):
        ops += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
m = re.search(r"(\d+) generated", open(log, errors="replace").read())
print(f"{m.group(1) if m else 'unknown number of'} generated cases over {ops} operations, {failed} operations with findings")
PY
}

status=0
for run in $RUNS; do
  args=(run "$WORK/openapi.json" --url "$BASE" --checks "$CHECKS" --max-examples "$MAX_EXAMPLES" --workers "$WORKERS"
    --phases examples,coverage,fuzzing --request-timeout 30 --no-color --generation-database none
    --report junit --report-dir "$REPORTS/$run")
  [ -n "${FUZZ_SEED:-}" ] && args+=(--seed "$FUZZ_SEED")
  case "$run" in
    # Every operation, key revocation included: the account's last admin key cannot be revoked (409), so the
    # fuzzer cannot lock itself out.
    key)
      args+=(-H "Authorization: Bearer $ADMIN_KEY")
      ;;
    anonymous) ;;
    *) echo "unknown run '$run' (key, anonymous)" >&2; exit 2 ;;
  esac
  echo "==> schemathesis: $run ($MAX_EXAMPLES cases per operation and phase; its output in $REPORTS/$run.log)" >&2
  # Schemathesis's own output stays in a file: it closes on a pytest-style banner that log readers take for a
  # test runner's summary. What it found is restated below as plain lines.
  run_status=0
  # What the document cannot say (state, signed cursors, numbering plans) is in scripts/fuzz/: a config and hooks.
  SCHEMATHESIS_HOOKS="$PWD/scripts/fuzz/hooks.py" "$VENV/bin/st" --config-file "$PWD/scripts/fuzz/schemathesis.toml" \
    "${args[@]}" "$@" >"$REPORTS/$run.log" 2>&1 || run_status=$?
  if [ "$run_status" -ne 0 ]; then
    status=1
    # The findings, without the banner lines.
    grep -Ev '^=+( .*)? =+$' "$REPORTS/$run.log" | sed 's/^/  | /' >&2
  fi
  echo "fuzzing ($run): $(fuzz_figures "$REPORTS/$run.log" "$REPORTS/$run"), exit status $run_status" >&2
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    code=0
    wait "$SERVER_PID" || code=$?
    SERVER_PID=""
    echo "==> the server exited (status $code) during the $run run; its last lines:" >&2
    tail -20 "$WORK/server.log" >&2
    exit 1
  fi
  if ! curl -fsS -m 10 "$BASE/health/live" >/dev/null; then
    echo "==> the server stopped answering during the $run run" >&2
    exit 1
  fi
done

if grep -q '"level":"\(error\|fatal\)"' "$WORK/server.log"; then
  echo "==> the server logged errors:" >&2
  grep '"level":"\(error\|fatal\)"' "$WORK/server.log" | head -20 >&2
  status=1
fi
exit "$status"
