#!/usr/bin/env bash
# Tomcat 10 (Debian's tomcat10, NIO connector) with a pool of 4 threads
# (maxThreads) and a JSP that blocks its thread 10 ms. 12 keep-alive
# connections send their next request as soon as the last is answered:
# every request queues behind about 8 others for a pool thread. Tomcat's
# acceptor accepts, its poller waits in epoll_wait(), its exec threads read
# and serve: worker_pool leads the tail, pool_saturation is flagged, and the
# threads' roles are found from what they did (their names are all
# "http-nio-127.0."): one acceptor, a poller, 4 workers. At the end
# connscope asks the JVM for its threads' names: the roles' threads are
# the ones Tomcat named Acceptor, Poller and exec-N. Then connscope
# flamegraph: worker_pool's time is the pool threads' sleep in the JSP.
# integration: exclusive
# integration: plain build
# Runs alone: connscope's p99 is compared with the client's (see scenario 6).
source "$(dirname "$0")/lib.sh"

cs_start_tomcat 'maxThreads="4" minSpareThreads="4" acceptCount="100"' block.jsp '<% Thread.sleep(10); %>ok'
port=$TOMCAT_PORT
# Jasper compiles the JSP on its first request: not part of what is measured.
curl -sf --max-time 30 "http://127.0.0.1:$port/block.jsp" | grep -q ok || fail "the JSP does not answer"

cs_profile tomcat "$CS_LOAD" --port "$port" --connections 12 --duration 3 --path /block.jsp \
  --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/tomcat.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]'), flagged: '$(flagged "$r")'"
note "roles $(json_get "$r" 'sorted((t["tid"], t["roles"], t["requests"]) for t in j["threads"] if t["roles"])')"

# The pool's wait leads what the server was told to do. The JVM's own
# pauses (longer on a busy machine: threads wait for a CPU to reach the
# safepoint) and the run queue are the machine's: measured, and set aside
# for this comparison.
lead=$(json_get "$r" '[c["cause"] for c in j["tail"]["causes"] if c["cause"] not in ("runtime_pause", "run_queue")][0]')
[[ $lead == worker_pool ]] || fail "top tail cause is $lead, expected worker_pool"
echo "ok: top cause worker_pool (beside the machine's: $(top_cause "$r") first)"
flags=$(flagged "$r")
[[ " $flags " == *" pool_saturation "* ]] || fail "pool_saturation not flagged (flagged: $flags)"
[[ " $flags " != *" accept_contention "* ]] || fail "accept_contention flagged for 12 connections accepted once"
echo "ok: pool_saturation flagged, accept_contention not"
count_role() { json_get "$r" "sum(1 for t in j['threads'] if '$1' in t['roles'])"; }
assert_cmp "$(count_role acceptor)" '==' 1 "threads with the role acceptor"
assert_cmp "$(count_role poller)" '>=' 1 "threads with the role poller"
assert_cmp "$(count_role worker)" '==' 4 "threads with the role worker (maxThreads)"
assert_cmp "$(count_role event_loop)" '==' 0 "threads with the role event_loop"
assert_p99_agrees "$r" "$CS_TMP/client.json"
# The JVM's own names, asked through its attach mechanism at the end: each
# role's threads are the ones Tomcat named for that job.
note "java names $(json_get "$r" 'sorted((t["roles"], t["java_name"]) for t in j["threads"] if t["roles"])')"
names_ok() { # names_ok ROLE REGEX: every thread with ROLE has a java_name matching REGEX
  json_get "$r" "all(__import__('re').fullmatch(r'$2', t['java_name'] or '') for t in j['threads'] if '$1' in t['roles'])"
}
[[ $(names_ok acceptor "http-nio-.*-$port-Acceptor") == True ]] || fail "the acceptor is not Tomcat's Acceptor thread"
[[ $(names_ok poller "http-nio-.*-$port-Poller") == True ]] || fail "a poller is not Tomcat's Poller thread"
[[ $(names_ok worker "http-nio-.*-$port-exec-[0-9]+") == True ]] || fail "a worker is not one of Tomcat's exec threads"
echo "ok: the acceptor, poller and workers carry Tomcat's names for them"
"$CS_BIN" report "$CS_TMP/tomcat.cstrace" >"$CS_TMP/tomcat.txt" || fail "text report failed"
grep -q -- "-$port-Poller" "$CS_TMP/tomcat.txt" || fail "the text report does not show the names"
grep -A1 '! pool_saturation' "$CS_TMP/tomcat.txt" | sed 's/^/== /'
echo "ok: the text report shows them"

# The flame graph of the same pool: a request's worker_pool wait is the
# time the 4 pool threads spent on other requests, in the JSP's
# Thread.sleep, which parks the thread in a futex wait. glibc and libjvm
# keep no frame pointers: the user stacks are unwound from a copy of each
# by the files' CFI, up from glibc's futex wrapper through libjvm's
# JVM_Sleep to the JSP and the thread's start. JVM_Sleep under [pool
# threads busy] holds most of worker_pool's time. An idle pool thread
# waits in a futex too, but it is not serving, so its stacks are not the
# pool's.
cs_flamegraph "$CS_TMP/fg.err" \
  "$CS_LOAD" --port "$port" --connections 12 --duration 1 --path /block.jsp --quiet -- \
  --pid "$SERVER_PID" -o "$CS_TMP/pool.folded" >/dev/null
pool_stacks "$CS_TMP/pool.folded" worker_pool '^JVM_Sleep$' \
  || fail "the JSP's sleep (JVM_Sleep) does not fill worker_pool's time with the pool threads' stacks"
echo "ok: worker_pool's time is the pool threads' sleep in the JSP, through JVM_Sleep"
