#!/usr/bin/env bash
# Redis's one event loop, blocked: 16 clients send PINGs at 1 600 a second
# in all while another client runs a Lua script that spins for 12 ms every
# 500 ms (EVAL). The PINGs that arrive meanwhile wait with their data
# ready; those read in the pass that runs a script wait after their read,
# for the replies Redis writes at the pass's end. event_loop leads the tail,
# on redis-server's thread, though each script is itself a slow request
# (handler). connscope, attached before the load, counts every command the
# clients sent, and its p99 lies between what the scripts make it (3 ms at
# least: some 19 PINGs arrive during each, waiting up to 12 ms) and the
# clients' own p99.
# integration: exclusive
# Runs alone, Redis pinned to the second CPU and the clients to the first,
# so that Redis seldom waits for a CPU. Where it did all the same (the
# kernel's schedstat of its thread over the run, 4 % or more), run_queue
# may lead and event_loop must come next; its waits are the run queue's on
# either side of a loop's turn, never the handler's.
# integration: plain build
source "$(dirname "$0")/lib.sh"

script_ms=12
REDIS_PORT=$(cs_free_port)
mkdir -p "$CS_TMP/redis"
cs_bg taskset -c 1 redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
  --dir "$CS_TMP/redis" --logfile "$CS_TMP/redis/redis.log"
SERVER_PID=$BG_PID
cs_wait_port "$REDIS_PORT"

CS_ON_ATTACHED='runq_snapshot "$SERVER_PID" "$CS_TMP/runq.before"; run_start_ns=$(date +%s%N)'
CS_ON_STOPPING='runq_snapshot "$SERVER_PID" "$CS_TMP/runq.after"; run_end_ns=$(date +%s%N)'
cs_profile loop taskset -c 0 "$CS_PYTHON" "$(dirname "$0")/resp_load.py" --port "$REDIS_PORT" --connections 16 \
  --rate 100 --duration 3 --lua-every-ms 500 --lua-ms "$script_ms" --json "$CS_TMP/client.json"
unset CS_ON_ATTACHED CS_ON_STOPPING
run_s=$(python3 -c "print(($run_end_ns - $run_start_ns) / 1e9)")
read -r kernel_runq_us _ kernel_top_share < <(runq_delta "$CS_TMP/runq.before" "$CS_TMP/runq.after" "$run_s")
r=$CS_TMP/loop.json
c=$CS_TMP/client.json
note "redis-server waited $kernel_runq_us us for a CPU over the run (its busiest thread $kernel_top_share of it)"
note "the clients: $(json_get "$c" 'j["pings"]') PINGs, $(json_get "$c" 'j["evals"]') scripts, their commands' p99 $(json_get "$c" 'j["from_send_us"]["p99"]') us; connscope: $(json_get "$r" 'j["requests"]') requests, p99 $(json_get "$r" 'j["latency_us"]["p99"]') us"
note "tail: $(json_get "$r" '", ".join("%s %.1f%%" % (x["cause"], 100 * x["share"]) for x in j["tail"]["causes"] if x["share"] >= 0.005)')"
"$CS_BIN" report "$CS_TMP/loop.cstrace" | sed -n '/^where the tail goes/,/^$/p'
assert_cmp "$(json_get "$r" 'j["requests"]')" == "$(json_get "$c" 'j["commands"]')" "requests: every command the clients sent"
assert_leads_unless_starved "$r" event_loop "$kernel_top_share" ""
assert_cmp "$(json_get "$r" '[x for x in j["tail"]["causes"] if x["cause"] == "event_loop"][0]["figures"]["thread_tid"]')" \
  == "$SERVER_PID" "the loop named: redis-server's thread"
# A PING read in the pass that runs a script waits for it after its read:
# the loop's (Redis writes every reply of a pass at its end), not the PING's
# handler. The tail's handler time is the scripts' own.
handler_us=$(json_get "$r" 'sum(x["figures"].get("thread_time_us", 0) for x in j["tail"]["causes"] if x["cause"] == "handler")')
assert_cmp "$handler_us" '<=' "$(json_get "$c" "j['evals'] * $script_ms * 1250 + 2000")" \
  "the tail's handler time: the $(json_get "$c" 'j["evals"]') scripts' own ($script_ms ms each, 25 % + 2 ms over)"
assert_cmp "$(json_get "$r" '[x for x in j["tail"]["causes"] if x["cause"] == "event_loop"][0]["figures"].get("after_read_time_us", 0)')" \
  '>' 0 "the loop's wait after a read, told apart"
assert_cmp "$(json_get "$r" 'j["latency_us"]["p99"]')" '>=' 3000 "p99: the PINGs that waited for a $script_ms ms script"
client_p99=$(json_get "$c" 'j["from_send_us"]["p99"]')
assert_cmp "$(json_get "$r" 'j["latency_us"]["p99"]')" '<=' "$(python3 -c "print($client_p99 + max(0.1 * $client_p99, 1000))")" \
  "p99 within the clients' (10 % or 1 ms)"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
