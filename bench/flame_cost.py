#!/usr/bin/env python3
"""What `connscope flamegraph`'s stack probes cost the traced server.

    python3 bench/flame_cost.py [--build build] [--seconds 5] [--rounds 3]
                                [--connscope OTHER/connscope]

csserver with two SO_REUSEPORT workers; csload, closed loop over 4
connections, sends /block/1 (the worker sleeps 1 ms in nanosleep) and
/spin/1 (it computes 1 ms) half and half: each request leaves its worker's
CPU from somewhere else than the last (epoll_wait, the handler's sleep),
so each switch-out is read and copied, and the workers are on a CPU often
enough for hundreds of samples. `connscope flamegraph --pid` is attached
throughout, kernel.bpf_stats_enabled=1 while it is (put back after). The stack
programs' run_time_ns and run_cnt come from /proc/PID/fdinfo (the
programs are gone once connscope exits).

The scheduler programs run at every context switch and wake-up of the
machine, and the sampler at every tick of every CPU, the target's or not:
their averages say more of how busy the rest of the machine was than of
the target. So each round first measures 2 s with the target idle (every
call someone else's: the cost of a call that only finds it is not the
target's), then the load; the target's share is the load's time less that
cost for the calls that were not the target's, over the target's
switch-outs (its off-CPU intervals, kept or only counted: each is a
switch-out and a switch-in) and its samples, both from connscope's
summary. Also printed: connscope's own lines on the stacks it copied and
unwound (a build that does not unwind has none). --connscope measures
another build's binary against the same server and load. Run as root.
"""
import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bpfinfo import prog_stats, set_bpf_stats  # noqa: E402
from common import Procs, free_port, log, wait_port  # noqa: E402

IDLE_S = 2.0
SWITCH, SAMPLE = "on_stack_switch", "on_cpu_sample"


def wait_attached(path, timeout_s=20.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            with open(path) as f:
                if "attached to" in f.read():
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def delta(before, after, name):
    """(calls, ns) of the program named name (the kernel keeps 15 characters) between two readings."""
    for prog_id, p in after.items():
        if p["name"] == name[:15]:
            b = before.get(prog_id, {})
            return p["run_cnt"] - b.get("run_cnt", 0), p["run_time_ns"] - b.get("run_time_ns", 0)
    return 0, 0


def target_events(summary):
    """The target's samples and switch-outs (intervals kept and shorter ones), from the summary."""
    m = re.search(r"(\d+) samples \(\d+ lost\); off-CPU: (\d+) intervals .*?\), (\d+) shorter", summary)
    if not m:
        sys.exit("flame_cost: no counts in connscope's summary:\n" + summary)
    return int(m.group(1)), int(m.group(2)) + int(m.group(3))


def one_round(args, procs, server_pid, port, tmp):
    err_path = os.path.join(tmp, "fg.err")
    with open(err_path, "w") as err:
        fg = procs.start([args.connscope or os.path.join(args.build, "connscope"), "flamegraph", "--pid",
                          str(server_pid), "--duration", "120", "-o", os.path.join(tmp, "cost.folded")], stderr=err)
    if not wait_attached(err_path):
        sys.exit("flame_cost: connscope flamegraph did not attach")
    old = set_bpf_stats(1)
    try:
        start = prog_stats(fg.pid)
        time.sleep(IDLE_S)
        idle = prog_stats(fg.pid)
        subprocess.run([os.path.join(args.build, "csload"), "--port", str(port), "--connections", "4",
                        "--duration", str(args.seconds), "--path", "/block/1", "--mix", "/spin/1:0.5", "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
        loaded = prog_stats(fg.pid)
    finally:
        set_bpf_stats(old)
    procs.stop(fg, sig=2)
    with open(err_path) as f:
        summary = f.read()
    samples, switches = target_events(summary)
    figures = {}
    for name, events, calls_per_event in ((SWITCH, switches, 2), (SAMPLE, samples, 1)):
        idle_calls, idle_ns = delta(start, idle, name)
        calls, ns = delta(idle, loaded, name)
        other_ns = idle_ns / idle_calls if idle_calls else 0.0
        own_ns = ns - other_ns * max(calls - calls_per_event * events, 0)
        figures[name] = (events, calls, other_ns, own_ns / events if events else 0.0)
    lines = [line for line in summary.splitlines() if "user stacks copied" in line or "callers restored" in line]
    return figures, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connscope", help="the connscope binary to measure (default: BUILD/connscope)")
    args = ap.parse_args()
    if os.geteuid():
        sys.exit("flame_cost: run as root (BPF programs, bpf_stats_enabled)")
    procs = Procs()
    tmp = os.path.join(args.build, "flame-cost")
    os.makedirs(tmp, exist_ok=True)
    port = free_port()
    server = procs.start([os.path.join(args.build, "csserver"), "--port", str(port), "--workers", "2",
                          "--accept", "reuseport"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        if not wait_port(port):
            sys.exit("flame_cost: csserver did not listen")
        for r in range(args.rounds):
            figures, lines = one_round(args, procs, server.pid, port, tmp)
            log(f"round {r + 1}")
            events, calls, other, own = figures[SWITCH]
            print(f"  switch-outs {events:6d} ({calls} calls, {other:.0f} ns each not the target's): "
                  f"{own:7.0f} ns each, out and in")
            events, calls, other, own = figures[SAMPLE]
            print(f"  samples     {events:6d} ({calls} calls, {other:.0f} ns each not the target's): "
                  f"{own:7.0f} ns each")
            for line in lines:
                print("  " + line)
    finally:
        procs.stop(server)


if __name__ == "__main__":
    main()
