#!/usr/bin/env bash
# Debian's Tomcat 10 at its connection limit: maxConnections="4",
# keepAliveTimeout="300", and 12 keep-alive clients that pause 400 ms
# between requests. Tomcat's acceptor waits on its LimitLatch (off-CPU)
# while 4 connections are open; the others wait in the accept queue until
# the poller closes an idle one. connscope must say connection_limit at
# 4 open connections, not that the acceptor is a bottleneck, and its p99
# must agree with the clients'.
# integration: exclusive
# integration: plain build
# Runs alone: a JVM starting beside other tests' load takes seconds more,
# and connscope's p99 is compared with the client's.
source "$(dirname "$0")/lib.sh"

limit=4
cs_start_tomcat "maxConnections=\"$limit\" keepAliveTimeout=\"300\" maxThreads=\"4\" acceptCount=\"100\""
port=$TOMCAT_PORT
# (Tomcat binds its port before it deploys: on a busy machine the deployment took 10 s)
curl -sf --max-time 30 "http://127.0.0.1:$port/" >/dev/null || fail "tomcat does not answer"
# The warm-up's connection holds one of Tomcat's slots until Tomcat closes
# its side (it counts its latch down just before), and connscope, attached
# after, would not count it open: wait until no server-side socket on the
# port is ESTABLISHED or CLOSE-WAIT (on a busy machine that takes Tomcat's
# poller more than the half second a sleep gave it).
warm_up_open() { ss -Htn state established state close-wait "( sport = :$port )"; }
for _ in $(seq 200); do [[ -z $(warm_up_open) ]] && break; sleep 0.05; done
[[ -z $(warm_up_open) ]] || fail "Tomcat kept the warm-up connection open for 10 s: $(warm_up_open)"

cs_profile tomcat "$CS_LOAD" --busy-poll --port "$port" --connections 12 --gap-ms 400 --duration 5 \
  --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/tomcat.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, client p99 from send $(json_get "$CS_TMP/client.json" 'j["from_send_us"]["p99"]') us, from connect $(json_get "$CS_TMP/client.json" 'j["service_us"]["p99"]') us"
note "flagged: '$(flagged "$r")'; connection_limit $(json_get "$r" 'j["conditions"]["connection_limit"]')"

[[ $(json_get "$r" 'j["conditions"]["connection_limit"]["flagged"]') == True ]] || fail "connection_limit not flagged"
echo "ok: connection_limit flagged"
[[ $(json_get "$r" 'j["conditions"]["accept_contention"]["acceptor_bottleneck"]') == False ]] \
  || fail "acceptor_bottleneck flagged: Tomcat's acceptor waits on its latch, it is not busy"
grep -q '"code":"accept_thread_bottleneck"' "$r" && fail "the acceptor was called the bottleneck"
echo "ok: acceptor_bottleneck not flagged"
assert_cmp "$(json_get "$r" 'j["conditions"]["connection_limit"]["open_connections"]')" == "$limit" \
  "open connections at the plateau (maxConnections=$limit)"
assert_cmp "$(json_get "$r" 'j["conditions"]["connection_limit"]["blocked_share"]')" '>=' 0.5 \
  "the acceptor's share of its time outside accept() spent blocked"
[[ $(top_cause "$r") == accept_queue ]] || fail "top tail cause is $(top_cause "$r"), expected accept_queue"
echo "ok: top cause accept_queue"
assert_p99_agrees "$r" "$CS_TMP/client.json"
"$CS_BIN" report "$CS_TMP/tomcat.cstrace" >"$CS_TMP/tomcat.txt" || fail "text report failed"
grep -q 'stopped accepting at its connection limit' "$CS_TMP/tomcat.txt" || fail "the text report does not say so"
sed -n '/^conditions/,$p' "$CS_TMP/tomcat.txt"
