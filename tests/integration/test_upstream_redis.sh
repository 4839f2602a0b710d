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
cs_redis_app_run "$slow_ms" 16 6 --redis-port "$REDIS_PORT"

r=$CS_TMP/app.json
note_upstream_tail "$r" "$CS_TMP/client.json"
assert_upstream_leads "$r" "$REDIS_PORT" "Redis's port"
# The application's own work (parsing, answering: well under a
# millisecond a request) is all handler may keep of 20 ms requests.
assert_cmp "$(json_get "$r" 'sum(c["share"] for c in j["tail"]["causes"] if c["cause"] == "handler")')" '<' 0.25 \
  "handler's share of the tail (the application's own work)"
assert_p99_agrees "$r" "$CS_TMP/client.json"

assert_slow_calls_agree "$slow_ms"

# Every call an exchange, each joined: a blocking thread joins exactly.
u='[x for x in j["upstreams"] if x["port"] == '"$REDIS_PORT"'][0]'
assert_cmp "$(json_get "$r" "$u[\"exchanges\"]")" == "$APP_CALLS" "exchanges = the application's calls to Redis"
assert_cmp "$(json_get "$r" "$u[\"joined\"]")" == "$APP_CALLS" "exchanges joined to their requests"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
kill -TERM "$redis_pid" 2>/dev/null || true
