#!/usr/bin/env bash
# connscoped beside a server that restarts: it is started before the server
# exists, picks up the server and, after a restart on the same port, the
# new process; it serves Prometheus text that promtool accepts and that a
# real Prometheus server, started here on loopback, scrapes and answers
# queries from; it rejects anything but GET /metrics and keeps serving; it
# stops cleanly on SIGTERM.
source "$(dirname "$0")/lib.sh"

CS_DAEMON=$CS_BUILD/connscoped
port=$(cs_free_port)
metrics_port=$(cs_free_port)
prom_port=$(cs_free_port)
scrape() { curl -sf "http://127.0.0.1:$metrics_port/metrics"; }
metric() { scrape | awk -v m="$1" 'index($0, m "{") == 1 { s += $NF } END { print s + 0 }'; }

# Request counts are compared exactly: traced all the time (test_daemon_sampling.sh covers the default windows).
cs_bg "$CS_DAEMON" --port "$port" --trace always --metrics "$metrics_port" --socket "$CS_TMP/run/connscoped.sock" \
  2>"$CS_TMP/daemon.log"
daemon=$BG_PID
for _ in $(seq 50); do scrape >/dev/null && break; sleep 0.1; done
scrape >/dev/null || fail "no metrics endpoint on 127.0.0.1:$metrics_port"
ss -Htln "sport = :$metrics_port" | grep -q "127.0.0.1:$metrics_port" || fail "metrics not on loopback"
echo "ok: metrics on loopback before any target exists"

# The server appears, serves, restarts on the same port, serves again.
for run in 1 2; do
  "$CS_SERVER" --port "$port" --workers 2 --quiet >/dev/null 2>&1 &
  server=$!; cs_pids+=("$server")
  cs_wait_port "$port"
  # The daemon looks for new processes every second while it has none. It
  # serves metrics before its probes are in: on a busy machine its first
  # look may already find the first server ("attached to").
  picked="(now watching pid $server on port $port|attached to pid $server \(csserver\) port $port;)"
  for _ in $(seq 300); do grep -Eq "$picked" "$CS_TMP/daemon.log" && break; sleep 0.1; done
  grep -Eq "$picked" "$CS_TMP/daemon.log" || { cat "$CS_TMP/daemon.log"; fail "server run $run not picked up in 30 s"; }
  "$CS_LOAD" --port "$port" --connections 4 --requests 2000 --quiet --json /dev/null || fail "load $run failed"
  # The daemon may take a moment to drain its ring buffer on a busy machine.
  for _ in $(seq 300); do accepts=$(metric connscope_accepts_total); [[ $accepts -ge $((4 * run)) ]] && break; sleep 0.1; done
  assert_cmp "$accepts" '==' "$((4 * run))" "accepts counted after server run $run"
  kill "$server"; wait "$server" 2>/dev/null || true
done
requests=$(metric connscope_requests_total)
assert_cmp "$requests" '>=' 3990 "requests of both server runs (4000 sent)"

scrape >"$CS_TMP/metrics.txt"
promtool check metrics <"$CS_TMP/metrics.txt" || fail "promtool rejects the metrics"
echo "ok: promtool check metrics"
for name in connscope_request_duration_seconds_bucket connscope_accept_wait_seconds_bucket \
            connscope_request_cause_seconds_bucket connscope_listen_drops_total \
            connscope_accept_eagain_total connscope_idle_closes_total \
            connscope_keepalive_race_resets_total connscope_events_lost_total \
            connscope_probe_runs_skipped_total connscope_client_read_delay_seconds_bucket \
            connscope_client_measured_seconds_bucket connscope_client_busy_share; do
  grep -q "^$name" "$CS_TMP/metrics.txt" || fail "no $name series"
done
echo "ok: histograms and counters present"
# csload is a local client: its reads of the 4000 answers, less those of the second run's last ones in flight.
client_reads=$(awk '/^connscope_client_reads_total\{/ && /client="csload"/ { s += $NF } END { print s + 0 }' "$CS_TMP/metrics.txt")
assert_cmp "$client_reads" '>=' 3990 "the local clients' reads (csload's two runs)"

# Only GET /metrics is served; bad requests are refused and forgotten.
[[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$metrics_port/") == 404 ]] || fail "/ not 404"
[[ $(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$metrics_port/metrics") == 405 ]] || fail "POST not 405"
python3 -c "
import socket; s = socket.create_connection(('127.0.0.1', $metrics_port)); s.sendall(b'GET /metrics?' + b'x' * 8192)
print(s.recv(100).split(b'\r\n')[0].decode())" | grep -q 431 || fail "oversized request not 431"
scrape >/dev/null || fail "metrics gone after bad requests"
echo "ok: 404 / 405 / 431, and still serving"

# A real Prometheus scrapes it; its query API returns the series.
cat >"$CS_TMP/prometheus.yml" <<YML
global: { scrape_interval: 1s }
scrape_configs:
  - job_name: connscope
    static_configs: [ { targets: ['127.0.0.1:$metrics_port'] } ]
YML
cs_bg prometheus --config.file="$CS_TMP/prometheus.yml" --storage.tsdb.path="$CS_TMP/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" --log.level=warn
query() { curl -sf "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1"; }
result=""
for _ in $(seq 60); do
  result=$(query 'sum(connscope_requests_total)' || true)
  [[ $result == *'"result":[{'* ]] && break
  sleep 0.5
done
echo "prometheus: $result"
value=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data"]["result"][0]["value"][1])' "$result") ||
  fail "Prometheus returned no connscope_requests_total series"
assert_cmp "$value" '==' "$requests" "Prometheus query result == the daemon's counter"
p99=$(query 'histogram_quantile(0.99, sum by (le) (connscope_request_duration_seconds_bucket))')
echo "prometheus p99: $p99"
[[ $p99 == *'"status":"success"'* ]] || fail "histogram_quantile query failed"

# SIGTERM: a clean exit.
kill -TERM "$daemon"
rc=0; timeout 10 tail --pid="$daemon" -f /dev/null || rc=$?
[[ $rc -eq 0 ]] || fail "connscoped did not exit within 10 s of SIGTERM"
wait "$daemon"; rc=$?
[[ $rc -eq 0 ]] || fail "connscoped exited $rc on SIGTERM"
echo "ok: clean exit on SIGTERM"
