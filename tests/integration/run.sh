#!/usr/bin/env bash
# Runs every tests/integration/test_*.sh (or those named as arguments) and
# prints one line per test, then "N passed, N failed". Each test runs as
# root against real probes, a real server and real clients on 127.0.0.1.
set -u
build=$(cd "${1:?usage: run.sh BUILD_DIR [test ...]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
export CS_BUILD=$build
out=$build/integration
mkdir -p "$out"

if [[ $# -gt 0 ]]; then tests=("$@"); else tests=("$here"/test_*.sh); fi

passed=0 failed=0 failed_names=()
for t in "${tests[@]}"; do
  name=$(basename "$t" .sh)
  log=$out/$name.log
  start=$(date +%s)
  if timeout 600 bash "$t" >"$log" 2>&1; then
    passed=$((passed + 1)); verdict=PASS
  else
    failed=$((failed + 1)); verdict=FAIL; failed_names+=("$name")
  fi
  printf '%-4s %-40s %4ss\n' "$verdict" "$name" "$(( $(date +%s) - start ))"
  if [[ $verdict == FAIL ]]; then sed 's/^/    | /' "$log" | tail -n 40; fi
done
echo "integration: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
