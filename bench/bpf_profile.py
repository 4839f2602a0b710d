#!/usr/bin/env python3
"""Where the probes' time goes, program by program and, within each, function by
function: perf samples every CPU (cpu-clock, with call chains) while a target
serves a load with a tool attached. A sample whose chain holds a BPF program is
charged to that program and to the kernel function it was in (a helper, the
ring buffer's lock; "(body)": the program's own instructions); one inside the
kernel's code that runs a tracing program, outside any program, is the hooks'
dispatch. The kernel's run-time statistics (bench/run.py's cost runs) time a
program's body and helpers only; the dispatch is what they leave out.

usage: python3 bench/bpf_profile.py [--build build] [--target csserver|nginx]
         [--load wrk|ab|churn] [--tool attach|between|floor|none] [--seconds 10]
         [--frequency 4999] [--top 6] [--json FILE]

  attach:  connscope attach --port (its default: every probe, local clients followed)
  between: connscoped --trace 1/3600 (after its first window: the programs that count
           every connection between windows)
  floor:   bench/floor, an empty program on every hook connscope uses
  none:    nothing attached (the dispatch of other processes' programs, if any)

Pinned as bench/run.py pins: the server on the last CPU, the load on CPU 0.
Estimates: a program's ns per request is its samples times the sampling period
over the load's requests (ab and churn: connections); at 4999 Hz on 2 CPUs a
10 s run takes some 100 000 samples, a few hundred in a program of 1 us a
request at 10 000 requests/s.
"""
import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from common import PIN, Procs, log
from loads import LOADS
from targets import CsServer, Nginx, new_target
from tools import Connscope, Connscoped, Floor, NoTool

TARGETS = {"csserver": CsServer, "nginx": Nginx}

# Kernel functions that run tracing programs: a sample in one of them, with no
# program frame below it, is the dispatch of a hook.
DISPATCH = re.compile(r"^(bpf_trace_run\d+|__bpf_trace_\w+|trace_call_bpf|perf_call_bpf_(enter|exit)|"
                      r"perf_syscall_(enter|exit)|perf_trace_run_bpf_submit)$")
PROG = re.compile(r"^bpf_prog_[0-9a-f]{16}_(\w+)$")
# Where an idle CPU's samples land: not the server's busy time.
IDLE = ("default_idle", "default_idle_call", "pv_native_safe_halt")


class Between(Connscoped):
    """connscoped with one window an hour: past its first, the between-window programs."""
    name = "between"
    extra = ("--trace", "1/3600")


def make_tool(name, procs, build, target):
    if name == "attach":
        return Connscope(procs, build, target)
    if name == "between":
        return Between(procs, build, target)
    if name == "floor":
        return Floor(procs, build, target)
    return NoTool(procs, build, target)


def perf_samples(path):
    """Each sample of a perf.data as (cpu, period_ns, [frame symbols, leaf first])."""
    out = subprocess.run(["perf", "script", "-i", path, "-F", "cpu,period,ip,sym", "--no-inline"],
                         capture_output=True, text=True, timeout=600).stdout
    cpu, period, frames = None, 0, []
    for line in out.splitlines():
        head = re.match(r"^\s*\[(\d+)\]\s+(\d+)", line)
        if head:
            if cpu is not None:
                yield cpu, period, frames
            cpu, period, frames = int(head.group(1)), int(head.group(2)), []
            continue
        frame = re.match(r"^\s+[0-9a-f]+\s+(\S+)", line)
        if frame and cpu is not None:
            frames.append(re.sub(r"\+0x[0-9a-f]+$", "", frame.group(1)))
    if cpu is not None:
        yield cpu, period, frames


def charge(frames):
    """(program, function) a sample's time belongs to, or ("(dispatch)", fn), or None. The
    function is the one the program called (a helper, with whatever it called in turn)."""
    for i, sym in enumerate(frames):
        m = PROG.match(sym)
        if m:
            return m.group(1), "(body)" if i == 0 else frames[i - 1]
    for sym in frames:
        if DISPATCH.match(sym):
            return "(dispatch)", frames[0]
    return None


def record(args, path):
    """Run the load with the tool attached and perf recording into path: (rps, seconds)."""
    procs = Procs()
    try:
        target = new_target(TARGETS[args.target], procs, args, pinned=True)
        tool = make_tool(args.tool, procs, args.build, target)
        tool.start()
        perf = procs.start(["perf", "record", "-q", "-a", "-g", "-e", "cpu-clock", "-F",
                            str(args.frequency), "-o", path], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # perf's own start-up is not the load's
        t0 = time.monotonic()
        res = LOADS[args.load][1](target.port, args, True, args.seconds)
        elapsed_s = time.monotonic() - t0
        procs.stop(perf, signal.SIGINT, 60)  # SIGINT: perf writes its file out
        tool.stop()
    finally:
        procs.stop_all()
    if not res.get("rps"):
        sys.exit(f"bpf_profile: the load served nothing ({res.get('errors')})")
    return res["rps"], elapsed_s


def profile(args):
    fd, path = tempfile.mkstemp(prefix="connscope-bpf-profile-", suffix=".data")
    os.close(fd)
    try:
        rps, elapsed_s = record(args, path)
        requests = rps * elapsed_s
        by_prog = collections.defaultdict(collections.Counter)
        server_cpu = os.cpu_count() - 1
        server_ns = 0
        for cpu, period, frames in perf_samples(path):
            if cpu == server_cpu and frames and frames[0] not in IDLE:
                server_ns += period
            who = charge(frames)
            if who:
                by_prog[who[0]][who[1]] += period
    finally:
        os.unlink(path)
    return {"target": args.target, "load": args.load, "tool": args.tool, "seconds": args.seconds,
            "rps": rps, "requests": requests, "server_cpu_ns_per_req": server_ns / requests,
            "programs": {p: dict(fns) for p, fns in by_prog.items()}}


def report(result, top, w=sys.stdout.write):
    req = result["requests"]
    progs = sorted(result["programs"].items(), key=lambda kv: -sum(kv[1].values()))
    total = sum(sum(f.values()) for _, f in progs)
    w(f"bpf_profile: {result['target']} under {LOADS[result['load']][0]}, {result['tool']}, "
      f"{result['seconds']} s: {result['rps']:.0f}/s, {total / req:.0f} ns of probes a request "
      f"(dispatch included), the server's CPU busy {result['server_cpu_ns_per_req']:.0f} ns a request\n")
    w(f"{'program':22} {'ns/req':>7} {'share':>6}  the functions in it (ns/req)\n")
    for name, fns in progs:
        ns = sum(fns.values())
        parts = ", ".join(f"{fn} {v / req:.0f}" for fn, v in sorted(fns.items(), key=lambda kv: -kv[1])[:top])
        w(f"{name:22} {ns / req:7.0f} {100 * ns / total:5.1f}%  {parts}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--target", choices=sorted(TARGETS), default="csserver")
    ap.add_argument("--load", choices=sorted(LOADS), default="ab")
    ap.add_argument("--tool", choices=("attach", "between", "floor", "none"), default="attach")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--frequency", type=int, default=4999)
    ap.add_argument("--top", type=int, default=6, help="functions shown per program")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.ab_requests, args.ab_seconds, args.wrk_seconds = 50000 * args.seconds, args.seconds, args.seconds
    if os.geteuid() != 0:
        sys.exit("bpf_profile: run as root")
    for tool in ("perf", "taskset", "wrk" if args.load == "wrk" else "ab"):
        if not shutil.which(tool):
            sys.exit(f"bpf_profile: {tool} is missing")
    if (os.cpu_count() or 1) >= 2:
        PIN["server"] = ["taskset", "-c", str(os.cpu_count() - 1)]
        PIN["load"] = ["taskset", "-c", "0"]
    log(f"bpf_profile: {args.target} under {args.load}, {args.tool}, {args.seconds} s")
    result = profile(args)
    report(result, args.top)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
