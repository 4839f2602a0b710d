#!/usr/bin/env bash
# Scenario 7: two CPU hogs at the server's priority, one per core, while
# each request costs the server 1 ms of CPU (/spin/1). The server's threads
# share the cores with the hogs: they are runnable but wait for a CPU, in
# the middle of their handlers too. run_queue is the tail's top cause and
# cpu_saturation is flagged. (The client is delayed too, so only the cause
# is asserted.)
# integration: exclusive
# Runs alone: connscope's p99 is compared with the client's, whose own
# wake-ups another test's load moves by milliseconds, more than the
# tolerance.
# integration: plain build
# (timed alone once; the sanitized build replays what it recorded:
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

cs_start_server --workers 2
for _ in 1 2; do
  cs_bg timeout 30 sh -c 'while :; do :; done'
done
cs_profile s7 "$CS_LOAD" --port "$SERVER_PORT" --connections 8 --rate 300 --duration 6 --path /spin/1 \
  --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/s7.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, causes $(json_get "$r" '[(c["cause"], c["share"]) for c in j["tail"]["causes"][:3]]'), $(json_get "$r" 'j["conditions"]["cpu_saturation"]')"

[[ $(top_cause "$r") == run_queue ]] || fail "top tail cause is $(top_cause "$r"), expected run_queue"
echo "ok: top cause run_queue"
[[ $(json_get "$r" 'j["conditions"]["cpu_saturation"]["flagged"]') == True ]] || fail "cpu_saturation not flagged"
echo "ok: cpu_saturation flagged"
