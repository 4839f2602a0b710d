#!/usr/bin/env bash
# A blocking application server that calls Redis in its handler
# (calling_app.py: a thread per connection, a Redis connection each), 5 % of
# its requests running a 20 ms Lua script on Redis's side. connscope,
# attached to the application server before the load: upstream leads the
# tail, naming Redis's port; the slow requests' wait on Redis is Redis's
# own time for their scripts (its slow log: the median within 10 % or
# 1 ms); every call the application made is an exchange, joined exactly
# (a thread that reads, calls and answers); handler keeps only the rest,
# the application's own work.
# (Shared: the tail is Redis's 20 ms, far above what another test's load
# adds. Plain build only: the sanitized build replays its trace.)
# integration: plain build
source "$(dirname "$0")/lib.sh"

slow_ms=20
cs_start_redis --slowlog-log-slower-than 5000 --slowlog-max-len 10000
redis_pid=$SERVER_PID
app_port=$(cs_free_port)
cs_bg python3 "$(dirname "$0")/calling_app.py" --port "$app_port" --redis-port "$REDIS_PORT" >"$CS_TMP/app.log" 2>&1
SERVER_PID=$BG_PID
app_pid=$BG_PID
cs_wait_port "$app_port"

cs_profile app "$CS_LOAD" --port "$app_port" --connections 16 --rate 100 --duration 6 \
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
assert_upstream_leads "$r" "$REDIS_PORT" "Redis's port"
# The application's own work (parsing, answering: well under a
# millisecond a request) is all handler may keep of 20 ms requests.
assert_cmp "$(json_get "$r" 'sum(c["share"] for c in j["tail"]["causes"] if c["cause"] == "handler")')" '<' 0.25 \
  "handler's share of the tail (the application's own work)"
assert_p99_agrees "$r" "$CS_TMP/client.json"

# The slow requests' wait on Redis against Redis's own time for their scripts.
read -r redis_count redis_median < <(sort -n "$CS_TMP/slowlog" | awk '{ v[NR] = $1 } END { print NR, v[int((NR + 1) / 2)] + 0 }')
# Each kept slow request's path, from the client's log (kept_paths.py).
"$CS_PYTHON" "$(dirname "$0")/kept_paths.py" "$CS_TMP/client.log" "$CS_TMP/slowest.json" >"$CS_TMP/kept"
read -r slow_count slow_median < <(awk -v p="/slow/$slow_ms" '$1 == p { print $2 }' "$CS_TMP/kept" | sort -n |
  awk '{ v[NR] = $1 } END { print NR, v[int((NR + 1) / 2)] + 0 }')
note "the client sent $client_slow slow request(s); Redis ran $redis_count script(s), median $redis_median us; connscope kept $slow_count of them joined to their call, first-byte wait median $slow_median us"
assert_cmp "$redis_count" == "$client_slow" "Redis's slow log: a script for each slow request"
assert_cmp "$slow_count" == "$client_slow" "slow requests kept, joined to their call to Redis"
tolerance_us=$(python3 -c "print(max(0.1 * $redis_median, 1000))")
assert_cmp "$(python3 -c "print(abs($slow_median - $redis_median))")" '<=' "$tolerance_us" \
  "the slow requests' wait on Redis (median) against Redis's own time for their scripts"

# Every call an exchange, each joined: a blocking thread joins exactly.
u='[x for x in j["upstreams"] if x["port"] == '"$REDIS_PORT"'][0]'
assert_cmp "$(json_get "$r" "$u[\"exchanges\"]")" == "$app_calls" "exchanges = the application's calls to Redis"
assert_cmp "$(json_get "$r" "$u[\"joined\"]")" == "$app_calls" "exchanges joined to their requests"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
kill -TERM "$redis_pid" 2>/dev/null || true
