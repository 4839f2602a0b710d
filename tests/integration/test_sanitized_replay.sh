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

replayed=0
for trace in "${traces[@]}"; do
  name=$(basename "$trace" .cstrace)
  "$CS_BIN" report --slowest 5 "$trace" >"$CS_TMP/$name.txt" 2>"$CS_TMP/$name.err" ||
    { cat "$CS_TMP/$name.err"; fail "$name: report failed"; }
  "$CS_BIN" report --json "$trace" >"$CS_TMP/$name.json" 2>>"$CS_TMP/$name.err" ||
    { cat "$CS_TMP/$name.err"; fail "$name: report --json failed"; }
  "$plain/connscope" report --json "$trace" >"$CS_TMP/$name.plain.json" 2>/dev/null ||
    fail "$name: the plain build's report --json failed"
  "$CS_BIN" report --interval 1 "$trace" >/dev/null 2>>"$CS_TMP/$name.err" ||
    { cat "$CS_TMP/$name.err"; fail "$name: report --interval failed"; }
  "$CS_BIN" report --from 0.5 --to 2 --json "$trace" >/dev/null 2>>"$CS_TMP/$name.err" ||
    { cat "$CS_TMP/$name.err"; fail "$name: report --from --to failed"; }
  python3 - "$CS_TMP/$name.json" "$CS_TMP/$name.plain.json" <<'PY' || fail "$name: the sanitized and plain reports differ"
import json, sys
sanitized, plain = (json.load(open(path)) for path in sys.argv[1:])
for key in ("requests", "latency_us", "events"):
    assert sanitized.get(key) == plain.get(key), (key, sanitized.get(key), plain.get(key))
PY
  replayed=$((replayed + 1))
done
assert_cmp "$replayed" '>=' 11 "traces replayed (the fixtures at least)"
# Two runs side by side: the first fixture against each recorded one.
for trace in "${recorded[@]}"; do
  "$CS_BIN" diff "${traces[0]}" "$trace" >/dev/null 2>"$CS_TMP/diff.err" ||
    { cat "$CS_TMP/diff.err"; fail "diff against $(basename "$trace") failed"; }
done
echo "ok: $replayed traces replayed by the sanitized build, ${#recorded[@]} diffs"
