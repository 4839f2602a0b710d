#!/usr/bin/env bash
# An upstream whose listen backlog overflows: a blocking application server
# (calling_app.py, a thread per client connection) calls a backend on a new
# connection for each request; the backend has a 4-deep backlog and a slow
# accept thread, and 40 clients at once make the application open 40
# connections to it together. The SYNs its queue cannot hold are dropped
# and sent again a second later. connscope, attached to the application
# before the load: upstream leads the tail, naming the backend's port, and
# the connect's part of it is counted with its SYN retransmits; the
# connects agree with the application's own timing of them (as many of
# 1 s or more, the slowest within 10 % or 10 ms), and every call is joined
# to its request (a thread that reads, calls and answers).
# (Shared: a 1 s retransmit is far above what another test's load adds.
# Plain build only: the sanitized build replays its trace.)
# integration: plain build
source "$(dirname "$0")/lib.sh"

cs_start_backend --accept acceptor --workers 2 --accept-delay-us 10000 --backlog 4
backend_port=$BACKEND_PORT backend_pid=$BACKEND_PID
app_port=$(cs_free_port)
cs_bg python3 "$(dirname "$0")/calling_app.py" --port "$app_port" --http-port "$backend_port" \
  --connect-log "$CS_TMP/connects.log" >"$CS_TMP/app.log" 2>&1
SERVER_PID=$BG_PID
app_pid=$BG_PID
cs_wait_port "$app_port"

# The clients wait as long as a third ACK dropped on the full queue can take
# (test_scenario_3_listen_overflow: 10.8 s), so that every call is answered.
cs_profile connect "$CS_LOAD" --port "$app_port" --connections 40 --requests 80 --duration 30 \
  --timeout-ms 40000 --json "$CS_TMP/client.json" --quiet
kill -TERM "$app_pid"
wait "$app_pid" || true
kill -TERM "$backend_pid"
wait "$backend_pid" || true
app_calls=$(sed -n 's/^calls \([0-9]*\)$/\1/p' "$CS_TMP/app.log")
[[ -n $app_calls ]] || { cat "$CS_TMP/app.log"; fail "the application did not say how many calls it made"; }

r=$CS_TMP/connect.json
read -r app_connects app_slow app_max_us < <(awk '{ n++; if ($1 >= 1000000) slow++; if ($1 > max) max = $1 }
  END { print n + 0, slow + 0, max + 0 }' "$CS_TMP/connects.log")
u='[x for x in j["upstreams"] if x["port"] == '"$backend_port"'][0]'
cause='[c for c in j["tail"]["causes"] if c["cause"] == "upstream"][0]'
note_upstream_tail "$r" "$CS_TMP/client.json"
note "the application: $app_calls calls, $app_connects connects, $app_slow of 1 s or more, the slowest $app_max_us us"
assert_upstream_leads "$r" "$backend_port" "the backend's port"
assert_cmp "$(json_get "$r" "$cause[\"figures\"][\"syn_retransmits\"]")" '>' 0 "the evidence counts the SYN retransmits"
assert_cmp "$(json_get "$r" "$cause[\"figures\"][\"connect_us\"]")" '>=' 1000000 "the evidence's connect time: a retransmit's second at least"
assert_p99_agrees "$r" "$CS_TMP/client.json"

# Against the application's own timing of its connects.
assert_cmp "$app_slow" '>' 0 "the application's connects of 1 s or more (the backlog overflowed)"
assert_cmp "$(json_get "$r" "$u[\"connects\"]")" == "$app_connects" "connects timed = the application's connects"
assert_cmp "$(json_get "$r" "$u[\"connects_retransmitted\"]")" == "$app_slow" \
  "connects that waited for a SYN retransmit = the application's connects of 1 s or more"
max_us=$(json_get "$r" "$u[\"connect_us\"][\"max\"]")
assert_cmp "$(python3 -c "print(abs($max_us - $app_max_us))")" '<=' "$(python3 -c "print(max(0.1 * $app_max_us, 10000))")" \
  "the slowest connect against the application's (10 % or 10 ms)"
assert_cmp "$(json_get "$r" "$u[\"exchanges\"]")" == "$app_calls" "exchanges = the application's calls"
assert_cmp "$(json_get "$r" "$u[\"joined\"]")" == "$app_calls" "exchanges joined to their requests"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
