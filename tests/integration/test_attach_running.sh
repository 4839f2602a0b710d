#!/usr/bin/env bash
# Attaching to a server under load: the keep-alive connections were all
# opened before the attach. connscope adopts each at its first idle moment
# and from there times every request whole, as if it had attached before
# the load. The reference server with scenario 6's blocking path (2 % of
# the requests block worker 0's loop for 50 ms), profiled twice:
#   before: attached, then the load started (every connection whole);
#   after:  the load running 2 s, then attached for 5 s: every connection
#           adopted, at most one request each left out (in flight at the
#           attach), the requests the client completed in the window
#           timed, the same tail cause, and a p99 that agrees with the
#           client's over the same window;
#   a flame graph attached after the load began: the tail's stacks.
# integration: exclusive
# Runs alone: connscope's p99 is compared with the client's, whose own
# wake-ups another test's load moves by milliseconds, more than the
# tolerance.
# integration: plain build
source "$(dirname "$0")/lib.sh"

CONNS=32
cs_start_server --workers 2 --accept reuseport --block-worker 0
load() { # load SECONDS NAME [csload options]: the same load each time
  local seconds=$1 name=$2; shift 2
  "$CS_LOAD" --busy-poll --port "$SERVER_PORT" --connections "$CONNS" --rate 600 --duration "$seconds" \
    --mix /block/50:0.02 --json "$CS_TMP/$name.client.json" --quiet "$@"
}

note "before: attached, then the load"
"$CS_BIN" attach --pid "$SERVER_PID" --json >"$CS_TMP/before.json" 2>"$CS_TMP/before.err" &
cs=$!; cs_pids+=("$cs")
cs_wait_attached "$CS_TMP/before.err"
load 6 before || fail "csload failed (before)"
sleep 0.3
kill -INT "$cs"; wait "$cs" || { cat "$CS_TMP/before.err"; fail "connscope failed (before)"; }

note "after: the load running, then attached"
cs_bg "$CS_LOAD" --busy-poll --port "$SERVER_PORT" --connections "$CONNS" --rate 600 --duration 9 \
  --mix /block/50:0.02 --json "$CS_TMP/after.client.json" --log "$CS_TMP/after.log" --quiet
load_pid=$BG_PID
sleep 2
cs_attach_window after 5
cs_stop_load "$load_pid"

b=$CS_TMP/before.json a=$CS_TMP/after.json
# The client's requests sent and answered within connscope's window (seen
# attached up to 0.1 s late: the window's start is if anything late here).
read -r client_count client_p99_us _ < <(cs_client_window "$CS_TMP/after.log")
note "before: p99 $(json_get "$b" 'j["latency_us"]["p99"]') us, causes $(json_get "$b" '[(c["cause"], c["share"]) for c in j["tail"]["causes"][:2]]')"
note "after: p99 $(json_get "$a" 'j["latency_us"]["p99"]') us, causes $(json_get "$a" '[(c["cause"], c["share"]) for c in j["tail"]["causes"][:2]]'); the client in the window: $client_count requests, p99 $client_p99_us us"

assert_cmp "$(json_get "$b" 'j["connections_adopted"]')" == 0 "connections adopted, attached before the load"
assert_cmp "$(json_get "$a" 'j["connections_adopted"]')" == "$CONNS" "connections adopted, attached after"
assert_cmp "$(json_get "$a" 'j["requests_in_flight_at_attach"]')" '<=' "$CONNS" "requests left out (at most one a connection)"
assert_cmp "$(json_get "$a" 'j["connections"]')" == 0 "requests that paid a set-up (none: all before the attach)"
assert_cmp "$(json_get "$a" 'j["requests"]')" '>=' "$(python3 -c "print(0.95 * $client_count)")" \
  "requests timed against the client's in the window (95 %)"
# (connscope's own window is longer: from its attach to its last record.)
assert_cmp "$(json_get "$a" 'j["requests"]')" '<=' "$(json_get "$a" '1.05 * 600 * j["duration_s"] + 40')" \
  "requests timed against the client's rate over connscope's window (none made up)"

# The same tail cause as attached before the load (scenario 6: event_loop;
# on a machine busy enough run_queue may lead, then event_loop comes next).
causes() { json_get "$1" '[c["cause"] for c in j["tail"]["causes"][:2]]'; }
top_b=$(top_cause "$b") top_a=$(top_cause "$a")
if [[ $top_a != "$top_b" ]]; then
  [[ $(causes "$a") == *event_loop* && $(causes "$b") == *event_loop* ]] ||
    fail "tail causes differ: $(causes "$b") attached before, $(causes "$a") after"
fi
echo "ok: tail causes $(causes "$b") attached before, $(causes "$a") after"
json_get "$a" '[c for c in j["tail"]["causes"] if c["cause"] == "event_loop"][0]["evidence"]' | grep -q "csw-0" ||
  fail "event_loop evidence does not name worker csw-0"
echo "ok: the evidence names csw-0"

# Its p99 and the client's over the same window: 10 % or 1 ms. (Against
# the run attached before, the p99 of another 6 s of load differs by more
# than its blocks' luck: noted, not judged.)
server_p99=$(json_get "$a" 'j["latency_us"]["p99"]')
read -r low high < <(python3 -c "t = max(0.1 * $client_p99_us, 1000.0)
print($client_p99_us - t, $client_p99_us + t)")
assert_cmp "$server_p99" '>=' "$low" "p99 agreement: connscope $server_p99 us vs the client's $client_p99_us us (low)"
assert_cmp "$server_p99" '<=' "$high" "p99 agreement: connscope $server_p99 us vs the client's $client_p99_us us (high)"
assert_cmp "$(json_get "$a" 'j["events"]["lost"]')" == 0 "events lost"

# The tail's stacks too: a flame graph attached while the load runs joins
# the adopted connections' tail requests with their threads' stacks (the
# requests queued behind a block wait in event_loop while csw-0 sleeps in
# handle_block).
note "a flame graph, the load running, then attached"
cs_bg "$CS_LOAD" --port "$SERVER_PORT" --connections "$CONNS" --rate 600 --duration 7 --mix /block/50:0.02 --quiet
load_pid=$BG_PID
sleep 2
"$CS_BIN" flamegraph --pid "$SERVER_PID" --duration 3 -o "$CS_TMP/tail.folded" 2>"$CS_TMP/flame.err" ||
  { cat "$CS_TMP/flame.err"; fail "connscope flamegraph failed"; }
cs_stop_load "$load_pid"
note "$(grep 'tail requests' "$CS_TMP/flame.err")"
joined=$(sed -n 's/.*tail requests [0-9]*, joined \([0-9]*\).*/\1/p' "$CS_TMP/flame.err")
assert_cmp "${joined:-0}" '>' 0 "tail requests joined with stacks"
grep -q ';event_loop;off-cpu;.*handle_block' "$CS_TMP/tail.folded" ||
  fail "no event_loop stack through handle_block in the flame graph"
echo "ok: event_loop stacks through handle_block"
