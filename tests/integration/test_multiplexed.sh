#!/usr/bin/env bash
# Connections whose requests overlap carry several requests in one
# exchange (bytes in, then bytes out): connscope must say so and keep them
# out of the per-request figures, not count them as a few slow requests.
# 1. h2load speaks HTTP/2 (prior knowledge, 10 streams at a time) to
#    Debian's nginx: its connections begin with HTTP/2's preface; their
#    accepts and closes are still followed.
# 2. h2load over TLS: whether nginx chose HTTP/2 is in its encrypted
#    flight (TLS 1.3). connscope reads the clients' ALPN offer (h2) from
#    their ClientHellos and says it could not be told. Over TLS 1.2
#    nginx's ServerHello names h2 in the clear: the connections are
#    multiplexed, their streams no requests.
# 3. A client pipelines HTTP/1.1 on csserver's pool (Tomcat-shaped): its
#    second request arrives while the first (/block/200) is served and is
#    read after the first answer began. Beside it, a client that waits for
#    each answer: its requests are requests.
# 4. A client writes two or three requests at once on each connection: the
#    server reads them in one call and answers them in one exchange, no
#    timing shows it. The probe finds the second request behind the first
#    in the read's buffer. A request with a body, written at once, is not
#    taken for two.
source "$(dirname "$0")/lib.sh"

# 1. HTTP/2.
cs_start_nginx 60s 512 http2
cs_profile h2 h2load -n 400 -c 4 -m 10 "http://127.0.0.1:$NGINX_PORT/" >"$CS_TMP/h2load.log"
r=$CS_TMP/h2.json
note "h2load: $(grep -E '^requests:' "$CS_TMP/h2load.log"); connscope: requests $(json_get "$r" 'j["requests"]'), multiplexed $(json_get "$r" 'j["multiplexed"]')"
grep -q '400 succeeded' "$CS_TMP/h2load.log" || { cat "$CS_TMP/h2load.log"; fail "h2load's requests did not all succeed"; }
assert_cmp "$(json_get "$r" 'j["connections_multiplexed"]')" '==' 4 "multiplexed connections (h2load's 4)"
assert_cmp "$(json_get "$r" 'j["multiplexed"]["h2_preface"]')" '==' 4 "told by HTTP/2's preface"
assert_cmp "$(json_get "$r" 'j["requests"]')" '==' 0 "requests: none of h2load's"
assert_cmp "$(json_get "$r" 'j["latency_us"]["count"]')" '==' 0 "requests in the latency"
assert_cmp "$(json_get "$r" 'j["listeners"][0]["accepts"]')" '==' 4 "accepts: h2load's connections still followed"
assert_cmp "$(json_get "$r" 'j["lifecycle"]["closed_by_client"]')" '==' 4 "their closes"
"$CS_BIN" report "$CS_TMP/h2.cstrace" >"$CS_TMP/h2.txt"
head -n 6 "$CS_TMP/h2.txt"
head -n 6 "$CS_TMP/h2.txt" | grep -q '^multiplexed: 4 connection(s) whose requests overlap (4 HTTP/2' \
  || fail "the report's first lines do not say the connections were multiplexed"
echo "ok: the report's first lines say so"

# 2. HTTP/2 over TLS.
kill "$NGINX_MASTER"
wait "$NGINX_MASTER" 2>/dev/null || true
cs_start_nginx 60s 512 "ssl http2"
cs_profile h2tls h2load -n 400 -c 4 -m 10 "https://127.0.0.1:$NGINX_PORT/" >"$CS_TMP/h2load-tls.log"
r=$CS_TMP/h2tls.json
note "h2load over TLS: $(grep -E '^requests:' "$CS_TMP/h2load-tls.log"); connscope: tls $(json_get "$r" 'j["tls"]')"
grep -q '400 succeeded' "$CS_TMP/h2load-tls.log" || { cat "$CS_TMP/h2load-tls.log"; fail "h2load's requests over TLS did not all succeed"; }
assert_cmp "$(json_get "$r" 'j["tls"]["connections"]')" '==' 4 "TLS connections (h2load's 4)"
assert_cmp "$(json_get "$r" 'j["tls"]["alpn_h2"]')" '==' 4 "connections whose ClientHello offered h2"
"$CS_BIN" report "$CS_TMP/h2tls.cstrace" | head -n 6 | grep -q '^multiplexed over TLS: could not be told for 4 connection(s) that offered HTTP/2' \
  || fail "the report's first lines do not say HTTP/2 over TLS could not be told"
echo "ok: the report's first lines say it could not be told"
assert_cmp "$(json_get "$r" 'j["tls"]["alpn_h2_chosen"] + j["tls"]["alpn_h2_declined"]')" '==' 0 \
  "connections whose server's choice was told (TLS 1.3: encrypted)"

# 2b. HTTP/2 over TLS 1.2: nginx's ServerHello names its choice, h2, in the clear.
kill "$NGINX_MASTER"
wait "$NGINX_MASTER" 2>/dev/null || true
NGINX_TLS_PROTOCOLS=TLSv1.2 cs_start_nginx 60s 512 "ssl http2"
cs_profile h2tls12 h2load -n 400 -c 4 -m 10 "https://127.0.0.1:$NGINX_PORT/" >"$CS_TMP/h2load-tls12.log"
r=$CS_TMP/h2tls12.json
note "h2load over TLS 1.2: $(grep -E '^requests:|^TLS Protocol|^ALPN' "$CS_TMP/h2load-tls12.log" | tr '\n' ' '); connscope: requests $(json_get "$r" 'j["requests"]'), multiplexed $(json_get "$r" 'j["multiplexed"]'), tls $(json_get "$r" 'j["tls"]')"
grep -q '400 succeeded' "$CS_TMP/h2load-tls12.log" || { cat "$CS_TMP/h2load-tls12.log"; fail "h2load's requests over TLS 1.2 did not all succeed"; }
grep -q '^TLS Protocol: TLSv1.2' "$CS_TMP/h2load-tls12.log" || fail "h2load did not speak TLS 1.2"
assert_cmp "$(json_get "$r" 'j["tls"]["tls12"]')" '==' 4 "TLS 1.2 connections (h2load's 4)"
assert_cmp "$(json_get "$r" 'j["tls"]["alpn_h2_chosen"]')" '==' 4 "connections whose server chose h2"
assert_cmp "$(json_get "$r" 'j["connections_multiplexed"]')" '==' 4 "multiplexed connections"
assert_cmp "$(json_get "$r" 'j["multiplexed"]["h2_alpn"]')" '==' 4 "told by the server's ALPN choice"
assert_cmp "$(json_get "$r" 'j["requests"]')" '==' 0 "requests: none of h2load's streams"
assert_cmp "$(json_get "$r" 'j["tls"]["handshake_exchanges"]')" '==' 8 "the handshakes' exchanges (two each): set-up, not multiplexed exchanges"
"$CS_BIN" report "$CS_TMP/h2tls12.cstrace" | head -n 6 | grep -q '^multiplexed: 4 connection(s) whose requests overlap (0 HTTP/2 by its preface, 4 HTTP/2 by the TLS server.s choice' \
  || fail "the report's first lines do not say the server chose HTTP/2"
echo "ok: the report's first lines say the server chose HTTP/2"

# 3. HTTP/1.1 pipelining.
cs_start_server --workers 2 --accept pool
cat >"$CS_TMP/pipeline.py" <<'PY'
import select, socket, subprocess, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]
def server_read_all(s):
    """Until the server's side of s has nothing left to read (ss's Recv-Q 0)."""
    me = s.getsockname()[1]
    for _ in range(2500):
        out = subprocess.run(["ss", "-Htn", "state", "established", f"( sport = :{port} and dport = :{me} )"],
                             capture_output=True, text=True).stdout.split()
        if out and out[0] == "0":
            return
        time.sleep(0.002)
    raise SystemExit("the server never read the first request")
overlapped = 0
def answers(s, n):
    data = b""
    while data.count(b"HTTP/1.1 200") < n or not data.endswith(b"\n"):
        chunk = s.recv(65536)
        assert chunk, "closed early"
        data += chunk
for i in range(5):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        if mode == "burst":
            # Two or three requests in one write: one segment, one read.
            k = 2 + i % 2
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * k)
            answers(s, k)
        elif mode == "body":
            # One request whose body looks like a request: not flagged (its
            # Content-Length says what follows the header block).
            body = b"GET /x HTTP/1.1\r\n\r\n"
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            answers(s, 1)
        elif mode == "pipelined":
            # The second request goes out while the first is being served:
            # once the server has read the first (else both are read at
            # once), and before its answer came (else they do not overlap;
            # counted, for a machine that stalls the client that long).
            s.sendall(b"GET /block/200 HTTP/1.1\r\nHost: x\r\n\r\n")
            server_read_all(s)
            answered = select.select([s], [], [], 0)[0]
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            answers(s, 2)
            overlapped += not answered
        else:
            for _ in range(4):
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                answers(s, 1)
if mode == "pipelined":
    print("overlapped", overlapped)
print("done")
PY
cs_profile pipelined sh -c "'$CS_PYTHON' '$CS_TMP/pipeline.py' $SERVER_PORT pipelined >'$CS_TMP/pipelined.out' &&
  '$CS_PYTHON' '$CS_TMP/pipeline.py' $SERVER_PORT serial >'$CS_TMP/serial.out'"
r=$CS_TMP/pipelined.json
note "connscope: requests $(json_get "$r" 'j["requests"]'), multiplexed $(json_get "$r" 'j["multiplexed"]'), latency max $(json_get "$r" 'j["latency_us"]["max"]') us"
grep -qx done "$CS_TMP/pipelined.out" && grep -qx done "$CS_TMP/serial.out" || fail "a client did not finish"
# The client's count: connections whose second request went out before the first's answer came.
overlapped=$(awk '$1 == "overlapped" { print $2 }' "$CS_TMP/pipelined.out")
note "the client: $overlapped of 5 connections sent their second request before the first's answer came"
assert_cmp "$overlapped" '>=' 1 "connections the client pipelined (the others stalled 200 ms: nothing to test)"
serial=$((5 - overlapped)) # the others: two requests one after the other
assert_cmp "$(json_get "$r" 'j["connections_multiplexed"]')" '==' "$overlapped" "multiplexed connections (those pipelining)"
assert_cmp "$(json_get "$r" 'j["multiplexed"]["overlap"]')" '==' "$overlapped" "told by their overlap"
assert_cmp "$(json_get "$r" 'j["multiplexed"]["one_read"]')" '==' 0 "none read at once (each request its own write)"
assert_cmp "$(json_get "$r" 'j["requests"]')" '==' $((20 + 2 * serial)) "requests: the serial client's 20 (5 connections, 4 each)"
assert_cmp "$(json_get "$r" 'j["connections"]')" '==' $((5 + serial)) "connections that carried requests (the serial client's)"
# No /block/200 request of a pipelining connection in the per-request figures.
assert_cmp "$(json_get "$r" 'j["latency_us"]["count"]')" '==' $((20 + 2 * serial)) "requests in the latency"
"$CS_BIN" report "$CS_TMP/pipelined.cstrace" | head -n 6 |
  grep -q "^multiplexed: $overlapped connection(s) whose requests overlap (0 HTTP/2 by its preface, 0 HTTP/2 by the TLS server.s choice, $overlapped pipelined" \
  || fail "the report's first lines do not say the connections were pipelined"
echo "ok: the report's first lines say so"

# 4. Pipelined requests read at once, on csserver's event loop (its pool
#    closes a connection whose request has a body).
cs_start_server
cs_profile burst sh -c "'$CS_PYTHON' '$CS_TMP/pipeline.py' $SERVER_PORT burst >'$CS_TMP/burst.out' &&
  '$CS_PYTHON' '$CS_TMP/pipeline.py' $SERVER_PORT body >'$CS_TMP/body.out' &&
  '$CS_PYTHON' '$CS_TMP/pipeline.py' $SERVER_PORT serial >'$CS_TMP/serial.out'"
r=$CS_TMP/burst.json
note "connscope: requests $(json_get "$r" 'j["requests"]'), multiplexed $(json_get "$r" 'j["multiplexed"]')"
grep -qx done "$CS_TMP/burst.out" && grep -qx done "$CS_TMP/body.out" && grep -qx done "$CS_TMP/serial.out" ||
  fail "a client did not finish"
assert_cmp "$(json_get "$r" 'j["connections_multiplexed"]')" '==' 5 "multiplexed connections (the 5 writing requests at once)"
assert_cmp "$(json_get "$r" 'j["multiplexed"]["one_read"]')" '==' 5 "told by a read that held more than one request"
assert_cmp "$(json_get "$r" 'j["multiplexed"]["exchanges"]')" '>=' 5 "their exchanges: one each at least"
assert_cmp "$(json_get "$r" 'j["requests"]')" '==' 25 "requests: the 5 with a body and the serial client's 20"
assert_cmp "$(json_get "$r" 'j["connections"]')" '==' 10 "connections that carried requests (5 with a body, 5 serial)"
assert_cmp "$(json_get "$r" 'j["latency_us"]["count"]')" '==' 25 "requests in the latency: none of the 12 written at once"
"$CS_BIN" report "$CS_TMP/burst.cstrace" | head -n 6 | tee "$CS_TMP/burst.head"
grep -q '^multiplexed: 5 connection(s) whose requests overlap (0 HTTP/2 by its preface, 0 HTTP/2 by the TLS server.s choice, 0 pipelined or multiplexed by timing, 5 pipelined and read at once)' "$CS_TMP/burst.head" \
  || fail "the report's first lines do not say the requests were pipelined and read at once"
echo "ok: the report's first lines say so"
