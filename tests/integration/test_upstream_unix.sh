#!/usr/bin/env bash
# An upstream on a Unix socket: the blocking application server of
# test_upstream_redis (calling_app.py, a thread per connection) calls Redis
# on Redis's Unix socket, 5 % of its requests running a 20 ms Lua script.
# connscope, attached to the application server before the load: upstream
# leads the tail, naming the socket's path; every call the application made
# is an exchange on it, joined to its request; each thread's connect to the
# socket is timed; the slow requests' wait on Redis is Redis's own time for
# their scripts (its slow log: the median within 10 % or 1 ms).
# (Shared: the tail is Redis's 20 ms, far above what another test's load
# adds. Plain build only: the sanitized build replays its trace.)
# integration: plain build
source "$(dirname "$0")/lib.sh"

slow_ms=20 connections=16
socket_path=$CS_TMP/redis.sock
cs_start_redis --unixsocket "$socket_path" --unixsocketperm 700 --slowlog-log-slower-than 5000 --slowlog-max-len 10000
redis_pid=$SERVER_PID
cs_redis_app_run "$slow_ms" "$connections" 4 --redis-socket "$socket_path"

r=$CS_TMP/app.json
note_upstream_tail "$r" "$CS_TMP/client.json"
"$CS_BIN" report "$CS_TMP/app.cstrace" | sed -n '/^upstreams/,/^$/p'
[[ $(top_cause "$r") == upstream ]] || fail "the tail's top cause is $(top_cause "$r"), expected upstream"
echo "ok: upstream leads the tail"
[[ $(json_get "$r" '[c for c in j["tail"]["causes"] if c["cause"] == "upstream"][0]["figures"]["upstream"]') == "$socket_path" ]] ||
  fail "the evidence names $(json_get "$r" '[c for c in j["tail"]["causes"] if c["cause"] == "upstream"][0]["figures"]["upstream"]'), not Redis's socket $socket_path"
echo "ok: the evidence names Redis's socket"
assert_cmp "$(json_get "$r" 'sum(c["share"] for c in j["tail"]["causes"] if c["cause"] == "handler")')" '<' 0.25 \
  "handler's share of the tail (the application's own work)"
assert_p99_agrees "$r" "$CS_TMP/client.json"

u='[x for x in j["upstreams"] if x["transport"] == "unix"][0]'
[[ $(json_get "$r" "$u[\"address\"]") == "$socket_path" ]] || fail "upstreams[] names $(json_get "$r" "$u[\"address\"]")"
assert_cmp "$(json_get "$r" 'len(j["upstreams"])')" == 1 "one upstream"
assert_cmp "$(json_get "$r" "$u[\"exchanges\"]")" == "$APP_CALLS" "exchanges = the application's calls to Redis"
assert_cmp "$(json_get "$r" "$u[\"joined\"]")" == "$APP_CALLS" "exchanges joined to their requests"
# A connection's first exchange carries its connect: one per client
# connection, each thread's own (the load's connections, kept alive).
assert_cmp "$(json_get "$r" "$u[\"connects\"]")" == "$connections" "connects timed: one per application thread"

assert_slow_calls_agree "$slow_ms"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
kill -TERM "$redis_pid" 2>/dev/null || true
