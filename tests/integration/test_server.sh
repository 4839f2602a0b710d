#!/usr/bin/env bash
# The reference server (csserver) on its own, no probes: every accept mode
# under wrk and ab, then routes, error paths (400/413/408), timeouts,
# keep-alive rules, pipelining, clients that reset, and fd exhaustion.
# All traffic goes to 127.0.0.1; every load is bounded in count and time.
source "$(dirname "$0")/lib.sh"

[[ -x $CS_SERVER ]] || fail "$CS_SERVER is missing: run 'make build/csserver' first"

# Debian's interpreter starts in 0.07 s; a pyenv shim in front of it can take
# 0.7 s, which the many assert_cmp calls below would pay every time.
CS_PYTHON=$(command -v python3)
[[ -x /usr/bin/python3 ]] && CS_PYTHON=/usr/bin/python3
python3() { "$CS_PYTHON" "$@"; }

# ---- a small socket client for what curl cannot do -------------------------
PY=$CS_TMP/client.py
cat >"$PY" <<'EOF'
import os, select, socket, struct, sys, time

PORT = int(sys.argv[1])

def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)

def ok(msg):
    print("ok: " + msg)

class Conn:
    """One client connection that reads responses off a byte buffer, so
    pipelined responses are taken one at a time."""
    def __init__(self, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise EOFError("server closed the connection")
        self.buf += data

    def response(self, head=False):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head_bytes, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head_bytes.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        fields = {}
        for line in lines[1:]:
            name, value = line.split(":", 1)
            fields[name.strip().lower()] = value.strip()
        length = 0 if head else int(fields["content-length"])
        while len(self.buf) < length:
            self._fill()
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, fields, body

    def eof_after(self, timeout):
        """Seconds until the server closes, or None if it stays open."""
        start = time.monotonic()
        self.sock.settimeout(timeout)
        try:
            while True:
                data = self.sock.recv(1 << 16)
                if not data:
                    return time.monotonic() - start
        except socket.timeout:
            return None
        except ConnectionResetError:
            return time.monotonic() - start

    def close(self):
        self.sock.close()

def expect(cond, msg):
    if not cond:
        fail(msg)

def get(path, extra=b""):
    c = Conn()
    c.send(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: t\r\n" + extra + b"\r\n")
    r = c.response()
    c.close()
    return r

def cmd_malformed():
    for raw in (b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
                b"GET / HTTP/9.9\r\n\r\n",
                b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"):
        c = Conn()
        c.send(raw)
        status, fields, _ = c.response()
        expect(status == 400, "malformed %r: status %d, want 400" % (raw[:20], status))
        expect(fields["connection"] == "close", "400 without Connection: close")
        expect(c.eof_after(2.0) is not None, "connection left open after 400")
        c.close()
    ok("malformed requests get 400 and a close")

def cmd_oversized(limit):
    limit = int(limit)
    c = Conn()
    c.send(b"GET / HTTP/1.1\r\nX-Big: " + b"a" * (limit + 100) + b"\r\n\r\n")
    status, fields, _ = c.response()
    expect(status == 413, "oversized header: status %d, want 413" % status)
    expect(c.eof_after(2.0) is not None, "connection left open after 413")
    c.close()
    # Just under the limit is fine.
    status, _, body = get("/", b"X-Big: " + b"a" * (limit - 200) + b"\r\n")
    expect(status == 200 and body == b"ok\n", "header under the limit: status %d" % status)
    ok("a %d-byte header gets 413 and a close; %d bytes are served" % (limit + 100, limit - 200))

def cmd_slow_header(timeout_ms):
    """Sends a header a byte every 50 ms: trickling must not reset the clock."""
    timeout = int(timeout_ms) / 1000.0
    c = Conn()
    start = time.monotonic()
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ")
    while time.monotonic() - start < timeout + 2.0:
        readable, _, _ = select.select([c.sock], [], [], 0.05)
        if readable:
            break
        c.send(b"a")
    elapsed = time.monotonic() - start
    status, fields, _ = c.response()
    expect(status == 408, "slow header: status %d, want 408" % status)
    expect(timeout * 0.9 <= elapsed <= timeout + 0.5,
           "408 after %.3f s, want about %.3f s" % (elapsed, timeout))
    expect(c.eof_after(2.0) is not None, "connection left open after 408")
    c.close()
    ok("slow header: 408 after %.3f s (timeout %.3f s), then closed" % (elapsed, timeout))

def cmd_pipelined():
    c = Conn()
    c.send(b"GET /bytes/5 HTTP/1.1\r\nHost: t\r\n\r\n"
           b"HEAD /bytes/7 HTTP/1.1\r\nHost: t\r\n\r\n"
           b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n"
           b"GET /bytes/3?q=1 HTTP/1.1\r\nHost: t\r\n\r\n")
    got = [c.response(), c.response(head=True), c.response(), c.response()]
    want = [(200, "5", 5), (200, "7", 0), (404, "10", 10), (200, "3", 3)]
    for i, ((status, fields, body), (w_status, w_len, w_body)) in enumerate(zip(got, want)):
        expect(status == w_status and fields["content-length"] == w_len and len(body) == w_body,
               "pipelined response %d: %d %s %d bytes" % (i, status, fields.get("content-length"), len(body)))
    expect(c.buf == b"", "bytes after the last pipelined response (HEAD sent a body?)")
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
    expect(c.response()[0] == 200, "connection unusable after pipelining")
    c.close()
    ok("4 pipelined requests answered in order, connection kept")

def cmd_idle(idle_ms):
    idle = int(idle_ms) / 1000.0
    c = Conn()
    # Activity at half the timeout keeps the connection open...
    for _ in range(4):
        c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        status, fields, _ = c.response()
        expect(status == 200 and fields["connection"] == "keep-alive", "keep-alive request failed")
        time.sleep(idle / 2)
    # ...then silence gets it closed by the server after about idle. The
    # server's idle time starts between this send and the answer's arrival
    # (a busy machine may run this client late by tens of ms): the close
    # comes at least idle after the send, and not much more than idle after
    # the answer arrived.
    sent = time.monotonic()
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
    c.response()
    answered = time.monotonic()
    closed = c.eof_after(idle + 2.0)
    expect(closed is not None, "idle connection not closed within %.1f s" % (idle + 2.0))
    since_send = answered - sent + closed
    expect(idle * 0.9 <= since_send and closed <= idle + 0.4,
           "idle connection closed %.3f s after the last request was sent, %.3f s after its answer; "
           "want about %.3f s" % (since_send, closed, idle))
    c.close()
    ok("idle keep-alive connection closed after %.3f s (timeout %.3f s)" % (closed, idle))

def cmd_keepalive_rules():
    c = Conn()
    for _ in range(3):
        c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        status, fields, _ = c.response()
        expect(fields["connection"] == "keep-alive", "HTTP/1.1 not kept alive")
    expect(c.eof_after(0.3) is None, "server closed a keep-alive connection with no idle timeout")
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    status, fields, _ = c.response()
    expect(fields["connection"] == "close", "Connection: close not honoured")
    expect(c.eof_after(2.0) is not None, "no close after Connection: close")
    c.close()
    c = Conn()
    c.send(b"GET / HTTP/1.0\r\n\r\n")
    status, fields, _ = c.response()
    expect(fields["connection"] == "close", "HTTP/1.0 without keep-alive not closed")
    expect(c.eof_after(2.0) is not None, "no close after HTTP/1.0")
    c.close()
    # A client that half-closes after its request still gets the answer.
    c = Conn()
    c.send(b"GET /bytes/100 HTTP/1.1\r\nHost: t\r\n\r\n")
    c.sock.shutdown(socket.SHUT_WR)
    status, _, body = c.response()
    expect(status == 200 and len(body) == 100, "no response after the client's FIN")
    expect(c.eof_after(2.0) is not None, "no close after the client's FIN")
    c.close()
    ok("keep-alive by default; Connection: close, HTTP/1.0 and a client FIN end it")

def cmd_no_keepalive():
    c = Conn()
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
    status, fields, body = c.response()
    expect(status == 200 and body == b"ok\n", "status %d" % status)
    expect(fields["connection"] == "close", "--no-keepalive sent Connection: %s" % fields["connection"])
    closed = c.eof_after(2.0)
    expect(closed is not None, "--no-keepalive left the connection open")
    c.close()
    ok("--no-keepalive: Connection: close, closed by the server after %.3f s" % closed)

def cmd_resets(count):
    """Clients that vanish: RST in the middle of a 64 MiB response, close
    in the middle of a header."""
    for _ in range(int(count)):
        c = Conn()
        c.send(b"GET /bytes/67108864 HTTP/1.1\r\nHost: t\r\n\r\n")
        c.sock.recv(1 << 16)
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        c = Conn()
        c.send(b"GET /bytes/10 HTTP/1.1\r\nHo")
        c.close()
    status, _, body = get("/bytes/10240")
    expect(status == 200 and len(body) == 10240, "server unhealthy after resets")
    ok("%s resets mid-response and mid-header; still serving" % count)

def proc_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def cmd_emfile(pid, count):
    """More connections than the server has fds: it must back off, not spin,
    and serve again once fds are free."""
    pid, count = int(pid), int(count)
    conns = []
    for _ in range(count):
        c = Conn(timeout=2.0)
        c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        conns.append(c)
    cpu0 = proc_cpu_s(pid)
    time.sleep(1.0)
    cpu = proc_cpu_s(pid) - cpu0
    # Look at every connection before closing any: a close frees a server
    # fd, and the server would then serve one more of the rest.
    served = 0
    for c in conns:
        c.sock.setblocking(False)
        try:
            if c.sock.recv(100).startswith(b"HTTP/1.1 200"):
                served += 1
        except BlockingIOError:
            pass
    for c in conns:
        c.close()
    expect(0 < served < count, "served %d of %d: the fd limit was not reached" % (served, count))
    expect(cpu < 0.3, "server used %.2f s of CPU in 1 s at the fd limit: spinning" % cpu)
    time.sleep(0.3)
    status, _, _ = get("/")
    expect(status == 200, "not serving after the fd limit cleared")
    ok("at the fd limit: %d of %d served, %.2f s CPU in 1 s; serving again after" % (served, count, cpu))

def cmd_max_conns(limit):
    """--max-conns N: with N connections open, the next one is not accepted
    (its request stays unanswered in the listen queue) until one closes."""
    limit = int(limit)
    held = []
    for _ in range(limit):
        c = Conn()
        c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        expect(c.response()[0] == 200, "a connection under the limit was not served")
        held.append(c)
    extra = Conn()  # the kernel completes the handshake: it waits in the queue
    extra.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
    readable, _, _ = select.select([extra.sock], [], [], 1.0)
    expect(not readable, "connection %d was served while %d were open" % (limit + 1, limit))
    held.pop(0).close()
    status, _, _ = extra.response()
    expect(status == 200, "the waiting connection got %d after a close" % status)
    for c in held + [extra]:
        c.close()
    ok("--max-conns %d: connection %d waited in the queue until one closed" % (limit, limit + 1))

globals()["cmd_" + sys.argv[2]](*sys.argv[3:])
EOF
client() { python3 "$PY" "$SERVER_PORT" "$@"; }

# ---- helpers -----------------------------------------------------------------

server_log() { echo "$CS_TMP/server.$SERVER_PORT.log"; }

server_alive() { [[ -e /proc/$1 && $(ps -o stat= -p "$1" 2>/dev/null) != Z* ]]; }

# cs_start_server, but ready means the server's own "listening" line, an
# early exit is seen at once with its message, and a port that turns out to
# be taken is replaced: cs_free_port sees only listeners, and its range
# overlaps the ephemeral ports (32768-60999) of the load tools' clients.
start_server() {
  for _ in 1 2 3; do
    SERVER_PORT=$(cs_free_port)
    "$CS_SERVER" --port "$SERVER_PORT" "$@" >"$(server_log)" 2>&1 &
    SERVER_PID=$!
    cs_pids+=("$SERVER_PID")
    for _ in $(seq 100); do
      grep -q '^csserver: listening on ' "$(server_log)" && return 0
      server_alive "$SERVER_PID" || break
      sleep 0.05
    done
    if grep -q 'Address already in use' "$(server_log)"; then
      echo "port $SERVER_PORT is taken; picking another"
      continue
    fi
    fail "server did not start (csserver --port $SERVER_PORT $*): $(cat "$(server_log)")"
  done
  fail "three ports in a row were taken"
}

# Stops the server with SIGTERM and checks it exits 0 within 5 s.
stop_server() {
  local rc=0
  kill -TERM "$SERVER_PID"
  for _ in $(seq 100); do
    server_alive "$SERVER_PID" || break
    sleep 0.05
  done
  ! server_alive "$SERVER_PID" || fail "server $SERVER_PID still running 5 s after SIGTERM"
  wait "$SERVER_PID" || rc=$?
  [[ $rc -eq 0 ]] || { cat "$(server_log)" >&2; fail "server exited $rc after SIGTERM"; }
}

# The one stdout line, exactly.
check_listening_line() {
  local want="csserver: listening on 127.0.0.1:$SERVER_PORT mode=$1 workers=$2 backlog=$3 pid=$SERVER_PID"
  grep -qxF "$want" "$(server_log)" || fail "no line '$want' in the log: $(cat "$(server_log)")"
  echo "ok: $want"
}

check_threads() {
  local names
  names=$(cat /proc/"$SERVER_PID"/task/*/comm | sort | tr '\n' ' ')
  for want in "$@"; do
    [[ " $names" == *" $want "* ]] || fail "no thread '$want' (threads: $names)"
  done
  echo "ok: threads $names"
}

url() { echo "http://127.0.0.1:$SERVER_PORT$1"; }

# ---- 1. every accept mode under load ------------------------------------------
for mode in shared exclusive reuseport acceptor; do
  note "accept mode $mode"
  start_server --accept "$mode" --workers 2
  check_listening_line "$mode" 2 511
  if [[ $mode == acceptor ]]; then check_threads cs-acceptor csw-0 csw-1; else check_threads csw-0 csw-1; fi

  size=$(curl -sS --max-time 5 "$(url /bytes/10240)" | wc -c)
  assert_cmp "$size" == 10240 "$mode: /bytes/10240 body length"

  wrk -t2 -c20 -d2s --timeout 5s "$(url /bytes/10240)" >"$CS_TMP/wrk.$mode" 2>&1 \
    || fail "$mode: wrk failed: $(cat "$CS_TMP/wrk.$mode")"
  ! grep -q 'Non-2xx' "$CS_TMP/wrk.$mode" || fail "$mode: wrk saw non-2xx: $(cat "$CS_TMP/wrk.$mode")"
  ! grep -q 'Socket errors' "$CS_TMP/wrk.$mode" || fail "$mode: wrk saw socket errors: $(cat "$CS_TMP/wrk.$mode")"
  requests=$(awk '/requests in/ {print $1}' "$CS_TMP/wrk.$mode")
  assert_cmp "$requests" '>' 1000 "$mode: wrk requests in 2 s"

  # ab speaks HTTP/1.0 without keep-alive: a server-side close per request.
  ab -q -n 2000 -c 20 -s 10 "$(url /)" >"$CS_TMP/ab.$mode" 2>&1 \
    || fail "$mode: ab failed: $(cat "$CS_TMP/ab.$mode")"
  complete=$(awk '/^Complete requests:/ {print $3}' "$CS_TMP/ab.$mode")
  failed=$(awk '/^Failed requests:/ {print $3}' "$CS_TMP/ab.$mode")
  assert_cmp "$complete" == 2000 "$mode: ab complete requests"
  assert_cmp "$failed" == 0 "$mode: ab failed requests"
  ! grep -q 'Non-2xx' "$CS_TMP/ab.$mode" || fail "$mode: ab saw non-2xx"
  stop_server
  grep -q "worker 1: accepted" "$(server_log)" || fail "$mode: no exit summary in the log"
done

# ---- 2. routes, errors, keep-alive rules, timeouts -----------------------------
note "routes and error paths (--header-timeout-ms 300, --workers 1)"
start_server --workers 1 --header-timeout-ms 300
check_listening_line shared 1 511

code() { curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "$@"; }
[[ $(curl -sS --max-time 5 "$(url /)") == ok ]] || fail "/ did not answer ok"
assert_cmp "$(code "$(url /nope)")" == 404 "unknown route"
assert_cmp "$(code "$(url /bytes/x1)")" == 404 "/bytes/ without a number"
assert_cmp "$(code "$(url /bytes/67108865)")" == 400 "/bytes over 64 MiB"
assert_cmp "$(code -X POST -d abc "$(url /)")" == 405 "POST"
assert_cmp "$(curl -sS --max-time 5 -I "$(url /bytes/4096)" | tr -d '\r' | awk -F': ' '/^Content-Length/ {print $2}')" \
  == 4096 "HEAD Content-Length"
assert_cmp "$(curl -sS --max-time 10 "$(url /bytes/67108864)" | wc -c)" == 67108864 "64 MiB body"
[[ $(curl -sS --max-time 5 "$(url /spin/50)") == "spun worker 0 for 50 ms" ]] || fail "/spin/50"

# /sleep must not block the loop, /block must (one worker here). Judged by
# the order of the answers, not by times a busy machine stretches: the
# slow request is sent, and once the worker has it (for /block: once the
# worker sleeps in the handler, /proc's syscall), "/" is sent on a second
# connection. /sleep: "/" is answered first. /block: "/" waits its turn.
answer_order() { # answer_order PATH BLOCKS(0|1): prints "ok ..." or why not
  python3 - "$SERVER_PORT" "$SERVER_PID" "$1" "$2" <<'PY'
import glob, select, socket, sys, time
port, pid, path, blocks = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "1"
def send(p):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(f"GET {p} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    return s
def worker_sleeps():  # clock_nanosleep (230) or nanosleep (35) on x86-64
    for f in glob.glob(f"/proc/{pid}/task/*/syscall"):
        try:
            if open(f).read().split()[0] in ("230", "35"):
                return True
        except OSError:
            pass
    return False
slow = send(path)
deadline = time.monotonic() + 10
if blocks:
    while not worker_sleeps():
        assert time.monotonic() < deadline, "the worker never slept in " + path
        time.sleep(0.002)
else:
    time.sleep(0.05)  # /sleep does not block: nothing to wait for
fast = send("/")
readable = []
while len(readable) < 2 and time.monotonic() < deadline:
    ready, _, _ = select.select([s for s in (slow, fast) if s not in readable], [], [], 10)
    # Both ready at once: the slow one's answer may have come first (for
    # /sleep, only after a 2 s stall of this process).
    readable += sorted(ready, key=lambda s: s is fast)
assert len(readable) == 2, "an answer never came"
first = "/" if readable[0] is fast else path
want = path if blocks else "/"
assert first == want, f"{first} was answered first, expected {want}"
print(f"ok: {first} answered first")
PY
}
answer_order /sleep/2000 0 || fail "/ while /sleep/2000 is pending: the loop was blocked"
answer_order /block/600 1 || fail "/ while /block/600 holds the only worker: not held"

client malformed
client oversized 8192
client slow_header 300
client pipelined
client keepalive_rules
client resets 5
[[ $(curl -sS --max-time 5 "$(url /)") == ok ]] || fail "not serving after the error paths"
stop_server
grep -q 'bad [1-9]' "$(server_log)" || fail "bad requests not counted: $(cat "$(server_log)")"
grep -q 'header timeouts [1-9]' "$(server_log)" || fail "408 not counted"

note "--idle-timeout-ms 200"
start_server --idle-timeout-ms 200 --accept reuseport
client idle 200
stop_server

note "--no-keepalive"
start_server --no-keepalive --accept exclusive
client no_keepalive
ab -q -k -n 500 -c 10 "$(url /)" >"$CS_TMP/ab.noka" 2>&1 || fail "ab -k against --no-keepalive"
assert_cmp "$(awk '/^Failed requests:/ {print $3}' "$CS_TMP/ab.noka")" == 0 "ab -k failures with --no-keepalive"
assert_cmp "$(awk '/^Keep-Alive requests:/ {print $3}' "$CS_TMP/ab.noka")" == 0 "keep-alive responses with --no-keepalive"
stop_server

note "--block-worker 1: only worker 1 blocks"
start_server --accept reuseport --workers 2 --block-worker 1
for _ in $(seq 8); do
  body=$(curl -sS --max-time 5 "$(url /block/50)")
  [[ $body == "blocked worker 1 for 50 ms" || $body == "worker 0 does not block" ]] \
    || fail "/block/50 with --block-worker 1 answered '$body'"
done
echo "ok: /block only blocks worker 1"
stop_server

note "--max-conns 3: the acceptor stops at 3 open connections"
start_server --accept acceptor --workers 2 --max-conns 3
client max_conns 3
stop_server
grep -q 'waited for a free slot (--max-conns 3) [1-9]' "$(server_log)" \
  || fail "csserver did not report waiting for a slot: $(tail -n 3 "$(server_log)")"
echo "ok: csserver counted its waits for a slot"

# ---- 3. fd exhaustion: back off, do not spin ---------------------------------
note "EMFILE (RLIMIT_NOFILE 32)"
start_server --workers 2
prlimit --pid "$SERVER_PID" --nofile=32:32
client emfile "$SERVER_PID" 60
warnings=$(grep -c 'Too many open files' "$(server_log)" || true)
assert_cmp "$warnings" '>=' 1 "EMFILE warnings logged"
assert_cmp "$warnings" '<=' 4 "EMFILE warnings, at most one a second"
stop_server

# ---- 4. command line ------------------------------------------------------------
note "command line"
"$CS_SERVER" --help >"$CS_TMP/help" || fail "--help exited non-zero"
grep -q '^Examples:' "$CS_TMP/help" || fail "--help has no examples"
for bad in "--workers 0" "--accept bogus" "--port 70000" "--workers 2 --block-worker 2" \
           "--max-header-bytes 10" "--bind localhost" "--idle-timeout-ms -1" "--nope" \
           "--max-conns -1" "--max-conns 4 --accept shared"; do
  rc=0
  # shellcheck disable=SC2086
  "$CS_SERVER" $bad >/dev/null 2>"$CS_TMP/err" || rc=$?
  [[ $rc -eq 2 ]] || fail "'$bad' exited $rc, want 2"
  opt=${bad%% *}
  [[ $bad == "--workers 2 --block-worker 2" ]] && opt=--block-worker
  [[ $bad == "--max-conns 4 --accept shared" ]] && opt="--max-conns needs --accept acceptor"
  grep -q -- "$opt" "$CS_TMP/err" || fail "'$bad': message does not name $opt: $(cat "$CS_TMP/err")"
done
echo "ok: bad options exit 2 naming the option"
echo "test_server: all checks passed"
