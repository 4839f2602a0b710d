#!/usr/bin/env bash
# Scenario 7: six CPU hogs at the server's priority, three per core, while
# each request costs the server 1 ms of CPU (/spin/1). The server's threads
# share the cores with the hogs: they are runnable but wait for a CPU, in
# the middle of their handlers too. run_queue is the tail's top cause,
# cpu_saturation is flagged, and connscope's count of the server's waits
# for a CPU is the kernel's own (schedstat). (The client is delayed too, so
# its p99 is not compared.)
#
# Why three hogs per core: at equal priority a thread gets at least its
# fair share of its core, and the scheduler may let a thread that mostly
# sleeps run its whole 1 ms at once; with one hog per core the tail's waits
# can then be shorter than its handlers, and handler the top cause, rightly.
# With three, a request's share of its core is a quarter once
# its credit is spent, so its waits are a multiple of its 1 ms and the tail
# is theirs on any scheduler. At 150 requests/s the workers are busy a
# third of their share, so requests seldom queue behind each other
# (event_loop).
# integration: exclusive
# Runs alone: connscope's p99 is compared with the client's, whose own
# wake-ups another test's load moves by milliseconds, more than the
# tolerance.
# integration: plain build
# (timed alone once; the sanitized build replays what it recorded:
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

cs_start_server --workers 2
for _ in 1 2 3 4 5 6; do
  cs_bg timeout 30 sh -c 'while :; do :; done'
done
CS_ON_ATTACHED='runq_snapshot "$SERVER_PID" "$CS_TMP/runq.before"; run_start_ns=$(date +%s%N)'
CS_ON_STOPPING='runq_snapshot "$SERVER_PID" "$CS_TMP/runq.after"; run_end_ns=$(date +%s%N)'
cs_profile s7 "$CS_LOAD" --port "$SERVER_PORT" --connections 8 --rate 150 --duration 6 --path /spin/1 \
  --json "$CS_TMP/client.json" --quiet
unset CS_ON_ATTACHED CS_ON_STOPPING
run_s=$(python3 -c "print(($run_end_ns - $run_start_ns) / 1e9)")
read -r kernel_runq_us _ _ < <(runq_delta "$CS_TMP/runq.before" "$CS_TMP/runq.after" "$run_s")
r=$CS_TMP/s7.json
note "the server's threads waited $kernel_runq_us us for a CPU (schedstat, over connscope's window)"
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, causes $(json_get "$r" '[(c["cause"], c["share"]) for c in j["tail"]["causes"][:3]]'), $(json_get "$r" 'j["conditions"]["cpu_saturation"]')"

[[ $(top_cause "$r") == run_queue ]] || fail "top tail cause is $(top_cause "$r"), expected run_queue"
echo "ok: top cause run_queue"
[[ $(json_get "$r" 'j["conditions"]["cpu_saturation"]["flagged"]') == True ]] || fail "cpu_saturation not flagged"
echo "ok: cpu_saturation flagged"
# connscope reads the same kernel counter at its own instants, a few
# milliseconds inside the test's snapshots.
cs_runq_us=$(json_get "$r" 'j["conditions"]["cpu_saturation"]["runq_total_us"]')
assert_cmp "$cs_runq_us" '>=' "$(python3 -c "print(0.95 * $kernel_runq_us)")" "waits for a CPU: connscope's total near the kernel's"
assert_cmp "$cs_runq_us" '<=' "$(python3 -c "print(1.01 * $kernel_runq_us)")" "waits for a CPU: connscope's total not above the kernel's"
