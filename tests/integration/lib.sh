# Shared helpers for integration tests. Source it; it sets `set -euo pipefail`
# and an EXIT trap that stops every process the test started.
set -euo pipefail
: "${CS_BUILD:?CS_BUILD must name the build directory}"
CS_BIN=$CS_BUILD/connscope
# connscope with the tests' hooks (tests/hooks/), for the tests that need them.
CS_TEST_BIN=$CS_BUILD/connscope-test
CS_SERVER=$CS_BUILD/csserver
CS_LOAD=$CS_BUILD/csload
CS_TMP=$(mktemp -d /tmp/cs-itest.XXXXXX)
# 1 for a build with sanitizers (mk/hygiene.mk's asan-build marks it).
CS_SANITIZED=0
[[ -e $CS_BUILD/SANITIZED ]] && CS_SANITIZED=1
# The scenarios compare connscope's p99 with what their client measured: a
# sanitized client adds its own slowness (a millisecond at p99) to what it
# measures. In a sanitized run the client is the plain build's when there
# is one (CS_PLAIN_BUILD, set by mk/hygiene.mk); test_csload tests the
# sanitized client itself.
if [[ $CS_SANITIZED == 1 && -x ${CS_PLAIN_BUILD:-}/csload ]]; then CS_LOAD=$CS_PLAIN_BUILD/csload; fi
cs_pids=()

# Every process below PID, children first found, recursively (by parent pid).
cs_descendants() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do
    echo "$child"
    cs_descendants "$child"
  done
}

# On any exit, passed or failed: stop what the test started. The recorded
# pids and everything else below this shell (a connscope started with a
# bare '&', a server forked by a wrapper, nginx's workers) get SIGTERM,
# which lets connscope detach its probes and print; whatever still runs
# 2 s later gets SIGKILL. A failed test's files (reports, client logs,
# connscope's stderr; files of 64 MiB and more left out) are kept in
# $CS_BUILD/integration/TEST.failed/ for a look afterwards. A test's own
# trap that does other work first gives cs_cleanup the status it exits with.
cs_cleanup() {
  local rc=${1:-$?} p left
  local -a all=("${cs_pids[@]}")
  all+=($(cs_descendants $$))
  for p in "${all[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 20); do
    left=0
    for p in "${all[@]}"; do kill -0 "$p" 2>/dev/null && left=1; done
    [[ $left -eq 0 ]] && break
    sleep 0.1
  done
  for p in "${all[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  # A passing test's reports: no flagged condition may contradict its evidence.
  if [[ $rc -eq 0 ]] && ! python3 "$(dirname "${BASH_SOURCE[0]}")/consistent.py" --reports-in "$CS_TMP" >&2; then
    echo "FAIL: a report's verdict contradicts its evidence (consistent.py)" >&2
    rc=1
  fi
  if [[ $rc -ne 0 && -d ${CS_BUILD:-}/integration ]]; then
    local kept=$CS_BUILD/integration/$(basename "$0" .sh).failed
    rm -rf "$kept" && mkdir -p "$kept" &&
      find "$CS_TMP" -maxdepth 1 -type f -size -64M -exec cp {} "$kept"/ \; &&
      echo "kept: $kept" >&2
  fi
  if [[ -n ${CS_NETNS:-} ]]; then ip netns del "$CS_NETNS" 2>/dev/null || true; fi
  rm -rf "$CS_TMP"
  return "$rc"
}
trap 'cs_cleanup || exit' EXIT

# Debian's interpreter: a pyenv shim, where there is one, costs 0.7 s a call.
CS_PYTHON=$(command -v python3)
if [[ -x /usr/bin/python3 ]]; then CS_PYTHON=/usr/bin/python3; fi
python3() { "$CS_PYTHON" "$@"; }

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "== $*"; }

# A TCP port nobody uses, picked at random in 20000-31999: below the
# ephemeral range (32768-60999), where client sockets would collide.
cs_free_port() {
  local port
  for _ in $(seq 50); do
    port=$((20000 + RANDOM % 12000))
    if ! ss -Htan "sport = :$port" | grep -q .; then echo "$port"; return; fi
  done
  fail "no free port found"
}

# Wait until something listens on 127.0.0.1:$1 (at most 5 s).
cs_wait_port() {
  for _ in $(seq 100); do
    cs_netns_exec ss -Htln "sport = :$1" | grep -q . && return 0
    sleep 0.05
  done
  fail "nothing listens on port $1 after 5 s"
}

# cs_start_server ARGS...: starts the reference server on a free port.
# Sets SERVER_PID and SERVER_PORT.
cs_start_server() {
  SERVER_PORT=$(cs_free_port)
  # (ip netns exec execs the server after setns: $! is the server's pid)
  ${CS_NETNS:+ip netns exec "$CS_NETNS"} ${CS_SERVER_WRAP:-} "$CS_SERVER" --port "$SERVER_PORT" "$@" >"$CS_TMP/server.$SERVER_PORT.log" 2>&1 &
  SERVER_PID=$!
  cs_pids+=("$SERVER_PID")
  cs_wait_port "$SERVER_PORT"
}

# Run a command in the background, remembered for cleanup. Sets BG_PID to
# the program's own pid: a shell function would run in a subshell whose pid
# is not the program's (killing it would leave the program running), so python3 is resolved to the interpreter and other functions
# are refused.
cs_bg() {
  if [[ $1 == python3 ]]; then
    set -- "$CS_PYTHON" "${@:2}"
  elif [[ $(type -t "$1") == function ]]; then
    fail "cs_bg: '$1' is a shell function: give it a program"
  fi
  "$@" &
  BG_PID=$!
  cs_pids+=("$BG_PID")
}

# jq-free JSON reading: python3 is on every Debian image we use.
# json_get FILE EXPR: prints the value of the Python expression EXPR over `j`.
# netstat_counter NAME: the TcpExt counter NAME (e.g. ListenOverflows) of
# the test's network namespace (the machine's, unless cs_private_netns).
netstat_counter() {
  cs_netns_exec cat /proc/net/netstat |
    awk -v name="$1" '/^TcpExt:/ { if (!h) { for (i = 1; i <= NF; i++) col[$i] = i; h = 1 } else print $col[name] }'
}

# cs_private_netns: the rest of the test runs its servers (cs_start_server)
# and the commands given to cs_netns_exec in a network namespace of its
# own, with its own loopback and its own kernel counters: a test that
# compares with the kernel's counters then shares the machine with other
# tests. Deleted at the test's end.
cs_private_netns() {
  CS_NETNS=cs-itest-$$
  ip netns add "$CS_NETNS" || fail "cannot make network namespace $CS_NETNS"
  ip -n "$CS_NETNS" link set lo up || fail "cannot bring up lo in $CS_NETNS"
}

# cs_netns_exec CMD...: CMD in the test's namespace (cs_private_netns), or
# here when it has none.
cs_netns_exec() {
  if [[ -n ${CS_NETNS:-} ]]; then ip netns exec "$CS_NETNS" "$@"; else "$@"; fi
}

# cs_wait_closed PORT [NETNS]: until the server on PORT (in NETNS, an `ip
# netns` name) has closed every connection its clients left, 10 s at most.
# A request ends at the next one or at the server's close: the server's
# send probe runs after the bytes reached a loopback client, which may
# read them, close and exit first. Stopping connscope when the client
# exits can leave the last requests unended (in progress at the stop).
cs_wait_closed() {
  local -a exec=()
  [[ -n ${2:-} ]] && exec=(ip netns exec "$2")
  for _ in $(seq 100); do
    "${exec[@]}" ss -Htan state established state close-wait "sport = :$1" | grep -q . || return 0
    sleep 0.1
  done
  "${exec[@]}" ss -Htan "sport = :$1" >&2
  fail "the server on port $1 still holds connections 10 s after its clients left"
}

# Attaching to a load already running, and comparing with what its client
# logged (csload --log: a line per request, its send and answer times) over
# connscope's own window.
cs_monotonic_ns() { python3 -c 'import time; print(time.monotonic_ns())'; }
# cs_attach_window NAME SECONDS: connscope attach to $SERVER_PID for
# SECONDS, its report in $CS_TMP/NAME.json; WINDOW_FROM_NS and
# WINDOW_TO_NS are the times its probes were live, from the report's own
# run.live_from_mono_ns and live_to_mono_ns: the test's view of the attach
# lags (a poll, a process start), most of all on a busy machine, and the
# requests of that lag are connscope's. CS_ON_ATTACHED and CS_ON_STOPPING,
# as for cs_profile, run when the attach is seen and before the stop (a
# server's own count read over about the same window); and CS_ATTACH_OPTS,
# as for cs_profile, are more options of the attach. The attach keeps its
# event stream in $CS_TMP/NAME.cstrace (a failed test's files keep it), and
# the stream's replay must give the attach's report, all but its run's
# times (the live window is the attach's to know).
cs_attach_window() {
  local name=$1 seconds=$2 cs
  "$CS_BIN" attach --pid "$SERVER_PID" --json -o "$CS_TMP/$name.cstrace" ${CS_ATTACH_OPTS:-} \
    >"$CS_TMP/$name.json" 2>"$CS_TMP/$name.err" &
  cs=$!
  cs_pids+=("$cs")
  cs_wait_attached "$CS_TMP/$name.err"
  eval "${CS_ON_ATTACHED:-}"
  sleep "$seconds"
  eval "${CS_ON_STOPPING:-}"
  kill -INT "$cs"
  wait "$cs" || { cat "$CS_TMP/$name.err"; fail "connscope failed ($name)"; }
  read -r WINDOW_FROM_NS WINDOW_TO_NS < <(json_get "$CS_TMP/$name.json" \
    '"%d %d" % (j["run"]["live_from_mono_ns"], j["run"]["live_to_mono_ns"])')
  "$CS_BIN" report --json "$CS_TMP/$name.cstrace" >"$CS_TMP/$name.replay.json" \
    || fail "connscope report of the attach's stream failed ($name)"
  python3 - "$CS_TMP/$name.json" "$CS_TMP/$name.replay.json" <<'PY' || fail "the attach's stream replayed is not the attach's report ($name)"
import json, sys
live, replay = (json.load(open(p)) for p in sys.argv[1:3])
def differences(a, b, path):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if path == "" and k == "run":
                continue
            yield from differences(a.get(k), b.get(k), path + "." + k)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from differences(x, y, "%s[%d]" % (path, i))
    elif a != b:
        yield "%s: attach %s, replay %s" % (path, a, b)
found = list(differences(live, replay, ""))
for line in found[:10]:
    print(line, file=sys.stderr)
if found:
    sys.exit(1)
print("ok: the attach's stream replayed gives its report (%d requests)" % live["requests"])
PY
}
# cs_stop_load PID: a csload whose run the test no longer needs (its window
# is over) stops, as Ctrl-C stops it: it exits 0 with its JSON and log
# written. Its --duration stays the bound when an attach is slow. (A
# quarter of a second first: every connection sends its next request, which
# tells cs_client_window whose records came after the window.)
cs_stop_load() {
  sleep 0.25
  kill -INT "$1" 2>/dev/null || true
  wait "$1" || fail "csload failed"
}

# cs_client_window LOG: "COUNT P99_US RUNNING_P99_US" of the client's
# requests sent and answered within the window whose record connscope
# could have had by its end: a request's record is written when the next
# request's bytes come on its connection, or at its close (the last on its
# port: the server closed it, or the client reconnected), so one answered
# just before the stop, its next sent after, has none yet. Its p99 from
# the send, and (csload --busy-poll) from the send less the client's own
# waits for a CPU (the log's 8th column; from the send when not measured).
cs_client_window() {
  python3 - "$1" "$WINDOW_FROM_NS" "$WINDOW_TO_NS" <<'PY'
import collections, sys
log, low, high = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
by_port = collections.defaultdict(list)
for line in open(log):
    f = line.split()
    running = f[7] if len(f) > 7 and f[7].isdigit() else None
    by_port[f[4]].append((int(f[1]), int(f[2]), running))
rows = []
for requests in by_port.values():
    requests.sort()
    for (sent, done, running), following in zip(requests, requests[1:] + [None]):
        if sent >= low and done <= high and (not following or following[0] <= high):
            rows.append(((done - sent) / 1000, (int(running) if running else done - sent) / 1000))
def p99(values):
    values = sorted(values)
    return values[max(0, -(-len(values) * 99 // 100) - 1)] if values else 0
print(len(rows), p99(r[0] for r in rows), p99(r[1] for r in rows))
PY
}

# assert_window_p99_agrees SERVER_JSON CLIENT_LOG: as assert_p99_agrees,
# for the requests of an attach's window alone, from the client's log: the
# client's p99 over its whole run counts the attach itself (the programs'
# load, a burst of CPU on a busy machine) that connscope cannot see. The
# window's connections are open ones: the send is both bounds, less the
# client's own waits for a CPU for the lower.
assert_window_p99_agrees() {
  local server count from_send running
  server=$(json_get "$1" 'j["latency_us"]["p99"]')
  read -r count from_send running < <(cs_client_window "$2")
  assert_p99_between "$server" "$running" "$from_send" \
    "client $running us from the send, less its waits for a CPU ($count requests in the window)" \
    "client $from_send us from the send ($count requests in the window)"
}

# cs_client_adoptable LOG: how many of the client's connections connscope
# adopts over the window: those older than it (a request sent before
# WINDOW_FROM_NS) that sent another within it. A server that closes a
# connection after the request in flight at the attach (Tomcat's
# maxKeepAliveRequests, every 100th request) leaves it no idle moment to
# be adopted at; the client's reconnection is a new connection.
cs_client_adoptable() {
  awk -v from="$WINDOW_FROM_NS" -v to="$WINDOW_TO_NS" '
    $2 < from { older[$5] = 1 }
    $2 >= from && $3 <= to { within[$5] = 1 }
    END { n = 0; for (port in older) if (port in within) n++; print n }' "$1"
}

json_get() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

# assert_cmp A OP B [what]: numeric comparison with floats, OP one of < <= > >= ==.
# (awk, not python3: a test makes hundreds of these, and python3's start
# costs 20-30 ms of CPU each; a value that is not a number fails.)
assert_cmp() {
  awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {
    number = "^[ \t]*[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?[ \t]*$"
    if (a !~ number || b !~ number) { print "assert_cmp: not a number: \"" a "\" or \"" b "\"" > "/dev/stderr"; exit 2 }
    a += 0; b += 0
    if (op == "<") ok = a < b; else if (op == "<=") ok = a <= b
    else if (op == ">") ok = a > b; else if (op == ">=") ok = a >= b
    else if (op == "==") ok = a == b; else if (op == "!=") ok = a != b
    else { print "assert_cmp: unknown operator " op > "/dev/stderr"; exit 2 }
    exit !ok
  }' || fail "${4:-check}: expected $1 $2 $3"
  echo "ok: ${4:-check}: $1 $2 $3"
}

# cs_wait_attached STDERR_FILE: wait (at most 15 s) until connscope says
# its probes are in, so that no request is missed however slow the start.
cs_wait_attached() {
  for _ in $(seq 150); do
    grep -q "attached to" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  cat "$1" >&2
  fail "connscope did not attach within 15 s"
}

# cs_profile NAME CLIENT_CMD...: records $SERVER_PID with connscope while
# the client command runs, stops the recording (as Ctrl-C would), and
# replays the trace into a JSON report, $CS_TMP/NAME.json: every scenario
# goes through record and replay. With CS_FIXTURES_OUT set, the trace is
# kept there as NAME.cstrace (tests/fixtures/ holds such traces).
cs_profile() {
  local name=$1; shift
  local trace=$CS_TMP/$name.cstrace
  "$CS_BIN" record --pid "$SERVER_PID" --duration 120 -o "$trace" ${CS_ATTACH_OPTS:-} \
    2>"$CS_TMP/$name.err" &
  local cs=$!
  cs_pids+=("$cs")
  cs_wait_attached "$CS_TMP/$name.err"
  # A test that compares with the kernel over connscope's own window sets
  # these to commands run just after the attach and just before the stop.
  eval "${CS_ON_ATTACHED:-}"
  "$@" || { kill -INT "$cs"; fail "client failed: $*"; }
  sleep 0.3 # let the last closes arrive
  eval "${CS_ON_STOPPING:-}"
  kill -INT "$cs"
  wait "$cs" || { cat "$CS_TMP/$name.err"; fail "connscope record failed ($name)"; }
  "$CS_BIN" report --json "$trace" >"$CS_TMP/$name.json" || fail "connscope report failed ($name)"
  if [[ -n ${CS_FIXTURES_OUT:-} ]]; then cp "$trace" "$CS_FIXTURES_OUT/$name.cstrace"; fi
  if [[ -n ${CS_TRACES_OUT:-} ]]; then cs_keep_trace "$trace" "$(basename "$0" .sh).$name"; fi
}

# cs_keep_trace FILE NAME: kept as NAME.cstrace for the sanitized build's
# replay (tests/integration/run.sh), whole or not at all: it may be
# replaying while this test runs.
cs_keep_trace() {
  cp "$1" "$CS_TRACES_OUT/$2.partial" && mv "$CS_TRACES_OUT/$2.partial" "$CS_TRACES_OUT/$2.cstrace"
}

# daemon_links PID: the tracepoints the daemon's links hold now, one per line
# ("tp:NAME" for raw tracepoints, "prog:NAME" for the others). Its links are
# the bpf-link descriptors in /proc/PID/fdinfo; bpftool names them.
daemon_links() {
  python3 - "$1" "$(bpftool -j link show)" "$(bpftool -j prog show)" <<'PY'
import glob, json, sys
pid, links, progs = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
ids = set()
for path in glob.glob(f"/proc/{pid}/fdinfo/*"):
    try:
        for line in open(path):
            if line.startswith("link_id:"):
                ids.add(int(line.split()[1]))
    except OSError:
        pass
# (bpftool lists {"error": ...} for a link or program that went away while it listed: a window's edge)
names = {p["id"]: p.get("name", "?") for p in progs if "id" in p}
for link in links:
    if link.get("id") in ids:
        print(f"tp:{link['tp_name']}" if "tp_name" in link else f"prog:{names.get(link['prog_id'], '?')}")
PY
}

# assert_p99_agrees SERVER_JSON CLIENT_JSON: connscope's server-side p99
# agrees, within 10 % or 1 ms (whichever is larger), with the client's
# timing of the same requests. On an open connection the client times a
# request from its send: one number. On a new connection the server sees
# at most from the client's connect (service_us: a dropped SYN's wait and
# the accept queue count) and at least from the client's send (from_send_us):
# the client's own time between connect and send (one thread starting
# eight connections, a preemption) is no server's, unless the connection
# sat in the accept queue meanwhile. A percentile keeps a per-request
# order, so connscope's p99 must lie between the client's two p99s.
# csload's latency_us also counts the client's lateness in waking up to
# send, which no server can see; and scenarios that compare run csload with
# --busy-poll, so that the client does not add its wake-up lag (up to
# milliseconds on a VM) to its reading of the response either. On a busy
# machine the client itself waits for a CPU (spinning, or woken and not
# yet run), and reads responses late by that much: it times each request
# less its own waits (from_send_running_us, from its thread's schedstat),
# and that is the lower bound then.
assert_p99_agrees() {
  local server from_connect from_send
  server=$(json_get "$1" 'j["latency_us"]["p99"]')
  from_connect=$(json_get "$2" 'j["service_us"]["p99"]')
  from_send=$(json_get "$2" 'j.get("from_send_running_us", j["from_send_us"])["p99"]')
  assert_p99_between "$server" "$from_send" "$from_connect" "client $from_send us from the send" \
    "client $from_connect us from the connect"
}

# assert_p99_between SERVER_US LOW_US HIGH_US LOW_WHAT HIGH_WHAT: connscope's
# p99 within the client's two, each less or plus its tolerance (10 % or 1 ms).
assert_p99_between() {
  local low high
  read -r low high < <(python3 -c "t = lambda x: max(0.1 * x, 1000.0)
print($2 - t($2), $3 + t($3))")
  assert_cmp "$1" '>=' "$low" "p99 agreement: connscope $1 us vs $4"
  assert_cmp "$1" '<=' "$high" "p99 agreement: connscope $1 us vs $5"
}

# top_cause JSON: the tail's largest cause.
top_cause() { json_get "$1" 'j["tail"]["causes"][0]["cause"]'; }

# assert_leads_unless_starved REPORT CAUSE TOP_SHARE WHAT: CAUSE is the
# tail's top cause; or, where the kernel says the server's busiest thread
# waited for a CPU 4 % of the run or more (TOP_SHARE, from runq_delta:
# connscope's cpu_saturation threshold less a fifth), run_queue may lead,
# and CAUSE must then come next. WHAT prefixes the log's lines.
assert_leads_unless_starved() {
  local top second busy
  top=$(top_cause "$1")
  busy=$(python3 -c "print(int($3 >= 0.04))")
  if [[ $top == run_queue && $busy == 1 ]]; then
    second=$(json_get "$1" 'j["tail"]["causes"][1]["cause"]')
    [[ $second == "$2" ]] || fail "${4}run_queue leads on this busy machine, then $second, expected $2"
    echo "ok: ${4}run_queue leads on this busy machine, then $2"
  else
    [[ $top == "$2" ]] || fail "${4}the tail's top cause is $top, expected $2 (the busiest thread waited $3 of the run for a CPU)"
    echo "ok: ${4}$2 leads the tail"
  fi
}

# note_upstream_tail REPORT CLIENT_JSON: the p99s, the tail's causes, the
# upstream cause's evidence and the upstreams, for the log.
note_upstream_tail() {
  note "p99: connscope $(json_get "$1" 'j["latency_us"]["p99"]') us, the client $(json_get "$2" 'j["from_send_us"]["p99"]') us from its send"
  note "tail: $(json_get "$1" '", ".join("%s %.1f%%" % (c["cause"], 100 * c["share"]) for c in j["tail"]["causes"] if c["share"] >= 0.005)')"
  note "upstream evidence: $(json_get "$1" '" ".join(c["evidence"] for c in j["tail"]["causes"] if c["cause"] == "upstream")')"
  note "upstreams: $(json_get "$1" 'j["upstreams"]')"
}

# assert_upstream_leads REPORT PORT WHAT: upstream is the tail's top cause
# and its evidence names PORT (WHAT: whose port it is, for the log).
assert_upstream_leads() {
  [[ $(top_cause "$1") == upstream ]] || fail "the tail's top cause is $(top_cause "$1"), expected upstream"
  echo "ok: upstream leads the tail"
  assert_cmp "$(json_get "$1" '[c for c in j["tail"]["causes"] if c["cause"] == "upstream"][0]["figures"]["upstream_port"]')" \
    == "$2" "the evidence names $3"
}

# flagged JSON: the conditions flagged, space-separated (empty: none).
flagged() { json_get "$1" '" ".join(k for k, v in j["conditions"].items() if isinstance(v, dict) and v.get("flagged"))'; }

# cs_flamegraph ERRFILE CLIENT_CMD... -- FLAMEGRAPH_ARGS...: runs connscope
# flamegraph while the client runs, then stops it as Ctrl-C would.
cs_flamegraph() {
  local err=$1; shift
  local client=()
  while [[ $1 != -- ]]; do client+=("$1"); shift; done
  shift
  "$CS_BIN" flamegraph --duration 120 "$@" 2>"$err" &
  local cs=$!
  cs_wait_attached "$err"
  "${client[@]}" || { kill -INT "$cs"; fail "client failed: ${client[*]}"; }
  sleep 0.3
  kill -INT "$cs"
  wait "$cs" || { cat "$err"; fail "connscope flamegraph failed"; }
  cat "$err"
}

# The total connscope says the graph holds, in microseconds.
reported_total_us() { sed -n 's/.*; total \([0-9]*\) us;.*/\1/p' "$1"; }

# pool_stacks FOLDED CAUSE REGEX: how much of CAUSE's time (a pool's
# wait: worker_pool, or accept_queue in an accept pool) the graph fills
# with the pool threads' stacks, and how much with stacks that have a
# frame matching REGEX (the code that kept the pool busy); prints both,
# the widest frames under the pool's frame (of equal widths, the nearer
# the leaf first: a whole stack's root frames are as wide as its leaf's)
# and the widest path, the widest frame at each level as one reads the
# graph. Fails unless REGEX's stacks hold most of the cause's time.
pool_stacks() {
  python3 - "$@" <<'EOF'
import re, sys
folded, cause, pattern = sys.argv[1], sys.argv[2], re.compile(sys.argv[3])
POOL = re.compile(r"\[pool (threads|workers) busy\]")
total = stacked = matched = 0
widths, depths, tree = {}, {}, {}
for line in open(folded):
    frames, weight = line.rsplit(" ", 1)
    frames, weight = frames.split(";"), int(weight)
    if len(frames) < 3 or frames[2] != cause:
        continue
    total += weight
    if len(frames) > 5 and POOL.fullmatch(frames[3]) and frames[4] in ("on-cpu", "off-cpu", "runnable"):
        stacked += weight
        for depth, name in enumerate(frames[5:]):
            depths[name] = max(depths.get(name, 0), depth)
        for name in set(frames[5:]):
            widths[name] = widths.get(name, 0) + weight
        if any(pattern.search(f) for f in frames[5:]):
            matched += weight
        level = tree
        for name in frames[4:]:
            node = level.setdefault(name, [0, {}])
            node[0] += weight
            level = node[1]
if not total:
    sys.exit("no %s time in the tail" % cause)
top = sorted(widths.items(), key=lambda kv: (-kv[1], -depths[kv[0]]))[:8]
print("%s: %d us; under %s with stacks %.0f%%, through /%s/ %.0f%%" %
      (cause, total, POOL.pattern, 100.0 * stacked / total, pattern.pattern, 100.0 * matched / total))
print("  widest frames: " + ", ".join("%s %.0f%%" % (n, 100.0 * w / total) for n, w in top))
path, level = [], tree
while level:
    name, (width, level) = max(level.items(), key=lambda kv: kv[1][0])
    path.append("%s %.0f%%" % (name, 100.0 * width / total))
print("  widest path: " + "; ".join(path))
sys.exit(0 if matched * 2 > total else 1)
EOF
}

# The kernel's own account of a process's waits for a CPU: the sum over its
# threads of run_delay (ns runnable but not running; /proc/PID/task/*/
# schedstat, second field), as "TID NS" lines. Tests take it before and
# after a run and give the difference (runq_delta) to assertions that
# depend on how busy the machine was.
runq_snapshot() { # runq_snapshot PID FILE
  local f
  : >"$2"
  for f in /proc/"$1"/task/*/schedstat; do
    local tid=${f%/schedstat}; tid=${tid##*/}
    awk -v tid="$tid" '{ print tid, $2 }' "$f" 2>/dev/null >>"$2" || true
  done
}

# cpu_pressure_us: the machine's CPU pressure so far (/proc/pressure/cpu,
# "some" total): microseconds during which at least one task was ready to
# run and waited for a CPU. Its growth over a run, divided by the run's
# length, is the share of the run in which the machine was short of CPUs.
cpu_pressure_us() { awk '$1 == "some" { sub("total=", "", $5); print $5 }' /proc/pressure/cpu; }

# runq_delta BEFORE AFTER SECONDS: "TOTAL_US TOP_US TOP_SHARE": the waits
# for a CPU of the process's threads between the two snapshots, all of them
# and the thread that waited most, its share of SECONDS.
runq_delta() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
def load(path):
    return {l.split()[0]: int(l.split()[1]) for l in open(path) if len(l.split()) == 2}
before, after = load(sys.argv[1]), load(sys.argv[2])
deltas = [after[t] - before.get(t, 0) for t in after]
total, top = sum(deltas), max(deltas or [0])
print("%.0f %.0f %.4f" % (total / 1e3, top / 1e3, top / (float(sys.argv[3]) * 1e9)))
PY
}

# The real servers and their profiles.
source "$(dirname "${BASH_SOURCE[0]}")/lib_servers.sh"
