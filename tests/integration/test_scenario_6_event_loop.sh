#!/usr/bin/env bash
# Scenario 6: on one of two workers, 2 % of requests block the event loop
# for 50 ms (/block/50, like a synchronous call in an async handler). The
# requests queued behind them on that worker wait with their data ready:
# event_loop is the tail's top cause, on that worker. (With 16 connections
# per worker at 300 requests/s each, about 15 requests arrive during each
# block: enough that the waiting, not the blocking request, is the tail.)
# integration: exclusive
# Runs alone: connscope's p99 is compared with the client's, whose own
# wake-ups another test's load moves by milliseconds, more than the
# tolerance.
# integration: plain build
# (timed alone once; the sanitized build replays what it recorded:
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

cs_start_server --workers 2 --accept reuseport --block-worker 0
CS_ON_ATTACHED='runq_snapshot "$SERVER_PID" "$CS_TMP/runq.before"; run_start_ns=$(date +%s%N)'
CS_ON_STOPPING='runq_snapshot "$SERVER_PID" "$CS_TMP/runq.after"; run_end_ns=$(date +%s%N)'
cs_profile s6 "$CS_LOAD" --busy-poll --port "$SERVER_PORT" --connections 32 --rate 600 --duration 6 \
  --mix /block/50:0.02 --json "$CS_TMP/client.json" --quiet
unset CS_ON_ATTACHED CS_ON_STOPPING
run_s=$(python3 -c "print(($run_end_ns - $run_start_ns) / 1e9)")
read -r kernel_runq_us _ kernel_top_share < <(runq_delta "$CS_TMP/runq.before" "$CS_TMP/runq.after" "$run_s")
r=$CS_TMP/s6.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, causes $(json_get "$r" '[(c["cause"], c["share"], c["evidence"]) for c in j["tail"]["causes"][:2]]')"
note "the server's threads waited $kernel_runq_us us for a CPU (busiest thread $kernel_top_share of the run)"

# On a machine busy enough that the server's threads wait for a CPU,
# run_queue may lead; event_loop must then come next.
assert_leads_unless_starved "$r" event_loop "$kernel_top_share" ""
json_get "$r" '[c for c in j["tail"]["causes"] if c["cause"] == "event_loop"][0]["evidence"]' | grep -q "csw-0" ||
  fail "event_loop evidence does not name worker csw-0"
echo "ok: the evidence names csw-0"
loop_w0=$(json_get "$r" 'sum(t["event_loop_us"] for t in j["threads"] if t["comm"] == "csw-0")')
loop_w1=$(json_get "$r" 'sum(t["event_loop_us"] for t in j["threads"] if t["comm"] == "csw-1")')
assert_cmp "$loop_w0" '>' "$(python3 -c "print(5 * $loop_w1)")" "event-loop time on csw-0 far above csw-1"
assert_p99_agrees "$r" "$CS_TMP/client.json"
