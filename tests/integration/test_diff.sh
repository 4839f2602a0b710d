#!/usr/bin/env bash
# connscope diff, on what a user compares after changing a setting: Debian's
# nginx with keep-alive, then with keepalive_timeout 0 (a connection per
# request). The diff says non_persistent appeared, and every other
# condition that appeared or went away is one the two reports disagree on
# (a busy machine may flag cpu_saturation in either); it gives each run's
# request count as its client sent them and each run's percentiles as its
# own report printed them, and works the same on the two trace files as
# on their JSON reports. Bad input: a clear error.
# integration: sanitized build
# (the reports and traces are read by the same code in either build; the
# sanitized one also checks its memory)
source "$(dirname "$0")/lib.sh"

# nginx_run NAME KEEPALIVE_TIMEOUT CLIENT_ARGS...: nginx with that keep-alive
# timeout, recorded while csload sends 400 requests; the trace in NAME.cstrace.
nginx_run() {
  local name=$1 keepalive=$2; shift 2
  cs_start_nginx "$keepalive" 256
  cs_profile "$name" "$CS_LOAD" --port "$NGINX_PORT" --connections 4 --requests 400 \
    --json "$CS_TMP/$name.client.json" --quiet "$@"
  kill -QUIT "$NGINX_MASTER"
  for _ in $(seq 50); do kill -0 "$NGINX_MASTER" 2>/dev/null || break; sleep 0.1; done
}

nginx_run keep 75s
nginx_run close 0 --no-keepalive
for run in keep close; do
  assert_cmp "$(json_get "$CS_TMP/$run.json" 'j["requests"]')" == 400 "$run: requests in connscope's report"
done

"$CS_BIN" diff "$CS_TMP/keep.json" "$CS_TMP/close.json" >"$CS_TMP/diff.txt" || fail "diff of two JSON reports failed"
cat "$CS_TMP/diff.txt"
grep -Eq '^  \+ non_persistent +appeared$' "$CS_TMP/diff.txt" || fail "the text diff does not say non_persistent appeared"
echo "ok: text: non_persistent appeared"

"$CS_BIN" diff --json --percentile 95 "$CS_TMP/keep.json" "$CS_TMP/close.json" >"$CS_TMP/diff.json" ||
  fail "diff --json failed"
python3 - "$CS_TMP/diff.json" "$CS_TMP/keep.json" "$CS_TMP/close.json" <<'PY' || fail "the JSON diff does not give the runs' own figures"
import json, sys
d, before, after = (json.load(open(p)) for p in sys.argv[1:])
assert d["schema_version"] == 1
flagged = lambda r: {k for k, v in r["conditions"].items() if isinstance(v, dict) and v.get("flagged")}
assert "non_persistent" in d["conditions"]["appeared"], d["conditions"]
assert set(d["conditions"]["appeared"]) == flagged(after) - flagged(before), (d["conditions"], flagged(before), flagged(after))
assert set(d["conditions"]["went_away"]) == flagged(before) - flagged(after), d["conditions"]
assert set(d["conditions"]["flagged_in_both"]) == flagged(before) & flagged(after), d["conditions"]
assert d["before"]["requests"] == 400 and d["after"]["requests"] == 400, (d["before"], d["after"])
for k in ("p50", "p90", "p99", "p999", "max"):
    assert d["latency_us"][k]["before"] == before["latency_us"][k], k
    assert d["latency_us"][k]["after"] == after["latency_us"][k], k
assert list(d["latency_us"]) == ["p50", "p90", "p95", "p99", "p999", "max"], list(d["latency_us"])
assert d["latency_us"]["p90"]["before"] <= d["latency_us"]["p95"]["before"] <= d["latency_us"]["p99"]["before"]
assert [l["port"] for l in d["listeners"]] == [before["listeners"][0]["port"]], d["listeners"]
print("ok: JSON: each run's requests and percentiles, p95 in its place, one listener")
PY

# The trace files replay to the same comparison as their JSON reports.
"$CS_BIN" diff --json --percentile 95 "$CS_TMP/keep.cstrace" "$CS_TMP/close.cstrace" >"$CS_TMP/diff-traces.json" ||
  fail "diff of two trace files failed"
cmp -s "$CS_TMP/diff.json" "$CS_TMP/diff-traces.json" || { diff "$CS_TMP/diff.json" "$CS_TMP/diff-traces.json"; fail "the traces' diff differs from the reports'"; }
echo "ok: trace files give the same diff as their reports"

rc=0; "$CS_BIN" diff "$CS_TMP/keep.json" 2>"$CS_TMP/usage.err" || rc=$?
[[ $rc == 2 ]] && grep -q "name two runs" "$CS_TMP/usage.err" || fail "one run: exit $rc, $(cat "$CS_TMP/usage.err")"
echo '{"requests": 3}' >"$CS_TMP/other.json"
rc=0; "$CS_BIN" diff "$CS_TMP/other.json" "$CS_TMP/close.json" 2>"$CS_TMP/bad.err" || rc=$?
[[ $rc == 1 ]] && grep -q "other.json has no 'duration_s'" "$CS_TMP/bad.err" || fail "not a report: exit $rc, $(cat "$CS_TMP/bad.err")"
head -c 300 "$CS_TMP/keep.json" >"$CS_TMP/cut.json"
rc=0; "$CS_BIN" diff "$CS_TMP/close.json" "$CS_TMP/cut.json" 2>"$CS_TMP/cut.err" || rc=$?
[[ $rc == 1 ]] && grep -q "cut.json: not valid JSON at line 1, column 300: " "$CS_TMP/cut.err" ||
  fail "a cut report: exit $rc, $(cat "$CS_TMP/cut.err")"
echo "ok: usage and input errors"

# report --interval on the same recording: a line per interval, the run's total after them.
"$CS_BIN" report --interval 0.2 "$CS_TMP/keep.cstrace" >"$CS_TMP/intervals.txt" || fail "report --interval failed"
cat "$CS_TMP/intervals.txt"
head -n 1 "$CS_TMP/intervals.txt" | grep -q "top cause" || fail "no header line"
grep -q "^whole run: 400 requests" "$CS_TMP/intervals.txt" || fail "the intervals' run does not have the client's 400 requests"
python3 - "$CS_TMP/intervals.txt" <<'PY' || fail "the intervals' requests do not add up to 400"
import sys
lines = open(sys.argv[1]).read().splitlines()[1:-1]
total = sum(float(l.split()[1]) * 0.2 for l in lines[:-1])  # full intervals: req/s x 0.2 s
assert lines and total <= 400.5, (total, lines)
print("ok: %d intervals, %.0f requests in the full ones" % (len(lines), total))
PY

# report --slowest: the slowest requests one by one, as the run timed them.
"$CS_BIN" report --slowest 3 --json "$CS_TMP/keep.cstrace" >"$CS_TMP/slowest.json" || fail "report --slowest failed"
# Within the run: after its start, and before the trace file was last
# written (the run's duration counts from its first record, and attaching,
# slow on a busy machine, comes before that).
python3 - "$CS_TMP/slowest.json" "$CS_TMP/keep.cstrace" <<'PY' || fail "the slowest requests are not the run's"
import datetime, json, os, sys
j = json.load(open(sys.argv[1]))
written = datetime.datetime.fromtimestamp(os.stat(sys.argv[2]).st_mtime, datetime.timezone.utc)
s = j["slowest"]
assert len(s) == 3, s
assert [r["total_us"] for r in s] == sorted((r["total_us"] for r in s), reverse=True), s
assert abs(s[0]["total_us"] - j["latency_us"]["max"]) < 0.002, (s[0], j["latency_us"]["max"])
start = datetime.datetime.fromisoformat(j["run"]["start_utc"].replace("Z", "+00:00"))
for r in s:
    assert r["peer"] == "127.0.0.1" and r["port"] == j["listeners"][0]["port"], r
    assert 0 <= r["index"] < 400 and abs(sum(r["causes_us"].values()) - r["total_us"]) < 0.01, r
    end = datetime.datetime.fromisoformat(r["end_utc"].replace("Z", "+00:00"))
    assert start <= end <= written + datetime.timedelta(seconds=0.05), (start, end, written)
print("ok: the 3 slowest, slowest first, the first the run's max, from 127.0.0.1, within the run")
PY
"$CS_BIN" report --slowest 2 "$CS_TMP/keep.cstrace" | grep -A4 '^slowest 2 request(s)' || fail "no slowest list in the text report"

# report --from/--to: a part of the recording, as if attached then. Each
# connection of the run without keep-alive falls in one of two halves but
# for the at most 4 (one per client connection) that straddle the cut.
full=$(json_get "$CS_TMP/close.json" 'j["requests"]')
"$CS_BIN" report --json --to 1000 "$CS_TMP/close.cstrace" >"$CS_TMP/all.json" || fail "report --to failed"
assert_cmp "$(json_get "$CS_TMP/all.json" 'j["requests"]')" == "$full" "a window over the whole run: every request"
mid=$(json_get "$CS_TMP/close.json" 'j["duration_s"] / 3')
"$CS_BIN" report --json --to "$mid" "$CS_TMP/close.cstrace" >"$CS_TMP/first.json" || fail "report --to $mid failed"
"$CS_BIN" report --json --from "$mid" "$CS_TMP/close.cstrace" >"$CS_TMP/second.json" || fail "report --from $mid failed"
halves=$(( $(json_get "$CS_TMP/first.json" 'j["requests"]') + $(json_get "$CS_TMP/second.json" 'j["requests"]') ))
assert_cmp "$halves" '<=' "$full" "requests in the two halves"
assert_cmp "$halves" '>=' "$((full - 4))" "requests in the two halves, but those straddling the cut"
assert_cmp "$(json_get "$CS_TMP/first.json" 'j["window"]["to_s"]')" '<=' "$(python3 -c "print($mid + 0.001)")" "the first half's window ends at the cut (ms printed)"
rc=0; "$CS_BIN" report --from 2 --to 1 "$CS_TMP/close.cstrace" 2>"$CS_TMP/window.err" || rc=$?
[[ $rc == 2 ]] && grep -q -- "--to (1 s) must come after --from (2 s)" "$CS_TMP/window.err" || fail "--to before --from: exit $rc, $(cat "$CS_TMP/window.err")"
echo "ok: --from/--to"
