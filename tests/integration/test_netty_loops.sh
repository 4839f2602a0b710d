#!/usr/bin/env bash
# Netty 4 (Debian's libnetty-java): a small HTTP server of our own
# (tests/integration/netty/CsNetty.java) with one boss loop and 2 event
# loops running the handlers; 2 % of requests block their loop 50 ms. The
# requests queued behind them on that loop wait with their data ready:
# event_loop leads the tail. (As in scenario 6: at 600 requests/s about 15
# arrive on a loop during each block, enough that the waiting, not the
# blocking request, is the tail; at 3 % of 20 ms and 300/s the two were
# even and the handler led now and then.) Roles from behaviour (the JVM names its
# threads, the kernel sees nioEventLoopGroup-N-M cut to 15 characters):
# the boss accepts (acceptor), the 2 loops poll and read what they polled
# (event_loop), nobody is a poller or a worker.
# integration: exclusive
# integration: plain build
# Runs alone: connscope's p99 is compared with the client's (see scenario 6).
source "$(dirname "$0")/lib.sh"

cs_start_netty 2 0
port=$NETTY_PORT

cs_profile netty "$CS_LOAD" --busy-poll --port "$port" --connections 32 --rate 600 --duration 3 \
  --mix /block/50:0.02 --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/netty.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]'), flagged: '$(flagged "$r")'"
note "roles $(json_get "$r" 'sorted((t["tid"], t["roles"], t["requests"], t["accepts"]) for t in j["threads"] if t["roles"])')"

[[ $(top_cause "$r") == event_loop ]] || fail "top tail cause is $(top_cause "$r"), expected event_loop"
echo "ok: top cause event_loop"
count_role() { json_get "$r" "sum(1 for t in j['threads'] if '$1' in t['roles'])"; }
assert_cmp "$(count_role event_loop)" '==' 2 "threads with the role event_loop (2 loops)"
assert_cmp "$(count_role acceptor)" '==' 1 "threads with the role acceptor (the boss loop)"
assert_cmp "$(count_role worker)" '==' 0 "threads with the role worker"
assert_cmp "$(count_role poller)" '==' 0 "threads with the role poller"
[[ " $(flagged "$r") " != *" pool_saturation "* ]] || fail "pool_saturation flagged without a pool"
echo "ok: no pool_saturation"
assert_p99_agrees "$r" "$CS_TMP/client.json"
# The JVM's names for them, asked at the end: the 2 loops are the threads
# of one NioEventLoopGroup, the acceptor the boss's, another group.
note "java names $(json_get "$r" 'sorted((t["roles"], t["java_name"]) for t in j["threads"] if t["roles"])')"
groups() { # the NioEventLoopGroup numbers of the threads with role $1 ('unnamed': no such name)
  json_get "$r" "sorted(set((__import__('re').fullmatch(r'nioEventLoopGroup-(\d+)-\d+', t['java_name'] or '') or [0, 'unnamed'])[1] for t in j['threads'] if '$1' in t['roles']))"
}
loops=$(groups event_loop) boss=$(groups acceptor)
[[ $loops =~ ^\[\'[0-9]+\'\]$ ]] || fail "the loops are not one NioEventLoopGroup's threads: $loops"
[[ $boss =~ ^\[\'[0-9]+\'\]$ && $boss != "$loops" ]] || fail "the acceptor is not the boss group's thread: $boss"
echo "ok: the loops are NioEventLoopGroup $loops's threads, the acceptor group $boss's"
