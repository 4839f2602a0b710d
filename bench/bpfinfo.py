"""BPF and memory bookkeeping: programs' run time, maps' memory, socket storage."""
import json
import os
import re
import subprocess


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
    for prog_id, info in bpf_objects(pid, "prog").items():
        p = names.get(prog_id, {})
        stats[prog_id] = {"name": p.get("name", str(prog_id)), "type": p.get("type", "?"),
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


def proc_status_bytes(pid, key):
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
