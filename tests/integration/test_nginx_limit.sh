#!/usr/bin/env bash
# Debian's nginx with too few worker_connections (8, one of them the
# listener's) for 12 keep-alive clients that pause 400 ms between requests
# (keepalive_timeout 300ms). What nginx does, as measured here: it does not
# stop accepting; it accepts each connection and, out of connections, closes
# idle keep-alive ones to make room ("worker_connections are not enough,
# reusing connections" in its log). So connscope must not call it a
# connection limit: every connection the clients opened was accepted, and
# its p99 agrees with the clients'.
# integration: exclusive
# Runs alone: connscope's p99 is compared with the client's.
# integration: plain build
# (timed alone once; the sanitized build replays what it recorded:
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

cs_start_nginx 300ms 8
port=$NGINX_PORT ng=$NGINX_DIR

cs_profile nginx "$CS_LOAD" --busy-poll --port "$port" --connections 12 --gap-ms 400 --duration 3 \
  --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/nginx.json
c=$CS_TMP/client.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, client p99 from send $(json_get "$c" 'j["from_send_us"]["p99"]') us, from connect $(json_get "$c" 'j["service_us"]["p99"]') us"
note "flagged: '$(flagged "$r")'; connection_limit $(json_get "$r" 'j["conditions"]["connection_limit"]')"
note "nginx: $(grep -c 'reusing connections' "$ng/error.log" || true) 'reusing connections' warning(s); client: $(json_get "$c" 'j["reconnects"]') reconnects, errors $(json_get "$c" 'j["errors"]')"

grep -q 'worker_connections are not enough, reusing connections' "$ng/error.log" \
  || fail "nginx never ran out of worker_connections: the test does not test the limit"
echo "ok: nginx ran out of worker_connections and reused idle connections"
# Each client connection (12 at first, one per reconnect) was accepted.
assert_cmp "$(json_get "$r" 'j["listeners"][0]["accepts"]')" == \
  "$(json_get "$c" '12 + j["reconnects"]')" "nginx's accepts vs the client's connects"
[[ $(json_get "$r" 'j["conditions"]["connection_limit"]["flagged"]') == False ]] \
  || fail "connection_limit flagged, but nginx kept accepting"
echo "ok: connection_limit not flagged (nginx makes room instead of waiting)"
assert_cmp "$(json_get "$r" 'j["lifecycle"]["closed_by_server"]')" '>' 0 "server closes seen"
assert_p99_agrees "$r" "$c"
"$CS_BIN" report "$CS_TMP/nginx.cstrace" | sed -n '/^conditions/,$p'
