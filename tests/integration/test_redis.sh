#!/usr/bin/env bash
# Redis (Debian's redis-server): pipelined commands are requests, counted
# from the bytes the server reads (RESP frames each command).
# 1. redis-benchmark -P 16 -t ping: its inline PINGs and its RESP arrays,
#    16 written at once; connscope, attached before, counts every command
#    redis-benchmark sent (within 1 %), as pipelined requests of 16, and
#    its p50 and p99 are no more than redis-benchmark's own (which times
#    each command from its pipeline's write to the answers' read).
# 2. Attached to a busy Redis: four clients already pipelining 16 PINGs
#    at a time; their connections, older than the attach, are adopted at
#    an idle moment, and the commands counted against the client's in the
#    probes' live window (and printed beside Redis's own count, INFO's
#    total_commands_processed, over about the same window).
# (Shared: counts, which no other test's load changes, and latencies
# bounded by the client's own. Its traces are replayed by the sanitized
# build, test_sanitized_replay.)
# integration: plain build
source "$(dirname "$0")/lib.sh"

cs_start_redis

# 1. redis-benchmark, attached before it starts.
cs_profile benchmark redis-benchmark -p "$REDIS_PORT" -P 16 -c 4 -n 20000 -t ping --csv \
  >"$CS_TMP/benchmark.csv"
r=$CS_TMP/benchmark.json
cat "$CS_TMP/benchmark.csv"
note "connscope: requests $(json_get "$r" 'j["requests"]'), pipelined $(json_get "$r" 'j["pipelined"]'), multiplexed $(json_get "$r" 'j["multiplexed"]'), by protocol $(json_get "$r" 'j["connections_by_protocol"]'), p50 $(json_get "$r" 'j["latency_us"]["p50"]') us, p99 $(json_get "$r" 'j["latency_us"]["p99"]') us"
# Two tests (PING_INLINE, PING_MBULK) of 20000 commands; redis-benchmark
# also asks CONFIG GET save and appendonly, at once, at its start.
sent=$((2 * 20000 + 2))
assert_cmp "$(json_get "$r" 'j["requests"]')" '>=' "$(python3 -c "print(0.99 * $sent)")" "requests: redis-benchmark's $sent commands (99 %)"
assert_cmp "$(json_get "$r" 'j["requests"]')" '<=' "$sent" "requests: no more than the commands sent"
assert_cmp "$(json_get "$r" 'j["pipelined"]["commands"]')" '>=' "$(python3 -c "print(0.99 * 2 * 20000)")" "pipelined commands"
assert_cmp "$(json_get "$r" 'j["pipelined"]["exchanges"]')" '<=' "$(python3 -c "print(1.05 * 2 * 20000 / 16 + 1)")" \
  "exchanges of 16 commands (a pipeline read in two is two exchanges)"
assert_cmp "$(json_get "$r" 'j["connections_multiplexed"]')" == 0 "connections whose commands could not be counted"
assert_cmp "$(json_get "$r" 'j["connections_by_protocol"]["resp"]')" == "$(json_get "$r" 'j["listeners"][0]["accepts"]')" \
  "connections told as Redis: every one accepted"
for test in PING_INLINE PING_MBULK; do
  read -r bench_p50 bench_p99 < <(awk -F, -v t="\"$test\"" '$1 == t { gsub(/"/, ""); print $5 * 1000, $7 * 1000 }' "$CS_TMP/benchmark.csv")
  [[ -n $bench_p99 ]] || fail "redis-benchmark printed no $test line"
  note "$test: redis-benchmark p50 $bench_p50 us, p99 $bench_p99 us"
done
# Each command is timed from its pipeline's first bytes to its last
# answer's write, inside redis-benchmark's timing of the same command.
read -r worst_p50 worst_p99 < <(awk -F, 'NR > 1 { gsub(/"/, ""); if ($5 > p50) p50 = $5; if ($7 > p99) p99 = $7 } END { print p50 * 1000, p99 * 1000 }' "$CS_TMP/benchmark.csv")
assert_cmp "$(json_get "$r" 'j["latency_us"]["p50"]')" '<=' "$(python3 -c "print($worst_p50 + max(0.1 * $worst_p50, 1000))")" \
  "p50 within redis-benchmark's (10 % or 1 ms)"
assert_cmp "$(json_get "$r" 'j["latency_us"]["p99"]')" '<=' "$(python3 -c "print($worst_p99 + max(0.1 * $worst_p99, 1000))")" \
  "p99 within redis-benchmark's (10 % or 1 ms)"
"$CS_BIN" report "$CS_TMP/benchmark.cstrace" | head -n 8 | grep -q '^pipelined: [0-9]* Redis command(s) in [0-9]* exchange(s) (1[0-9.]* each)' \
  || fail "the report's first lines do not say the commands were pipelined"
echo "ok: the report's first lines say so"

# 2. Four clients pipelining, then attached for 3 s.
cs_bg "$CS_PYTHON" "$(dirname "$0")/resp_load.py" --port "$REDIS_PORT" --connections 4 --pipeline 16 --rate 8000 \
  --duration 6 --json "$CS_TMP/busy-client.json" --log "$CS_TMP/busy-client.log"
client=$BG_PID
sleep 1.5
CS_ON_ATTACHED='processed_from=$(redis_processed)' CS_ON_STOPPING='processed_to=$(redis_processed)' cs_attach_window busy 3
wait "$client" || fail "the client failed"
b=$CS_TMP/busy.json
# Redis's own count over about the window (less the INFO that read it),
# and the client's commands against the probes' live window: those sent
# and answered inside it, and those of every exchange that overlapped it
# widened by 100 ms each side (the run's stamps are taken inside the
# probes' life: its start after the last program attached and the first
# listener walk, its end before the detach; 6 ms of pipelines beyond them
# were seen here, at 2 000 exchanges a second).
processed=$((processed_to - processed_from - 1))
read -r within overlapping < <(awk -v from="$WINDOW_FROM_NS" -v to="$WINDOW_TO_NS" -v edge=100000000 '
  $2 >= from && $3 <= to { within += $1 }
  $3 >= from - edge && $2 <= to + edge { overlapping += $1 }
  END { print within + 0, overlapping + 0 }' "$CS_TMP/busy-client.log")
note "the client's commands in the window: $within (overlapping it: $overlapping); Redis processed about $processed; connscope: $(json_get "$b" 'j["requests"]') requests, pipelined $(json_get "$b" 'j["pipelined"]'), $(json_get "$b" 'j["connections_adopted"]') connections adopted, $(json_get "$b" 'j["requests_in_flight_at_attach"]') exchanges in flight at the attach, multiplexed $(json_get "$b" 'j["multiplexed"]')"
assert_cmp "$(json_get "$b" 'j["connections_adopted"]')" == 4 "the clients' connections adopted"
assert_cmp "$(json_get "$b" 'j["connections_multiplexed"]')" == 0 "connections whose commands could not be counted"
# (Each connection's pipeline in flight at the attach is left out: adopted at its end.)
assert_cmp "$(json_get "$b" 'j["requests"]')" '>=' "$(python3 -c "print(0.95 * $within)")" \
  "requests against the client's commands in the window (95 %)"
# (redis-cli's two INFO commands, which read Redis's count, are requests too.)
assert_cmp "$(json_get "$b" 'j["requests"]')" '<=' "$((overlapping + 2))" \
  "requests: no more than the client's that overlapped the window, and the two INFO"
assert_cmp "$(json_get "$b" 'j["events"]["lost"]')" == 0 "events lost"
