#!/usr/bin/env bash
# Attaching to nginx under keep-alive load already running: its
# connections, all older than the attach, are adopted at their first idle
# moment and their requests timed from there.
#   A: wrk -t1 -c20 at full speed (the load test a user attaches during):
#      connscope times at least 95 % of the requests nginx served in its
#      window (nginx's own count, stub_status, before and after).
#   B: a constant-rate client (csload -R) started before the attach: its
#      requests in the window are timed, with a p99 within 10 % (or 1 ms)
#      of the client's own in the window (assert_window_p99_agrees).
# integration: exclusive
# Runs alone: full-speed load, and a p99 compared with the client's.
# integration: plain build
source "$(dirname "$0")/lib.sh"

# (keepalive_requests: nginx closes a connection after 1000 requests by
# default, a second of wrk's: its connections would all be new ones soon.)
NGINX_SERVER_EXTRA='keepalive_requests 10000000; location = /status { stub_status; }'
cs_start_nginx 65s 1024
port=$NGINX_PORT
served() { curl -s "http://127.0.0.1:$port/status" | awk '/^ *[0-9]+ +[0-9]+ +[0-9]+/ { print $3 }'; }

note "A: wrk -t1 -c20 running, then attached for 4 s"
cs_bg wrk -t1 -c20 -d9s "http://127.0.0.1:$port/"
wrk_pid=$BG_PID
sleep 2
CS_ON_ATTACHED='served_from=$(served)' CS_ON_STOPPING='served_to=$(served)' cs_attach_window wrk 4
wait "$wrk_pid" || fail "wrk failed"
w=$CS_TMP/wrk.json
nginx_served=$((served_to - served_from))
note "nginx served $nginx_served requests in the window; connscope: $(json_get "$w" 'j["requests"]') whole, $(json_get "$w" 'j["requests_in_flight_at_attach"]') in flight at the attach, $(json_get "$w" 'j["connections_adopted"]') connections adopted, p99 $(json_get "$w" 'j["latency_us"]["p99"]') us, $(json_get "$w" 'j["events"]["lost"]') records lost"
assert_cmp "$(json_get "$w" 'j["connections_adopted"]')" == 20 "wrk's connections adopted"
assert_cmp "$(json_get "$w" 'j["requests_in_flight_at_attach"]')" '<=' 20 "requests left out (at most one a connection)"
assert_cmp "$(json_get "$w" 'j["requests"]')" '>=' "$(python3 -c "print(0.95 * $nginx_served)")" \
  "requests timed against those nginx served in the window (95 %)"

note "B: a constant-rate client running, then attached for 5 s"
cs_bg "$CS_LOAD" --busy-poll --port "$port" --connections 8 --rate 2000 --duration 9 \
  --json "$CS_TMP/client.json" --log "$CS_TMP/client.log" --quiet
load_pid=$BG_PID
sleep 2
cs_attach_window rate 5
cs_stop_load "$load_pid"
r=$CS_TMP/rate.json
read -r client_count client_p99_us _ < <(cs_client_window "$CS_TMP/client.log")
note "connscope: $(json_get "$r" 'j["requests"]') requests, p99 $(json_get "$r" 'j["latency_us"]["p99"]') us; the client in the window: $client_count, p99 $client_p99_us us"
assert_cmp "$(json_get "$r" 'j["connections_adopted"]')" == 8 "the client's connections adopted"
# (The client's window starts up to 0.1 s after the attach: connscope may time more.)
assert_cmp "$(json_get "$r" 'j["requests"]')" '>=' "$(python3 -c "print(0.95 * $client_count)")" \
  "requests timed against the client's in the window (95 %)"
# The p99 against the client's in the window, less its own waits for a
# CPU (busy-polling on a busy machine, it reads answers late).
assert_window_p99_agrees "$r" "$CS_TMP/client.log"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
