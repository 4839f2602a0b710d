"""The tools attached around a load run: none (bare), connscope attach, the
connscoped daemon in its default mode, the floor (empty programs on the same
hooks) and a bpftrace peer."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from common import HERE, proc_cpu_s, wait_line

# connscoped's default tracing schedule (daemon/, man/connscoped.8): requests
# are traced W seconds at the start of every P seconds. A run of a whole
# number of periods is traced W/P of its time whatever the phase.
DAEMON_PERIOD_S = 10


class Tool:
    """A tool attached around one load run."""

    def __init__(self, procs, build, target):
        self.procs, self.build, self.target = procs, build, target
        self.proc = None


class NoTool(Tool):
    name = "none"

    def start(self):
        pass

    def stop(self):
        return {}


class Connscope(Tool):
    name = "connscope"
    extra = ()
    probes = None  # CONNSCOPE_BENCH_PROBES (daemon/source/probes.c): groups left out or forced in

    def start(self):
        self.report = None
        self.out = tempfile.TemporaryFile(mode="w+")
        env = dict(os.environ)
        env.pop("CONNSCOPE_BENCH_PROBES", None)
        if self.probes:
            env["CONNSCOPE_BENCH_PROBES"] = self.probes
        self.proc = self.procs.start([f"{self.build}/connscope", "attach", "--port",
                                      str(self.target.port), "--json", *self.extra],
                                     stdout=self.out, stderr=subprocess.PIPE, text=True, env=env)
        if not wait_line(self.proc.stderr, r"connscope: attached", 20):
            self.procs.stop(self.proc, signal.SIGKILL)
            raise RuntimeError("connscope did not attach")
        # Loading and verifying the programs is not the run's cost: start counting now.
        self.started = time.monotonic()
        self.cpu0_s = proc_cpu_s([self.proc.pid])

    def stop(self):
        # The daemon's own CPU while attached (before the report is built).
        cpu_s = proc_cpu_s([self.proc.pid]) - self.cpu0_s
        alive_s = time.monotonic() - self.started
        self.procs.stop(self.proc, signal.SIGINT, 60)
        self.out.seek(0)
        text = self.out.read()
        self.out.close()
        try:
            report = json.loads(text)
        except ValueError:
            return {"error": "no JSON report"}
        self.report = report  # the whole of it, for a section that needs more than the figures below
        return {"daemon_cpu": cpu_s / alive_s if alive_s > 0 else None,
                "lost": report["events"]["lost"], "received": report["events"]["received"],
                "table_full": report["events"]["table_full"],
                "requests": report.get("requests"),
                "p99_us": report.get("latency_us", {}).get("p99"),
                # BPF run time per request served, as its report says (sampled statistics: estimated).
                "bpf_ns_per_req": (report.get("cost") or {}).get("bpf_ns_per_request")}


def bpf_estimated_ns(status):
    """connscoped's status: its programs' run time so far (ns), estimated where the BPF
    statistics were sampled (per connection times connections: an exact count); None if
    not measured."""
    cost = status.get("cost") or {}
    if not cost.get("bpf_measured"):
        return None
    if cost.get("connections") and cost.get("bpf_ns_per_connection") is not None:
        return cost["bpf_ns_per_connection"] * cost["connections"]
    return cost.get("bpf_total_ns")  # no connection yet: nothing to scale


class Connscoped(Tool):
    """connscoped as a user starts it: --port, its own control socket, nothing else
    (tracing 1 s in every 10, the request probes detached in between; the kernel's
    BPF run-time statistics on, as by default)."""
    name = "connscoped"
    probes = None  # CONNSCOPE_BENCH_PROBES, as for Connscope
    extra = ()

    def status(self):
        out = subprocess.run([f"{self.build}/connscope", "status", "--json", "--socket", self.sock],
                             capture_output=True, text=True, timeout=10)
        try:
            return json.loads(out.stdout)
        except ValueError:
            return {}

    @staticmethod
    def between_windows(earlier, later):
        """Between two looks at its status, it ran in windows and traced nothing: the
        first window has closed. (Its uptime counts from before the probes were in.)"""
        def traced_s(status):
            return status.get("tracing", {}).get("traced_s") or 0
        ran_s = (later.get("uptime_s") or 0) - (earlier.get("uptime_s") or 0)
        return (later.get("tracing", {}).get("mode") == "windows" and ran_s >= 0.2
                and traced_s(later) - traced_s(earlier) < 0.01)

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="connscope-bench-daemon-")
        self.sock = f"{self.dir}/cs.sock"
        env = {k: v for k, v in os.environ.items() if k != "CONNSCOPE_BENCH_PROBES"}
        if self.probes:
            env["CONNSCOPE_BENCH_PROBES"] = self.probes
        self.proc = self.procs.start([f"{self.build}/connscoped", "--port",
                                      str(self.target.port), "--socket", self.sock, *self.extra],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        if not wait_line(self.proc.stderr, r"connscope: (attached to|now watching pid)", 20):
            self.procs.stop(self.proc, signal.SIGKILL)
            shutil.rmtree(self.dir, ignore_errors=True)
            raise RuntimeError("connscoped did not start watching")
        # The daemon opens its first window as it starts: wait for that window to close
        # (its traced time stops growing), so that a run of one period starts between
        # windows and holds exactly one, as for a daemon left running, and a cost run of
        # --trace 1/3600 sees only the programs that run between windows.
        end = time.monotonic() + 10
        earlier, self.status0 = {}, self.status()
        while not self.between_windows(earlier, self.status0) and time.monotonic() < end:
            time.sleep(0.25)
            earlier, self.status0 = self.status0, self.status()
        self.started = time.monotonic()
        self.cpu0_s = proc_cpu_s([self.proc.pid])

    def stop(self):
        cpu_s = proc_cpu_s([self.proc.pid]) - self.cpu0_s
        st = self.status()
        alive_s = time.monotonic() - self.started
        self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=30)
        except Exception:  # noqa: BLE001 - a daemon that does not stop is killed below
            err = ""
        self.procs.stop(self.proc, signal.SIGKILL, 5)
        shutil.rmtree(self.dir, ignore_errors=True)
        tr0, tr = self.status0.get("tracing", {}), st.get("tracing", {})
        if tr0.get("mode") != "windows":
            tr = {}  # no baseline: no traced share rather than a wrong one
        wall_s = (st.get("uptime_s") or 0) - (self.status0.get("uptime_s") or 0)
        traced_s = (tr.get("traced_s") or 0) - (tr0.get("traced_s") or 0)
        stopped = re.search(r"stopped after ([\d.]+) s: (\d+) requests, (\d+) events, (\d+) lost", err or "")
        return {"daemon_cpu": cpu_s / alive_s if alive_s > 0 else None,
                "traced_s": traced_s if tr else None,
                "traced_share": traced_s / wall_s if tr and wall_s > 0 else None,
                "windows": (tr.get("windows") or 0) - (tr0.get("windows") or 0) if tr else None,
                "requests_traced": tr.get("requests_traced"),
                "requests_estimated": tr.get("requests_estimated"),
                "mode": tr.get("mode"), "window_s": tr.get("window_s"), "period_s": tr.get("period_s"),
                "lost": st.get("lost"), "received": st.get("events"),
                # Its programs' run time over the run, estimated as its status does (the
                # statistics sampled by default), read before and after.
                "bpf_ns": bpf_estimated_ns(st) - bpf_estimated_ns(self.status0)
                if bpf_estimated_ns(st) is not None and bpf_estimated_ns(self.status0) is not None else None,
                "exit_line": stopped.group(0) if stopped else None}


class Floor(Tool):
    name = "floor"
    only = None  # attach only the hooks of these section prefixes

    def start(self):
        extra = ["--only", self.only] if self.only else []
        self.proc = self.procs.start([f"{self.build}/bench/floor", *extra], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        if not wait_line(self.proc.stdout, r"floor: attached \d+", 20):
            self.procs.stop(self.proc, signal.SIGKILL)
            raise RuntimeError("floor did not attach")

    def stop(self):
        self.procs.stop(self.proc, signal.SIGINT)
        return {}


def parse_bpftrace_hist(text):
    """@usecs = hist(...) lines -> (count, p99 bucket upper bound in us)."""
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    buckets = []
    for m in re.finditer(r"^\[(\d+)([KMG]?)(?:, (\d+)([KMG]?))?\)?\]?\s+(\d+)\s+\|", text, re.M):
        hi = int(m.group(3)) * mult[m.group(4)] if m.group(3) else int(m.group(1)) * mult[m.group(2)] + 1
        buckets.append((hi, int(m.group(5))))
    total = sum(c for _, c in buckets)
    if not total:
        return 0, None
    seen = 0
    for hi, c in buckets:
        seen += c
        if seen >= 0.99 * total:
            return total, float(hi)
    return total, None


class Bpftrace(Tool):
    name = "bpftrace"

    def start(self):
        self.proc = self.procs.start(["bpftrace", f"{HERE}/reqlat.bt", str(self.target.pid)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if not wait_line(self.proc.stdout, r"Attaching \d+ probes", 30):
            self.procs.stop(self.proc, signal.SIGKILL)
            raise RuntimeError("bpftrace did not attach")
        time.sleep(1.0)  # "Attaching" comes before the attach itself

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            text, _ = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            text, _ = self.proc.communicate()
        self.procs.stop(self.proc)
        count, p99_us = parse_bpftrace_hist(text or "")
        return {"requests": count, "p99_bucket_us": p99_us}


TOOLS = [NoTool, Connscope, Connscoped, Floor, Bpftrace]

# --probe-groups: connscope with the wake-up probe attached from the start
# (it waits for a parked request, which these loads never make), and without
# the epoll path (the epoll_wait exits, and the wake-up probe that needs
# them), beside connscope as it is, in the same rounds.
PROBE_GROUP_TOOLS = [
    type("ConnscopeWaking", (Connscope,), {"name": "cs+waking", "probes": "waking-at-start"}),
    type("ConnscopeNoEpoll", (Connscope,), {"name": "cs-no-epoll", "probes": "no-epoll"}),
]

# The hooks connscoped keeps between its windows (daemon/source/probes.c,
# is_request_probe: all but the request probes; the fork and exit followers
# left out, which a steady server never runs).
BETWEEN_WINDOWS_HOOKS = ("tracepoint/syscalls/sys_enter_accept,tracepoint/syscalls/sys_exit_accept,"
                         "tp_btf/tcp_send_reset,tp_btf/kfree_skb,tp_btf/tcp_receive_reset,"
                         "tp_btf/inet_sock_set_state,tp_btf/tcp_retransmit_skb")

# --variants: connscoped --between-windows counters, every probe of
# connections and packets (accepts, state changes, resets, drops) detached
# between windows too, the kernel's counters of the namespace counting the
# gaps: what keeping those counts port by port between windows costs; the floor of those hooks alone
# (empty programs): what any design that counts them per event must pay;
# connscoped and connscope with the kernel's BPF statistics on the whole run
# (--bpf-stats always), not sampled: what sampling them saves; connscope
# not following its local clients (--no-clients): what following the load
# generator's reads costs.
VARIANT_TOOLS = [
    type("ConnscopedCounters", (Connscoped,), {"name": "cd-counters", "extra": ("--between-windows", "counters")}),
    type("FloorBetweenWindows", (Floor,), {"name": "floor-between", "only": BETWEEN_WINDOWS_HOOKS}),
    type("ConnscopedStatsAlways", (Connscoped,), {"name": "cd-stats-always", "extra": ("--bpf-stats", "always")}),
    type("ConnscopeStatsAlways", (Connscope,), {"name": "cs-stats-always", "extra": ("--bpf-stats", "always")}),
    type("ConnscopeNoClients", (Connscope,), {"name": "cs-no-clients", "extra": ("--no-clients",)}),
]

# The per-program cost runs: connscoped between its windows only (one window
# of 1 s an hour, over before the run starts): what a connection costs it
# there, program by program, where its default spends 9 s in 10.
ConnscopedBetweenWindows = type("ConnscopedBetweenWindows", (Connscoped,),
                                {"name": "cd-between-windows", "extra": ("--trace", "1/3600")})

# The floor split into groups of hooks, each attached alone.
FLOOR_GROUPS = {
    "syscalls": "tracepoint/syscalls/",
    "sched": "tp_btf/sched_",
    "socket": "tp_btf/sk_,tp_btf/sock_,tp_btf/tcp_,tp_btf/inet_,tp_btf/net_,tp_btf/kfree_skb",
}
FLOOR_TOOLS = [NoTool] + [type(f"Floor_{k}", (Floor,), {"name": f"floor:{k}", "only": v})
                          for k, v in FLOOR_GROUPS.items()]
