#!/usr/bin/env bash
# Attaching to nginx serving TLS to keep-alive clients already running:
# their records re-synchronise at the first idle moment (the next bytes a
# record header), so each connection is adopted and its requests timed
# whole, said in the report (adopted.tls_resynchronised); none is taken
# for a handshake, since the handshakes were over before the attach.
# integration: exclusive
# Runs alone: the requests of the window are counted against the client's.
# integration: plain build
source "$(dirname "$0")/lib.sh"

CONNS=8
cs_start_nginx 65s 1024 ssl
port=$NGINX_PORT

cs_bg "$CS_LOAD" --tls --port "$port" --connections "$CONNS" --rate 1000 --duration 8 \
  --json "$CS_TMP/client.json" --log "$CS_TMP/client.log" --quiet
load_pid=$BG_PID
sleep 2
cs_attach_window report 4
cs_stop_load "$load_pid"

r=$CS_TMP/report.json
read -r client_count _ < <(cs_client_window "$CS_TMP/client.log")
note "connscope: $(json_get "$r" 'j["requests"]') requests, adopted $(json_get "$r" 'j["connections_adopted"]') ($(json_get "$r" 'j["adopted"]')), in flight at the attach $(json_get "$r" 'j["requests_in_flight_at_attach"]'), tls $(json_get "$r" '(j["tls"]["connections"], j["tls"]["handshake_exchanges"])'); the client in the window: $client_count"
assert_cmp "$(json_get "$r" 'j["connections_adopted"]')" == "$CONNS" "connections adopted"
assert_cmp "$(json_get "$r" 'j["adopted"]["tls_resynchronised"]')" == "$CONNS" "of them re-synchronised at a TLS record header"
assert_cmp "$(json_get "$r" 'j["adopted"]["not_a_message_start"]')" == 0 "connections whose bytes at the idle moment started no message"
assert_cmp "$(json_get "$r" 'j["tls"]["handshake_exchanges"]')" == 0 "exchanges taken for handshakes (all were over before the attach)"
assert_cmp "$(json_get "$r" 'j["requests"]')" '>=' "$(python3 -c "print(0.95 * $client_count)")" \
  "requests timed against the client's in the window (95 %)"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
