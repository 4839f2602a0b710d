#!/usr/bin/env bash
# Debian's gunicorn with two sync workers: each worker process accepts a
# connection and serves it to its end before it accepts again, and every
# request blocks its worker 40 ms (time.sleep in a WSGI app of our own).
# Six clients connect in a loop, one request a connection (gunicorn's sync
# workers close after each answer): with both workers serving, new
# connections wait in the listen queue. accept_queue leads the tail,
# pool_saturation is flagged with kind accept and 2 of 2 workers busy,
# the advice names gunicorn's --workers, and no worker is called an
# acceptor bottleneck. connscope's p99 agrees with the clients'. Then
# connscope flamegraph: accept_queue's time is the workers' time.sleep.
# integration: plain build
# (a real server's behaviour; seconds of start-up)
source "$(dirname "$0")/lib.sh"

app=$CS_TMP/app
mkdir -p "$app"
cat >"$app/blockapp.py" <<'PY'
import os
import time

def app(environ, start_response):
    time.sleep(0.04)  # the handler blocks its worker
    body = b"ok %d\n" % os.getpid()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
PY
port=$(cs_free_port)
cs_bg gunicorn --chdir "$app" --workers 2 --worker-class sync --bind "127.0.0.1:$port" \
  --log-file "$CS_TMP/gunicorn.log" blockapp:app
SERVER_PID=$BG_PID SERVER_PORT=$port
cs_wait_port "$port"
# The arbiter listens before its workers have loaded the app (seconds on a
# busy machine): two requests at a time until each worker has answered
# one, so that both serve from the load's start (at most 20 s).
for _ in $(seq 100); do
  pids=$( (curl -s --max-time 5 "http://127.0.0.1:$port/" & curl -s --max-time 5 "http://127.0.0.1:$port/"; wait) |
    awk '$1 == "ok" { print $2 }' | sort -u | wc -l)
  [[ $pids -ge 2 ]] && break
  sleep 0.2
done
[[ $pids -ge 2 ]] || fail "gunicorn's two workers did not both answer within 20 s"
# The workers are the arbiter's children: they share its listener, so
# --port takes them (--pid alone is the arbiter, which never accepts).
CS_ATTACH_OPTS="--port $port"
cs_profile gunicorn "$CS_LOAD" --port "$port" --connections 6 --duration 3 --no-keepalive \
  --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/gunicorn.json
"$CS_BIN" report "$CS_TMP/gunicorn.cstrace" >"$CS_TMP/gunicorn.txt" || fail "connscope report (text) failed"
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, client from connect $(json_get "$CS_TMP/client.json" 'j["service_us"]["p99"]') us, from send $(json_get "$CS_TMP/client.json" 'j["from_send_us"]["p99"]') us"
note "causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]')"
note "pool_saturation $(json_get "$r" 'j["conditions"]["pool_saturation"]')"
note "flagged: $(flagged "$r")"
grep -A1 -E '^  ! (pool_saturation|accept_contention)|^  ! :' "$CS_TMP/gunicorn.txt" | sed 's/^/   | /'

[[ $(top_cause "$r") == accept_queue ]] || fail "top tail cause is $(top_cause "$r"), expected accept_queue"
echo "ok: top cause accept_queue"
flags=$(flagged "$r")
[[ " $flags " == *" pool_saturation "* ]] || fail "pool_saturation not flagged (flagged: $flags)"
[[ $(json_get "$r" 'j["conditions"]["pool_saturation"]["kind"]') == accept ]] || fail "pool kind is not accept"
[[ $(json_get "$r" 'j["conditions"]["pool_saturation"]["server"]') == gunicorn ]] || fail "the server is not told gunicorn"
assert_cmp "$(json_get "$r" 'j["conditions"]["pool_saturation"]["workers"]')" '==' 2 "workers seen"
assert_cmp "$(json_get "$r" 'j["conditions"]["pool_saturation"]["busy_workers"]')" '==' 2 "workers busy"
[[ $(json_get "$r" 'j["conditions"]["accept_contention"]["acceptor_bottleneck"]') == False ]] \
  || fail "acceptor_bottleneck flagged for workers that serve what they accept"
grep -q -- '--workers' "$CS_TMP/gunicorn.txt" || fail "the advice does not name gunicorn's --workers"
echo "ok: pool_saturation (accept, 2 of 2 busy, gunicorn's --workers), no acceptor bottleneck"
assert_p99_agrees "$r" "$CS_TMP/client.json"

# The flame graph of the same pool: a connection's accept_queue wait is
# the time both workers spent serving others, in time.sleep. Debian's
# python3 keeps no frame pointers: the workers' user stacks are unwound
# from a copy of each by the interpreter's CFI, and its functions are
# named from python3.11-dbg's symbols, found by the interpreter's
# build-id. time.sleep's C function, time_sleep (pysleep inlined in it;
# "time_sleep.lto_priv.0" in the symbol table), under [pool workers busy]
# holds most of accept_queue's time. The tail is p90's here: a 1 s run
# has about 50 requests.
python=$(readlink -f "/proc/$SERVER_PID/exe") # gunicorn's interpreter
python3 - "$python" <<'PY' || fail "no symbols for $python: scripts/deps.sh test installs python3.11-dbg, of its version"
import glob, sys
data = open(sys.argv[1], "rb").read()
# The GNU build-id note: namesz 4, descsz, type 3, "GNU\0", then the id.
at = data.find(b"\x04\x00\x00\x00\x14\x00\x00\x00\x03\x00\x00\x00GNU\x00")
build_id = data[at + 16:at + 36].hex() if at >= 0 else ""
found = glob.glob("/usr/lib/debug/.build-id/%s/%s.debug" % (build_id[:2], build_id[2:]))
print("%s: build-id %s, debug file %s" % (sys.argv[1], build_id or "none", found[0] if found else "missing"))
sys.exit(0 if found else 1)
PY
cs_flamegraph "$CS_TMP/fg.err" \
  "$CS_LOAD" --port "$port" --connections 6 --duration 1 --no-keepalive --quiet -- \
  --port "$port" --tail 90 -o "$CS_TMP/pool.folded" >/dev/null
pool_stacks "$CS_TMP/pool.folded" accept_queue '^(time_sleep|pysleep)(\.|$)' \
  || fail "time.sleep (time_sleep) does not fill accept_queue's time with the pool workers' stacks"
echo "ok: accept_queue's time is the pool workers' sleep in time.sleep, through time_sleep"
