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
app_port=$(cs_free_port)
cs_bg python3 "$(dirname "$0")/calling_app.py" --port "$app_port" --redis-socket "$socket_path" >"$CS_TMP/app.log" 2>&1
SERVER_PID=$BG_PID
app_pid=$BG_PID
cs_wait_port "$app_port"

cs_profile app "$CS_LOAD" --port "$app_port" --connections "$connections" --rate 100 --duration 4 \
  --path /get --mix "/slow/$slow_ms:0.05" --json "$CS_TMP/client.json" --log "$CS_TMP/client.log" --quiet
"$CS_BIN" report --json --slowest 100 "$CS_TMP/app.cstrace" >"$CS_TMP/slowest.json" ||
  fail "connscope report --slowest failed"
kill -TERM "$app_pid"
wait "$app_pid" || true
app_calls=$(sed -n 's/^calls \([0-9]*\)$/\1/p' "$CS_TMP/app.log")
[[ -n $app_calls ]] || { cat "$CS_TMP/app.log"; fail "the application did not say how many calls it made"; }
"$CS_PYTHON" "$(dirname "$0")/calling_app.py" --slowlog --redis-port "$REDIS_PORT" >"$CS_TMP/slowlog" ||
  fail "reading Redis's slow log failed"
client_slow=$(awk -v p="/slow/$slow_ms" '$7 == p' "$CS_TMP/client.log" | wc -l)

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
assert_cmp "$(json_get "$r" "$u[\"exchanges\"]")" == "$app_calls" "exchanges = the application's calls to Redis"
assert_cmp "$(json_get "$r" "$u[\"joined\"]")" == "$app_calls" "exchanges joined to their requests"
# A connection's first exchange carries its connect: one per client
# connection, each thread's own (the load's connections, kept alive).
assert_cmp "$(json_get "$r" "$u[\"connects\"]")" == "$connections" "connects timed: one per application thread"

# The slow requests' wait on Redis against Redis's own time for their scripts.
read -r redis_count redis_median < <(sort -n "$CS_TMP/slowlog" | awk '{ v[NR] = $1 } END { print NR, v[int((NR + 1) / 2)] + 0 }')
"$CS_PYTHON" "$(dirname "$0")/kept_paths.py" "$CS_TMP/client.log" "$CS_TMP/slowest.json" >"$CS_TMP/kept"
read -r slow_count slow_median < <(awk -v p="/slow/$slow_ms" '$1 == p { print $2 }' "$CS_TMP/kept" | sort -n |
  awk '{ v[NR] = $1 } END { print NR, v[int((NR + 1) / 2)] + 0 }')
note "the client sent $client_slow slow request(s); Redis ran $redis_count script(s), median $redis_median us; connscope kept $slow_count of them joined to their call, first-byte wait median $slow_median us"
assert_cmp "$redis_count" == "$client_slow" "Redis's slow log: a script for each slow request"
assert_cmp "$slow_count" == "$client_slow" "slow requests kept, joined to their call to Redis"
tolerance_us=$(python3 -c "print(max(0.1 * $redis_median, 1000))")
assert_cmp "$(python3 -c "print(abs($slow_median - $redis_median))")" '<=' "$tolerance_us" \
  "the slow requests' wait on Redis (median) against Redis's own time for their scripts"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
kill -TERM "$redis_pid" 2>/dev/null || true
