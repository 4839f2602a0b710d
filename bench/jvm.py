"""Section 6: what the JVM pause probes cost (bpf/pauses.bpf.c: HotSpot's USDT
probes, attached by uprobe to the target's libjvm.so). They run per safepoint,
never per request: this measures it on a JVM that pauses on its own clock
(targets.JavaServer: full collections and thread dumps on a schedule) under a
keep-alive load, connscope attached with and without them (--no-pauses), the
order rotated every round, the kernel's BPF statistics on throughout."""
import json
import os
import subprocess
import tempfile
import time

from bpfinfo import prog_stats, set_bpf_stats
from common import (REPO, can_pin, cpu_busy_s, log, median, ours_cpu_s, pin, tasks_cpu_ns,
                    wait_for_quiet_cpu)
from targets import JavaServer
from tools import Connscope

JDK = "/usr/lib/jvm/java-17-openjdk-amd64/bin"
SOURCE = f"{REPO}/tests/integration/jvm/CsPauses.java"
COMPARE = f"{REPO}/tests/integration/jvm/pauses_vs_log.py"
# CsPauses' schedule: a live set of 20 MB (full collections of about 10 ms), one
# forced every 300 ms, a thread dump every 100 ms: about 13 pauses a second.
SCHEDULE = (20, 300, 100)
# The pause probes' programs. The uprobe fallback's pair (a JDK without HotSpot's USDT
# probes) is counted as the safepoint's.
PAUSE_PROGRAMS = ("safepoint_begin", "safepoint_end", "vmop_begin", "vmop_end", "gc_begin", "gc_end")
FALLBACK = {"safepoint_begin_uprobe": "safepoint_begin", "safepoint_end_uprobe": "safepoint_end"}
# Both sides: connscope attach --port, without asking the JVM for its threads' names at the
# end (that is a safepoint of its own, and an attach to the JVM); the B side without the
# pause probes.
WITH, WITHOUT = "with", "without"
SIDES = [type("ConnscopePauses", (Connscope,), {"name": WITH, "extra": ("--no-jvm",)}),
         type("ConnscopeNoPauses", (Connscope,), {"name": WITHOUT, "extra": ("--no-jvm", "--no-pauses")})]


def compile_server(build):
    """javac CsPauses.java into build/bench/jvm, unless the class is newer than the source."""
    classes = f"{build}/bench/jvm"
    target = f"{classes}/CsPauses.class"
    if os.path.exists(target) and os.path.getmtime(target) >= os.path.getmtime(SOURCE):
        return classes
    os.makedirs(classes, exist_ok=True)
    subprocess.run([f"{JDK}/javac", "-d", classes, SOURCE], check=True, timeout=120,
                   capture_output=True)
    return classes


def run_csload(args, port, seconds_s, pinned):
    """Keep-alive load: csload, closed loop, 16 connections on one thread."""
    with tempfile.NamedTemporaryFile(mode="r", suffix=".json") as out:
        subprocess.run([*pin("load", pinned), f"{args.build}/csload", "--port", str(port),
                        "--connections", "16", "--duration", str(seconds_s), "--quiet",
                        "--json", out.name], capture_output=True, timeout=seconds_s + 30)
        try:
            res = json.load(out)
        except ValueError:
            return {"rps": None, "requests": 0, "errors": "no csload output"}
    errors = {k: v for k, v in (res.get("errors") or {}).items() if v}
    return {"rps": res.get("rate_rps"), "requests": res.get("requests") or 0, "load_s": res.get("duration_s"),
            "errors": " ".join(f"{k} {v}" for k, v in errors.items())}


def program_deltas(before, after):
    """Each program's calls and run time between two readings, summed by name (the
    iterator, the daemon's own walks, left out)."""
    progs = {}
    for prog_id, p in after.items():
        if p["name"].startswith("sample_listener"):
            continue
        b = before.get(prog_id, {})
        name = FALLBACK.get(p["name"], p["name"])
        x = progs.setdefault(name, {"name": name, "calls": 0, "ns": 0})
        x["calls"] += p["run_cnt"] - b.get("run_cnt", 0)
        x["ns"] += p["run_time_ns"] - b.get("run_time_ns", 0)
    return sorted(progs.values(), key=lambda x: -x["ns"])


def versus_log(report, jvm_log, from_ns, to_ns):
    """connscope's pauses against the JVM's log over [from_ns, to_ns]: the integration
    test's comparison (tests/integration/jvm/pauses_vs_log.py), its JSON."""
    with tempfile.NamedTemporaryFile(mode="w", suffix=".json") as f:
        json.dump({"pauses": (report or {}).get("pauses") or []}, f)
        f.flush()
        out = subprocess.run(["python3", COMPARE, f.name, jvm_log, str(from_ns), str(to_ns)],
                             capture_output=True, text=True, timeout=60)
    try:
        return json.loads(out.stdout)
    except ValueError:
        return {"error": out.stderr.strip()[-200:]}


def one_run(args, procs, server, side, r, pinned):
    """One load run with connscope attached (one side): the load's requests, the
    server's CPU, every program's calls and run time, the pauses against the log."""
    tool = side(procs, args.build, server)
    t0, busy0_s, ours0_s = time.monotonic(), cpu_busy_s(), ours_cpu_s(server.pids)
    tool.start()
    time.sleep(0.3)
    from_ns, before, cpu0_ns = time.monotonic_ns(), prog_stats(tool.proc.pid), tasks_cpu_ns(server.pids)
    res = run_csload(args, server.port, args.jvm_seconds, pinned)
    cpu_ns = tasks_cpu_ns(server.pids) - cpu0_ns
    after, to_ns = prog_stats(tool.proc.pid), time.monotonic_ns()
    summary = tool.stop()
    # Whatever else ran meanwhile (as in the overhead rounds): busy CPU time not ours.
    others_s = (cpu_busy_s() - busy0_s) - (ours_cpu_s(server.pids) - ours0_s)
    res["others_cpu"] = max(0.0, others_s) / ((time.monotonic() - t0) * os.cpu_count())
    progs = program_deltas(before, after)
    requests = res["requests"]
    request_ns = sum(x["ns"] for x in progs if x["name"] not in PAUSE_PROGRAMS)
    res.update({"side": side.name, "round": r, "window_s": (to_ns - from_ns) / 1e9,
                "server_cpu_ns_per_req": cpu_ns / requests if requests else None,
                "request_bpf_ns_per_req": request_ns / requests if requests else None,
                "programs": progs, "lost": summary.get("lost"),
                "vs_log": versus_log(tool.report, server.log, from_ns, to_ns)})
    v = res["vs_log"]
    log(f"  round {r} {side.name:8} {res['rps'] or 0:7.0f} req/s, server "
        f"{(res['server_cpu_ns_per_req'] or 0) / 1e3:.1f} us/req, pauses: JVM {v.get('safepoints')}, "
        f"connscope {v.get('pauses_in_window')}, others' CPU {res['others_cpu']:.0%} {res['errors']}")
    return res


def warm_up(args, procs, server, pinned):
    """Not counted: 3 s of load (the JIT compiles the server's path), then 3 s more with
    connscope attached with the pause probes. The first run after a bare warm-up was the
    slowest of its section in three runs of three (its server CPU a request up to 3.5 times
    the next one's), and it was always the same side's."""
    run_csload(args, server.port, 3, pinned)
    tool = SIDES[0](procs, args.build, server)
    tool.start()
    try:
        run_csload(args, server.port, 3, pinned)
    finally:
        tool.stop()


def jvm_pauses(args, procs, results):
    """Rounds of the two sides, order rotated, on one JVM; the sysctl put back after."""
    java = f"{JDK}/java"
    if not os.access(java, os.X_OK):
        raise RuntimeError(f"{java} is missing: scripts/deps.sh installs openjdk-17-jdk-headless")
    t0 = time.monotonic()
    classes = compile_server(args.build)
    pinned = can_pin()
    workdir = tempfile.mkdtemp(prefix="connscope-bench-jvm-")
    old = set_bpf_stats(1)
    server = None
    runs = []
    try:
        server = JavaServer(procs, java, classes, f"{workdir}/jvm.log", SCHEDULE, pinned)
        log(f"jvm: CsPauses (SerialGC, live {SCHEDULE[0]} MB, a full collection every {SCHEDULE[1]} ms, "
            f"a thread dump every {SCHEDULE[2]} ms), {args.jvm_rounds} rounds of connscope with and "
            f"without the pause probes, {args.jvm_seconds} s runs")
        warm_up(args, procs, server, pinned)
        for r in range(args.jvm_rounds):
            wait_for_quiet_cpu(round_max_s=5.0)  # this section's 90 s leave less to wait
            # A round's first run came after that idle wait, its second after a load: the
            # first cost the server more CPU a request, whichever side (by 1-25 % over the
            # second in 7 rounds of 8 on a busy machine). 1 s of load, not counted, evens it.
            run_csload(args, server.port, 1, pinned)
            for side in (SIDES if r % 2 == 0 else SIDES[::-1]):
                runs.append(one_run(args, procs, server, side, r, pinned))
    finally:
        if server:
            server.close()
        set_bpf_stats(old)
    results["jvm"] = {"schedule": {"live_mb": SCHEDULE[0], "gc_ms": SCHEDULE[1], "dump_ms": SCHEDULE[2]},
                      "pinned": pinned, "seconds_s": args.jvm_seconds, "runs": runs,
                      "summary": summarize(runs), "section_s": time.monotonic() - t0}
    log(f"jvm: done in {results['jvm']['section_s']:.0f} s (JVM log: {workdir}/jvm.log)")


def pause_programs(runs):
    """Over the runs with the probes: each pause program's calls, ns per call, calls per
    pause (connscope's count) and per 1000 requests."""
    pauses = sum(x["vs_log"].get("pauses_in_window") or 0 for x in runs)
    requests = sum(x["requests"] for x in runs)
    out = []
    for name in PAUSE_PROGRAMS:
        calls = sum(p["calls"] for x in runs for p in x["programs"] if p["name"] == name)
        ns = sum(p["ns"] for x in runs for p in x["programs"] if p["name"] == name)
        out.append({"name": name, "calls": calls, "ns": ns, "ns_per_call": ns / calls if calls else None,
                    "calls_per_pause": calls / pauses if pauses else None,
                    "calls_per_1000_req": 1000 * calls / requests if requests else None})
    return out


def summarize(runs):
    """The figures the report prints: pauses against the log, BPF per pause and per
    request, and each round's with/without ratios (throughput, server CPU a request)."""
    with_runs = [x for x in runs if x["side"] == WITH]
    progs = pause_programs(with_runs)
    per_call = {p["name"]: p["ns_per_call"] or 0 for p in progs}
    pauses = sum(x["vs_log"].get("pauses_in_window") or 0 for x in with_runs)
    collections = sum(x["vs_log"].get("gc_pauses") or 0 for x in with_runs)
    pause_ns = sum(p["ns"] for p in progs)
    rounds = sorted({x["round"] for x in runs})
    pair = {(x["round"], x["side"]): x for x in runs}

    def ratio(key, r):
        a, b = pair.get((r, WITH), {}).get(key), pair.get((r, WITHOUT), {}).get(key)
        return a / b if a and b else None
    return {
        "pauses_connscope": pauses, "collections_connscope": collections,
        "pauses_jvm": sum(x["vs_log"].get("safepoints") or 0 for x in with_runs),
        "pauses_matched": sum(x["vs_log"].get("pauses_matched") or 0 for x in with_runs),
        "safepoints_matched": sum(x["vs_log"].get("safepoints_matched") or 0 for x in with_runs),
        "collections_jvm": sum(x["vs_log"].get("gc_lines") or 0 for x in with_runs),
        "pauses_jvm_without": sum(x["vs_log"].get("safepoints") or 0 for x in runs if x["side"] == WITHOUT),
        "pause_programs": progs,
        "bpf_ns_per_pause": pause_ns / pauses if pauses else None,
        # A pause: the safepoint's and its operation's pairs; a collection adds gc_begin/end.
        "bpf_ns_pause_no_gc": sum(per_call[n] for n in PAUSE_PROGRAMS[:4]),
        "bpf_ns_pause_gc": sum(per_call[n] for n in PAUSE_PROGRAMS),
        "pause_bpf_ns_per_req": pause_ns / sum(x["requests"] for x in with_runs) if with_runs else None,
        "request_bpf_ns_per_req": {s: [x["request_bpf_ns_per_req"] for x in runs if x["side"] == s]
                                   for s in (WITH, WITHOUT)},
        "server_cpu_ns_per_req": {s: [x["server_cpu_ns_per_req"] for x in runs if x["side"] == s]
                                  for s in (WITH, WITHOUT)},
        "rps": {s: [x["rps"] for x in runs if x["side"] == s] for s in (WITH, WITHOUT)},
        "rps_ratio": [ratio("rps", r) for r in rounds],
        "others_cpu": median([x["others_cpu"] for x in runs]),
        "cpu_ratio": [ratio("server_cpu_ns_per_req", r) for r in rounds],
    }
