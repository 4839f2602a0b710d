#!/usr/bin/env bash
# Debian's Tomcat 10 ending keep-alive connections itself, in two ways.
# maxKeepAliveRequests="1": Tomcat closes every connection after its first
# response, so each request pays a handshake and an accept: non_persistent,
# 1 request per connection. keepAliveTimeout: Tomcat's poller closes
# connections idle longer than the timeout, but only when it looks, on its
# own schedule (its select() times out after selectorTimeout, and it checks
# at most every socket.timeoutInterval while busy: 1 s each by default), so
# a connection is closed between the timeout and a second later. Clients
# pausing longer than that find theirs closed: idle_timeout, with the
# timeout inferred where Tomcat's closes begin, never below the configured
# one.
# integration: exclusive
# integration: plain build
# Runs alone: a JVM starting beside other tests' load takes seconds more,
# and connscope's p99 is compared with the client's.
source "$(dirname "$0")/lib.sh"

# 1. maxKeepAliveRequests="1", in a JVM with its attach mechanism off and
# -Xrs: it has no attach listener and does not catch SIGQUIT, so
# connscope must not signal it for its thread names (the signal would end
# it); it says so in one line and reports the rest.
JAVA_OPTS="-Xrs -XX:+DisableAttachMechanism" cs_start_tomcat 'maxKeepAliveRequests="1" maxThreads="4"'
curl -sf --max-time 30 "http://127.0.0.1:$TOMCAT_PORT/" >/dev/null || fail "tomcat does not answer"
cs_profile close "$CS_LOAD" --busy-poll --port "$TOMCAT_PORT" --connections 4 --rate 200 --duration 3 \
  --json "$CS_TMP/client_close.json" --quiet
r=$CS_TMP/close.json
note "maxKeepAliveRequests=1: $(json_get "$r" 'j["conditions"]["non_persistent"]'), server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us"
[[ $(json_get "$r" 'j["conditions"]["non_persistent"]["flagged"]') == True ]] || fail "non_persistent not flagged"
assert_cmp "$(json_get "$r" 'j["conditions"]["non_persistent"]["requests_per_connection"]')" '==' 1 \
  "requests per connection (maxKeepAliveRequests=1)"
# Tomcat closes right after the response: no idle timeout. A close that a
# busy machine holds 5 ms or more off a CPU (a JVM safepoint, a lock: not
# the run queue, which is taken out) reads as an idle close: 1 of 592 at
# a load average of 10.
[[ $(json_get "$r" 'j["conditions"]["idle_timeout"]["flagged"]') == False ]] || fail "idle_timeout flagged"
assert_cmp "$(json_get "$r" 'j["conditions"]["idle_timeout"]["server_idle_closes"]')" '<=' \
  "$(json_get "$r" 'j["lifecycle"]["closed_by_server"] // 100')" "idle closes (at most 1 % of the server's closes)"
assert_p99_agrees "$r" "$CS_TMP/client_close.json"
grep 'thread names' "$CS_TMP/close.err"
grep -q "pid $SERVER_PID did not give its thread names (it has no attach listener and does not catch SIGQUIT" \
  "$CS_TMP/close.err" \
  || fail "no line saying why the JVM gave no names"
kill -0 "$SERVER_PID" || fail "the -Xrs JVM is gone"
assert_cmp "$(json_get "$r" 'sum(1 for t in j["threads"] if t["java_name"])')" '==' 0 "threads named by a JVM not asked"
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true

# 2. keepAliveTimeout: 48 connections take turns at 30 requests/s, so each
# is idle 1.6 s between its requests, longer than the timeout plus the
# poller's second, and the poller, woken every 33 ms, checks once a second
# at a time unrelated to each connection's last request. (Clients in
# lockstep would all be closed when the poller's select() times out, a
# second after their common last request: connscope then infers the
# second they all saw.)
timeout_ms=300
cs_start_tomcat "keepAliveTimeout=\"$timeout_ms\" maxThreads=\"4\""
curl -sf --max-time 30 "http://127.0.0.1:$TOMCAT_PORT/" >/dev/null || fail "tomcat does not answer"
cs_profile idle "$CS_LOAD" --busy-poll --port "$TOMCAT_PORT" --connections 48 --rate 30 --duration 5 \
  --json "$CS_TMP/client_idle.json" --quiet
r=$CS_TMP/idle.json
note "keepAliveTimeout=$timeout_ms: $(json_get "$r" 'j["conditions"]["idle_timeout"]'), server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us"
[[ $(json_get "$r" 'j["conditions"]["idle_timeout"]["flagged"]') == True ]] || fail "idle_timeout not flagged"
closes=$(json_get "$CS_TMP/client_idle.json" 'j["idle_closes"]')
assert_cmp "$(json_get "$r" 'j["conditions"]["idle_timeout"]["server_idle_closes"]')" '>=' "$closes" \
  "server idle closes, against the closes the clients saw"
inferred=$(json_get "$r" 'j["conditions"]["idle_timeout"]["inferred_timeout_ms"]')
assert_cmp "$inferred" '>=' "$timeout_ms" "inferred timeout (ms): Tomcat never closes before keepAliveTimeout"
# About 100 closes spread over Tomcat's second: their lowest 2 % lie
# within its first 150 ms but for a chance of 1 in 10 000.
assert_cmp "$inferred" '<=' "$((timeout_ms + 150))" "inferred timeout (ms): the configured one, where the closes begin"
[[ $(json_get "$r" 'j["conditions"]["non_persistent"]["flagged"]') == False ]] \
  || fail "non_persistent flagged for connections Tomcat closed idle"
assert_p99_agrees "$r" "$CS_TMP/client_idle.json"
