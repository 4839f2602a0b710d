#!/usr/bin/env bash
# Virtual threads on a JDK 21 or later (Temurin 25 on these machines;
# Debian 12 packages none): the JDK's HttpServer with a virtual thread per
# request (tests/integration/jvm/CsLoom.java) on one carrier
# (-Djdk.virtualThreadScheduler.parallelism=1, maxPoolSize=1), 2 % of
# requests spinning 40 ms on the CPU; 16 keep-alive clients at 150
# requests/s. The dispatcher hands each request to a virtual thread, which
# waits for the carrier while a spinning one holds it. Then, attached again
# to the same JVM, 2 % of requests read a line from a FIFO instead, which
# a writer fills every 100 ms or so: file I/O blocks the carrier, holding
# its virtual thread (pinned), and no carrier is added (maxPoolSize=1).
#
# Last, a thread per connection on virtual threads (jvm/CsVtSockets.java)
# with the JDK's pollers on platform threads of their own
# (-Djdk.pollerMode=1): the poller that wakes the virtual threads is told
# apart from the carrier that runs them.
#
# What is asserted: the carrier (the JVM's ForkJoinPool-1-worker-1) has
# the role carrier and no other, and read the requests; worker_pool is in
# the tail, its evidence says virtual threads, names the carrier and gives
# Loom's advice: for the spinning handlers, CPU-bound work off virtual
# threads or more parallelism; for the FIFO, pinned, with the time the
# carrier was blocked; each told from the handlers' own time on a CPU,
# request by request (the carrier's totals hold its waits for a CPU, which
# a busy machine makes long).
# integration: plain build
source "$(dirname "$0")/lib.sh"

# The newest JDK of 21 or later in the system's JVM directory.
java=
for candidate in /usr/lib/jvm/*/bin/java; do
  version=$("$candidate" -XshowSettings:properties -version 2>&1 | awk -F' = ' '/java.specification.version/ { print $2 }')
  [[ $version =~ ^[0-9]+$ ]] && ((version >= 21)) && java=$candidate
done
[[ -n $java ]] || fail "no JDK 21 or later in /usr/lib/jvm (virtual threads need one; these machines have Temurin 25 there)"
note "JDK: $java"
"${java%/java}/javac" -d "$CS_TMP/classes" "$(dirname "$0")/jvm/CsLoom.java" \
  "$(dirname "$0")/jvm/CsVtSockets.java" || fail "javac CsLoom.java CsVtSockets.java"

port=$(cs_free_port)
cs_bg "$java" -Djdk.virtualThreadScheduler.parallelism=1 -Djdk.virtualThreadScheduler.maxPoolSize=1 \
  -Dsun.net.httpserver.nodelay=true -cp "$CS_TMP/classes" CsLoom "$port" 40 "$CS_TMP/fifo"
mkfifo "$CS_TMP/fifo" || fail "mkfifo"
SERVER_PID=$BG_PID
for _ in $(seq 300); do ss -Htln "sport = :$port" | grep -q . && break; sleep 0.05; done
cs_wait_port "$port"
"$CS_LOAD" --port "$port" --connections 16 --rate 150 --duration 1 --quiet >/dev/null || fail "warm-up load failed"

cs_profile loom "$CS_LOAD" --port "$port" --connections 16 --rate 150 --duration 3 --mix /spin:0.02 --quiet
r=$CS_TMP/loom.json
note "causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]')"
note "threads $(json_get "$r" 'sorted((t["tid"], t["java_name"], t["roles"], t["requests"]) for t in j["threads"] if t["roles"])')"
carriers=$(json_get "$r" "[t['java_name'] for t in j['threads'] if 'carrier' in t['roles']]")
[[ $carriers == "['ForkJoinPool-1-worker-1']" ]] || fail "the carriers are $carriers, expected ['ForkJoinPool-1-worker-1']"
echo "ok: the carrier ForkJoinPool-1-worker-1 has the role carrier"
assert_cmp "$(json_get "$r" "sum(len(t['roles']) for t in j['threads'] if 'carrier' in t['roles'])")" '==' 1 \
  "roles of the carrier beside carrier"
assert_cmp "$(json_get "$r" "sum(t['requests'] for t in j['threads'] if 'carrier' in t['roles'])")" '>=' \
  "$(json_get "$r" 'j["requests"] * 0.9')" "requests the carrier read"
evidence=$(json_get "$r" "''.join(c['evidence'] for c in j['tail']['causes'] if c['cause'] == 'worker_pool' and c['share'] > 0)")
note "worker_pool: $evidence"
[[ $evidence == "virtual threads waited "*"(ForkJoinPool-1-worker-1, tid "*"jdk.virtualThreadScheduler.parallelism" ]] ||
  fail "worker_pool's evidence does not speak of virtual threads and their carrier: '$evidence'"
echo "ok: worker_pool's evidence: virtual threads, the carrier, Loom's advice"
# Told from the handlers' own CPU time, request by request (a busy machine's
# waits for a CPU are no part of it).
[[ $evidence == *"its handlers on the CPU "*"% of their time counting each by its length: "* ]] ||
  fail "worker_pool's evidence does not give the handlers' time on the CPU: '$evidence'"
echo "ok: the spinning handlers told by their own time on the CPU"

# ---- a carrier pinned in file I/O
# The writer: a line every 100 ms or so while the run lasts, each write
# given up after a second without a reader (bounded: 60 writes at most;
# a write given up is no failure).
(for _ in $(seq 60); do timeout 1 sh -c "echo x > '$CS_TMP/fifo'" || true; sleep 0.1; done) &
writer=$!
cs_pids+=("$writer")
cs_profile pinned "$CS_LOAD" --port "$port" --connections 16 --rate 150 --duration 3 --mix /fifo:0.02 --quiet
kill "$writer" 2>/dev/null
r=$CS_TMP/pinned.json
note "pinned: causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]')"
evidence=$(json_get "$r" "''.join(c['evidence'] for c in j['tail']['causes'] if c['cause'] == 'worker_pool' and c['share'] > 0)")
note "worker_pool: $evidence"
[[ $evidence == "virtual threads waited "*"(ForkJoinPool-1-worker-1, tid "*"pinned: the carrier was blocked off its CPU "*"% counting each handler by its length)"* ]] ||
  fail "worker_pool's evidence does not say the carrier was pinned: '$evidence'"
echo "ok: worker_pool's evidence: pinned, the carrier, the time it was blocked"

# ---- the JDK's own poller, a platform thread apart from the carrier
kill "$SERVER_PID" 2>/dev/null
port=$(cs_free_port)
cs_bg "$java" -Djdk.pollerMode=1 -Djdk.virtualThreadScheduler.parallelism=1 -cp "$CS_TMP/classes" CsVtSockets "$port"
SERVER_PID=$BG_PID
cs_wait_port "$port"
cs_profile pollers "$CS_LOAD" --port "$port" --connections 8 --rate 300 --duration 2 --quiet
r=$CS_TMP/pollers.json
note "pollers: threads $(json_get "$r" 'sorted((t["java_name"], t["roles"], t["requests"]) for t in j["threads"] if t["roles"])')"
poller_roles=$(json_get "$r" "[t['roles'] for t in j['threads'] if t['java_name'] == 'Read-Poller']")
[[ $poller_roles == "[['poller']]" ]] || fail "the JDK's Read-Poller has the roles $poller_roles, expected [['poller']]"
carriers=$(json_get "$r" "[t['java_name'] for t in j['threads'] if 'carrier' in t['roles']]")
[[ $carriers == "['ForkJoinPool-1-worker-1']" ]] || fail "the carriers are $carriers, expected ['ForkJoinPool-1-worker-1']"
echo "ok: the JDK's poller is a poller, the carrier the one carrier"
