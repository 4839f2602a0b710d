#!/usr/bin/env bash
# The sanitized build meets every scenario's records. The scenarios that
# time a server alone run once, with the plain build (their header says
# "plain build"); what they recorded is kept in the plain build's
# integration/traces/ (tests/integration/run.sh) and replayed here by the
# sanitized connscope, as are the committed fixtures (tests/fixtures/):
# the text report with its slowest requests, the JSON report, the interval
# lines, a window of the run (--from/--to), and a diff between two runs.
# Asserted: every replay exits 0 and each JSON report parses and counts
# the trace's requests, the same with the plain build's replay; a sanitizer
# report ends the process with an error (and the asan-reports step fails
# on any report written).
# integration: sanitized build
source "$(dirname "$0")/lib.sh"

[[ $CS_SANITIZED == 1 ]] || fail "$CS_BUILD is not a sanitized build"
plain=${CS_PLAIN_BUILD:?CS_PLAIN_BUILD must name the plain build (mk/hygiene.mk sets it)}
fixtures=$(cd "$(dirname "$0")/../fixtures" && pwd)
shopt -s nullglob
recorded=("$plain"/integration/traces/*.cstrace)
traces=("$fixtures"/*.cstrace "${recorded[@]}")
note "${#recorded[@]} trace(s) recorded by this run's plain scenarios, ${#traces[@]} in all"

# replay TRACE: every replay of one trace; a failure is said in $CS_TMP/NAME.failed.
replay() {
  local trace=$1 name
  name=$(basename "$trace" .cstrace)
  local err=$CS_TMP/$name.err
  said() { echo "$name: $*" >>"$CS_TMP/$name.failed"; cat "$err" >>"$CS_TMP/$name.failed" 2>/dev/null; }
  "$CS_BIN" report --slowest 5 "$trace" >"$CS_TMP/$name.txt" 2>"$err" || { said "report failed"; return; }
  "$CS_BIN" report --json "$trace" >"$CS_TMP/$name.json" 2>>"$err" || { said "report --json failed"; return; }
  "$plain/connscope" report --json "$trace" >"$CS_TMP/$name.plain.json" 2>/dev/null ||
    { said "the plain build's report --json failed"; return; }
  "$CS_BIN" report --interval 1 "$trace" >/dev/null 2>>"$err" || { said "report --interval failed"; return; }
  "$CS_BIN" report --from 0.5 --to 2 --json "$trace" >/dev/null 2>>"$err" || { said "report --from --to failed"; return; }
  # Two runs side by side: a recorded trace against the first fixture.
  if [[ $trace != "$fixtures"/* ]]; then
    "$CS_BIN" diff "${traces[0]}" "$trace" >/dev/null 2>>"$err" || { said "diff against the first fixture failed"; return; }
  fi
  python3 - "$CS_TMP/$name.json" "$CS_TMP/$name.plain.json" <<'PY' 2>>"$err" || said "the sanitized and plain reports differ"
import json, sys
sanitized, plain = (json.load(open(path)) for path in sys.argv[1:])
for key in ("requests", "latency_us", "events"):
    assert sanitized.get(key) == plain.get(key), (key, sanitized.get(key), plain.get(key))
PY
}

# Two at a time: this test often runs last in its group, the other lane
# idle, and each replay is one process's CPU.
running=0
for trace in "${traces[@]}"; do
  replay "$trace" &
  running=$((running + 1))
  if ((running >= 2)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
replayed=0
for trace in "${traces[@]}"; do
  name=$(basename "$trace" .cstrace)
  [[ -e $CS_TMP/$name.failed ]] && { cat "$CS_TMP/$name.failed"; fail "$name: a replay failed"; }
  [[ -s $CS_TMP/$name.json ]] || fail "$name: no JSON report"
  replayed=$((replayed + 1))
done
assert_cmp "$replayed" '>=' 11 "traces replayed (the fixtures at least)"
echo "ok: $replayed traces replayed by the sanitized build, ${#recorded[@]} diffs"
