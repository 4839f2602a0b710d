#!/usr/bin/env bash
# Faults, each with its outcome asserted:
#   1. connscope killed with SIGKILL mid-run: the server goes on serving,
#      none of connscope's BPF programs, links or maps outlives it.
#   2. the target killed with SIGKILL mid-run: attach ends with a line
#      saying so and the report of what was seen; nothing outlives it.
#   3. the same under connscoped: it keeps its data (metrics), says it
#      waits, picks the restarted server up; three restarts leak no fd;
#      SIGTERM leaves no BPF object behind.
#   4. the ring buffer overflows (the reader stopped with SIGSTOP under a
#      connection flood): lost records are counted in every output (record's
#      line, text, JSON, metrics), and the figures stay consistent with
#      them: every request the client made is reported or lost, every
#      connection still followed at the end lost its close.
# BPF objects are identified by the ids in the process's own fdinfo, so
# other connscope runs on the machine do not matter.
# integration: sanitized build
# (the kills and restarts run through the same code in either build; the
# sanitized one also checks what they leave behind in memory)
source "$(dirname "$0")/lib.sh"
CS_DAEMON=$CS_BUILD/connscoped

# bpf_ids PID: "prog ID", "map ID", "link ID" for each BPF object PID holds.
bpf_ids() {
  local f
  for f in /proc/"$1"/fdinfo/*; do
    # || true: an fd may close between the glob and the read.
    awk '/^prog_id:/ {print "prog", $2} /^map_id:/ {print "map", $2} /^link_id:/ {print "link", $2}' "$f" 2>/dev/null || true
  done | sort -u
}

# still_there FILE: how many of the objects listed in FILE exist (one
# listing of each kind, not a bpftool run per object).
still_there() {
  local kind
  for kind in prog map link; do
    bpftool "$kind" show --json 2>/dev/null | python3 -c '
import json, sys
print("\n".join(sys.argv[1] + " " + str(o["id"]) for o in json.load(sys.stdin)))' "$kind"
  done | sort | comm -12 - <(sort "$1") | wc -l
}
# assert_bpf_gone FILE WHAT: none of the objects listed in FILE exists
# (the kernel frees them after an RCU grace period: wait up to 10 s).
assert_bpf_gone() {
  local left
  [[ -s $1 ]] || fail "$2: no BPF objects were recorded"
  for _ in $(seq 50); do
    left=$(still_there "$1")
    [[ $left -eq 0 ]] && break
    sleep 0.2
  done
  [[ $left -eq 0 ]] || fail "$2: $left of $(wc -l <"$1") BPF objects still exist"
  echo "ok: $2: all $(wc -l <"$1") BPF objects ($(cut -d' ' -f1 "$1" | sort | uniq -c | xargs)) are gone"
}

# record_ids PID FILE: wait until PID holds its programs, links and maps.
record_ids() {
  for _ in $(seq 50); do
    bpf_ids "$1" >"$2"
    grep -q '^link' "$2" && grep -q '^prog' "$2" && grep -q '^map' "$2" && return 0
    sleep 0.1
  done
  fail "pid $1 holds no BPF links"
}

load() { # load NAME ARGS...: csload against the server, quiet, JSON in $CS_TMP/NAME.json
  local name=$1; shift
  timeout 60 "$CS_LOAD" --port "$SERVER_PORT" -q --json "$CS_TMP/$name.json" "$@" 2>"$CS_TMP/$name.load.err" \
    || { cat "$CS_TMP/$name.load.err"; fail "csload $name failed"; }
}

# ---- 1. connscope killed with SIGKILL mid-run

note "1. connscope SIGKILLed mid-run"
cs_start_server --workers 2
load before -c 8 -d 1
"$CS_BIN" attach --pid "$SERVER_PID" --json >"$CS_TMP/killed.json" 2>"$CS_TMP/killed.err" &
cs=$!; cs_pids+=("$cs")
cs_wait_attached "$CS_TMP/killed.err"
record_ids "$cs" "$CS_TMP/killed.ids"
timeout 60 "$CS_LOAD" --port "$SERVER_PORT" -q --json "$CS_TMP/during.json" -c 8 -d 2 2>/dev/null &
load_pid=$!; cs_pids+=("$load_pid")
sleep 0.7
kill -KILL "$cs"
wait "$cs" 2>/dev/null || true
wait "$load_pid" || fail "csload failed while connscope was killed"
assert_cmp "$(json_get "$CS_TMP/during.json" 'j["errors"]["total"]')" == 0 "client errors across the kill"
assert_bpf_gone "$CS_TMP/killed.ids" "after SIGKILL of connscope"
load after -c 8 -d 1
assert_cmp "$(json_get "$CS_TMP/after.json" 'j["errors"]["total"]')" == 0 "client errors after the kill"
assert_cmp "$(json_get "$CS_TMP/after.json" 'j["requests"]')" '>' 0 "requests served after the kill"
# Not asserted (a shared machine's timing): the rate, printed for the log.
note "requests/s before $(json_get "$CS_TMP/before.json" 'j["rate_rps"]'), after $(json_get "$CS_TMP/after.json" 'j["rate_rps"]')"

# ---- 2. the target killed with SIGKILL mid-run

note "2. target SIGKILLed during attach"
"$CS_BIN" attach --pid "$SERVER_PID" --json >"$CS_TMP/exit.json" 2>"$CS_TMP/exit.err" &
cs=$!; cs_pids+=("$cs")
cs_wait_attached "$CS_TMP/exit.err"
record_ids "$cs" "$CS_TMP/exit.ids"
timeout 60 "$CS_LOAD" --port "$SERVER_PORT" -q -c 4 -d 10 >/dev/null 2>&1 &
load_pid=$!; cs_pids+=("$load_pid")
sleep 1
kill -KILL "$SERVER_PID"
rc=0; timeout 10 tail --pid="$cs" -f /dev/null || rc=$?
[[ $rc -eq 0 ]] || fail "connscope did not end within 10 s of the target's death"
rc=0; wait "$cs" || rc=$?
assert_cmp "$rc" == 0 "connscope's exit status after the target died"
grep -q "the target exited; reporting what was seen" "$CS_TMP/exit.err" || fail "no line saying the target exited"
assert_cmp "$(json_get "$CS_TMP/exit.json" 'j["requests"]')" '>' 0 "requests in the report after the target died"
assert_bpf_gone "$CS_TMP/exit.ids" "after the target's death"
kill "$load_pid" 2>/dev/null || true # its server is gone: nothing more to measure
wait "$load_pid" 2>/dev/null || true

# ---- 3. connscoped: the target dies and comes back, three times

note "3. connscoped across target deaths"
port=$(cs_free_port)
metrics_port=$(cs_free_port)
metric() { # metric NAME: the sum of NAME's samples
  curl -sf "http://127.0.0.1:$metrics_port/metrics" | awk -v n="$1" 'index($0, n"{") == 1 || $1 == n {s += $NF} END {print s + 0}'
}
"$CS_DAEMON" --port "$port" --trace always --metrics "$metrics_port" --socket "$CS_TMP/ctl1/cs.sock" 2>"$CS_TMP/daemon.err" &
daemon=$!; cs_pids+=("$daemon")
cs_wait_port "$metrics_port"
fds_after_first=""
total=0
# The links of the probes connscoped attaches on demand, by program name:
# the per-packet one while an answer drains (and a second after), the
# wake-up one once a request is parked. A loaded machine holds answers
# back, so whether they are attached at a look is not a leak.
ON_DEMAND_LOOK='
import glob, json, os, sys, time
names = {p["id"]: p.get("name", "") for p in json.load(sys.stdin)}
def on_demand(pid):  # [(fd, name)]: their programs are loaded for good, their links come and go
    found = []
    for path in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            fields = dict(line.split(":", 1) for line in open(path) if ":" in line)
        except OSError:
            continue  # closed since the listing
        if "link_id" in fields and "prog_id" in fields:
            name = names.get(int(fields["prog_id"]), "")
            if name in ("on_xmit", "on_waking"):
                found.append((os.path.basename(path), name))
    return found
'
on_demand_links() { # on_demand_links PID: "FD NAME" for each
  bpftool prog show --json 2>/dev/null | python3 -c "$ON_DEMAND_LOOK"'
for fd, name in on_demand(sys.argv[1]):
    print(fd, name)
' "$1"
}
# xmit_attached PID: the per-packet probe's link is among PID's fds.
xmit_attached() { [[ $(on_demand_links "$1") == *" on_xmit"* ]]; }
# fd_kinds PID: how many fds PID holds, by what they are.
fd_kinds() {
  local f
  for f in /proc/"$1"/fd/*; do readlink "$f" 2>/dev/null || true; done \
    | sed -E 's/[0-9]+/N/g' | sort | uniq -c
}
# The fewest fds a process holds over half a second, less the on-demand
# probes' links: a leaked fd stays in every look, one open for a moment (a
# /proc scan for the target coming back, a scrape being answered) does not,
# so a single look can count one fd too many.
fewest_fds() {
  bpftool prog show --json 2>/dev/null | python3 -c "$ON_DEMAND_LOOK"'
fewest = None
for _ in range(5):
    held = len(os.listdir(f"/proc/{sys.argv[1]}/fd")) - len(on_demand(sys.argv[1]))
    fewest = held if fewest is None else min(fewest, held)
    time.sleep(0.1)
print(fewest)
' "$1"
}
for round in 1 2 3; do
  "$CS_SERVER" --port "$port" --workers 2 --quiet >/dev/null 2>&1 &
  server=$!; cs_pids+=("$server")
  cs_wait_port "$port"
  for _ in $(seq 100); do
    [[ $(grep -c "now watching pid $server" "$CS_TMP/daemon.err") -ge 1 ]] && break
    sleep 0.1
  done
  grep -q "now watching pid $server" "$CS_TMP/daemon.err" || { cat "$CS_TMP/daemon.err"; fail "round $round: connscoped did not pick up pid $server"; }
  SERVER_PORT=$port load "round$round" -c 4 -n 400
  total=$((total + 400))
  if [[ $round == 1 ]]; then
    # An answer held back (a client that reads nothing until told to):
    # connscoped attaches its per-packet probe, with the capabilities it kept.
    timeout 20 python3 - "$port" "$CS_TMP/read-now" >"$CS_TMP/stalled.log" 2>&1 <<'PY' &
import os, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.sendall(b"GET /bytes/20000000 HTTP/1.1\r\nHost: x\r\n\r\n")
print("sent", flush=True)
for _ in range(300):
    if os.path.exists(sys.argv[2]):
        break
    time.sleep(0.05)
got = 0
while got < 20000000:
    chunk = s.recv(1 << 20)
    if not chunk:
        break
    got += len(chunk)
print("read", got)
PY
    stalled=$!
    for _ in $(seq 100); do grep -q sent "$CS_TMP/stalled.log" && break; sleep 0.05; done
    for _ in 1 2 3 4 5 6 7 8; do # a poll (20 ms) attaches it; a look takes 0.2-0.5 s
      xmit_attached "$daemon" && break
    done
    xmit_attached "$daemon" || fail "connscoped did not attach its per-packet probe while an answer was held back"
    echo "ok: the per-packet probe attached while an answer was held back"
    touch "$CS_TMP/read-now"
    wait "$stalled" || { cat "$CS_TMP/stalled.log"; fail "the stalled client failed"; }
    total=$((total + 1))
  fi
  for _ in $(seq 50); do # the requests reach the metrics at the next poll
    [[ $(metric connscope_requests_total) -ge $total ]] && break
    sleep 0.1
  done
  assert_cmp "$(metric connscope_requests_total)" '>=' "$total" "round $round: requests counted so far"
  kill -KILL "$server"
  wait "$server" 2>/dev/null || true
  for _ in $(seq 50); do
    [[ $(grep -c "no target process is running any more" "$CS_TMP/daemon.err") -ge $round ]] && break
    sleep 0.1
  done
  assert_cmp "$(grep -c "no target process is running any more" "$CS_TMP/daemon.err")" == "$round" \
    "round $round: lines saying the target is gone and connscoped waits"
  # The data stays while nobody serves.
  assert_cmp "$(metric connscope_requests_total)" '>=' "$total" "round $round: requests kept after the target died"
  fds=$(fewest_fds "$daemon")
  [[ -n $fds_after_first ]] || fds_after_first=$fds
  note "round $round: connscoped holds $fds fds besides its on-demand probes ($(on_demand_links "$daemon" | cut -d" " -f2 | xargs))"
  fd_kinds "$daemon" >"$CS_TMP/fds.$round"
done
# A leak per restart grows the count at each one: two after the first
# round. One more fd, once, is a lazily made resource (logged below; the
# kinds count the on-demand links too, which come and go, and diff's
# status 1 for files that differ must not end the test under pipefail).
{ diff "$CS_TMP/fds.1" "$CS_TMP/fds.3" || true; } | sed -n 's/^[<>]/== fds (round 1 < > round 3):/p'
assert_cmp "$fds" '<' "$((fds_after_first + 2))" "connscoped's fds after three restarts (vs after the first)"
# Nothing drains with no target: the per-packet probe goes a second after
# the last answer went out.
for _ in $(seq 10); do # half a second a look
  xmit_attached "$daemon" || break
done
xmit_attached "$daemon" && fail "the per-packet probe is still attached 5 s after the last answer"
echo "ok: the per-packet probe is not attached with nothing to follow"
record_ids "$daemon" "$CS_TMP/daemon.ids"
kill -TERM "$daemon"
rc=0; wait "$daemon" || rc=$?
assert_cmp "$rc" == 0 "connscoped's exit status on SIGTERM"
assert_bpf_gone "$CS_TMP/daemon.ids" "after connscoped's SIGTERM"

# ---- 4. ring buffer overflow

note "4a. ring buffer overflow: a request flood on keep-alive connections"
cs_start_server --workers 2
"$CS_BIN" record --pid "$SERVER_PID" --ring-mb 1 -o "$CS_TMP/flood.cstrace" 2>"$CS_TMP/flood.err" &
cs=$!; cs_pids+=("$cs")
cs_wait_attached "$CS_TMP/flood.err"
# The reader stops: 1 MiB holds about 7 700 request records of 20 000.
kill -STOP "$cs"
load flood_load -c 8 -t 2 -n 20000
kill -CONT "$cs"
sleep 0.5
kill -INT "$cs"
rc=0; wait "$cs" || rc=$?
[[ $rc -eq 0 ]] || { cat "$CS_TMP/flood.err"; fail "connscope record exited $rc"; }
lost_line=$(grep -Eo "recorded [0-9]+ records \([0-9]+ lost\)" "$CS_TMP/flood.err") || fail "no 'recorded ... lost' line"
lost=$(grep -Eo "\([0-9]+ lost" <<<"$lost_line" | tr -dc 0-9)
assert_cmp "$lost" '>' 0 "records lost while the reader was stopped ($lost_line)"
"$CS_BIN" report --json "$CS_TMP/flood.cstrace" >"$CS_TMP/flood.json" || fail "report --json failed"
"$CS_BIN" report "$CS_TMP/flood.cstrace" >"$CS_TMP/flood.txt" || fail "report failed"
assert_cmp "$(json_get "$CS_TMP/flood.json" 'j["events"]["lost"]')" == "$lost" "JSON events.lost"
head -n 1 "$CS_TMP/flood.txt" | grep -q ", $lost lost" || fail "the text report's first line lacks '$lost lost': $(head -n 1 "$CS_TMP/flood.txt")"
echo "ok: text report: $(head -n 1 "$CS_TMP/flood.txt")"
client=$(json_get "$CS_TMP/flood_load.json" 'j["requests"]')
reported=$(json_get "$CS_TMP/flood.json" 'j["requests"] + j["requests_unanswered"] + j["events"]["partial_requests"]')
# One record per request: each request the client completed is in the
# report, or its record is among the lost; none is made up.
assert_cmp "$reported" '<=' "$client" "requests reported (client: $client)"
assert_cmp "$reported" '>=' "$((client - lost))" "requests reported, less those lost (client $client, lost $lost)"
note "request flood: client $client requests, reported $reported, lost $lost records"

note "4b. ring buffer overflow: a connection flood"
"$CS_BIN" attach --pid "$SERVER_PID" --ring-mb 1 --json >"$CS_TMP/cflood.json" 2>"$CS_TMP/cflood.err" &
cs=$!; cs_pids+=("$cs")
cs_wait_attached "$CS_TMP/cflood.err"
kill -STOP "$cs"
load cflood_load -c 32 -t 2 --no-keepalive -n 8000
kill -CONT "$cs"
sleep 0.5
kill -INT "$cs"
rc=0; wait "$cs" || rc=$?
[[ $rc -eq 0 ]] || { cat "$CS_TMP/cflood.err"; fail "connscope attach exited $rc"; }
lost=$(json_get "$CS_TMP/cflood.json" 'j["events"]["lost"]')
assert_cmp "$lost" '>' 0 "records lost in the connection flood"
# The flood is over and every connection closed: a connection still
# followed lost its close record; none is stuck open without a loss.
followed=$(json_get "$CS_TMP/cflood.json" 'j["events"]["followed"]')
assert_cmp "$followed" '<=' "$lost" "connections still followed (their closes lost)"
accepts=$(json_get "$CS_TMP/cflood.json" 'sum(l["accepts"] for l in j["listeners"])')
assert_cmp "$accepts" '<=' 8000 "accepts reported (8000 connections)"
note "connection flood: $accepts accepts seen, $lost records lost, $followed connections still followed"

# The daemon's metrics count the loss too.
note "4c. ring buffer overflow under connscoped"
port=$SERVER_PORT
metrics_port=$(cs_free_port)
"$CS_DAEMON" --port "$port" --ring-mb 1 --metrics "$metrics_port" --socket "$CS_TMP/ctl2/cs.sock" 2>"$CS_TMP/daemon2.err" &
daemon=$!; cs_pids+=("$daemon")
cs_wait_port "$metrics_port"
cs_wait_attached "$CS_TMP/daemon2.err"
kill -STOP "$daemon"
load flood2 -c 32 -t 2 --no-keepalive -n 8000
kill -CONT "$daemon"
for _ in $(seq 50); do # live figures are refreshed every second
  [[ $(metric connscope_events_lost_total) -gt 0 ]] && break
  sleep 0.1
done
assert_cmp "$(metric connscope_events_lost_total)" '>' 0 "connscope_events_lost_total"
kill -TERM "$daemon"
wait "$daemon" || fail "connscoped failed after the overflow"
echo "ok: all faults handled"
