#!/usr/bin/env bash
# Debian's nginx serving TLS 1.2 and 1.3 with a certificate made here. A
# TLS handshake is bytes in, then bytes out, as a request is: connscope
# must tell the handshake's exchanges from the requests by the records the
# client sent, count them as connection set-up (tls_handshake), and count
# only the requests.
# 1. ab over https, no keep-alive, TLS 1.2 then 1.3: connscope's requests
#    equal ab's, one request a connection, non_persistent flagged with the
#    TLS handshake in its set-up; the clients' close_notify alerts after
#    nginx's close are no keep-alive race.
# 2. A client resuming its TLS 1.2 session on every connection after the
#    first: the abbreviated handshakes are counted as resumed.
# 3. wrk over https with keep-alive: connscope's requests and p99 agree
#    with wrk's.
# integration: exclusive
# Runs alone: connscope's p99 is compared with wrk's.
source "$(dirname "$0")/lib.sh"

cs_start_nginx 60s 512 ssl
url=https://127.0.0.1:$NGINX_PORT/
ab -q -n 1 "$url" >"$CS_TMP/ab-warm.log" 2>&1 || { cat "$CS_TMP/ab-warm.log"; fail "nginx does not answer over TLS"; }

# ab_profile NAME PROTOCOL: 1000 requests on as many connections, 10 at a time.
ab_profile() {
  cs_profile "$1" ab -q -f "$2" -n 1000 -c 10 "$url" >"$CS_TMP/$1-ab.log"
  r=$CS_TMP/$1.json
  local done failed
  done=$(awk '/^Complete requests:/ { print $3 }' "$CS_TMP/$1-ab.log")
  failed=$(awk '/^Failed requests:/ { print $3 }' "$CS_TMP/$1-ab.log")
  note "$2: ab $(grep 'SSL/TLS Protocol' "$CS_TMP/$1-ab.log"), $done complete, $failed failed; connscope $(json_get "$r" 'j["requests"]') requests, tls $(json_get "$r" 'j["tls"]')"
  note "$2: non_persistent $(json_get "$r" 'j["conditions"]["non_persistent"]')"
  assert_cmp "$failed" '==' 0 "ab's failed requests ($2)"
  assert_cmp "$(json_get "$r" 'j["requests"]')" '==' "$done" "connscope's requests vs ab's ($2)"
  assert_cmp "$(json_get "$r" 'j["conditions"]["non_persistent"]["requests_per_connection"]')" '==' 1 \
    "requests per connection ($2)"
  [[ $(json_get "$r" 'j["conditions"]["non_persistent"]["flagged"]') == True ]] || fail "non_persistent not flagged ($2)"
  # Every request's connection made a handshake first: at least as many as requests.
  assert_cmp "$(json_get "$r" 'j["tls"]["handshakes"]')" '==' "$done" "TLS handshakes before a request ($2)"
  assert_cmp "$(json_get "$r" 'j["tls"]["connections"]')" '>=' "$done" "TLS connections ($2)"
  assert_cmp "$(json_get "$r" 'j["tls"]["not_told"]')" '==' 0 "TLS connections whose records were lost ($2)"
  # Each handshake took at least the ClientHello's exchange; the set-up includes it.
  assert_cmp "$(json_get "$r" 'j["tls"]["handshake_exchanges"]')" '>=' "$done" "handshake exchanges ($2)"
  assert_cmp "$(json_get "$r" 'j["conditions"]["non_persistent"]["setup_tls_us"]')" '>' 0 "TLS in the set-up ($2)"
  assert_cmp "$(json_get "$r" 'j["conditions"]["non_persistent"]["setup_cost_us"]')" '>=' \
    "$(json_get "$r" 'j["conditions"]["non_persistent"]["setup_tls_us"]')" "set-up cost includes TLS ($2)"
  [[ $(json_get "$r" 'j["conditions"]["idle_timeout"]["flagged"]') == False ]] \
    || fail "idle_timeout flagged: close_notify resets taken for the keep-alive race ($2)"
  assert_cmp "$(json_get "$r" 'j["multiplexed"]["connections"]')" '==' 0 "multiplexed connections ($2)"
}

ab_profile ab12 TLS1.2
assert_cmp "$(json_get "$r" 'j["tls"]["tls12"]')" '>=' 1000 "connections told TLS 1.2 (TLS1.2)"
ab_profile ab13 TLS1.3
assert_cmp "$(json_get "$r" 'j["tls"]["tls13"]')" '>=' 1000 "connections told TLS 1.3 (TLS1.3)"
"$CS_BIN" report "$CS_TMP/ab13.cstrace" | sed -n '/^requests/,/^latency/p;/non_persistent/,/->/p'

# 2. Twenty connections, two requests each, the last nineteen resuming the first's session.
cat >"$CS_TMP/resume.py" <<'PY'
import socket, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
ctx.maximum_version = ssl.TLSVersion.TLSv1_2
session, resumed = None, 0
for _ in range(20):
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10), session=session) as s:
        for _ in range(2):
            s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert s.recv(4096).startswith(b"HTTP/1.1 200"), "no answer"
        resumed += s.session_reused
        session = s.session
print(resumed)
PY
CS_OUT=$CS_TMP/resumed.txt
cs_profile resume sh -c "timeout 60 '$CS_PYTHON' '$CS_TMP/resume.py' $NGINX_PORT >'$CS_OUT'"
r=$CS_TMP/resume.json
note "resumption: the client resumed $(cat "$CS_OUT") session(s); connscope: tls $(json_get "$r" 'j["tls"]'), $(json_get "$r" 'j["requests"]') requests"
assert_cmp "$(json_get "$r" 'j["tls"]["resumed"]')" '==' "$(cat "$CS_OUT")" "resumed TLS 1.2 handshakes vs the client's"
assert_cmp "$(json_get "$r" 'j["requests"]')" '==' 40 "requests (20 connections, 2 each)"
assert_cmp "$(json_get "$r" 'j["connections"]')" '==' 20 "connections that carried requests"

# 3. wrk: 10 keep-alive connections for 3 s, each pausing 2 ms after an
# answer. wrk times a request from its write to its reading of the answer
# in its event loop: flat out, on two busy CPUs, its thread's own waits for
# a CPU (milliseconds) are most of its p99, and no server sees them. The
# pause leaves the CPUs time to serve both sides, and wrk runs at a
# real-time priority (chrt), woken as soon as its answer is there.
echo 'function delay() return 2 end' >"$CS_TMP/pause.lua"
cs_profile wrk chrt -f 10 wrk -t1 -c10 -d3s --latency -s "$CS_TMP/pause.lua" "$url" >"$CS_TMP/wrk.log"
r=$CS_TMP/wrk.json
# wrk's "99%   1.23ms" in microseconds; its request count.
wrk_p99=$(awk '$1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
  print v * (u == "us" ? 1 : u == "ms" ? 1000 : 1000000) }' "$CS_TMP/wrk.log")
wrk_requests=$(awk '/requests in/ { print $1 }' "$CS_TMP/wrk.log")
note "wrk: $wrk_requests requests, p99 $wrk_p99 us; connscope: $(json_get "$r" 'j["requests"]') requests, p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, tls $(json_get "$r" 'j["tls"]')"
grep -q 'Socket errors' "$CS_TMP/wrk.log" && { cat "$CS_TMP/wrk.log"; fail "wrk saw socket errors"; }
# wrk stops with up to one request in flight on each connection: answered, connscope counts it.
assert_cmp "$(json_get "$r" 'j["requests"]')" '>=' "$wrk_requests" "connscope's requests vs wrk's"
assert_cmp "$(json_get "$r" 'j["requests"]')" '<=' "$((wrk_requests + 10))" "connscope's requests vs wrk's and those in flight"
# nginx ends a connection after 1000 requests (keepalive_requests): wrk connects again.
assert_cmp "$(json_get "$r" 'j["connections"]')" '>=' 10 "connections that carried requests"
assert_cmp "$(json_get "$r" 'j["tls"]["handshakes"]')" '==' "$(json_get "$r" 'j["connections"]')" \
  "TLS handshakes (one per connection)"
assert_cmp "$(json_get "$r" 'j["tls"]["not_told"]')" '==' 0 "TLS connections whose records were lost (wrk)"
read -r low high < <(python3 -c "t = lambda x: max(0.1 * x, 1000.0)
print($wrk_p99 - t($wrk_p99), $wrk_p99 + t($wrk_p99))")
server_p99=$(json_get "$r" 'j["latency_us"]["p99"]')
assert_cmp "$server_p99" '>=' "$low" "p99 agreement: connscope $server_p99 us vs wrk $wrk_p99 us"
assert_cmp "$server_p99" '<=' "$high" "p99 agreement: connscope $server_p99 us vs wrk $wrk_p99 us"
