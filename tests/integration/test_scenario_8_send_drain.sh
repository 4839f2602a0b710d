#!/usr/bin/env bash
# Scenario 8 (beyond the seven): the server writes each response's header
# and body in two calls with Nagle's algorithm on (--nagle, /split/100).
# The body waits in the send queue for the client's delayed ACK of the
# header (about 40 ms), after the server's last send has returned: that is
# send_drain, measured to the moment the last byte leaves, not to the last
# send call, and connscope's p99 agrees with the client's.
# integration: exclusive
# Runs alone: connscope's p99 is compared with the client's, whose own
# wake-ups another test's load moves by milliseconds, more than the
# tolerance.
# integration: plain build
# (timed alone once; the sanitized build replays what it recorded:
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

cs_start_server --workers 2 --nagle
cs_profile s8 "$CS_LOAD" --busy-poll --port "$SERVER_PORT" --connections 4 --duration 3 \
  --path /split/100 --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/s8.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, causes $(json_get "$r" '[(c["cause"], c["share"], c["evidence"]) for c in j["tail"]["causes"][:1]]')"

[[ $(top_cause "$r") == send_drain ]] || fail "top tail cause is $(top_cause "$r"), expected send_drain"
echo "ok: top cause send_drain"
json_get "$r" 'j["tail"]["causes"][0]["evidence"]' | grep -q "TCP_NODELAY" || fail "no TCP_NODELAY advice in the evidence"
assert_cmp "$(json_get "$r" 'j["latency_us"]["p50"]')" '>=' 20000 "p50 (us) holds the delayed-ACK wait"
assert_p99_agrees "$r" "$CS_TMP/client.json"
