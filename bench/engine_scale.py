"""Sections 4-5: the engine's replay speed, and memory at scale and under churn."""
import json
import os
import re
import resource
import signal
import subprocess
import time

from bpfinfo import map_memory, proc_status_bytes, socket_storage_bytes
from common import log, mib, wait_line
from targets import CsServer
from tools import Connscope


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
            rss0 = proc_status_bytes(pid, "VmRSS")
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
                   "rss_at_attach": rss0, "vmrss": proc_status_bytes(pid, "VmRSS"),
                   "rss_anon": proc_status_bytes(pid, "RssAnon"), "rss_file": proc_status_bytes(pid, "RssFile"),
                   "rss_shmem": proc_status_bytes(pid, "RssShmem"),
                   "vmhwm": proc_status_bytes(pid, "VmHWM"), "maps_memlock": maps_bytes,
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
                res["vmhwm"] = proc_status_bytes(cs.proc.pid, "VmHWM")
                res["maps_memlock"] = map_memory(cs.proc.pid)[0]
                res["report"] = cs.stop()
            churn["connscope" if with_cs else "none"] = res
            log(f"scale: churn {'with' if with_cs else 'without'} connscope: {res['rate']}/s")
    finally:
        for s in servers:
            s.close()
    results["scale"] = {"idle": rows, "churn": churn, "servers": len(servers)}
