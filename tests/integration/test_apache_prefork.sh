#!/usr/bin/env bash
# Apache 2.4's prefork MPM with MaxRequestWorkers 2 and a mod_lua handler
# that blocks its process 40 ms: each child accepts a connection and
# serves it before it accepts again, so with both serving, six clients
# connecting in a loop wait in the listen queue. pool_saturation of kind
# accept (2 of 2 busy, MaxRequestWorkers advised), accept_queue leading,
# no acceptor bottleneck; connscope's p99 agrees with the clients'.
# Apache defers its accepts (TCP_DEFER_ACCEPT, its default AcceptFilter):
# no drop may be counted beyond the kernel's own ListenOverflows.
# integration: plain build
# (a real server's behaviour)
source "$(dirname "$0")/lib.sh"

cs_start_apache prefork "StartServers 2
MinSpareServers 2
MaxSpareServers 2
ServerLimit 2
MaxRequestWorkers 2
KeepAlive Off"
port=$SERVER_PORT
overflows_before=$(netstat_counter ListenOverflows)
CS_ATTACH_OPTS="--port $port"
cs_profile apache "$CS_LOAD" --port "$port" --connections 6 --duration 3 --no-keepalive \
  --json "$CS_TMP/client.json" --quiet
overflows=$(( $(netstat_counter ListenOverflows) - overflows_before ))
r=$CS_TMP/apache.json
"$CS_BIN" report "$CS_TMP/apache.cstrace" >"$CS_TMP/apache.txt" || fail "connscope report (text) failed"
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, client from connect $(json_get "$CS_TMP/client.json" 'j["service_us"]["p99"]') us, from send $(json_get "$CS_TMP/client.json" 'j["from_send_us"]["p99"]') us"
note "causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]')"
note "pool_saturation $(json_get "$r" 'j["conditions"]["pool_saturation"]')"
note "flagged: $(flagged "$r"); drops $(json_get "$r" '[l["drops"] for l in j["listeners"]]'), kernel ListenOverflows +$overflows"
grep -A1 -E '^  ! (pool_saturation|accept_contention|listen_overflow)|^  ! :' "$CS_TMP/apache.txt" | sed 's/^/   | /'

[[ $(top_cause "$r") == accept_queue ]] || fail "top tail cause is $(top_cause "$r"), expected accept_queue"
echo "ok: top cause accept_queue"
flags=$(flagged "$r")
[[ " $flags " == *" pool_saturation "* ]] || fail "pool_saturation not flagged (flagged: $flags)"
[[ $(json_get "$r" 'j["conditions"]["pool_saturation"]["kind"]') == accept ]] || fail "pool kind is not accept"
[[ $(json_get "$r" 'j["conditions"]["pool_saturation"]["server"]') == apache ]] || fail "the server is not told apache"
assert_cmp "$(json_get "$r" 'j["conditions"]["pool_saturation"]["workers"]')" '==' 2 "workers seen"
assert_cmp "$(json_get "$r" 'j["conditions"]["pool_saturation"]["busy_workers"]')" '==' 2 "workers busy"
[[ $(json_get "$r" 'j["conditions"]["accept_contention"]["acceptor_bottleneck"]') == False ]] \
  || fail "acceptor_bottleneck flagged for workers that serve what they accept"
grep -q 'MaxRequestWorkers' "$CS_TMP/apache.txt" || fail "the advice does not name MaxRequestWorkers"
echo "ok: pool_saturation (accept, 2 of 2 busy, MaxRequestWorkers), no acceptor bottleneck"
assert_cmp "$(json_get "$r" 'sum(l["drops"] for l in j["listeners"])')" '<=' "$overflows" \
  "drops counted against the kernel's ListenOverflows"
assert_p99_agrees "$r" "$CS_TMP/client.json"
