#!/usr/bin/env bash
# connscope says what it costs. Runs csserver under csload (4 keep-alive
# connections, 20 000 requests) with `connscope record` attached, reads
# `bpftool prog show` while it is attached, then replays the trace, and
# asserts: the JSON report's BPF ns per request is > 0 and agrees with the
# run time bpftool shows for the same programs (by id): at least it (the
# report reads later) and at most 25 % more (what the idle probes ran
# between bpftool's reading and the stop); the replayed text report's cost
# line (and `report --interval`'s) is the one `record` printed at its end;
# connscope's CPU share is > 0. Then connscoped under load: `status` (JSON
# and text), `top --once` and /metrics (promtool accepts it) carry the
# figures; with --bpf-stats no, status says the BPF cost was not measured.
# kernel.bpf_stats_enabled is never written by connscope: it reads 0
# during and after those runs; set to 1 before a run, the report says the
# statistics were already on and the sysctl is still 1 after. With
# --no-bpf-stats and the sysctl at 0, the report says the BPF cost was not
# measured, and the run's programs have no run time in bpftool: the
# earlier runs' statistics did not stay on after they ended. An older
# trace's report says the cost was not recorded.
# integration: exclusive
# (it sets the machine-wide kernel.bpf_stats_enabled to 1 for one run, and
# asserts its value around every run: another test's run would see it, and
# a second copy of this test would race for it)
# integration: plain build
# (timed alone once; the sanitized build replays what it recorded:
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

CS_DAEMON=$CS_BUILD/connscoped
stats_sysctl() { sysctl -n kernel.bpf_stats_enabled; }
sysctl_before=$(stats_sysctl)
# Whatever happens, the machine keeps the setting it had.
trap 'rc=$?; set +e; sysctl -qw kernel.bpf_stats_enabled="$sysctl_before"; cs_cleanup "$rc" || exit' EXIT
sysctl -qw kernel.bpf_stats_enabled=0

cs_start_server --workers 2 --quiet

# ---- record: the report's figures against bpftool's
trace=$CS_TMP/run.cstrace
"$CS_BIN" record --pid "$SERVER_PID" --duration 120 --bpf-stats always -o "$trace" 2>"$CS_TMP/record.err" &
rec=$!; cs_pids+=("$rec")
cs_wait_attached "$CS_TMP/record.err"
"$CS_LOAD" --port "$SERVER_PORT" --connections 4 --requests 20000 --quiet --json /dev/null || fail "load failed"
sleep 0.3 # the last requests' records
bpftool prog show --json >"$CS_TMP/bpftool.json" || fail "bpftool prog show failed"
[[ $(stats_sysctl) == 0 ]] || fail "kernel.bpf_stats_enabled is $(stats_sysctl) while connscope runs: it was written"
kill -INT "$rec"
wait "$rec" || { cat "$CS_TMP/record.err"; fail "connscope record failed"; }
cat "$CS_TMP/record.err"
[[ $(stats_sysctl) == 0 ]] || fail "kernel.bpf_stats_enabled is $(stats_sysctl) after the run, was 0"
echo "ok: kernel.bpf_stats_enabled 0 during and after the run"

if [[ -n ${CS_TRACES_OUT:-} ]]; then cs_keep_trace "$trace" test_self_cost.run; fi
"$CS_BIN" report --json "$trace" >"$CS_TMP/report.json" || fail "report --json failed"
python3 - "$CS_TMP/report.json" "$CS_TMP/bpftool.json" <<'PY' || fail "the report's BPF cost does not agree with bpftool's"
import json, sys
cost = json.load(open(sys.argv[1]))["cost"]
progs = {p["id"]: p for p in json.load(open(sys.argv[2]))}
assert cost["recorded"] and cost["bpf_measured"] and cost["bpf_stats"] == "enabled", cost
assert cost["requests"] >= 19990 and cost["connections"] == 4, cost
assert cost["bpf_ns_per_request"] > 0 and cost["bpf_ns_per_connection"] > 0, cost
assert cost["cpu_share"] > 0 and cost["cpu_s"] > 0, cost
ours = cost["programs"]
assert ours and all(p["id"] in progs for p in ours), "programs bpftool does not list: %s" % ours
assert sum(p["total_ns"] for p in ours) == cost["bpf_total_ns"], cost
kernel_ns = sum(progs[p["id"]].get("run_time_ns", 0) for p in ours)
kernel_per_request = kernel_ns / cost["requests"]
ratio = cost["bpf_ns_per_request"] / kernel_per_request
print("connscope: BPF %.1f ns per request, %.1f ns per connection, CPU %.3f%% of one CPU; "
      "bpftool: %.1f ns per request (ratio %.3f)" % (cost["bpf_ns_per_request"], cost["bpf_ns_per_connection"],
                                                    100 * cost["cpu_share"], kernel_per_request, ratio))
for p in ours:
    k = progs[p["id"]]
    print("  %-16s calls %8d  %7.1f ns/call   bpftool: %8d runs, %d ns" % (
        p["name"], p["calls"], p["ns_per_call"] or 0, k.get("run_cnt", 0), k.get("run_time_ns", 0)))
    assert p["calls"] >= k.get("run_cnt", 0) and p["total_ns"] >= k.get("run_time_ns", 0), (p, k)
assert 1.0 <= ratio <= 1.25, ratio
print("ok: BPF ns per request agrees with bpftool's (the report's at least bpftool's, at most 25 % more)")
PY

"$CS_BIN" report "$trace" >"$CS_TMP/report.txt" || fail "report failed"
live=$(sed -n 's/^connscope: cost: //p' "$CS_TMP/record.err")
replayed=$(sed -n 's/^cost        //p' "$CS_TMP/report.txt")
[[ -n $live && $live == "$replayed" ]] || fail "replayed cost '$replayed' is not the recording's '$live'"
[[ $live == "BPF "*" per request, "*" per connection "*"; connscope "*"% of one CPU" ]] || fail "cost line: $live"
by_interval=$("$CS_BIN" report --interval 1 "$trace" | sed -n 's/^cost: //p')
[[ $by_interval == "$live" ]] || fail "report --interval's cost '$by_interval' is not the recording's '$live'"
echo "ok: the replayed report's cost is the recording's: $replayed"

# ---- the daemon: status and /metrics
sock=$CS_TMP/run/connscoped.sock
metrics_port=$(cs_free_port)
cs_bg "$CS_DAEMON" --port "$SERVER_PORT" --socket "$sock" --metrics "$metrics_port" --bpf-stats always 2>"$CS_TMP/daemon.log"
daemon=$BG_PID
cs_wait_attached "$CS_TMP/daemon.log"
"$CS_LOAD" --port "$SERVER_PORT" --connections 4 --requests 5000 --quiet --json /dev/null || fail "load failed"
"$CS_LOAD" --port "$SERVER_PORT" --connections 4 --duration 4 --quiet --json "$CS_TMP/load-always.json" || fail "load failed"
# The cost is read once a second: wait for a reading after the last request.
for _ in $(seq 100); do
  "$CS_BIN" status --json --socket "$sock" >"$CS_TMP/status.json" || fail "status --json failed"
  [[ $(json_get "$CS_TMP/status.json" 'j["cost"]["requests"] >= 5000 and (j["cost"]["bpf_ns_per_request"] or 0) > 0') == True ]] && break
  sleep 0.1
done
python3 - "$CS_TMP/status.json" <<'PY' || fail "status lacks the cost"
import json, sys
cost = json.load(open(sys.argv[1]))["cost"]
assert cost["recorded"] and cost["bpf_measured"] and cost["bpf_stats"] == "enabled", cost
assert cost["requests"] >= 5000 and cost["bpf_ns_per_request"] > 0 and cost["bpf_ns_per_connection"] > 0, cost
assert cost["cpu_share"] > 0, cost
print("ok: status: BPF %.1f ns per request, %.1f ns per connection; connscoped %.3f%% of one CPU" % (
    cost["bpf_ns_per_request"], cost["bpf_ns_per_connection"], 100 * cost["cpu_share"]))
PY
cp "$CS_TMP/status.json" "$CS_TMP/status-always.json"
"$CS_BIN" status --socket "$sock" >"$CS_TMP/status.txt" || fail "status failed"
grep -E "^  cost       BPF [0-9]+ ns per request, [0-9]+ ns per connection \([0-9]+ runs\); connscoped [0-9.]+% of one CPU$" \
  "$CS_TMP/status.txt" || { cat "$CS_TMP/status.txt"; fail "status text lacks the cost line"; }
"$CS_BIN" top --once --socket "$sock" >"$CS_TMP/top.txt" || fail "top --once failed"
grep -Eq "^cost +BPF [0-9.]+ [nu]s per request, connscope CPU [0-9.]+% of one CPU" "$CS_TMP/top.txt" ||
  { head -5 "$CS_TMP/top.txt"; fail "top lacks the cost line"; }
echo "ok: top: $(grep "^cost" "$CS_TMP/top.txt")"
curl -sf "http://127.0.0.1:$metrics_port/metrics" >"$CS_TMP/metrics.txt" || fail "no metrics"
promtool check metrics <"$CS_TMP/metrics.txt" || fail "promtool rejects the metrics"
metric() { awk -v m="$1" 'index($0, m) == 1 { s += $NF } END { print s + 0 }' "$CS_TMP/metrics.txt"; }
assert_cmp "$(metric 'connscope_bpf_stats_measured{')" '==' 1 "metrics: BPF run time measured"
assert_cmp "$(metric 'connscope_bpf_seconds_per_request{')" '>' 0 "metrics: BPF seconds per request"
assert_cmp "$(metric 'connscope_bpf_seconds_per_connection{')" '>' 0 "metrics: BPF seconds per connection"
assert_cmp "$(metric 'connscope_bpf_run_seconds_total{')" '>' 0 "metrics: BPF run seconds, all programs"
assert_cmp "$(metric 'connscope_bpf_runs_total{')" '>=' 5000 "metrics: BPF runs, all programs"
assert_cmp "$(metric 'connscope_self_cpu_seconds_total{')" '>' 0 "metrics: the daemon's CPU seconds"
assert_cmp "$(metric 'connscope_self_cpu_ratio{')" '>' 0 "metrics: the daemon's share of one CPU"
kill -TERM "$daemon"
wait "$daemon" || { cat "$CS_TMP/daemon.log"; fail "connscoped did not stop cleanly"; }
[[ $(stats_sysctl) == 0 ]] || fail "kernel.bpf_stats_enabled is $(stats_sysctl) after the daemon, was 0"
echo "ok: kernel.bpf_stats_enabled 0 after the daemon"
# ---- the daemon's default: the statistics on in every window and in one other second of ten
before_id=$(bpftool prog show --json | python3 -c 'import json,sys; print(max([p.get("id", 0) for p in json.load(sys.stdin)] + [0]))')
cs_bg "$CS_DAEMON" --port "$SERVER_PORT" --socket "$sock" 2>"$CS_TMP/daemon-sampled.log"
daemon=$BG_PID
cs_wait_attached "$CS_TMP/daemon-sampled.log"
# The same loads as the daemon with the statistics always on, the first
# one at once: its requests fall in the first window, opened at the attach,
# and the daemon's estimate of the requests it served counts from those.
# Then bpftool every 0.5 s under the second:
# the daemon's programs' run count grows in some half-seconds (statistics on) and not in others
# (off, the probes running all the same).
"$CS_LOAD" --port "$SERVER_PORT" --connections 4 --requests 5000 --quiet --json /dev/null || fail "load failed"
"$CS_LOAD" --port "$SERVER_PORT" --connections 4 --duration 4 --quiet --json "$CS_TMP/load-sampled.json" &
load=$!
: >"$CS_TMP/runs.txt"
for _ in $(seq 8); do
  sleep 0.5
  bpftool prog show --json | python3 -c 'import json,sys
print(sum(p.get("run_cnt", 0) for p in json.load(sys.stdin) if p.get("id", 0) > int(sys.argv[1])))' "$before_id" >>"$CS_TMP/runs.txt"
done
wait "$load" || fail "load failed"
python3 - "$CS_TMP/runs.txt" <<'PY' || fail "the statistics were not on in some half-seconds and off in others"
import sys
runs = [int(x) for x in open(sys.argv[1])]
grew = [b > a for a, b in zip(runs, runs[1:])]
print("run counts every 0.5 s: %s" % runs)
assert any(grew) and grew.count(False) >= 2, grew
print("ok: counted in %d half-seconds of %d, not in %d" % (grew.count(True), len(grew), grew.count(False)))
PY
holder=$(pgrep -P "$daemon" -x connscope-stats) || fail "connscoped has no connscope-stats child"
grep -E "^(CapEff|CapPrm|CapBnd|NoNewPrivs):" "/proc/$holder/status" | tr -s '\t' ' ' >"$CS_TMP/holder.caps"
cat "$CS_TMP/holder.caps"
[[ $(grep -c " 0000000000200000$" "$CS_TMP/holder.caps") == 3 && $(grep -c "^NoNewPrivs: 1$" "$CS_TMP/holder.caps") == 1 ]] ||
  fail "connscope-stats keeps more than CAP_SYS_ADMIN, or may gain more"
# /dev/null on 0-2, its socket, the statistics' own descriptor while it holds them: nothing else.
others=$(for fd in "/proc/$holder/fd/"*; do readlink "$fd"; done | grep -cvE '^(/dev/null|socket:\[[0-9]+\]|anon_inode:bpf-stats)$' || true)
[[ $others == 0 ]] || { ls -l "/proc/$holder/fd"; fail "connscope-stats holds descriptors of connscoped's"; }
echo "ok: connscope-stats (pid $holder) keeps CAP_SYS_ADMIN alone, no_new_privs, no descriptor but its socket"
for _ in $(seq 30); do
  "$CS_BIN" status --json --socket "$sock" >"$CS_TMP/status-sampled.json" || fail "status --json failed"
  [[ $(json_get "$CS_TMP/status-sampled.json" '(j["cost"]["bpf_ns_per_request"] or 0) > 0') == True ]] && break
  sleep 0.1
done
python3 - "$CS_TMP/status-sampled.json" "$CS_TMP/status-always.json" <<'PY' || fail "the sampled estimate is off"
import json, sys
cost = json.load(open(sys.argv[1]))["cost"]
always = json.load(open(sys.argv[2]))["cost"]
print("sampled: %s" % cost)
assert cost["bpf_stats"] == "sampled" and cost["bpf_measured"] and cost["bpf_sampled"], cost
assert 0.05 <= cost["bpf_measured_share"] < 0.8, cost
# The same load as the daemon with the statistics always on: its estimate is that figure, give or take.
ratio = cost["bpf_ns_per_request"] / always["bpf_ns_per_request"]
assert 0.6 <= ratio <= 1 / 0.6, (cost["bpf_ns_per_request"], always["bpf_ns_per_request"])
print("ok: sampled (on %.0f %% of the time): BPF %.1f ns per request, always on: %.1f (ratio %.2f)" % (
    100 * cost["bpf_measured_share"], cost["bpf_ns_per_request"], always["bpf_ns_per_request"], ratio))
PY
"$CS_BIN" status --socket "$sock" >"$CS_TMP/status-sampled.txt" || fail "status failed"
grep -E "^  cost       BPF [0-9]+ ns per request, [0-9]+ ns per connection \([0-9]+ runs, statistics on [0-9.]+ % of the time\); connscoped" \
  "$CS_TMP/status-sampled.txt" || { cat "$CS_TMP/status-sampled.txt"; fail "status text does not say the statistics were sampled"; }
kill -TERM "$daemon"
wait "$daemon" || { cat "$CS_TMP/daemon-sampled.log"; fail "connscoped did not stop cleanly"; }
kill -0 "$holder" 2>/dev/null && fail "connscope-stats outlived connscoped"
echo "ok: connscope-stats is gone with connscoped"

# bpf-stats = no (here on the command line): status says the BPF cost is not measured.
cs_bg "$CS_DAEMON" --port "$SERVER_PORT" --socket "$sock" --bpf-stats no 2>"$CS_TMP/daemon-off.log"
daemon=$BG_PID
cs_wait_attached "$CS_TMP/daemon-off.log"
for _ in $(seq 50); do
  "$CS_BIN" status --json --socket "$sock" >"$CS_TMP/status-off.json" || fail "status --json failed"
  [[ $(json_get "$CS_TMP/status-off.json" 'j["cost"]["recorded"]') == True ]] && break
  sleep 0.1
done
[[ $(json_get "$CS_TMP/status-off.json" '(j["cost"]["bpf_stats"], j["cost"]["bpf_measured"])') == "('off', False)" ]] ||
  fail "connscoped --bpf-stats no: $(json_get "$CS_TMP/status-off.json" 'j["cost"]')"
"$CS_BIN" status --socket "$sock" | grep -q "^  cost       BPF not measured (BPF run-time statistics turned off" ||
  fail "status text: the BPF cost is not said to be unmeasured"
kill -TERM "$daemon"
wait "$daemon" || { cat "$CS_TMP/daemon-off.log"; fail "connscoped did not stop cleanly"; }
echo "ok: connscoped --bpf-stats no: status says the BPF cost is not measured"

# ---- the sysctl already at 1: left as it is
short_run() { # short_run NAME [connscope options]: attach for 2 s under a short load, JSON report in NAME.json
  local name=$1; shift
  "$CS_BIN" attach --pid "$SERVER_PID" --duration 2 --json "$@" >"$CS_TMP/$name.json" 2>"$CS_TMP/$name.err" &
  local cs=$!
  cs_pids+=("$cs")
  cs_wait_attached "$CS_TMP/$name.err"
  "$CS_LOAD" --port "$SERVER_PORT" --connections 2 --requests 2000 --quiet --json /dev/null || fail "load failed"
  # bpftool while attached: this run's programs are the newest.
  bpftool prog show --json >"$CS_TMP/$name.bpftool.json" || fail "bpftool prog show failed"
  wait "$cs" || { cat "$CS_TMP/$name.err"; fail "connscope attach failed ($name)"; }
}
sysctl -qw kernel.bpf_stats_enabled=1
short_run already_on
[[ $(stats_sysctl) == 1 ]] || fail "kernel.bpf_stats_enabled is $(stats_sysctl) after the run, was 1"
python3 - "$CS_TMP/already_on.json" <<'PY' || fail "with the sysctl at 1, the report does not say so"
import json, sys
cost = json.load(open(sys.argv[1]))["cost"]
assert cost["bpf_stats"] == "already_on" and cost["bpf_measured"] and cost["bpf_ns_per_request"] > 0, cost
print("ok: sysctl at 1: BPF %.1f ns per request, statistics already on" % cost["bpf_ns_per_request"])
PY
echo "ok: kernel.bpf_stats_enabled 1 after the run, as before it"
sysctl -qw kernel.bpf_stats_enabled=0

# ---- --no-bpf-stats: not measured, and nothing left the statistics on
max_id=$(python3 -c 'import json,sys; print(max(p["id"] for p in json.load(open(sys.argv[1]))))' "$CS_TMP/already_on.bpftool.json")
short_run off --no-bpf-stats
python3 - "$CS_TMP/off.json" "$CS_TMP/off.bpftool.json" "$max_id" <<'PY' || fail "--no-bpf-stats: wrong report, or statistics still on"
import json, sys
cost = json.load(open(sys.argv[1]))["cost"]
assert cost["recorded"] and cost["bpf_stats"] == "off" and not cost["bpf_measured"], cost
assert cost["bpf_ns_per_request"] is None and "not measured" in cost["note"] and cost["cpu_share"] > 0, cost
ran = [p for p in json.load(open(sys.argv[2])) if p["id"] > int(sys.argv[3]) and p["name"] == "on_recv"]
assert ran, "this run's on_recv is not in bpftool's list"
assert all(not p.get("run_time_ns") and not p.get("run_cnt") for p in ran), ran
print("ok: --no-bpf-stats: %s; this run's programs have no run time in bpftool" % cost["note"])
PY

# ---- an older trace
"$CS_BIN" report "$(dirname "$0")/../fixtures/s1.cstrace" | grep -q "^cost        not recorded" ||
  fail "an older trace's report does not say the cost was not recorded"
echo "ok: an older trace's report: cost not recorded"
