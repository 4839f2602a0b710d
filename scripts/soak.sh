#!/usr/bin/env bash
# Runs `make test` N times, each from a fresh clone of this repository's
# HEAD, and tallies every failure by test name. A test that fails once in
# ten runs is a bug: this is how to find it before CI does.
#
# usage: scripts/soak.sh [--load none|cpu|io] [--keep DIR] [--rev REV] N
#
#   --load cpu   a busy process at nice 0, pinned to CPU 0, for the whole
#                soak: the machine a test shares with other work
#   --load io    the same, plus a writer that keeps the disk busy (fsync'd
#                writes of 64 MiB, again and again, in DIR)
#   --keep DIR   where each run's log and failed tests' kept files go
#                (default /tmp/connscope-soak); the clones are deleted after
#                each run, their kept files copied first
#   --rev REV    test commit REV (default HEAD, read once at the start: a
#                commit made during the soak does not change what it tests)
#   --follow     each run tests HEAD as it is when that run starts: the
#                soak checks each commit made during it
#
# Prints one line per run, then the tally: each failed test with how many
# runs it failed in and where its kept files are. Exits 1 if any run failed.
set -u
load=none keep=/tmp/connscope-soak rev=HEAD follow=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --load) load=${2:-}; shift 2 ;;
    --keep) keep=${2:-}; shift 2 ;;
    --rev) rev=${2:-}; shift 2 ;;
    --follow) follow=1; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "soak.sh: unknown option $1 (--load, --keep, --rev, --follow)" >&2; exit 2 ;;
    *) break ;;
  esac
done
runs=${1:-}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "soak.sh: give the number of runs, e.g. scripts/soak.sh 10" >&2; exit 2; }
[[ $load == none || $load == cpu || $load == io ]] || { echo "soak.sh: --load takes none, cpu or io, not '$load'" >&2; exit 2; }
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel) || exit 2
full_commit=$(git -C "$repo" rev-parse --verify --quiet "$rev^{commit}") || { echo "soak.sh: no commit '$rev'" >&2; exit 2; }
commit=${full_commit:0:7}
mkdir -p "$keep" || exit 2

load_pids=()
stop_load() { for p in "${load_pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap stop_load EXIT
if [[ $load != none ]]; then
  # A CPU hog at nice 0 on CPU 0: what another tenant's batch job does.
  taskset -c 0 bash -c 'while :; do :; done' &
  load_pids+=($!)
fi
if [[ $load == io ]]; then
  # A writer that keeps the disk and the page cache busy; each pass is
  # bounded (64 MiB) and the file is deleted when the soak ends.
  io_file=$keep/io-load.bin
  bash -c "while :; do dd if=/dev/zero of='$io_file' bs=1M count=64 conv=fsync status=none; done" &
  load_pids+=($!)
  trap 'stop_load; rm -f "$io_file"' EXIT
fi

declare -A fails=() where=()
failed_runs=0
for run in $(seq "$runs"); do
  dir=$(mktemp -d /tmp/connscope-soak-clone.XXXXXX)
  log=$keep/run-$run.log
  if [[ $follow == 1 ]]; then
    full_commit=$(git -C "$repo" rev-parse HEAD) commit=${full_commit:0:7}
  fi
  git clone -q "$repo" "$dir/src" && git -C "$dir/src" checkout -q "$full_commit" || exit 1
  start=$(date +%s)
  (cd "$dir/src" && make test) >"$log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  # The failed tests: run.sh prints "FAIL name [build] Ns"; other steps
  # print "STEP name FAILED".
  names=$( { grep -E '^FAIL ' "$log" | awk '{ print $2 ($3 ~ /^\[/ ? " " $3 : "") }'
             grep -E 'STEP +[a-z-]+ FAILED' "$log" | awk '{ print "step:" $2 }' | grep -v 'step:integration-'; } | sort -u)
  if [[ $rc -eq 0 ]]; then
    echo "run $run/$runs ($commit, load $load): passed in $took s"
  else
    failed_runs=$((failed_runs + 1))
    shown=${names//$'\n'/, }
    echo "run $run/$runs ($commit, load $load): FAILED in $took s: ${shown:-exit $rc, no test named}"
    # Keep the failed tests' files (BUILD/integration/TEST.failed/) and logs.
    for d in "$dir"/src/build*/integration; do
      [[ -d $d ]] || continue
      for f in "$d"/*.failed; do
        [[ -e $f ]] || continue
        dest=$keep/run-$run/$(basename "$(dirname "$d")")
        mkdir -p "$dest" && cp -r "$f" "$dest"/
      done
    done
    while IFS= read -r n; do
      [[ -n $n ]] || continue
      fails[$n]=$(( ${fails[$n]:-0} + 1 ))
      where[$n]="${where[$n]:-} $keep/run-$run"
    done <<<"$names"
  fi
  rm -rf "$dir"
done

echo "soak: $((runs - failed_runs)) of $runs runs passed ($([[ $follow == 1 ]] && echo "HEAD at each run" || echo "$commit"), load $load; logs in $keep)"
for n in "${!fails[@]}"; do
  printf '  %-50s failed in %d run(s):%s\n' "$n" "${fails[$n]}" "${where[$n]}"
done | sort
[[ $failed_runs -eq 0 ]]
