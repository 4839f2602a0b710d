#!/usr/bin/env python3
"""connscope benchmarks: `make bench` runs this.

Measures, in one run, and prints one report:
  1. overhead   throughput with a tool attached / without, A/B alternated,
                medians of --pairs pairs, for nginx and csserver under wrk
                (keep-alive) and ab (no keep-alive); tools: connscope, the
                floor (empty programs on the same hooks), a bpftrace peer
  2. accuracy   connscope's lost events and p99 vs the client's p99, per load
  3. costs      per BPF program run time (kernel.bpf_stats_enabled=1)
  4. engine     `connscope report` replaying a >= 10M-record trace: records/s
                per CPU second
  5. scale      daemon memory and BPF map memory with 10k/50k/100k idle
                connections, and under connection churn

Needs root, the tools of scripts/deps.sh plus bpftrace, and a quiet
machine: other tracing programs and busy CPUs move every figure. Every run
is bounded in time and every load goes to 127.0.0.1 only.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# ---------------------------------------------------------------- helpers


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10.0):
    end = time.monotonic() + timeout
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


def wait_quiet(max_load, timeout):
    """Wait (bounded) for the 1-minute load average to drop below max_load."""
    end = time.monotonic() + timeout
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

    def stop(self, p, sig=signal.SIGTERM, timeout=20.0):
        if p is None:
            return None
        if p.poll() is None:
            try:
                p.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p in self.live:
            self.live.remove(p)
        return p.returncode

    def stop_all(self):
        for p in list(self.live):
            self.stop(p, signal.SIGKILL if p.poll() is None else signal.SIGTERM, 5)


def wait_line(stream, pattern, timeout):
    """Read a child's pipe (at the fd level) until the text matches; the match or None."""
    import select
    fd = stream.fileno()
    end = time.monotonic() + timeout
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


TICK = os.sysconf("SC_CLK_TCK")


def cpu_busy_s():
    """All CPUs' task time so far (user, nice, system, steal). Interrupt time is left
    out: the loopback traffic's softirqs are ours but not in any process's times."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (v[0] + v[1] + v[2] + v[7]) / TICK


def proc_cpu_s(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / TICK


def ours_cpu_s(server_pids):
    """CPU of what we started: reaped children (loads, tools) plus the live servers."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + proc_cpu_s(server_pids)


# CPUs of the server and of the load generator (--pin): each its own CPU, so
# that runs do not differ by where the scheduler happened to put whom.
PIN = {"server": [], "load": []}


def pin(role):
    return PIN[role]


# ---------------------------------------------------------------- targets


class Nginx:
    """Debian's nginx, one worker, a small static file, private config."""

    name = "nginx"

    def __init__(self, procs):
        self.procs = procs
        self.dir = tempfile.mkdtemp(prefix="connscope-bench-nginx-")
        os.chmod(self.dir, 0o755)  # the worker runs as nobody and reads html/
        self.port = free_port()
        os.makedirs(f"{self.dir}/html")
        os.makedirs(f"{self.dir}/logs")
        os.makedirs(f"{self.dir}/tmp")
        with open(f"{self.dir}/html/index.html", "w") as f:
            f.write("<html><body>connscope bench: a small static file.</body></html>\n")
        conf = f"""
worker_processes 1;
daemon off;
master_process on;
pid {self.dir}/nginx.pid;
error_log {self.dir}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {self.dir}/tmp;
    proxy_temp_path {self.dir}/tmp;
    fastcgi_temp_path {self.dir}/tmp;
    uwsgi_temp_path {self.dir}/tmp;
    scgi_temp_path {self.dir}/tmp;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{self.port} backlog=4096;
        root {self.dir}/html;
    }}
}}
"""
        with open(f"{self.dir}/nginx.conf", "w") as f:
            f.write(conf)
        self.proc = procs.start([*pin("server"), "nginx", "-p", self.dir, "-c", f"{self.dir}/nginx.conf"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_port(self.port):
            raise RuntimeError("nginx did not start: see " + f"{self.dir}/logs/error.log")
        # The worker is the master's only child: bpftrace filters on it.
        self.worker = None
        end = time.monotonic() + 5
        while not self.worker and time.monotonic() < end:
            try:
                with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                    kids = f.read().split()
                self.worker = int(kids[0]) if kids else None
            except OSError:
                pass
            time.sleep(0.05)
        self.pid = self.worker
        self.pids = [self.proc.pid] + ([self.worker] if self.worker else [])

    def close(self):
        self.procs.stop(self.proc, signal.SIGQUIT)
        shutil.rmtree(self.dir, ignore_errors=True)


class CsServer:
    """The reference server: one epoll worker, like nginx's one worker."""

    name = "csserver"

    def __init__(self, procs, build, extra=(), port=0, pinned=True):
        self.procs = procs
        self.proc = procs.start([*(pin("server") if pinned else []), f"{build}/csserver", "--port", str(port), "--workers", "1",
                                 "--backlog", "4096", "--quiet", *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        m = wait_line(self.proc.stdout, r"listening on 127\.0\.0\.1:(\d+) .*pid=(\d+)", 10)
        if not m:
            raise RuntimeError("csserver did not start")
        self.port = int(m.group(1))
        self.pid = int(m.group(2))
        self.pids = [self.pid]

    def close(self):
        self.procs.stop(self.proc, signal.SIGTERM)


# ---------------------------------------------------------------- loads


def parse_wrk_time(value, unit):
    return float(value) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]


def run_wrk(port, args, pinned=True):
    out = subprocess.run([*(pin("load") if pinned else []), "wrk", "-t2", "-c50", f"-d{args.wrk_seconds}s", "--latency",
                          f"http://127.0.0.1:{port}/"], capture_output=True, text=True,
                         timeout=args.wrk_seconds + 30).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", out)
    return {"rps": float(rps.group(1)) if rps else None,
            "p99_us": parse_wrk_time(*p99.groups()) if p99 else None,
            "errors": errors.group(0) if errors else ""}


def run_ab(port, args):
    # -t bounds a run on a slow (busy) machine; -n after it keeps the count.
    out = subprocess.run([*pin("load"), "ab", "-q", "-t", str(args.ab_seconds), "-n", str(args.ab_requests),
                          "-c", "50", "-s", "10",
                          f"http://127.0.0.1:{port}/"], capture_output=True, text=True,
                         timeout=120).stdout
    rps = re.search(r"Requests per second:\s+([\d.]+)", out)
    p99 = re.search(r"^\s+99%\s+(\d+)", out, re.M)
    failed = re.search(r"Failed requests:\s+(\d+)", out)
    non2xx = re.search(r"Non-2xx responses:\s+(\d+)", out)
    errors = " ".join(x for x in (f"failed {failed.group(1)}" if failed and failed.group(1) != "0" else "",
                                  f"non-2xx {non2xx.group(1)}" if non2xx else "") if x)
    return {"rps": float(rps.group(1)) if rps else None,
            "p99_us": float(p99.group(1)) * 1e3 if p99 else None,  # ab: whole ms
            "errors": errors}


LOADS = {
    "wrk": ("wrk -t2 -c50 keep-alive", run_wrk),
    "ab": ("ab -c50 no keep-alive", run_ab),
}

# ---------------------------------------------------------------- tools


class Tool:
    """A tool attached around one load run."""

    def __init__(self, procs, build, target):
        self.procs, self.build, self.target = procs, build, target
        self.proc = None

    def result(self):
        return {}


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
        self.cpu0 = proc_cpu_s([self.proc.pid])

    def stop(self):
        # The daemon's own CPU while attached (before the report is built).
        cpu_s = proc_cpu_s([self.proc.pid]) - self.cpu0
        alive_s = time.monotonic() - self.started
        self.procs.stop(self.proc, signal.SIGINT, 60)
        self.out.seek(0)
        text = self.out.read()
        self.out.close()
        try:
            report = json.loads(text)
        except ValueError:
            return {"error": "no JSON report"}
        return {"daemon_cpu": cpu_s / alive_s if alive_s > 0 else None,
                "lost": report["events"]["lost"], "received": report["events"]["received"],
                "table_full": report["events"]["table_full"],
                "requests": report.get("requests"),
                "p99_us": report.get("latency_us", {}).get("p99")}


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
        self.out = tempfile.TemporaryFile(mode="w+")
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
        count, p99 = parse_bpftrace_hist(text or "")
        return {"requests": count, "p99_bucket_us": p99}


TOOLS = [NoTool, Connscope, Floor, Bpftrace]

# --probe-groups: connscope with the wake-up probe attached from the start
# (it waits for a parked request, which these loads never make), and without
# the epoll path (the epoll_wait exits, and the wake-up probe that needs
# them), beside connscope as it is, in the same rounds.
PROBE_GROUP_TOOLS = [
    type("ConnscopeWaking", (Connscope,), {"name": "cs+waking", "probes": "waking-at-start"}),
    type("ConnscopeNoEpoll", (Connscope,), {"name": "cs-no-epoll", "probes": "no-epoll"}),
]

# The floor split into groups of hooks, each attached alone.
FLOOR_GROUPS = {
    "syscalls": "tracepoint/syscalls/",
    "sched": "tp_btf/sched_",
    "socket": "tp_btf/sk_,tp_btf/sock_,tp_btf/tcp_,tp_btf/inet_,tp_btf/net_,tp_btf/kfree_skb",
}
FLOOR_TOOLS = [NoTool] + [type(f"Floor_{k}", (Floor,), {"name": f"floor:{k}", "only": v})
                          for k, v in FLOOR_GROUPS.items()]

# ---------------------------------------------------------------- BPF bookkeeping


def bpftool_json(*args):
    out = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True, timeout=30)
    try:
        return json.loads(out.stdout or "[]")
    except ValueError:
        return []


def bpf_objects(pid, kind):
    """A process's BPF programs or maps ('prog'/'map') by id, from /proc/PID/fdinfo."""
    found = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != f"anon_inode:bpf-{kind}":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        info = {k.strip(): v.strip() for k, v in info.items()}
        if f"{kind}_id" in info:
            found[int(info[f"{kind}_id"])] = info
    return found


def other_tracing_programs():
    """Tracing programs loaded before the benchmark starts: they tax every figure."""
    kinds = {"tracing", "tracepoint", "raw_tracepoint", "kprobe", "perf_event"}
    return [p for p in bpftool_json("prog", "show") if p.get("type") in kinds]


def prog_stats(pid):
    names = {p["id"]: p for p in bpftool_json("prog", "show")}
    stats = {}
    for pid_, info in bpf_objects(pid, "prog").items():
        p = names.get(pid_, {})
        stats[pid_] = {"name": p.get("name", str(pid_)), "type": p.get("type", "?"),
                       "run_cnt": int(info.get("run_cnt", 0)),
                       "run_time_ns": int(info.get("run_time_ns", 0))}
    return stats


def set_bpf_stats(value):
    path = "/proc/sys/kernel/bpf_stats_enabled"
    with open(path) as f:
        old = f.read().strip()
    with open(path, "w") as f:
        f.write(str(value))
    return old


def map_memory(pid):
    names = {m["id"]: m.get("name", "?") for m in bpftool_json("map", "show")}
    maps = [{"name": names.get(i, str(i)), "bytes_memlock": int(info.get("memlock", 0))}
            for i, info in bpf_objects(pid, "map").items()]
    return sum(m["bytes_memlock"] for m in maps), maps


def proc_status(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def socket_storage_bytes(port):
    """Socket-local storage is charged to each socket's sk_omem_alloc: `ss -m`'s o."""
    out = subprocess.run(["ss", "-tmnH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, timeout=120).stdout
    return sum(int(x) for x in re.findall(r"skmem:\([^)]*?,o(\d+)", out))

# ---------------------------------------------------------------- 1-3. overhead, accuracy, costs


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


def ab_rounds(args, procs, target, run_load, tools, pairs):
    """pairs rounds; each runs the load once per tool (NoTool: the baseline), order rotated."""
    run_load(target.port, args)  # warm-up, not counted
    runs = {t.name: [] for t in tools}
    for r in range(pairs):
        wait_for_quiet_cpu()
        # Rotate the order each round so that no tool always runs first.
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for tool_cls in order:
            tool = tool_cls(procs, args.build, target)
            # Whatever else ran meanwhile: busy CPU time that was not ours.
            t0, busy0, ours0 = time.monotonic(), cpu_busy_s(), ours_cpu_s(target.pids)
            try:
                tool.start()
            except RuntimeError as err:
                log(f"  {err}: run left out")
                runs[tool_cls.name].append({"rps": None, "p99_us": None, "tool": {}, "round": r})
                continue
            time.sleep(0.3)
            res = run_load(target.port, args)
            res["tool"] = tool.stop()
            res["round"] = r
            others = (cpu_busy_s() - busy0) - (ours_cpu_s(target.pids) - ours0)
            res["others_cpu"] = max(0.0, others) / ((time.monotonic() - t0) * os.cpu_count())
            runs[tool_cls.name].append(res)
            log(f"  round {r} {tool_cls.name:15} {res['rps'] or 0:9.0f} req/s, others' CPU "
                f"{res['others_cpu']:4.0%} {res['errors']}")
    return runs


def ratios(runs, name, base="none"):
    return [x["rps"] / b["rps"] if x["rps"] and b["rps"] else None
            for x, b in zip(runs[name], runs[base])]


def new_target(target_cls, procs, args):
    return target_cls(procs) if target_cls is Nginx else target_cls(procs, args.build)


def combos(args, targets=None):
    targets = targets or args.targets
    return [(t, load) for t in (Nginx, CsServer) if t.name in targets for load in args.loads]


def overhead(args, procs, results):
    rows = []
    tools = TOOLS + (PROBE_GROUP_TOOLS if args.probe_groups else [])
    for target_cls, load in combos(args):
        label, run_load = LOADS[load]
        target = new_target(target_cls, procs, args)
        log(f"overhead: {target.name} under {label}, {args.pairs} rounds of {len(tools)} runs")
        try:
            runs = ab_rounds(args, procs, target, run_load, tools, args.pairs)
            costs = program_costs(args, procs, target, run_load)
            # Local clients' handshakes are followed too (these loads are local):
            # what that part costs, from a run without it.
            costs["no_handshakes"] = program_costs(args, procs, target, run_load, ["--no-handshakes"])
            if args.probe_groups:
                # sched_waking's own cost: it runs on every wake-up of the machine.
                costs["waking_at_start"] = program_costs(args, procs, target, run_load,
                                                         tool_cls=PROBE_GROUP_TOOLS[0])
        finally:
            target.close()
        row = {"target": target.name, "load": load, "label": label, "runs": runs, "costs": costs}
        for t in tools[1:]:
            row[t.name] = ratios(runs, t.name)
        row["cs_vs_floor"] = ratios(runs, "connscope", "floor")  # same round
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
    """Which hooks make the floor: each group of empty programs alone."""
    rows = []
    for target_cls, load in combos(args, args.split_targets):
        label, run_load = LOADS[load]
        target = new_target(target_cls, procs, args)
        log(f"floor split: {target.name} under {label}, {args.split_pairs} rounds")
        try:
            runs = ab_rounds(args, procs, target, run_load, FLOOR_TOOLS, args.split_pairs)
        finally:
            target.close()
        rows.append({"target": target.name, "load": load, "label": label, "runs": runs,
                     **{t.name: ratios(runs, t.name) for t in FLOOR_TOOLS[1:]}})
    results["floor_split"] = rows


def program_costs(args, procs, target, run_load, extra=(), tool_cls=Connscope):
    """One more connscope run with kernel.bpf_stats_enabled=1: run time per program."""
    old = set_bpf_stats(1)
    try:
        tool = tool_cls(procs, args.build, target)
        tool.extra = tuple(extra)
        tool.start()
        before = prog_stats(tool.proc.pid)
        t0 = time.monotonic()
        res = run_load(target.port, args)
        elapsed = time.monotonic() - t0
        after = prog_stats(tool.proc.pid)
        report = tool.stop()
    finally:
        set_bpf_stats(old)
    requests = (res["rps"] or 0) * elapsed
    progs = []
    for pid_, p in after.items():
        if p["name"].startswith("sample_listener"):
            continue  # the iterator: the daemon's own walks, not the server's path
        b = before.get(pid_, {})
        cnt = p.get("run_cnt", 0) - b.get("run_cnt", 0)
        ns = p.get("run_time_ns", 0) - b.get("run_time_ns", 0)
        progs.append({"name": p["name"], "type": p["type"], "calls": cnt, "ns": ns,
                      "ns_per_call": ns / cnt if cnt else 0.0,
                      "calls_per_req": cnt / requests if requests else 0.0,
                      "ns_per_req": ns / requests if requests else 0.0})
    progs.sort(key=lambda x: -x["ns"])
    return {"rps": res["rps"], "requests": requests, "programs": progs, "report": report}

# ---------------------------------------------------------------- 4. engine


def engine_speed(args, procs, results):
    os.makedirs(f"{args.build}/bench", exist_ok=True)
    base = f"{args.build}/bench/base.cstrace"
    big = f"{args.build}/bench/engine-10M.cstrace"
    target = CsServer(procs, args.build, pinned=False)
    try:
        # A recorded trace with every kind of traffic: keep-alive, churn.
        log("engine: recording a trace of csserver under wrk and ab")
        rec = procs.start([f"{args.build}/connscope", "record", "--port", str(target.port),
                           "-o", base], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if not wait_line(rec.stderr, r"connscope: attached", 20):
            raise RuntimeError("connscope record did not attach")
        subprocess.run(["wrk", "-t2", "-c50", "-d3s", f"http://127.0.0.1:{target.port}/"],
                       capture_output=True, timeout=60)
        subprocess.run(["ab", "-q", "-n", "20000", "-c", "50", f"http://127.0.0.1:{target.port}/"],
                       capture_output=True, timeout=60)
        procs.stop(rec, signal.SIGINT, 60)
    finally:
        target.close()
    amp = subprocess.run([f"{args.build}/bench/trace_amplify", base, big, str(args.engine_records)],
                         capture_output=True, text=True, timeout=300)
    log("engine: " + amp.stdout.strip())
    m = re.search(r"(\d+) records \((\d+) copies of (\d+)\)", amp.stdout)
    if not m:
        raise RuntimeError("trace_amplify failed: " + amp.stderr.strip())
    records, copies, base_records = (int(x) for x in m.groups())
    size = os.path.getsize(big)
    # Read once so that every timed replay starts from the page cache.
    subprocess.run(["cat", big], stdout=subprocess.DEVNULL, timeout=300)
    runs = []
    for i in range(args.engine_runs):
        out = subprocess.run(["/usr/bin/time", "-f", "TIME %U %S %e %M", f"{args.build}/connscope",
                              "report", "--json", big], capture_output=True, text=True, timeout=600)
        t = re.search(r"TIME ([\d.]+) ([\d.]+) ([\d.]+) (\d+)", out.stderr)
        report = json.loads(out.stdout) if out.returncode == 0 else {}
        if not t:
            raise RuntimeError("connscope report failed: " + out.stderr.strip()[-300:])
        user, sys_, wall, maxrss_kb = float(t.group(1)), float(t.group(2)), float(t.group(3)), int(t.group(4))
        runs.append({"user_s": user, "sys_s": sys_, "wall_s": wall, "maxrss": maxrss_kb * 1024,
                     "events_per_cpu_s": records / (user + sys_) if user + sys_ else None,
                     "received": report.get("events", {}).get("received")})
        log(f"engine: replay {i + 1}: {records / (user + sys_) / 1e6:.2f} M records per CPU second")
    if not args.keep_trace:
        os.unlink(big)
    results["engine"] = {"records": records, "copies": copies, "base_records": base_records,
                         "bytes": size, "runs": runs}

# ---------------------------------------------------------------- 5. scale


def scale(args, procs, results):
    """Idle keep-alive connections and churn against csserver, connscope attached."""
    per_server = 12500
    servers = []
    # RLIMIT_NOFILE's hard limit may be low (raising it needs CAP_SYS_RESOURCE):
    # several SO_REUSEPORT processes share the port, each under the limit.
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    per_server = min(per_server, nofile - 500) if nofile > 1000 else per_server
    count = -(-max(args.scale) // per_server) + 1
    first = CsServer(procs, args.build, ["--accept", "reuseport"], pinned=False)
    servers.append(first)
    for _ in range(count - 1):
        servers.append(CsServer(procs, args.build, ["--accept", "reuseport"], port=first.port,
                                pinned=False))
    port = first.port
    rows = []
    try:
        for n in args.scale:
            log(f"scale: {n} idle keep-alive connections")
            cs = Connscope(procs, args.build, first)
            cs.start()
            pid = cs.proc.pid
            rss0 = proc_status(pid, "VmRSS")
            clients = []
            opened, t0 = 0, time.monotonic()
            per_client = min(15000, nofile - 500)
            while opened < n:
                k = min(per_client, n - opened)
                c = procs.start([f"{args.build}/bench/csidle", "--port", str(port), "--connections",
                                 str(k), "--sources", "32", "--hold", "600"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                m = wait_line(c.stdout, r"csidle: open (\d+) failed (\d+)", 150)
                clients.append(c)
                opened += k
                if not m or int(m.group(2)):
                    log(f"scale: csidle opened {m.group(1) if m else '?'} of {k}")
            open_s = time.monotonic() - t0
            time.sleep(2.5)  # a few poll rounds and thread samples with everything open
            maps_bytes, maps = map_memory(pid)
            row = {"connections": n, "open_s": open_s,
                   "rss_at_attach": rss0, "vmrss": proc_status(pid, "VmRSS"),
                   "rss_anon": proc_status(pid, "RssAnon"), "rss_file": proc_status(pid, "RssFile"),
                   "rss_shmem": proc_status(pid, "RssShmem"),
                   "vmhwm": proc_status(pid, "VmHWM"), "maps_memlock": maps_bytes,
                   "maps": {m.get("name"): m.get("bytes_memlock") for m in maps},
                   "sk_storage": socket_storage_bytes(port)}
            row["report"] = cs.stop()
            for c in clients:
                procs.stop(c, signal.SIGTERM)
            rows.append(row)
            log(f"scale: {n}: daemon VmHWM {mib(row['vmhwm'])}, maps {mib(maps_bytes)}, "
                f"socket storage {mib(row['sk_storage'])}")
            time.sleep(2)
        # Churn: new connections as fast as the machine goes, without and with connscope.
        churn = {}
        for with_cs in (False, True):
            cs = None
            if with_cs:
                cs = Connscope(procs, args.build, first)
                cs.start()
            out = subprocess.run([f"{args.build}/bench/csidle", "--port", str(port), "--churn",
                                  str(args.churn_seconds), "--threads", "2", "--parallel", "128",
                                  "--sources", "32"], capture_output=True, text=True,
                                 timeout=args.churn_seconds + 60).stdout
            m = re.search(r"churn (\d+) in ([\d.]+) s = (\d+)/s, errors (\d+)", out)
            res = {"connections": int(m.group(1)) if m else None,
                   "rate": int(m.group(3)) if m else None,
                   "errors": int(m.group(4)) if m else None}
            if cs:
                res["vmhwm"] = proc_status(cs.proc.pid, "VmHWM")
                res["maps_memlock"] = map_memory(cs.proc.pid)[0]
                res["report"] = cs.stop()
            churn["connscope" if with_cs else "none"] = res
            log(f"scale: churn {'with' if with_cs else 'without'} connscope: {res['rate']}/s")
    finally:
        for s in servers:
            s.close()
    results["scale"] = {"idle": rows, "churn": churn, "servers": len(servers)}

# ---------------------------------------------------------------- the report


def others_cpu(runs):
    m = median([x.get("others_cpu") for rs in runs.values() for x in rs])
    return "-" if m is None else f"{m:.0%}"


def report(results, out):
    c = results["conditions"]
    w = out.write
    for f in results.get("failed", []):
        w(f"FAILED: {f}\n")
    w(f"connscope bench: {c['date']}, kernel {c['kernel']}, {c['cpus']} CPUs, "
      f"load average {c['load_before']:.2f} before, {c.get('load_after', 0):.2f} after, "
      f"{c['other_tracing_progs']} tracing BPF programs of others loaded, nice {c.get('nice')}, "
      f"overhead runs: server on CPU {c.get('pinning', {}).get('server', '?')}, load on CPU "
      f"{c.get('pinning', {}).get('load', '?')}, tools unpinned; waited {c.get('quiet_wait_s', 0):.0f} s "
      f"in all for other processes to calm down before rounds\n\n")

    if "overhead" in results:
        p = results["args"]["pairs"]
        w(f"1. Overhead: req/s with the tool attached / without (median of {p} A/B pairs [min-max])\n")
        w(f"{'target':9} {'load':26} {'baseline':>10}  {'connscope':18} {'floor':18} "
          f"{'bpftrace':18} {'connscope/floor':18} {'others':>6}\n")
        for r in results["overhead"]:
            base = median([x["rps"] for x in r["runs"]["none"]])
            w(f"{r['target']:9} {r['label']:26} {base or 0:>10.0f}  {fmt_ratio(r['connscope']):18} "
              f"{fmt_ratio(r['floor']):18} {fmt_ratio(r['bpftrace']):18} {fmt_ratio(r['cs_vs_floor']):18} "
              f"{others_cpu(r['runs']):>6}\n")
        w("   baseline: median req/s with nothing attached. others: median share of the machine's\n"
          "   CPU that processes the benchmark did not start used during the runs (0 %: quiet).\n")
        groups = [t.name for t in PROBE_GROUP_TOOLS]
        if any(g in r for r in results["overhead"] for g in groups):
            w("\n   connscope with probe groups in or out (--probe-groups; same rounds as above):\n")
            w(f"   {'target':9} {'load':26} {'connscope':18} " + " ".join(f"{g:18}" for g in groups)
              + " others\n")
            for r in results["overhead"]:
                if groups[0] not in r:
                    continue
                w(f"   {r['target']:9} {r['label']:26} {fmt_ratio(r['connscope']):18} "
                  + " ".join(f"{fmt_ratio(r[g]):18}" for g in groups) + f" {others_cpu(r['runs']):>6}\n")
            w("   cs+waking: tp_btf/sched_waking (executor hand-backs) attached from the start, not once a\n"
              "   request is parked; cs-no-epoll: without the epoll_wait exits and sched_waking (no roles,\n"
              "   hand-offs or parked requests).\n")
        w("\n2. Accuracy under load (the connscope runs above; medians, lost summed over runs)\n")
        w(f"{'target':9} {'load':26} {'req/s':>8} {'records':>9} {'lost':>6} {'table_full':>10} "
          f"{'connscope p99':>14} {'client p99':>11} {'bpftrace p99<=':>14} {'daemon CPU':>10}\n")
        for r in results["overhead"]:
            cs = r["runs"]["connscope"]
            rep = [x["tool"] for x in cs]
            w(f"{r['target']:9} {r['label']:26} {median([x['rps'] for x in cs]) or 0:>8.0f} "
              f"{median([x.get('received') for x in rep]) or 0:>9.0f} "
              f"{sum(x.get('lost') or 0 for x in rep):>6} {sum(x.get('table_full') or 0 for x in rep):>10} "
              f"{fmt_us(median([x.get('p99_us') for x in rep])):>14} "
              f"{fmt_us(median([x['p99_us'] for x in cs])):>11} "
              f"{fmt_us(median([x['tool'].get('p99_bucket_us') for x in r['runs']['bpftrace']])):>14} "
              f"{fmt_pct(median([x.get('daemon_cpu') for x in rep])):>10}\n")
        for x in results.get("peak", []):
            t = x["tool"]
            w(f"{'csserver':9} {'wrk, csserver --workers 2':26} {x['rps'] or 0:>8.0f} {t.get('received') or 0:>9} "
              f"{t.get('lost') or 0:>6} {t.get('table_full') or 0:>10} {fmt_us(t.get('p99_us')):>14} "
              f"{fmt_us(x['p99_us']):>11} {'':>14} {fmt_pct(t.get('daemon_cpu')):>10}\n")
        w("   connscope p99: server side, data ready -> last byte sent (+ accept queue on a\n"
          "   connection's first request); client p99: wrk --latency / ab (whole ms), both with\n"
          "   connscope attached; bpftrace: first read -> first send, power-of-2 bucket bound.\n"
          "   daemon CPU: the connscope process's user+sys time while attached (loading and the\n"
          "   report left out) / that time, as a share of one CPU.\n")
        w("\n3. Per-program cost (one more connscope run per row, kernel.bpf_stats_enabled=1)\n")
        for r in results["overhead"]:
            k = r["costs"]
            total = sum(x["ns"] for x in k["programs"])
            w(f"   {r['target']} under {r['label']}: {k['rps'] or 0:.0f} req/s, "
              f"{total / k['requests'] if k['requests'] else 0:.0f} ns of BPF per request\n")
            w(f"   {'program':22} {'type':11} {'calls/req':>9} {'ns/call':>8} {'ns/req':>8} {'share':>6}\n")
            for x in k["programs"]:
                if not x["calls"]:
                    continue
                w(f"   {x['name']:22} {x['type']:11} {x['calls_per_req']:>9.2f} {x['ns_per_call']:>8.0f} "
                  f"{x['ns_per_req']:>8.0f} {x['ns'] / total if total else 0:>6.1%}\n")
            nh = k.get("no_handshakes")
            if nh and nh["requests"]:
                nh_total = sum(x["ns"] for x in nh["programs"])
                state = next((x for x in nh["programs"] if x["name"] == "on_tcp_state"), None)
                w(f"   with --no-handshakes: {nh_total / nh['requests']:.0f} ns of BPF per request"
                  + (f", on_tcp_state {state['ns_per_call']:.0f} ns/call, {state['ns_per_req']:.0f} ns/req"
                     if state else "") + "\n")
            wk = k.get("waking_at_start")
            if wk and wk["requests"]:
                wk_total = sum(x["ns"] for x in wk["programs"])
                waking = next((x for x in wk["programs"] if x["name"] == "on_waking"), None)
                w(f"   with sched_waking from the start: {wk_total / wk['requests']:.0f} ns of BPF per request"
                  + (f", on_waking {waking['calls_per_req']:.2f} calls/req, {waking['ns_per_call']:.0f} "
                     f"ns/call, {waking['ns_per_req']:.0f} ns/req (every wake-up of the machine)"
                     if waking else ", on_waking never ran") + "\n")
    if "floor_split" in results:
        p = results["args"]["split_pairs"]
        w(f"\n   The floor by group of hooks, each attached alone (median of {p} pairs [min-max]):\n")
        names = [t.name for t in FLOOR_TOOLS[1:]]
        w(f"   {'target':9} {'load':26} " + " ".join(f"{n:18}" for n in names) + " others\n")
        for r in results["floor_split"]:
            w(f"   {r['target']:9} {r['label']:26} " + " ".join(f"{fmt_ratio(r[n]):18}" for n in names)
              + f" {others_cpu(r['runs']):>6}\n")
        w("   " + "; ".join(f"{k}: {v}" for k, v in FLOOR_GROUPS.items()) + "\n")
    if "engine" in results:
        e = results["engine"]
        rates = [x["events_per_cpu_s"] for x in e["runs"]]
        w(f"\n4. Engine: connscope report replaying {e['records']:,} records "
          f"({e['bytes'] / 2**20:.0f} MiB; {e['copies']} shifted copies of a {e['base_records']:,}-record "
          f"recording)\n")
        w(f"   {median(rates) / 1e6:.2f} M records per CPU second (user+sys), median of {len(rates)} "
          f"[{min(rates) / 1e6:.2f}-{max(rates) / 1e6:.2f}]; wall "
          f"{median([x['wall_s'] for x in e['runs']]):.2f} s; max RSS "
          f"{mib(median([x['maxrss'] for x in e['runs']]))}\n")
    if "scale" in results:
        s = results["scale"]
        w(f"\n5. Scale: csserver ({s['servers']} SO_REUSEPORT processes, one port), connscope attached\n")
        w(f"   {'connections':>11} {'daemon VmHWM':>13} {'VmRSS':>10} {'anon':>10} {'file+shmem':>10} "
          f"{'maps memlock':>13} {'socket storage':>15} {'records':>8} {'lost':>5} {'table_full':>10}\n")
        for r in s["idle"]:
            rep = r["report"]
            mapped = (r.get("rss_file") or 0) + (r.get("rss_shmem") or 0)
            w(f"   {r['connections']:>11} {mib(r['vmhwm']):>13} {mib(r['vmrss']):>10} "
              f"{mib(r.get('rss_anon')):>10} {mib(mapped):>10} "
              f"{mib(r['maps_memlock']):>13} {mib(r['sk_storage']):>15} {rep.get('received', 0):>8} "
              f"{rep.get('lost', 0):>5} {rep.get('table_full', 0):>10}\n")
        w("   anon: the daemon's heap (engine tables); file+shmem: mapped pages, the ring buffer's\n"
          "   among them. socket storage: sum of `ss -m` omem of the server's sockets (socket-local\n"
          "   storage is charged there; bytes_memlock leaves it out).\n")
        ch = s["churn"]
        cs = ch.get("connscope", {})
        rep = cs.get("report", {})
        w(f"   churn ({results['args']['churn_seconds']} s, connect + GET + close): "
          f"{ch.get('none', {}).get('rate')} conn/s without connscope, {cs.get('rate')} conn/s with; "
          f"daemon VmHWM {mib(cs.get('vmhwm'))}, maps {mib(cs.get('maps_memlock'))}, "
          f"records {rep.get('received')}, lost {rep.get('lost')}, table_full {rep.get('table_full')}\n")
        big = max(s["idle"], key=lambda r: r["connections"]) if s["idle"] else None
        if big:
            w("   maps at the largest count (bytes_memlock): " +
              ", ".join(f"{k} {mib(v)}" for k, v in sorted(big["maps"].items(), key=lambda kv: -(kv[1] or 0)))
              + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--pairs", type=int, default=5, help="A/B rounds per target and load (default 5)")
    ap.add_argument("--wrk-seconds", type=int, default=5)
    ap.add_argument("--ab-requests", type=int, default=40000)
    ap.add_argument("--ab-seconds", type=int, default=4, help="ab stops at this time if not done")
    ap.add_argument("--targets", default="nginx,csserver")
    ap.add_argument("--loads", default="wrk,ab")
    ap.add_argument("--engine-records", type=int, default=10_000_000)
    ap.add_argument("--engine-runs", type=int, default=3)
    ap.add_argument("--keep-trace", action="store_true", help="keep the big trace in build/bench")
    ap.add_argument("--scale", default="10000,50000,100000")
    ap.add_argument("--churn-seconds", type=int, default=10)
    ap.add_argument("--split-pairs", type=int, default=3, help="A/B rounds of the floor split")
    ap.add_argument("--split-targets", default="csserver", help="targets of the floor split")
    ap.add_argument("--only", default="overhead,floorsplit,engine,scale",
                    help="sections to run (default: all; overhead includes accuracy and costs)")
    ap.add_argument("--probe-groups", action="store_true",
                    help="overhead: also run connscope with sched_waking from the start, and "
                         "without the epoll path, in the same rounds")
    ap.add_argument("--nice", type=int, default=-20, help="niceness of every process started")
    ap.add_argument("--no-pin", action="store_true",
                    help="overhead runs: do not pin the server to the last CPU and the load to CPU 0")
    ap.add_argument("--max-load", type=float, default=0.5,
                    help="wait (at most 60 s) for the load average to drop below this")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.loads = args.loads.split(",")
    args.targets = args.targets.split(",")
    args.split_targets = args.split_targets.split(",")
    args.scale = [int(x) for x in args.scale.split(",") if x]
    only = set(args.only.split(","))

    if os.geteuid() != 0:
        sys.exit("bench: run as root (BPF programs, bpf_stats_enabled)")
    for tool in ("wrk", "ab", "nginx", "bpftrace", "bpftool", "ss"):
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
                ("engine", engine_speed), ("scale", scale)]
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
    report(results, sys.stdout)
    log(f"done in {results['conditions']['seconds']:.0f} s; raw figures in "
        f"{args.build}/bench/results.json")


if __name__ == "__main__":
    main()
