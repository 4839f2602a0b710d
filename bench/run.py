#!/usr/bin/env python3
"""connscope benchmarks: `make bench` runs this.

Measures, in one run, and prints one report:
  1. overhead   throughput with a tool attached / bare, every tool in the same
                rounds (order rotated), medians of --pairs rounds, for nginx
                and csserver under wrk (keep-alive), ab (a connection per
                request) and churn (connections at the machine's highest
                rate), each pinned and unpinned; tools: connscope attach, the
                connscoped daemon in its default mode, the floor (empty
                programs on the same hooks), a bpftrace peer
  2. accuracy   connscope's lost events and p99 vs the client's p99, per load;
                connscoped's traced share, lost events and CPU
  3. costs      per BPF program run time (kernel.bpf_stats_enabled=1)
  4. engine     `connscope report` replaying a >= 10M-record trace: records/s
                per CPU second
  5. scale      daemon memory and BPF map memory with 10k/50k/100k idle
                connections, and under connection churn
  6. jvm        the JVM pause probes on a JVM that pauses on a schedule, under
                keep-alive load: pauses seen vs the JVM's log, BPF ns per pause
                and per request, server CPU per request with and without them
and a summary table of the overhead ratios at the end.

Needs root, the tools of scripts/deps.sh plus bpftrace, and a quiet
machine: other tracing programs and busy CPUs move every figure. Every run
is bounded in time and every load goes to 127.0.0.1 only.

Modules (each imports only those listed before it): common, targets,
loads, tools, bpfinfo, overhead, engine_scale, jvm, report; run.py ties them.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from common import PIN, QUIET, Procs, load_average, log, wait_quiet
from bpfinfo import other_tracing_programs
from engine_scale import engine_speed, scale
from jvm import jvm_pauses
from loads import LOADS
from overhead import floor_split, overhead, peak_rate
from report import append_results, report
from tools import DAEMON_PERIOD_S

# Every run's report, appended with its date and commit: the dated record of
# what was measured (bench/README.md gives the current figures).
RESULTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.md")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--pairs", type=int, default=5, help="A/B rounds per target and load (default 5)")
    ap.add_argument("--run-seconds", type=int, default=DAEMON_PERIOD_S,
                    help="length of every run of the overhead rows, every tool alike (default "
                         f"{DAEMON_PERIOD_S}: one tracing period of connscoped, whose default traces "
                         "1 s in every 10; shorter runs trace a share that depends on the phase)")
    ap.add_argument("--wrk-seconds", type=int, default=5,
                    help="wrk runs of the floor split, the peak rate and the per-program costs")
    ap.add_argument("--ab-requests", type=int, default=40000)
    ap.add_argument("--ab-seconds", type=int, default=4, help="ab stops at this time if not done")
    ap.add_argument("--targets", default="nginx,csserver")
    ap.add_argument("--loads", default=",".join(LOADS),
                    help=f"overhead and floor split loads (default {','.join(LOADS)})")
    ap.add_argument("--engine-records", type=int, default=10_000_000)
    ap.add_argument("--engine-runs", type=int, default=3)
    ap.add_argument("--keep-trace", action="store_true", help="keep the big trace in build/bench")
    ap.add_argument("--scale", default="10000,50000,100000")
    ap.add_argument("--churn-seconds", type=int, default=10)
    ap.add_argument("--split-pairs", type=int, default=3, help="A/B rounds of the floor split")
    ap.add_argument("--split-targets", default="csserver", help="targets of the floor split")
    ap.add_argument("--split-loads", default="wrk,ab", help="loads of the floor split")
    ap.add_argument("--jvm-rounds", type=int, default=4,
                    help="jvm: rounds of connscope with and without the pause probes, each side first "
                         "in every other (default 4)")
    ap.add_argument("--jvm-seconds", type=int, default=5, help="jvm: each run's load, in s (default 5)")
    ap.add_argument("--only", default="overhead,floorsplit,engine,scale,jvm",
                    help="sections to run (default: all; overhead includes accuracy and costs)")
    ap.add_argument("--probe-groups", action="store_true",
                    help="overhead: also run connscope with sched_waking from the start, and "
                         "without the epoll path, in the same rounds")
    ap.add_argument("--variants", action="store_true",
                    help="overhead: also run connscoped with every probe of connections and "
                         "packets detached between windows (counted in windows only), and "
                         "connscoped and connscope with the BPF statistics always on, in the same "
                         "rounds")
    ap.add_argument("--nice", type=int, default=-20, help="niceness of every process started")
    ap.add_argument("--pin", choices=("pinned", "unpinned", "both"), default="both",
                    help="overhead rows: pinned (server on the last CPU, load on CPU 0), unpinned, "
                         "or each row both ways (default)")
    ap.add_argument("--no-pin", action="store_true",
                    help="pin nothing anywhere (overhead rows unpinned, floor split too)")
    ap.add_argument("--no-daemon", action="store_true",
                    help="overhead: leave the connscoped runs out")
    ap.add_argument("--no-costs", action="store_true",
                    help="overhead: leave the per-program cost runs out")
    ap.add_argument("--max-load", type=float, default=0.5,
                    help="wait (at most 60 s) for the load average to drop below this")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.loads = args.loads.split(",")
    args.split_loads = args.split_loads.split(",")
    for load in args.loads + args.split_loads:
        if load not in LOADS:
            sys.exit(f"bench: unknown load {load!r} (known: {', '.join(LOADS)})")
    if args.no_pin:
        args.pin = "unpinned"
    args.targets = args.targets.split(",")
    args.split_targets = args.split_targets.split(",")
    args.scale = [int(x) for x in args.scale.split(",") if x]
    only = set(args.only.split(","))

    if os.geteuid() != 0:
        sys.exit("bench: run as root (BPF programs, bpf_stats_enabled)")
    # The tools each piece runs: a piece run alone needs only its own.
    needs = {"overhead": ("wrk", "ab", "nginx", "bpftrace", "bpftool", "ss"),
             "floorsplit": ("wrk", "ab", "nginx", "bpftool", "ss"),
             "engine": ("wrk", "ab", "nginx"), "scale": ("ss",), "jvm": ()}
    for tool in sorted({t for piece in only for t in needs.get(piece, ())}):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} is missing: make deps (scripts/deps.sh) installs it")

    results = {"args": vars(args)}
    # Everything the benchmark starts runs at nice -20 (inherited): other
    # work on the machine then takes little CPU from the measured runs.
    try:
        os.setpriority(os.PRIO_PROCESS, 0, args.nice)
    except OSError as err:
        log(f"cannot renice to {args.nice}: {err}")
    load = wait_quiet(args.max_load, 60)
    others = other_tracing_programs()
    results["conditions"] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "kernel": os.uname().release, "cpus": os.cpu_count(), "load_before": load,
        "other_tracing_progs": len(others), "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "other_tracing_names": sorted({p.get("name", "?") for p in others}),
    }
    if os.path.exists("/etc/connscope/connscoped.conf"):
        log("warning: /etc/connscope/connscoped.conf exists: connscoped runs read it "
            "(not the default mode if it sets trace)")
    if others:
        log(f"warning: {len(others)} tracing BPF programs of other processes are loaded: "
            "every figure pays for them")
    if not args.no_pin and (os.cpu_count() or 1) >= 2 and shutil.which("taskset"):
        PIN["server"] = ["taskset", "-c", str(os.cpu_count() - 1)]
        PIN["load"] = ["taskset", "-c", "0"]
    results["conditions"]["pinning"] = {k: " ".join(v[2:]) or "none" for k, v in PIN.items()}
    procs = Procs()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    t0 = time.monotonic()
    sections = [("overhead", overhead), ("overhead", peak_rate), ("floorsplit", floor_split),
                ("engine", engine_speed), ("scale", scale), ("jvm", jvm_pauses)]
    try:
        for name, run in sections:
            if name not in only:
                continue
            try:
                run(args, procs, results)
            except (RuntimeError, OSError, ValueError, KeyError, subprocess.SubprocessError) as err:
                log(f"{run.__name__} failed: {err!r}; going on with the rest")
                results.setdefault("failed", []).append(f"{run.__name__}: {err!r}")
                procs.stop_all()
    finally:
        procs.stop_all()
    results["conditions"]["load_after"] = load_average()
    results["conditions"]["quiet_wait_s"] = QUIET["waited_s"]
    results["conditions"]["seconds"] = time.monotonic() - t0
    os.makedirs(f"{args.build}/bench", exist_ok=True)
    with open(f"{args.build}/bench/results.json", "w") as f:
        json.dump(results, f, indent=1)
    with open(f"{args.build}/bench/results.txt", "w") as f:
        report(results, f)
    with open(f"{args.build}/bench/results.txt") as f:
        text = f.read()
    sys.stdout.write(text)
    append_results(results, text, RESULTS_FILE, sys.argv[1:])
    log(f"done in {results['conditions']['seconds']:.0f} s; raw figures in "
        f"{args.build}/bench/results.json; the report appended to {RESULTS_FILE}")


if __name__ == "__main__":
    main()
