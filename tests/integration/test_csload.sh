#!/usr/bin/env bash
# csload, the load generator that is the ground truth of connscope's tests.
# Checks it against servers whose behaviour is known: nginx (counts in its
# access log, over plain HTTP and HTTPS) and a small python server (fixed delays, drops, resets, idle
# closes), plus a listener whose accept queue stays full (SYN retransmits).
source "$(dirname "$0")/lib.sh"
CS_LOAD=$CS_BUILD/csload # the client under test, sanitized or not
[[ -x $CS_LOAD ]] || fail "$CS_LOAD is missing: run 'make $CS_LOAD' first"

# ---- helpers

# lib.sh's helpers start python3 for every check: call the interpreter
# itself, not a version-manager shim that costs most of a second a call.
PATH="$(dirname "$(python3 -c 'import sys; print(sys.executable)')"):$PATH"

# step TEXT: a heading with the seconds since the test started.
step() { note "$* [${SECONDS}s]"; }

# load NAME ARGS...: runs csload quietly with --json $CS_TMP/NAME.json; it must exit 0.
load() {
  local name=$1; shift
  local rc=0
  timeout 60 "$CS_LOAD" --json "$CS_TMP/$name.json" -q "$@" 2>"$CS_TMP/$name.err" || rc=$?
  [[ $rc -eq 0 ]] || { cat "$CS_TMP/$name.err" >&2; fail "csload $* exited $rc, want 0"; }
}
# j NAME EXPR: a value of that run's JSON (Python expression over j).
j() { json_get "$CS_TMP/$1.json" "$2"; }
# expect_rc WANT ARGS...: csload exits WANT; its stderr is in $CS_TMP/rc.err.
expect_rc() {
  local want=$1; shift
  local rc=0
  timeout 30 "$CS_LOAD" "$@" >"$CS_TMP/rc.out" 2>"$CS_TMP/rc.err" || rc=$?
  [[ $rc -eq $want ]] || { cat "$CS_TMP/rc.err" >&2; fail "csload $* exited $rc, want $want"; }
  echo "ok: csload $* -> exit $rc"
}
lines() { wc -l <"$1" | tr -d ' '; }
# since FILE N: the lines of FILE after its first N.
since() { tail -n "+$(($2 + 1))" "$1"; }

# ---- 1. pure code, usage, loopback only

step "self-test of the parsers and statistics"
"$CS_LOAD" --self-test

step "usage errors and non-loopback targets exit 2"
expect_rc 0 --help
grep -q -- '--no-keepalive' "$CS_TMP/rc.out" || fail "--help does not list --no-keepalive"
grep -q 'Examples' "$CS_TMP/rc.out" || fail "--help has no examples"
expect_rc 2 --port 80 --bogus
expect_rc 2 --connections 5
expect_rc 2 --port 80 --threads 4 --connections 2
expect_rc 2 --port 80 --mix /a:0.6 --mix /b:0.6
for host in 10.0.0.1 192.0.2.1 0.0.0.0 128.0.0.1 ::2 :: ::ffff:10.1.2.3 example.com; do
  expect_rc 2 --host "$host" --port 80 --requests 1
  grep -qE 'loopback|numeric' "$CS_TMP/rc.err" || fail "no clear message for $host: $(cat "$CS_TMP/rc.err")"
done

step "nothing listens: exit 1"
expect_rc 1 --port "$(cs_free_port)" --requests 5 --connections 2
grep -q 'could not connect' "$CS_TMP/rc.err" || fail "no 'could not connect' message"

# ---- servers

# The python server: /sleep/MS, /bytes/N, /chunked/N (sent in pieces),
# /drop (closes without answering), /reset (RST), /close (Connection: close).
# It logs one line per request: monotonic_ns path client_port.
cat >"$CS_TMP/server.py" <<'EOF'
import socket, struct, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, log_path = int(sys.argv[1]), sys.argv[2]
lock = threading.Lock()
log = open(log_path, "a", buffering=1)

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else the body waits on a delayed ACK (40 ms)
    def log_message(self, *a): pass
    def reply(self, body, close=False):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        with lock:
            log.write("%d %s %d\n" % (time.monotonic_ns(), self.path, self.client_address[1]))
        parts = self.path.split("/") + ["", ""]
        if parts[1] == "sleep":
            time.sleep(int(parts[2]) / 1000.0)
            self.reply(b"slept\n")
        elif parts[1] == "bytes":
            self.reply(b"x" * int(parts[2]))
        elif parts[1] == "chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in [b"5\r\nhel", b"lo\r\n", b"3", b"\r\n", b"abc\r", b"\n0\r\n", b"\r\n"]:
                self.wfile.write(piece)
                self.wfile.flush()
                time.sleep(0.002)
        elif parts[1] == "drop":
            self.close_connection = True
            self.connection.close()
        elif parts[1] == "reset":
            self.close_connection = True
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        elif parts[1] == "close":
            self.reply(b"bye\n", close=True)
        else:
            self.reply(b"ok\n")

ThreadingHTTPServer.allow_reuse_address = True
ThreadingHTTPServer.request_queue_size = 128
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
EOF
PY_PORT=$(cs_free_port)
PY_LOG=$CS_TMP/py.log
: >"$PY_LOG"
cs_bg python3 "$CS_TMP/server.py" "$PY_PORT" "$PY_LOG"
cs_wait_port "$PY_PORT"

# nginx with a private config: one worker, keep-alive timeout 1 s, an access
# log line per request with nginx's connection serial number; the same over
# TLS 1.2 and 1.3 on a second port, with a certificate made here.
NG_PORT=$(cs_free_port)
NG_TLS_PORT=$(cs_free_port)
NG=$CS_TMP/nginx
NG_LOG=$NG/access.log
mkdir -p "$NG/tmp"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
  -keyout "$NG/key.pem" -out "$NG/cert.pem" 2>"$NG/openssl.log" || { cat "$NG/openssl.log"; fail "openssl could not make a certificate"; }
listen6=""
grep -q '^00000000000000000000000000000001' /proc/net/if_inet6 2>/dev/null && listen6="listen [::1]:$NG_PORT;"
cat >"$NG/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $NG/nginx.pid;
error_log $NG/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  log_format cs '\$connection \$connection_requests \$remote_port \$status \$request_uri';
  client_body_temp_path $NG/tmp; proxy_temp_path $NG/tmp; fastcgi_temp_path $NG/tmp;
  uwsgi_temp_path $NG/tmp; scgi_temp_path $NG/tmp;
  keepalive_timeout 1s;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$NG_PORT;
    $listen6
    access_log $NG_LOG cs;
    location / { return 200 "ok\n"; }
  }
  server {
    listen 127.0.0.1:$NG_TLS_PORT ssl;
    ssl_protocols TLSv1.2 TLSv1.3; ssl_certificate $NG/cert.pem; ssl_certificate_key $NG/key.pem;
    access_log $NG_LOG cs;
    location / { return 200 "ok\n"; }
  }
}
EOF
: >"$NG_LOG"
cs_bg nginx -c "$NG/nginx.conf" -e "$NG/error.log"
cs_wait_port "$NG_PORT"
cs_wait_port "$NG_TLS_PORT"

# ---- 2. counts agree with the server

step "closed loop: 2000 requests on 8 keep-alive connections, as nginx logged them"
before=$(lines "$NG_LOG")
t0=$(python3 -c 'import time; print(time.monotonic_ns())')
load closed -p "$NG_PORT" -n 2000 -c 8 -t 2 --log "$CS_TMP/closed.log"
t1=$(python3 -c 'import time; print(time.monotonic_ns())')
assert_cmp "$(j closed "j['requests']")" == 2000 "responses"
assert_cmp "$(j closed "j['attempts']")" == 2000 "requests sent"
assert_cmp "$(j closed "j['errors']['total']")" == 0 "errors"
assert_cmp "$(($(lines "$NG_LOG") - before))" == 2000 "nginx access log lines"
assert_cmp "$(lines "$CS_TMP/closed.log")" == 2000 "csload --log lines"
assert_cmp "$(since "$NG_LOG" "$before" | awk '{print $1}' | sort -u | wc -l)" == 8 "nginx connections"
assert_cmp "$(awk '{print $5}' "$CS_TMP/closed.log" | sort -u | wc -l)" == 8 "csload local ports"
assert_cmp "$(j closed "j['connect_us']['count']")" == 8 "connects"
# Every log line: intended <= sent <= done, latency = done - intended, all on
# CLOCK_MONOTONIC within the run; the status and path as sent; the running
# time at most the time from the send.
bad=$(awk -v t0="$t0" -v t1="$t1" '!($1 <= $2 && $2 <= $3 && $4 == $3 - $1 && $1 >= t0 && $3 <= t1 && $6 == 200 && $7 == "/" && $8 ~ /^[0-9]+$/ && $8 <= $3 - $2 && $5 > 0)' "$CS_TMP/closed.log" | wc -l)
assert_cmp "$bad" == 0 "malformed --log lines"
# The client ports nginx saw are the ones csload logged.
cmp <(since "$NG_LOG" "$before" | awk '{print $3}' | sort | uniq -c) \
    <(awk '{print $5}' "$CS_TMP/closed.log" | sort | uniq -c) || fail "per-port counts differ between nginx and csload"
echo "ok: per-port request counts equal in nginx's log and csload's"

step "open loop: 2000 req/s for 3 s"
before=$(lines "$NG_LOG")
load open -p "$NG_PORT" -R 2000 -d 3 -c 16 -t 2
# The schedule: 2000/s for 3 s, each due request sent or counted unsent
# (a machine too busy to serve 2000/s leaves some unsent: bounded below).
assert_cmp "$(j open "j['rate_rps']")" '<=' 2100 "open-loop rate"
assert_cmp "$(j open "j['requests'] + j['unsent']")" '>=' 5700 "open-loop requests due (sent + unsent)"
assert_cmp "$(j open "j['requests']")" '<=' 6300 "open-loop requests"
# All due requests sent, but those that fell due in the run's last moment
# while all 16 connections still waited for answers (nginx, or this
# client, without a CPU on a busy machine): at most the rate times the
# longest answer the client measured.
unsent_max=$(j open "int(2000 * j['latency_us']['max'] / 1e6)")
assert_cmp "$(j open "j['unsent']")" '<=' "$unsent_max" "requests due but never sent (at most 2000/s x the longest answer)"
assert_cmp "$(j open "j['errors']['total']")" == 0 "errors"
assert_cmp "$(($(lines "$NG_LOG") - before))" == "$(j open "j['requests']")" "nginx access log lines"

step "--no-keepalive: one connection per request"
before=$(lines "$NG_LOG")
load nokeep -p "$NG_PORT" -n 300 -c 4 -t 2 --no-keepalive --log "$CS_TMP/nokeep.log"
assert_cmp "$(j nokeep "j['requests']")" == 300 "responses"
assert_cmp "$(j nokeep "j['connect_us']['count']")" == 300 "connects"
assert_cmp "$(j nokeep "j['reconnects']")" == 0 "reconnects (none: every connect is planned)"
assert_cmp "$(since "$NG_LOG" "$before" | awk '{print $1}' | sort -u | wc -l)" == 300 "nginx connections"
assert_cmp "$(since "$NG_LOG" "$before" | awk '$2 != 1' | wc -l)" == 0 "nginx requests after the first on a connection"
assert_cmp "$(awk '{print $5}' "$CS_TMP/nokeep.log" | sort -u | wc -l)" == 300 "distinct local ports"
# from_send_us times each response from its request's last byte written (the
# log's sent_ns to done_ns); service_us from before the connect, so more.
assert_cmp "$(j nokeep "j['from_send_us']['max']")" == \
  "$(awk '{d = $3 - $2; if (d > m) m = d} END {printf "%.3f", m / 1000}' "$CS_TMP/nokeep.log")" \
  "slowest response from its send (us), JSON vs log"
assert_cmp "$(j nokeep "j['service_us']['p50']")" '>' "$(j nokeep "j['from_send_us']['p50']")" \
  "median from the connect above the median from the send"

step "--gap-ms past nginx's 1 s keep-alive timeout: idle closes, reconnects"
before=$(lines "$NG_LOG")
load gap -p "$NG_PORT" -n 6 -c 2 --gap-ms 1300
assert_cmp "$(j gap "j['requests']")" == 6 "responses"
assert_cmp "$(j gap "j['errors']['total']")" == 0 "errors"
assert_cmp "$(j gap "j['reconnects']")" == 4 "reconnects"
assert_cmp "$(j gap "j['idle_closes']")" '>=' 4 "idle connections closed by nginx"
assert_cmp "$(since "$NG_LOG" "$before" | awk '{print $1}' | sort -u | wc -l)" == 6 "nginx connections"

if [[ -n $listen6 ]]; then
  step "IPv6 loopback"
  load v6 -H ::1 -p "$NG_PORT" -n 50 -c 2
  assert_cmp "$(j v6 "j['requests']")" == 50 "responses over ::1"
fi

step "--tls: keep-alive at TLS 1.3, a connection per request at TLS 1.2, as nginx logged them"
before=$(lines "$NG_LOG")
load tls13 -p "$NG_TLS_PORT" --tls-version 1.3 -n 1000 -c 4 -t 2
assert_cmp "$(j tls13 "j['requests']")" == 1000 "responses over TLS 1.3"
assert_cmp "$(j tls13 "j['errors']['total']")" == 0 "errors"
[[ $(j tls13 "j['tls']") == True ]] || fail "the JSON does not say tls"
assert_cmp "$(j tls13 "j['tls_handshakes']['tls13']")" == 4 "TLS 1.3 handshakes, one per connection"
assert_cmp "$(j tls13 "j['tls_handshakes']['count']")" == 4 "handshakes"
assert_cmp "$(j tls13 "j['tls_close_notify']")" == 4 "connections closed with a close_notify at the end"
assert_cmp "$(($(lines "$NG_LOG") - before))" == 1000 "nginx access log lines"
assert_cmp "$(since "$NG_LOG" "$before" | awk '{print $1}' | sort -u | wc -l)" == 4 "nginx connections"
before=$(lines "$NG_LOG")
load tls12 -p "$NG_TLS_PORT" --tls-version 1.2 --no-keepalive -n 200 -c 4
assert_cmp "$(j tls12 "j['requests']")" == 200 "responses over TLS 1.2, no keep-alive"
assert_cmp "$(j tls12 "j['errors']['total']")" == 0 "errors"
assert_cmp "$(j tls12 "j['tls_handshakes']['tls12']")" == 200 "TLS 1.2 handshakes, one per request"
assert_cmp "$(since "$NG_LOG" "$before" | awk '{print $1}' | sort -u | wc -l)" == 200 "nginx connections"
assert_cmp "$(since "$NG_LOG" "$before" | awk '$2 != 1' | wc -l)" == 0 "nginx requests after the first on a connection"
# The handshake is the client's and the server's before the request: in the
# time from the connect, not in the time from the send.
assert_cmp "$(j tls12 "j['service_us']['p50']")" '>' \
  "$(j tls12 "j['from_send_us']['p50'] + j['tls_handshakes']['p50_us'] / 2")" \
  "median from the connect above the median from the send by the handshake"
load tlsneg -p "$NG_TLS_PORT" --tls -n 20 -c 1
assert_cmp "$(j tlsneg "j['tls_handshakes']['tls13']")" == 1 "--tls alone negotiates TLS 1.3 with nginx"
# A plain HTTP server answers the ClientHello with an HTTP error: every
# handshake fails, counted, and the run gives up with the reason.
expect_rc 1 -p "$NG_PORT" --tls -n 10 -c 2 -q --json "$CS_TMP/tlsplain.json"
grep -q 'no TLS handshake' "$CS_TMP/rc.err" || fail "no message for a server without TLS: $(cat "$CS_TMP/rc.err")"
assert_cmp "$(j tlsplain "j['errors']['tls_handshake_errors']")" '>=' 2 "failed handshakes counted"
assert_cmp "$(j tlsplain "j['requests']")" == 0 "responses from a server without TLS"

step "file descriptors: 300 connections under a soft limit of 64"
(ulimit -Sn 64 && load fds -p "$NG_PORT" -c 300 -t 2 -d 0.5)
assert_cmp "$(j fds "j['connect_us']['count']")" '>=' 300 "connects"
assert_cmp "$(j fds "j['errors']['total']")" == 0 "errors"

# ---- 3. latency is what the client sees

step "a 50 ms server delay shows in p50"
before=$(lines "$PY_LOG")
load sleep -p "$PY_PORT" -c 4 -d 2 --path /sleep/50
p50=$(j sleep "j['latency_us']['p50']")
assert_cmp "$p50" '>=' 50000 "p50 (us) of a 50 ms delay"
# No more than the run's own pace says: in a closed loop each of the 4
# connections sends its next request when the last answer is in, so the
# mean request takes 4 x duration / requests (a loaded machine slows the
# python server, and the pace shows it as well).
assert_cmp "$p50" '<=' "$(j sleep "1.05 * 4 * j['duration_s'] * 1e6 / j['requests']")" "p50 (us) within the closed loop's pace"
assert_cmp "$(($(lines "$PY_LOG") - before))" == "$(j sleep "j['requests']")" "python server's request count"

step "coordinated omission: open loop above capacity shows the queue"
# One connection, 50 ms per request: capacity 20/s. Closed loop sees 50 ms;
# at 40/s each request waits longer than the one before, from its intended time.
# (The closed loop's median: of its 30 requests the p99 is the slowest, which
# one scheduling delay on a busy machine took to 110 ms.)
load co_closed -p "$PY_PORT" -c 1 -d 1.5 --path /sleep/50
load co_open -p "$PY_PORT" -c 1 -R 40 -d 1.5 --path /sleep/50
assert_cmp "$(j co_closed "j['latency_us']['p50']")" '<' 100000 "closed-loop p50 (us)"
assert_cmp "$(j co_open "j['latency_us']['p50']")" '>' 200000 "open-loop p50 (us)"
assert_cmp "$(j co_open "j['latency_us']['max']")" '>' 600000 "open-loop max (us)"
assert_cmp "$(j co_open "j['unsent']")" '>=' 20 "requests due but never sent"
assert_cmp "$(j co_open "j['requests'] + j['unsent'] + j['errors']['unfinished']")" '>=' 59 "requests due in 1.5 s at 40/s"

step "--mix: seeded path choice, per-path latency, as the server counted"
before=$(lines "$PY_LOG")
load mix -p "$PY_PORT" -n 1000 -c 4 --path /sleep/0 --mix /sleep/20:0.2 --seed 7
slow=$(j mix "j['per_path'][1]['requests']")
assert_cmp "$(j mix "j['per_path'][0]['requests'] + j['per_path'][1]['requests']")" == 1000 "requests over both paths"
assert_cmp "$slow" '>=' 150 "requests to /sleep/20"
assert_cmp "$slow" '<=' 250 "requests to /sleep/20"
assert_cmp "$(since "$PY_LOG" "$before" | awk '$2 == "/sleep/20"' | wc -l)" == "$slow" "server's count of /sleep/20"
assert_cmp "$(j mix "j['per_path'][1]['latency_us']['p50']")" '>=' 20000 "/sleep/20 p50 (us)"
assert_cmp "$(j mix "j['per_path'][0]['latency_us']['p50']")" '<' 10000 "/sleep/0 p50 (us)"
load mix2 -p "$PY_PORT" -n 1000 -c 4 --path /sleep/0 --mix /sleep/20:0.2 --seed 7
assert_cmp "$(j mix2 "j['per_path'][1]['requests']")" == "$slow" "same seed, same choices"

# ---- 4. every failure counted by kind, never retried

step "server drops, resets, closes, chunks, stalls"
load drop -p "$PY_PORT" -n 20 -c 2 --path /drop
assert_cmp "$(j drop "j['errors']['eof_before_response']")" == 20 "eof_before_response"
assert_cmp "$(j drop "j['requests']")" == 0 "responses"
assert_cmp "$(j drop "j['reconnects']")" == 18 "reconnects"
load reset -p "$PY_PORT" -n 20 -c 2 --path /reset
assert_cmp "$(j reset "j['errors']['resets']")" == 20 "resets"
load close -p "$PY_PORT" -n 20 -c 2 --path /close
assert_cmp "$(j close "j['requests']")" == 20 "responses with Connection: close"
assert_cmp "$(j close "j['connect_us']['count']")" == 20 "connects"
assert_cmp "$(j close "j['errors']['total']")" == 0 "errors"
load chunked -p "$PY_PORT" -n 10 -c 2 --path /chunked/1 --mix /bytes/100000:0.5
assert_cmp "$(j chunked "j['requests']")" == 10 "chunked and large responses"
assert_cmp "$(j chunked "j['errors']['total'] + j['unexpected_bytes']")" == 0 "errors"
load stall -p "$PY_PORT" -n 2 -c 1 --path /sleep/2000 --timeout-ms 300
assert_cmp "$(j stall "j['errors']['timeouts']")" == 2 "response timeouts"

# ---- 5. slow connects: a full accept queue drops SYNs, the client retransmits

cat >"$CS_TMP/synq.py" <<'EOF'
# Listens with backlog 0 and accepts nothing for HOLD seconds: the accept
# queue is full, further SYNs are dropped and retransmitted by the clients.
import socket, sys, threading, time
port, hold = int(sys.argv[1]), float(sys.argv[2])
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(0)
time.sleep(hold)
def serve(c):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(4096)
        if not d:
            return
        buf += d
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
    c.close()
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
step "SYN retransmits show as connects over 1 s"
SQ_PORT=$(cs_free_port)
cs_bg python3 "$CS_TMP/synq.py" "$SQ_PORT" 1.6
cs_wait_port "$SQ_PORT"
load syn -p "$SQ_PORT" -c 3 -n 3 --no-keepalive
assert_cmp "$(j syn "j['requests']")" == 3 "responses"
assert_cmp "$(j syn "j['connects_over_1s']")" '>=' 1 "connects over 1 s"
assert_cmp "$(j syn "j['connect_us']['max']")" '>=' 1000000 "slowest connect (us)"

step "connect timeout"
SQ2_PORT=$(cs_free_port)
cs_bg python3 "$CS_TMP/synq.py" "$SQ2_PORT" 600
cs_wait_port "$SQ2_PORT"
load ctimeout -p "$SQ2_PORT" -c 3 -n 3 --connect-timeout-ms 1200 --timeout-ms 1200
assert_cmp "$(j ctimeout "j['errors']['connect_timeouts']")" '>=' 1 "connect timeouts"
assert_cmp "$(j ctimeout "j['errors']['connect_timeouts'] + j['errors']['timeouts']")" == 3 "timeouts in all"

# ---- 6. SIGINT ends a run early, with a report

step "SIGINT stops a 30 s run"
"$CS_LOAD" -p "$NG_PORT" -c 4 -d 30 -q --json "$CS_TMP/sigint.json" &
pid=$!
cs_pids+=("$pid")
sleep 0.5
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
assert_cmp "$rc" == 0 "exit status after SIGINT"
assert_cmp "$(j sigint "j['duration_s']")" '<' 2 "duration (s)"
assert_cmp "$(j sigint "j['requests']")" '>' 0 "responses"

# ---- 7. the client's own waits for a CPU

step "on the server's CPU: from_send_running_us leaves out the client's own waits"
# A client that sleeps in epoll_wait measures them too (woken, not yet run).
for p in p50 p99 max; do
  assert_cmp "$(j nokeep "j['from_send_running_us']['$p']")" '<=' "$(j nokeep "j['from_send_us']['$p']")" \
    "a sleeping client: $p less its own waits <= $p from the send"
done
# Client and server pinned to one CPU: the client, spinning, waits for the
# CPU each time the server runs; the response is there before the client
# runs again. Its own waits come out of every request's time.
cpu0_port=$(cs_free_port)
cs_bg taskset -c 0 "$CS_SERVER" --port "$cpu0_port" --workers 1 --quiet
cs_wait_port "$cpu0_port"
timeout 60 taskset -c 0 "$CS_LOAD" -p "$cpu0_port" -c 2 -n 300 --busy-poll -q --json "$CS_TMP/pinned.json" ||
  fail "csload pinned to CPU 0 failed"
assert_cmp "$(j pinned "j['requests']")" == 300 "responses"
for p in p50 p99 max; do
  assert_cmp "$(j pinned "j['from_send_running_us']['$p']")" '<=' "$(j pinned "j['from_send_us']['$p']")" \
    "$p less the client's own waits <= $p from the send"
done
assert_cmp "$(j pinned "j['from_send_running_us']['p50']")" '<' "$(j pinned "j['from_send_us']['p50']")" \
  "sharing the server's CPU, the client's median wait is its own in part"

step "all csload checks passed"
