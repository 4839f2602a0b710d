#!/usr/bin/env bash
# `make test` after the builds: every check, arranged to fit 15 minutes on
# two CPUs. usage: test-all.sh (from the top of the tree)
#
#   1. the unit tests (in one process: make unit-test-inproc) and the
#      fixtures' reports
#   2. the integration tests (tests/integration/run.sh), plain and built
#      with ASan + UBSan: the exclusive ones alone, the others
#      two at a time (they wait far more than they compute)
#   3. the steps that time nothing: the unit tests under ASan + UBSan and
#      under valgrind (side by side), linters and short fuzzing run beside
#      the shared integration tests, at the idle scheduling policy (they
#      take only CPU time nobody else wants, and a waking test thread
#      preempts them at once)
#   4. the sanitizer reports of every sanitized step
#
# (Nothing runs beside the exclusive tests: even idle-policy work moves
# the scenarios' p99s and an open-loop client's schedule by milliseconds.
# The shared tests are made to pass beside another test, a far heavier
# neighbour than idle-policy work.)
#
# Then the slowest five integration tests, the five that took the most
# CPU, and the verdict.
#
# A failed step does not stop the next ones (one run shows every failure);
# the last line names the failed steps, and the exit status is theirs.
set -u
make=(make --no-print-directory)
makej=(make --no-print-directory -j"$(nproc 2>/dev/null || echo 2)")
failed=()
start_all=$(date +%s)

step() { # step NAME COMMAND...
  local name=$1 start
  shift
  start=$(date +%s)
  if "$@"; then
    echo "  STEP      $name passed in $(( $(date +%s) - start )) s"
  else
    echo "  STEP      $name FAILED after $(( $(date +%s) - start )) s"
    failed+=("$name")
  fi
}

"${make[@]}" asan-reports-clean
# Every integration test's time, for the slowest five at the end.
CS_TEST_TIMES=$(mktemp /tmp/connscope-test-times.XXXXXX)
export CS_TEST_TIMES
trap 'rm -f "$CS_TEST_TIMES"' EXIT
step unit-test "${make[@]}" unit-test-inproc
step integration-exclusive "${make[@]}" integration-both ONLY=exclusive
# The sanitized unit tests, linters and short fuzzing, at the idle policy
# beside the shared tests (which keep both CPUs busy: what runs here adds
# its CPU time to the group, not its wall time); their output is printed
# when the shared tests are done.
beside=$(mktemp -d /tmp/connscope-beside.XXXXXX)
trap 'rm -f "$CS_TEST_TIMES"; rm -rf "$beside"' EXIT
(
  failed=() # this subshell's own: the parent adds them
  for name in test-unit-sanitized lint fuzz-short; do
    step "$name" chrt --idle 0 "${makej[@]}" --output-sync=target "$name" >"$beside/$name.log" 2>&1
    echo "${failed[*]}" >"$beside/failed"
  done
) &
beside_pid=$!
step integration-shared "${make[@]}" integration-both ONLY=shared
wait "$beside_pid"
for name in test-unit-sanitized lint fuzz-short; do cat "$beside/$name.log"; done
read -r -a beside_failed <"$beside/failed"
failed+=("${beside_failed[@]}")
step asan-reports "${make[@]}" asan-reports

took=$(( $(date +%s) - start_all ))
echo "slowest tests (wall, CPU):"
sort -rn "$CS_TEST_TIMES" | head -n 5 | awk '{ printf "  %5s s %7s s CPU  %s %s\n", $1, $2, $3, $4 }'
echo "most CPU (wall, CPU):"
sort -k2,2rn "$CS_TEST_TIMES" | head -n 5 | awk '{ printf "  %5s s %7s s CPU  %s %s\n", $1, $2, $3, $4 }'
awk '{ cpu += $2 } END { printf "integration tests: %.0f s of CPU in all\n", cpu }' "$CS_TEST_TIMES"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "make test: FAILED: ${failed[*]} ($took s)"
  exit 1
fi
echo "make test: all passed ($took s)"
