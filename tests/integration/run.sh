#!/usr/bin/env bash
# Runs the integration tests and prints one line per test, then "N passed,
# N failed". Each test runs as root against real probes, a real server and
# real clients on 127.0.0.1.
#
#   run.sh BUILD [TEST ...]          every tests/integration/test_*.sh (or
#                                    the TESTs), one after the other
#   run.sh [--build BUILD]... [--lanes N] [--only exclusive|shared] [TEST ...]
#                                    each test once per BUILD (e.g. build/
#                                    and build-asan/), N at a time
#
# Most tests wait far more than they compute (40 % of two CPUs on average),
# so two of them can share the machine. Not those whose header says
#   # integration: exclusive     (and why, below it)
# they read machine-wide counters another test would move, or time what
# another test's load would distort: they run alone, before the others.
# --only picks one of the two groups (`make test` runs them one after the
# other). No test needs the machine quiet: a test whose judgement depends on
# how busy the machine is measures that itself. Those whose header also says
#   # integration: plain build
# run with the plain build only (a real server's behaviour, a JVM's:
# seconds of start-up each; or a scenario that times a server alone: the
# traces it records with the plain build are kept in
# BUILD/integration/traces/ and replayed by the sanitized build in
# test_sanitized_replay, a shared test, so the engine, the analysis and
# the renderers still meet every scenario's records under ASan without a
# second exclusive run); those whose header says
#   # integration: sanitized build
# run with a sanitized build only; every other test runs with each build
# given.
#
# With CS_TEST_TIMES naming a file, each test's "SECONDS CPU_SECONDS NAME
# [BUILD]" is appended to it (scripts/test-all.sh prints the slowest, and
# those that took the most CPU: the shared tests and the linters beside
# them keep both CPUs busy, so a shared test's CPU is what it costs the
# run). CPU_SECONDS is user + system time of the test's processes that
# were waited for (bash's `times`): its servers and clients, not the
# kernel's work in interrupts, nor a process left behind.
#
# A test's output goes to BUILD/integration/TEST.log; a failed test's files
# (reports, client logs) and that log are kept in BUILD/integration/TEST.failed/.
set -u
here=$(cd "$(dirname "$0")" && pwd)
builds=() lanes=1 only=
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) builds+=("$(cd "${2:?--build needs a directory}" && pwd)") || exit 2; shift 2 ;;
    --lanes) lanes=${2:-}; shift 2 ;;
    --only) only=${2:-}; shift 2 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [[ ${#builds[@]} -eq 0 ]]; then
  builds=("$(cd "${1:?usage: run.sh BUILD_DIR [test ...]}" && pwd)") || exit 2
  shift
fi
[[ $lanes =~ ^[1-9]$ ]] || { echo "run.sh: --lanes takes 1 to 9, not '$lanes'" >&2; exit 2; }
[[ -z $only || $only == exclusive || $only == shared ]] ||
  { echo "run.sh: --only takes exclusive or shared, not '$only'" >&2; exit 2; }

if [[ $# -gt 0 ]]; then tests=("$@"); else tests=("$here"/test_*.sh); fi

group_of() { # group_of TEST: exclusive or shared
  local marker
  marker=$(grep -m1 -o '^# integration: [a-z]*' "$1")
  echo "${marker#\# integration: }" | grep -E '^exclusive$' || echo shared
}

# A test named on the command line that a build does not run is said, so
# that running it alone with the other build is not a silent no-op.
named=$#
skipped() { # skipped TEST BUILD KIND
  [[ $named -gt 0 ]] && echo "SKIP $(basename "$1" .sh) [$(basename "$2")]: $3 build only"
  return 0
}

# The jobs, "BUILD TEST", by group; in each, one build after the other.
exclusive_jobs=() shared_jobs=()
for b in "${builds[@]}"; do
  mkdir -p "$b/integration"
  for t in "${tests[@]}"; do
    # A real server's behaviour (a JVM's) and a scenario timed alone are
    # checked once, with the plain build (see above).
    if [[ -e $b/SANITIZED ]] && grep -q '^# integration: plain build' "$t"; then
      skipped "$t" "$b" plain; continue
    fi
    if [[ ! -e $b/SANITIZED ]] && grep -q '^# integration: sanitized build' "$t"; then
      skipped "$t" "$b" sanitized; continue
    fi
    case $(group_of "$t") in
      exclusive) exclusive_jobs+=("$b $t") ;;
      *) shared_jobs+=("$b $t") ;;
    esac
  done
done
[[ -n $only && $only != exclusive ]] && exclusive_jobs=()
[[ -n $only && $only != shared ]] && shared_jobs=()

# A label for a build in the result lines, when there are several.
label() { [[ ${#builds[@]} -gt 1 ]] && echo " [$(basename "$1")]"; }

passed=0 failed=0
declare -A job_of=() started_at=()

start_job() { # start_job "BUILD TEST"
  local b=${1%% *} t=${1#* }
  local log=$b/integration/$(basename "$t" .sh).log
  # A failure's files from an earlier run of this test only: a run of the
  # other group (--only) keeps this one's.
  rm -rf "$b/integration/$(basename "$t" .sh).failed"
  # The plain build's recordings, for test_sanitized_replay: this test's
  # from this run only.
  local traces=
  if [[ ! -e $b/SANITIZED ]]; then
    traces=$b/integration/traces
    mkdir -p "$traces"
    rm -f "$traces/$(basename "$t" .sh)".*
  fi
  local cpu_file=$b/integration/$(basename "$t" .sh).cpu
  (
    CS_BUILD=$b CS_TRACES_OUT=$traces timeout 600 bash "$t" >"$log" 2>&1
    status=$?
    times >"$cpu_file"
    exit $status
  ) &
  job_of[$!]=$1
  started_at[$!]=$(date +%s)
}

# children_cpu_s FILE: user + system seconds of the children's line of
# bash's `times` ("0m1.250s 0m0.375s", the second of its two lines).
children_cpu_s() {
  awk 'NR == 2 {
    for (i = 1; i <= 2; i++) { split($i, ms, "m"); sub("s", "", ms[2]); total += ms[1] * 60 + ms[2] }
    printf "%.1f\n", total
  }' "$1" 2>/dev/null || echo "?"
}

finish_job() { # finish_job PID STATUS
  local b=${job_of[$1]%% *} t=${job_of[$1]#* } verdict=PASS
  local name; name=$(basename "$t" .sh)
  if [[ $2 -eq 0 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); verdict=FAIL; fi
  local took=$(( $(date +%s) - started_at[$1] ))
  local cpu_s; cpu_s=$(children_cpu_s "$b/integration/$name.cpu")
  printf '%-4s %-40s %4ss %6s s CPU\n' "$verdict" "$name$(label "$b")" "$took" "$cpu_s"
  [[ -n ${CS_TEST_TIMES:-} ]] && echo "$took $cpu_s $name [$(basename "$b")]" >>"$CS_TEST_TIMES"
  if [[ $verdict == FAIL ]]; then
    sed 's/^/    | /' "$b/integration/$name.log" | tail -n 40
    # The log beside the files the test kept (lib.sh's cleanup): a failure
    # its trap did not see (a timeout's kill, a failure before lib.sh was
    # sourced) still leaves them, and the next run of this test does not
    # overwrite them.
    mkdir -p "$b/integration/$name.failed" && cp "$b/integration/$name.log" "$b/integration/$name.failed/"
  fi
  unset "job_of[$1]" "started_at[$1]"
}

# Run JOBS at most N at a time, each result printed as it ends.
run_jobs() { # run_jobs N JOB...
  local n=$1 pid status
  shift
  for job in "$@"; do
    while [[ ${#job_of[@]} -ge $n ]]; do
      status=0; wait -n -p pid || status=$?
      finish_job "$pid" "$status"
    done
    start_job "$job"
  done
  while [[ ${#job_of[@]} -gt 0 ]]; do
    status=0; wait -n -p pid || status=$?
    finish_job "$pid" "$status"
  done
}

run_jobs 1 "${exclusive_jobs[@]}"
run_jobs "$lanes" "${shared_jobs[@]}"
echo "integration: $passed passed, $failed failed"
# Every job accounted for: a runner bug must not pass as "0 failed".
jobs=$(( ${#exclusive_jobs[@]} + ${#shared_jobs[@]} ))
[[ $((passed + failed)) -eq $jobs ]] || { echo "integration: $jobs tests to run, $((passed + failed)) ran" >&2; exit 1; }
[[ $jobs -gt 0 || -n $only ]] || { echo "integration: no test to run" >&2; exit 1; }
[[ $failed -eq 0 ]]
