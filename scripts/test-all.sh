#!/usr/bin/env bash
# `make test` after the builds: every check, arranged to fit 15 minutes on
# two CPUs. usage: test-all.sh (from the top of the tree)
#
#   1. the unit tests
#   2. the integration tests (tests/integration/run.sh), plain and built
#      with ASan + UBSan: the exclusive ones alone, the others
#      two at a time (they wait far more than they compute)
#   3. the steps that time nothing, each with the machine to itself: the
#      unit tests under ASan + UBSan, linters, short fuzzing, every unit
#      test under valgrind
#   4. the sanitizer reports of every sanitized step
#
# Then the slowest five integration tests, and the verdict.
#
# (Step 3 does not run at idle priority beside step 2: that would save two
# minutes, but even idle-priority work moves the scenarios' p99s and an
# open-loop client's schedule by milliseconds, enough to fail them.)
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
step unit-test "${make[@]}" unit-test
step integration-exclusive "${make[@]}" integration-both ONLY=exclusive
step integration-shared "${make[@]}" integration-both ONLY=shared
step asan-unit-test "${makej[@]}" test-asan-unit
step lint "${makej[@]}" lint
step fuzz-short "${makej[@]}" fuzz-short
step test-valgrind "${make[@]}" test-valgrind
step asan-reports "${make[@]}" asan-reports

took=$(( $(date +%s) - start_all ))
echo "slowest tests:"
sort -rn "$CS_TEST_TIMES" | head -n 5 | awk '{ printf "  %5s s  %s %s\n", $1, $2, $3 }'
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "make test: FAILED: ${failed[*]} ($took s)"
  exit 1
fi
echo "make test: all passed ($took s)"
