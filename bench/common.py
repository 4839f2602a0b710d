"""Helpers every bench module uses: logging, child processes, statistics,
CPU accounting, pinning and the wait for a quiet machine. Imports nothing
of the bench's own."""
import glob
import os
import re
import resource
import select
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout_s=10.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def wait_quiet(max_load, timeout_s):
    """Wait (bounded) for the 1-minute load average to drop below max_load."""
    end = time.monotonic() + timeout_s
    while load_average() > max_load and time.monotonic() < end:
        time.sleep(2)
    return load_average()


class Procs:
    """Every process the benchmark starts, so that all are ended on the way out."""

    def __init__(self):
        self.live = []

    def start(self, args, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(args, **kw)
        self.live.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM, timeout_s=20.0):
        if p is None:
            return None
        if p.poll() is None:
            try:
                p.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p in self.live:
            self.live.remove(p)
        return p.returncode

    def stop_all(self):
        for p in list(self.live):
            self.stop(p, signal.SIGKILL if p.poll() is None else signal.SIGTERM, 5)


def wait_line(stream, pattern, timeout_s):
    """Read a child's pipe (at the fd level) until the text matches; the match or None."""
    fd = stream.fileno()
    end = time.monotonic() + timeout_s
    buf = ""
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return None  # the child closed it (exited)
        buf += chunk.decode(errors="replace")
        m = re.search(pattern, buf)
        if m:
            return m
    return None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs):
    xs = [x for x in xs if x is not None]
    return (min(xs), max(xs)) if xs else (None, None)


def fmt_ratio(xs):
    m = median(xs)
    if m is None:
        return "-"
    lo, hi = spread(xs)
    return f"{m:.3f} [{lo:.2f}-{hi:.2f}]"


def fmt_us(us):
    if us is None:
        return "-"
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.0f} us"


def fmt_pct(x):
    return "-" if x is None else f"{x:.1%}"


def mib(b):
    return "-" if b is None else f"{b / 2**20:.1f} MiB"


TICK_HZ = os.sysconf("SC_CLK_TCK")


def cpu_busy_s():
    """All CPUs' task time so far (user, nice, system, steal). Interrupt time is left
    out: the loopback traffic's softirqs are ours but not in any process's times."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (v[0] + v[1] + v[2] + v[7]) / TICK_HZ


def proc_cpu_s(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / TICK_HZ


def tasks_cpu_ns(pids):
    """On-CPU time (user + system) of every thread of the processes so far, in ns
    (/proc/PID/task/*/schedstat, first field): /proc/PID/stat's ticks are 10 ms, too
    coarse to tell a 1 % difference in a 10 s run apart."""
    total = 0
    for pid in pids:
        for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
            try:
                with open(path) as f:
                    total += int(f.read().split()[0])
            except (OSError, IndexError, ValueError):
                pass  # a thread that ended meanwhile
    return total


def ours_cpu_s(server_pids):
    """CPU of what we started: reaped children (loads, tools) plus the live servers."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + proc_cpu_s(server_pids)


# CPUs of the server and of the load generator when a row is pinned: each its
# own CPU, so that runs do not differ by where the scheduler put whom. main()
# fills them in where the machine has 2 CPUs or more and taskset.
PIN = {"server": [], "load": []}


def pin(role, pinned=True):
    """The taskset prefix of a role's command line ([] when unpinned)."""
    return PIN[role] if pinned else []


def can_pin():
    return bool(PIN["server"])


QUIET = {"budget_s": 60.0, "waited_s": 0.0}


def wait_for_quiet_cpu(max_share=0.10, round_max_s=15.0):
    """Before a round: wait (bounded, per round and over the whole run) until other
    processes use less than max_share of the machine's CPU over one second."""
    end = time.monotonic() + min(round_max_s, QUIET["budget_s"] - QUIET["waited_s"])
    while True:
        t0, busy0 = time.monotonic(), cpu_busy_s()
        time.sleep(1.0)
        share = (cpu_busy_s() - busy0) / ((time.monotonic() - t0) * os.cpu_count())
        if share < max_share or time.monotonic() >= end:
            return share
        QUIET["waited_s"] += time.monotonic() - t0
