#!/usr/bin/env bash
# connscoped stopped and started again under the same keep-alive load (an
# upgrade, a crash and its restart): the connections were all opened
# before the new daemon's start. In its default mode (1 s windows every
# 10 s, the first at the start), it adopts each at its first idle moment
# within that first window: its requests resume there, all but the one
# each connection had in flight.
# integration: exclusive
# Runs alone: the requests of one window are counted against the client's
# rate, which another test's load would move.
# integration: plain build
source "$(dirname "$0")/lib.sh"

CS_DAEMON=$CS_BUILD/connscoped
CONNECTIONS=16
RATE=1000
cs_start_server --workers 2 --accept reuseport
sock=$CS_TMP/run/connscoped.sock

start_daemon() { # start_daemon NAME: connscoped in its default mode; sets DAEMON
  cs_bg "$CS_DAEMON" --port "$SERVER_PORT" --socket "$sock" 2>"$CS_TMP/$1.log"
  DAEMON=$BG_PID
  for _ in $(seq 300); do grep -q "capabilities dropped" "$CS_TMP/$1.log" && return 0; sleep 0.1; done
  cat "$CS_TMP/$1.log"
  fail "connscoped ($1) did not attach in 30 s"
}
status() { "$CS_BIN" status --json --socket "$sock" | json_get /dev/stdin "$1"; }

start_daemon first
cs_bg "$CS_LOAD" --port "$SERVER_PORT" --connections "$CONNECTIONS" --rate "$RATE" --duration 12 \
  --json "$CS_TMP/client.json" --quiet
load=$BG_PID
sleep 2
note "the first daemon: $(status 'j["requests"]') requests"

note "stopped and started again under the load"
kill -TERM "$DAEMON"
wait "$DAEMON" || fail "connscoped did not stop cleanly"
start_daemon second
window_s=1 # the default schedule: 1 s in every 10 s, the first window at the start
sleep 2.5   # past the first window
requests=$(status 'j["requests"]') adopted=$(status 'j["connections_adopted"]')
in_flight=$(status 'j["requests_in_flight_at_attach"]') windows=$(status 'j["tracing"].get("windows", 0)')
note "the second daemon, after its first window ($window_s s): $requests requests, $adopted connections adopted, $in_flight requests in flight at its start, $windows window(s)"
"$CS_BIN" status --socket "$sock" | grep "adopted" || fail "status does not say what was adopted"
assert_cmp "$windows" == 1 "windows opened so far"
assert_cmp "$adopted" == "$CONNECTIONS" "connections adopted in the first window"
assert_cmp "$in_flight" '<=' "$CONNECTIONS" "requests left out (at most one a connection)"
# The window's requests at the client's rate: the window is timed from the attach, the load steady.
assert_cmp "$requests" '>=' "$(python3 -c "print(0.8 * $RATE * $window_s)")" "requests traced in the first window"
cs_stop_load "$load"
kill -TERM "$DAEMON"
wait "$DAEMON" || fail "connscoped did not stop cleanly"
