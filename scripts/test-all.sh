#!/usr/bin/env bash
# `make test` after the builds: every check, arranged to fit 15 minutes on
# two CPUs. usage: test-all.sh BUILD_DIR
#
#   1. the unit tests
#   2. the quiet integration tests (tests/integration/run.sh), plain and
#      built with ASan + UBSan, alone on the machine
#   3. in the background at idle priority (SCHED_IDLE: it runs only on a
#      CPU nothing else wants), the steps that time nothing: the unit tests
#      under ASan + UBSan, linters, short fuzzing, every unit test under
#      valgrind
#   4. beside them, the exclusive integration tests, plain and sanitized,
#      one at a time; then the others, two at a time
#   5. whatever of 3 is left, then the sanitizer reports of every step
#
# A failed step does not stop the next ones (one run shows every failure);
# the last line names the failed steps, and the exit status is theirs.
set -u
build=${1:?usage: test-all.sh BUILD_DIR}
make=(make --no-print-directory)
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
step unit-test "${make[@]}" unit-test
step integration-quiet "${make[@]}" integration-both ONLY=quiet

# Idle priority where the kernel has it (it always has since 2.6.23), else
# the lowest nice level.
idle=(nice -n 19)
chrt --idle 0 true 2>/dev/null && idle=(chrt --idle 0)
hygiene_log=$build/hygiene-cpu.log
hygiene_start=$(date +%s)
"${idle[@]}" "${make[@]}" test-hygiene-cpu >"$hygiene_log" 2>&1 &
hygiene=$!

step integration-exclusive "${make[@]}" integration-both ONLY=exclusive
step integration-shared "${make[@]}" integration-both ONLY=shared

echo "  STEP      waiting for the hygiene steps (at idle priority since $(( $(date +%s) - hygiene_start )) s)"
if wait "$hygiene"; then
  cat "$hygiene_log"
  echo "  STEP      hygiene (asan unit tests, lint, fuzz-short, test-valgrind) passed in $(( $(date +%s) - hygiene_start )) s"
else
  tail -n 80 "$hygiene_log"
  echo "  STEP      hygiene (asan unit tests, lint, fuzz-short, test-valgrind) FAILED (log: $hygiene_log)"
  failed+=(hygiene)
fi
step asan-reports "${make[@]}" asan-reports

took=$(( $(date +%s) - start_all ))
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "make test: FAILED: ${failed[*]} ($took s)"
  exit 1
fi
echo "make test: all passed ($took s)"
