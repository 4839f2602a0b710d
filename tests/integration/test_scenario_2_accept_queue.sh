#!/usr/bin/env bash
# Scenario 2: a slow accept thread (2 ms before each accept) and clients
# that open a new connection per request. Their requests wait in the accept
# queue: that is the tail's top cause, and connscope's p99 agrees with the
# clients' (whose latency includes the connect). The acceptor is the
# bottleneck, not a connection limit.
# integration: exclusive
# Runs alone: connscope's p99 is compared with the client's, whose own
# wake-ups another test's load moves by milliseconds, more than the
# tolerance.
# integration: plain build
# (timed alone once; the sanitized build replays what it recorded:
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

cs_start_server --accept acceptor --workers 2 --accept-delay-us 2000
cs_profile s2 "$CS_LOAD" --busy-poll --port "$SERVER_PORT" --connections 16 --no-keepalive --duration 5 \
  --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/s2.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, causes $(json_get "$r" '[(c["cause"], c["share"]) for c in j["tail"]["causes"][:3]]'), flagged: '$(flagged "$r")'"

[[ $(top_cause "$r") == accept_queue ]] || fail "top tail cause is $(top_cause "$r"), expected accept_queue"
echo "ok: top cause accept_queue"
[[ $(json_get "$r" 'j["conditions"]["accept_contention"]["flagged"]') == True ]] || fail "accept_contention not flagged"
echo "ok: accept_contention flagged"
# The acceptor pauses on its own schedule, not for closes: a bottleneck, not a connection limit.
[[ $(json_get "$r" 'j["conditions"]["accept_contention"]["acceptor_bottleneck"]') == True ]] \
  || fail "acceptor_bottleneck not flagged"
[[ $(json_get "$r" 'j["conditions"]["connection_limit"]["flagged"]') == False ]] \
  || fail "connection_limit flagged for an acceptor that pauses before each accept: $(json_get "$r" 'j["conditions"]["connection_limit"]')"
echo "ok: acceptor_bottleneck, not connection_limit ($(json_get "$r" 'j["conditions"]["connection_limit"]["wait_share"]') of the queued wait ended by a close)"
assert_p99_agrees "$r" "$CS_TMP/client.json"
