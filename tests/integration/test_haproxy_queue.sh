#!/usr/bin/env bash
# HAProxy (Debian's haproxy, one thread) in front of csserver, at most two
# connections to it (maxconn 2 on the server line), each request 20 ms
# there (/sleep/20), 16 clients at once: HAProxy queues the requests for a
# connection, and sends each when one frees. connscope, attached to HAProxy
# before the load: upstream leads the tail, its time mostly the wait for a
# free connection, told apart from the upstream's answer, and the advice
# says to raise the limit. Each kept request's wait for a connection and
# for the answer against HAProxy's own log of the same request (%Tw, the
# time in its queue, and %Tr, the server's response time: ms), told by
# the client's port and its number on it. HAProxy's %Tr ends when it has
# read the answer's headers: connscope's wait for the first byte and the
# read that took it up, which on a busy machine waits for a CPU
# (several ms in the tail with another test beside it).
# (Shared: a queue of 140 ms a request is far above what another test's
# load adds. Plain build only: the sanitized build replays its trace.)
# integration: plain build
source "$(dirname "$0")/lib.sh"

cs_start_backend --workers 1
backend_port=$BACKEND_PORT
haproxy_port=$(cs_free_port)
cat >"$CS_TMP/haproxy.cfg" <<CFG
global
  nbthread 1
  maxconn 1000
  log stdout format raw local0 info
defaults
  mode http
  log global
  log-format "%cp %Tw %Tc %Tr %Ta"
  timeout connect 5s
  timeout client 30s
  timeout server 30s
  timeout queue 30s
frontend front
  bind 127.0.0.1:$haproxy_port
  default_backend back
backend back
  http-reuse always
  server s1 127.0.0.1:$backend_port maxconn 2
CFG
# Its log (log-format above) goes to its standard output.
cs_bg haproxy -f "$CS_TMP/haproxy.cfg" -db >"$CS_TMP/haproxy.log" 2>&1
SERVER_PID=$BG_PID
haproxy_pid=$BG_PID
cs_wait_port "$haproxy_port"

cs_profile queue "$CS_LOAD" --port "$haproxy_port" --connections 16 --duration 3 --path /sleep/20 \
  --json "$CS_TMP/client.json" --quiet
"$CS_BIN" report --json --slowest 200 "$CS_TMP/queue.cstrace" >"$CS_TMP/slowest.json" ||
  fail "connscope report --slowest failed"
kill -TERM "$haproxy_pid"
wait "$haproxy_pid" || true

r=$CS_TMP/queue.json
cause='[c for c in j["tail"]["causes"] if c["cause"] == "upstream"][0]'
u='[x for x in j["upstreams"] if x["port"] == '"$backend_port"'][0]'
note_upstream_tail "$r" "$CS_TMP/client.json"
note "its advice: $(json_get "$r" "$cause[\"advice\"]")"
assert_upstream_leads "$r" "$backend_port" "the backend's port"
[[ $(json_get "$r" "$cause[\"figures\"][\"mostly_connection_wait\"]") == True ]] ||
  fail "the tail's wait on the backend is not mostly for a free connection"
echo "ok: the tail's wait on the backend: mostly for a free connection"
json_get "$r" "$cause[\"advice\"]" | grep -q "maxconn" || fail "the advice does not say to raise the connection limit"
echo "ok: the advice says to raise the limit"
assert_p99_agrees "$r" "$CS_TMP/client.json"
exchanges=$(json_get "$r" "$u[\"exchanges\"]")
assert_cmp "$(json_get "$r" "$u[\"joined\"]")" '>=' "$(python3 -c "print(0.9 * $exchanges)")" "exchanges joined (90 %)"

# Each kept request against HAProxy's log line for it.
"$CS_PYTHON" - "$CS_TMP/haproxy.log" "$CS_TMP/slowest.json" "$backend_port" >"$CS_TMP/compared" <<'PY' ||
import collections, json, sys
lines = collections.defaultdict(list)
for fields in (l.split() for l in open(sys.argv[1])):
    if len(fields) == 5 and all(f.lstrip("-").isdigit() for f in fields):
        lines[int(fields[0])].append((int(fields[1]), int(fields[3])))
for s in json.load(open(sys.argv[2]))["slowest"]:
    up = s["upstream"]
    asked = lines[s["peer_port"]]
    if not up or up["port"] != int(sys.argv[3]) or s["index"] >= len(asked):
        continue
    tw_ms, tr_ms = asked[s["index"]]
    print(tw_ms * 1000, up["connection_wait_us"], tr_ms * 1000, up["wait_us"] + up["read_us"])
PY
  fail "comparing with HAProxy's log failed"
read -r kept queue_agree answer_agree queued_ms < <(awk '
  function near(a, b) { d = a - b; if (d < 0) d = -d; return d <= 1500 || d <= 0.1 * a }
  { n++; q += near($1, $2); a += near($3, $4); t += $1 }
  END { print n + 0, q + 0, a + 0, n ? t / n / 1000 : 0 }' "$CS_TMP/compared")
note "$kept kept request(s) found in HAProxy's log (queued $queued_ms ms on average there): the wait for a connection agrees for $queue_agree, the server's answer for $answer_agree (10 % or 1.5 ms: its log is in ms)"
assert_cmp "$kept" '>=' 100 "kept requests found in HAProxy's log"
assert_cmp "$queue_agree" '>=' "$(python3 -c "print(0.9 * $kept)")" "the wait for a free connection against HAProxy's %Tw (90 %)"
assert_cmp "$answer_agree" '>=' "$(python3 -c "print(0.9 * $kept)")" "the wait for the answer and its read against HAProxy's %Tr (90 %)"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
