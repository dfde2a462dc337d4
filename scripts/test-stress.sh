#!/usr/bin/env bash
# Runs a test command several times in a row while a CPU hog keeps every core busy, to find tests that wait for
# time or for a neighbouring signal instead of the state they assert.
#
#   npm run test:stress                                   # `npm test` five times
#   STRESS_RUNS=3 npm run test:stress -- npx jest test/system/webhooks.system.test.ts
#
# STRESS_RUNS (5) runs, STRESS_CPUS (2) hog workers, STRESS_RUN_TIMEOUT (3600) seconds a run may take before it
# is stopped and counted as failed. The hog is `stress-ng --cpu N` when installed, else N `node` busy loops; it is
# stopped by pid on the way out whatever happens, and times out by itself in any case. Each run's output goes to
# tmp/stress/run-<n>.log; the script prints one line per run and a summary, and exits 1 if any run failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs="${STRESS_RUNS:-5}"
cpus="${STRESS_CPUS:-2}"
run_timeout="${STRESS_RUN_TIMEOUT:-3600}"
for value in "$runs" "$cpus" "$run_timeout"; do
  if ! [[ "$value" =~ ^[1-9][0-9]*$ ]]; then
    echo "test-stress: STRESS_RUNS, STRESS_CPUS and STRESS_RUN_TIMEOUT must be positive integers" >&2
    exit 2
  fi
done
if [ "$#" -eq 0 ]; then set -- npm test; fi

logs=tmp/stress
mkdir -p "$logs"
# The hog outlives no run: it stops by itself after the longest the runs may take, and is killed below before that.
hog_seconds=$((runs * (run_timeout + 60)))
hog_pids=()
run_pid=""
stop_hogs() {
  for pid in "${hog_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${hog_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  hog_pids=()
}
trap stop_hogs EXIT
# A run is waited for in the background, so that a signal reaches this script at once; it stops the run too.
stop_run() { if [ -n "$run_pid" ]; then kill -TERM "$run_pid" 2>/dev/null || true; wait "$run_pid" 2>/dev/null; fi; }
trap 'stop_run; stop_hogs; exit 130' INT
trap 'stop_run; stop_hogs; exit 143' TERM

if command -v stress-ng >/dev/null 2>&1; then
  stress-ng --cpu "$cpus" --timeout "${hog_seconds}s" --quiet &
  hog_pids+=("$!")
  hog="stress-ng --cpu ${cpus}"
else
  for _ in $(seq "$cpus"); do
    node -e "const end = Date.now() + ${hog_seconds} * 1000; while (Date.now() < end);" &
    hog_pids+=("$!")
  done
  hog="${cpus} node busy loops"
fi

echo "test-stress: ${runs} runs of '$*' with ${hog} (pids ${hog_pids[*]}), each within ${run_timeout} s; logs in ${logs}/"
failed=0
for n in $(seq "$runs"); do
  log="${logs}/run-${n}.log"
  rm -f tmp/test-summary.txt
  started=$(date +%s)
  # Its own process group, so a run that times out is stopped with every process it started.
  timeout --kill-after=30 "$run_timeout" "$@" >"$log" 2>&1 &
  run_pid=$!
  wait "$run_pid"
  status=$?
  run_pid=""
  seconds=$(($(date +%s) - started))
  counts=""
  if [ -f tmp/test-summary.txt ]; then counts=" ($(tr -d '\n' <tmp/test-summary.txt))"; fi
  if [ "$status" -eq 0 ]; then
    outcome="passed"
  elif [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    outcome="timed out"
    failed=$((failed + 1))
  else
    outcome="failed (exit ${status})"
    failed=$((failed + 1))
  fi
  echo "run ${n}/${runs}: ${outcome} in ${seconds} s${counts}, log ${log}"
  # The names of the failing tests, as Jest prints them, so the line says what to look at.
  if [ "$status" -ne 0 ]; then grep -E '^\s+● ' "$log" | grep -v '● Console' | sort -u | head -20 | sed 's/^/    /'; fi
done
stop_hogs
echo "test-stress: $((runs - failed)) of ${runs} runs passed under load"
[ "$failed" -eq 0 ]
