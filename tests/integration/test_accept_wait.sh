#!/usr/bin/env bash
# An accept thread that pauses 2 ms before each accept, 20 concurrent
# non-keep-alive clients: each connection queues behind ~20 others, so the
# accept-queue wait is of the order of 2 ms x queue depth, and far above the
# same server without the pause.
source "$(dirname "$0")/lib.sh"

# measure DELAY_US: runs the server, ab and connscope; leaves the JSON report.
measure() {
  local delay_us=$1 out=$CS_TMP/report.$1.json
  cs_start_server --accept acceptor --workers 2 --accept-delay-us "$delay_us" --no-keepalive
  "$CS_BIN" attach --pid "$SERVER_PID" --duration 6 --json >"$out" 2>"$CS_TMP/cs.$1.err" &
  local cs=$!
  cs_wait_attached "$CS_TMP/cs.$1.err"
  ab -q -n 1500 -c 20 -s 10 "http://127.0.0.1:$SERVER_PORT/" >"$CS_TMP/ab.$1.txt" 2>&1 || fail "ab failed"
  wait "$cs" || { cat "$CS_TMP/cs.$1.err"; fail "connscope failed"; }
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
  echo "$out"
}

slow=$(measure 2000)
fast=$(measure 0)
slow_p50=$(json_get "$slow" 'j["listeners"][0]["accept_wait_us"]["p50"]')
fast_p50=$(json_get "$fast" 'j["listeners"][0]["accept_wait_us"]["p50"]')
accepts=$(json_get "$slow" 'j["listeners"][0]["accepts"]')
lost=$(json_get "$slow" 'j["events"]["lost"]')
mean_depth=$(json_get "$slow" 'j["listeners"][0]["backlog_max"]')
note "delayed: p50 ${slow_p50} us over $accepts accepts (backlog max $mean_depth); undelayed: p50 ${fast_p50} us"

assert_cmp "$accepts" '>=' 1400 "accepts seen (1500 requests, 1 s after attach)"
assert_cmp "$lost" '==' 0 "events lost"
# 2 ms per accept x ~20 queued: the order of 40 ms; allow for scheduling.
assert_cmp "$slow_p50" '>=' 15000 "delayed accept wait p50 (us) at least 2 ms x 7.5"
assert_cmp "$slow_p50" '<=' 100000 "delayed accept wait p50 (us) at most 2 ms x 50"
assert_cmp "$slow_p50" '>=' "$(python3 -c "print(10 * $fast_p50)")" "delayed p50 >= 10x undelayed p50"
grep -q '"code":"accept_thread_bottleneck"' "$slow" || fail "no accept_thread_bottleneck finding"
grep -q '"code":"accept_thread_bottleneck"' "$fast" && fail "undelayed run flagged as a bottleneck"
echo "ok: bottleneck named only for the delayed acceptor"
