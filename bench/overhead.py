"""Sections 1-3: overhead ratios in rotated rounds, accuracy at the peak rate,
per-program costs, and the floor split by group of hooks."""
import os
import time

from bpfinfo import prog_stats, set_bpf_stats
from common import can_pin, cpu_busy_s, log, ours_cpu_s, tasks_cpu_ns, wait_for_quiet_cpu
from loads import LOADS, run_wrk
from targets import TARGETS, CsServer, new_target
from tools import (VARIANT_TOOLS, DAEMON_PERIOD_S, FLOOR_TOOLS, PROBE_GROUP_TOOLS, TOOLS,
                   Connscope, Connscoped, ConnscopedBetweenWindows)


def ab_rounds(args, procs, target, run_load, tools, pairs, pinned=True, seconds_s=None):
    """pairs rounds; each runs the load once per tool (NoTool: the baseline), order rotated."""
    run_load(target.port, args, pinned)  # warm-up, not counted
    runs = {t.name: [] for t in tools}
    for r in range(pairs):
        wait_for_quiet_cpu()
        # Rotate the order each round so that no tool always runs first.
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for tool_cls in order:
            tool = tool_cls(procs, args.build, target)
            # Whatever else ran meanwhile: busy CPU time that was not ours.
            t0, busy0_s, ours0_s = time.monotonic(), cpu_busy_s(), ours_cpu_s(target.pids)
            try:
                tool.start()
            except RuntimeError as err:
                log(f"  {err}: run left out")
                runs[tool_cls.name].append({"rps": None, "p99_us": None, "tool": {}, "round": r})
                continue
            time.sleep(0.3)
            load_t0, server0_ns = time.monotonic(), tasks_cpu_ns(target.pids)
            res = run_load(target.port, args, pinned, seconds_s)
            load_s = time.monotonic() - load_t0
            res["server_cpu_ns_per_req"] = server_cpu_per_request(
                tasks_cpu_ns(target.pids) - server0_ns, res["rps"], load_s)
            res["tool"] = tool.stop()
            # BPF run time (every program's, softirq's too) per request: connscope's report
            # says it; connscoped's over the load's requests, from its status before and after.
            res["bpf_ns_per_req"] = res["tool"].get("bpf_ns_per_req")
            if res["tool"].get("bpf_ns") is not None:
                res["bpf_ns_per_req"] = server_cpu_per_request(res["tool"]["bpf_ns"], res["rps"], load_s)
            res["round"] = r
            others_s = (cpu_busy_s() - busy0_s) - (ours_cpu_s(target.pids) - ours0_s)
            res["others_cpu"] = max(0.0, others_s) / ((time.monotonic() - t0) * os.cpu_count())
            runs[tool_cls.name].append(res)
            share = res["tool"].get("traced_share")
            log(f"  round {r} {tool_cls.name:15} {res['rps'] or 0:9.0f} req/s, others' CPU "
                f"{res['others_cpu']:4.0%}" + (f", traced {share:.1%}" if share is not None else "")
                + f" {res['errors']}")
    return runs


def server_cpu_per_request(cpu_ns, rps, load_s):
    """A CPU time (the server's, or BPF's) per request (churn: per connection) over one load run.
    Requests: the load's rate times the run's wall time (its start and stop included,
    a few ms in 10 s)."""
    return cpu_ns / (rps * load_s) if rps and load_s > 0 else None


def ratios(runs, name, base="none"):
    return [x["rps"] / b["rps"] if x["rps"] and b["rps"] else None
            for x, b in zip(runs[name], runs[base])]


def combos(args, targets=None, loads=None):
    targets, loads = targets or args.targets, loads or args.loads
    return [(t, load) for t in TARGETS if t.name in targets for load in loads]


def pinnings(args):
    """The pinnings of the overhead rows: pinned (server on the last CPU, load on CPU 0),
    unpinned (where the scheduler puts them), or both."""
    wanted = ["pinned", "unpinned"] if args.pin == "both" else [args.pin]
    if "pinned" in wanted and not can_pin():
        log("overhead: cannot pin (one CPU or no taskset): unpinned rows only")
        wanted = ["unpinned"]
    return wanted


def overhead_tools(args):
    tools = [t for t in TOOLS if t is not Connscoped or not args.no_daemon]
    return (tools + (PROBE_GROUP_TOOLS if args.probe_groups else [])
            + (VARIANT_TOOLS if args.variants and not args.no_daemon else []))


def overhead(args, procs, results):
    rows = []
    tools = overhead_tools(args)
    seconds_s = args.run_seconds
    if Connscoped in tools and seconds_s % DAEMON_PERIOD_S:
        log(f"overhead: {seconds_s} s runs are not whole tracing periods of connscoped "
            f"({DAEMON_PERIOD_S} s): its traced share will differ from the default's")
    for target_cls, load in combos(args):
        label, run_load = LOADS[load]
        for n, pinning in enumerate(pinnings(args)):
            pinned = pinning == "pinned"
            target = new_target(target_cls, procs, args, pinned)
            log(f"overhead: {target.name} under {label}, {pinning}, {args.pairs} rounds of "
                f"{len(tools)} runs of {seconds_s} s")
            costs = None
            try:
                runs = ab_rounds(args, procs, target, run_load, tools, args.pairs, pinned, seconds_s)
                if n == 0 and not args.no_costs:
                    costs = program_costs(args, procs, target, run_load, pinned=pinned)
                    # Local clients' handshakes are followed too (these loads are local):
                    # what that part costs, from a run without it.
                    costs["no_handshakes"] = program_costs(args, procs, target, run_load,
                                                           ["--no-handshakes"], pinned=pinned)
                    if not args.no_daemon:
                        costs["daemon_between_windows"] = program_costs(
                            args, procs, target, run_load, tool_cls=ConnscopedBetweenWindows,
                            pinned=pinned)
                    if args.probe_groups:
                        # sched_waking's own cost: it runs on every wake-up of the machine.
                        costs["waking_at_start"] = program_costs(args, procs, target, run_load,
                                                                 tool_cls=PROBE_GROUP_TOOLS[0],
                                                                 pinned=pinned)
            finally:
                target.close()
            row = {"target": target.name, "load": load, "label": label, "pinning": pinning,
                   "seconds_s": seconds_s, "runs": runs, "costs": costs}
            for t in tools[1:]:
                row[t.name] = ratios(runs, t.name)
            # The same round's floor: what the tool costs beyond being attached at all.
            row["cs_vs_floor"] = ratios(runs, "connscope", "floor")
            if Connscoped in tools:
                row["csd_vs_floor"] = ratios(runs, "connscoped", "floor")
            rows.append(row)
    results["overhead"] = rows


def peak_rate(args, procs, results):
    """Lost records at the highest rate this machine reaches: csserver with 2 workers."""
    target = CsServer(procs, args.build, ["--workers", "2"], pinned=False)
    try:
        run_wrk(target.port, args, pinned=False)  # warm-up
        runs = []
        for _ in range(2):
            tool = Connscope(procs, args.build, target)
            tool.start()
            time.sleep(0.3)
            res = run_wrk(target.port, args, pinned=False)
            res["tool"] = tool.stop()
            runs.append(res)
            log(f"peak: {res['rps'] or 0:.0f} req/s, lost {res['tool'].get('lost')}")
    finally:
        target.close()
    results["peak"] = runs


def floor_split(args, procs, results):
    """Which hooks make the floor: each group of empty programs alone (pinned where the
    machine allows, as before rows could be unpinned)."""
    rows = []
    pinned = can_pin()
    for target_cls, load in combos(args, args.split_targets, args.split_loads):
        label, run_load = LOADS[load]
        target = new_target(target_cls, procs, args, pinned)
        log(f"floor split: {target.name} under {label}, {args.split_pairs} rounds")
        try:
            runs = ab_rounds(args, procs, target, run_load, FLOOR_TOOLS, args.split_pairs, pinned)
        finally:
            target.close()
        rows.append({"target": target.name, "load": load, "label": label, "runs": runs,
                     **{t.name: ratios(runs, t.name) for t in FLOOR_TOOLS[1:]}})
    results["floor_split"] = rows


def program_costs(args, procs, target, run_load, extra=(), tool_cls=Connscope, pinned=True):
    """One more run of a tool (connscope attach unless told) with kernel.bpf_stats_enabled=1:
    run time per program."""
    old = set_bpf_stats(1)
    try:
        tool = tool_cls(procs, args.build, target)
        tool.extra = tuple(tool.extra) + tuple(extra)
        tool.start()
        before = prog_stats(tool.proc.pid)
        t0 = time.monotonic()
        res = run_load(target.port, args, pinned)
        elapsed_s = time.monotonic() - t0
        after = prog_stats(tool.proc.pid)
        report = tool.stop()
    finally:
        set_bpf_stats(old)
    requests = (res["rps"] or 0) * elapsed_s
    progs = []
    for prog_id, p in after.items():
        if p["name"].startswith("sample_listener"):
            continue  # the iterator: the daemon's own walks, not the server's path
        b = before.get(prog_id, {})
        cnt = p.get("run_cnt", 0) - b.get("run_cnt", 0)
        ns = p.get("run_time_ns", 0) - b.get("run_time_ns", 0)
        progs.append({"name": p["name"], "type": p["type"], "calls": cnt, "ns": ns,
                      "ns_per_call": ns / cnt if cnt else 0.0,
                      "calls_per_req": cnt / requests if requests else 0.0,
                      "ns_per_req": ns / requests if requests else 0.0})
    progs.sort(key=lambda x: -x["ns"])
    return {"rps": res["rps"], "requests": requests, "programs": progs, "report": report}
