"""The report: one text of every section's figures, ending with a summary table;
and the results file every run is appended to."""
import os
import subprocess

from common import fmt_pct, fmt_ratio, fmt_us, median, mib
from tools import VARIANT_TOOLS, FLOOR_GROUPS, FLOOR_TOOLS, PROBE_GROUP_TOOLS


def others_cpu(runs):
    m = median([x.get("others_cpu") for rs in runs.values() for x in rs])
    return "-" if m is None else f"{m:.0%}"


def row_key(r):
    return f"{r['target']:9} {r['label']:28} {r.get('pinning', 'pinned'):8}"


KEY_HEAD = f"{'target':9} {'load':28} {'pinning':8}"


def header(results, w):
    c = results["conditions"]
    for f in results.get("failed", []):
        w(f"FAILED: {f}\n")
    w(f"connscope bench: {c['date']}, kernel {c['kernel']}, {c['cpus']} CPUs, "
      f"load average {c['load_before']:.2f} before, {c.get('load_after', 0):.2f} after, "
      f"{c['other_tracing_progs']} tracing BPF programs of others loaded, nice {c.get('nice')}, "
      f"pinned rows: server on CPU {c.get('pinning', {}).get('server', '?')}, load on CPU "
      f"{c.get('pinning', {}).get('load', '?')}, tools unpinned; waited {c.get('quiet_wait_s', 0):.0f} s "
      f"in all for other processes to calm down before rounds\n\n")


def overhead_table(results, w):
    rows = results["overhead"]
    p = results["args"]["pairs"]
    secs = rows[0].get("seconds_s") if rows else "?"
    daemon = any("connscoped" in r for r in rows)
    w(f"1. Overhead: req/s with the tool attached / bare, in the same rounds (median of {p} rounds "
      f"[min-max]; every run {secs} s)\n")
    w(f"{KEY_HEAD} {'bare/s':>8}  {'connscope':18} " + (f"{'connscoped':18} " if daemon else "")
      + f"{'floor':18} {'bpftrace':18} {'connscope/floor':18} "
      + (f"{'connscoped/floor':18} " if daemon else "") + f"{'others':>6}\n")
    for r in rows:
        base = median([x["rps"] for x in r["runs"]["none"]])
        w(f"{row_key(r)} {base or 0:>8.0f}  {fmt_ratio(r['connscope']):18} "
          + (f"{fmt_ratio(r.get('connscoped', [])):18} " if daemon else "")
          + f"{fmt_ratio(r['floor']):18} {fmt_ratio(r['bpftrace']):18} {fmt_ratio(r['cs_vs_floor']):18} "
          + (f"{fmt_ratio(r.get('csd_vs_floor', [])):18} " if daemon else "")
          + f"{others_cpu(r['runs']):>6}\n")
    w("   bare/s: median req/s (churn: connections/s) with nothing attached. connscope: `connscope\n"
      "   attach --port`; connscoped: the daemon as started by default (--port, --socket; tracing\n"
      "   1 s in every 10 s, per-request probes detached between windows). pinned: server on the\n"
      "   last CPU, load on CPU 0; unpinned: wherever the scheduler puts them. others: median share\n"
      "   of the machine's CPU that processes the benchmark did not start used (0 %: quiet).\n")
    groups = [t.name for t in PROBE_GROUP_TOOLS]
    if any(g in r for r in rows for g in groups):
        w("\n   connscope with probe groups in or out (--probe-groups; same rounds as above):\n")
        w(f"   {KEY_HEAD} {'connscope':18} " + " ".join(f"{g:18}" for g in groups) + " others\n")
        for r in rows:
            if groups[0] not in r:
                continue
            w(f"   {row_key(r)} {fmt_ratio(r['connscope']):18} "
              + " ".join(f"{fmt_ratio(r[g]):18}" for g in groups) + f" {others_cpu(r['runs']):>6}\n")
        w("   cs+waking: tp_btf/sched_waking (executor hand-backs) attached from the start, not once a\n"
          "   request is parked; cs-no-epoll: without the epoll_wait exits and sched_waking (no roles,\n"
          "   hand-offs or parked requests).\n")


def server_cpu_table(results, w):
    """The server's own CPU per request, per tool: where the ratios swing by more than a
    tool costs, this tells 1 % apart (BPF programs on the server's system calls run in
    its threads; those in softirq on another task's time are not in it)."""
    rows = results["overhead"]
    tools = [t for t in ("none", "connscope", "connscoped", "floor", "bpftrace",
                         *(g.name for g in VARIANT_TOOLS))
             if any(t in r["runs"] for r in rows)]
    if not any(x.get("server_cpu_ns_per_req") for r in rows for x in r["runs"].get("none", [])):
        return
    w("\n   The server's CPU (user + system, all its threads) per request, in us (median of the rounds\n"
      "   [min-max]; churn: per connection); +x: the tool's median over the bare median:\n")
    w(f"   {KEY_HEAD} " + " ".join(f"{('bare' if t == 'none' else t):28}" for t in tools) + "\n")
    for r in rows:
        per_tool = {t: [x.get("server_cpu_ns_per_req") for x in r["runs"].get(t, [])] for t in tools}
        bare = median(per_tool["none"])
        cells = []
        for t in tools:
            xs = [x for x in per_tool[t] if x]
            m = median(xs)
            if m is None:
                cells.append(f"{'-':28}")
                continue
            cell = f"{m / 1e3:.2f} [{min(xs) / 1e3:.2f}-{max(xs) / 1e3:.2f}]"
            if t != "none" and bare:
                cell += f" {m / bare - 1:+.1%}"
            cells.append(f"{cell:28}")
        w(f"   {row_key(r)} " + " ".join(cells) + "\n")


def us_cell(xs):
    """Median [min-max] of ns figures, in us."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return f"{median(xs) / 1e3:.2f} [{min(xs) / 1e3:.2f}-{max(xs) / 1e3:.2f}]"


def variants_table(results, w):
    """The tools beside their variants: connscoped without its exact counts between
    windows, both tools with the BPF statistics always on rather than sampled."""
    groups = [g.name for g in VARIANT_TOOLS]
    rows = [r for r in results["overhead"] if any(g in r["runs"] for g in groups)]
    if not rows:
        return
    tools = ["connscope", "connscoped", *groups]
    w("\n   Variants (--variants, same rounds): cd-counters: connscoped --between-windows counters,\n"
      "   every probe of connections and packets detached between windows too, the kernel's\n"
      "   counters of the namespace counting the gaps; floor-between: empty programs on the hooks connscoped keeps between windows (what\n"
      "   any design counting those events one by one pays, before its code); cd-/cs-stats-always:\n"
      "   connscoped and connscope with the BPF statistics on the whole\n"
      "   run (--bpf-stats always), where by default they are sampled; cs-no-clients: connscope\n"
      "   not following its local clients (the loads here), their reads of the answers. req/s over bare; BPF run\n"
      "   time per request (us, every program; connscope's report; connscoped's status before\n"
      "   and after the run, per connection times connections, over the load's requests; sampled\n"
      "   statistics: estimated; churn and ab: per connection):\n")
    w(f"   {KEY_HEAD} " + " ".join(f"{t:18}" for t in tools)
      + " " + " ".join(f"{'BPF ' + t:22}" for t in tools) + " others\n")
    for r in rows:
        w(f"   {row_key(r)} " + " ".join(f"{fmt_ratio(r.get(t, [])):18}" for t in tools) + " "
          + " ".join(f"{us_cell([x.get('bpf_ns_per_req') for x in r['runs'].get(t, [])]):22}"
                     for t in tools)
          + f" {others_cpu(r['runs']):>6}\n")


def accuracy(results, w):
    w("\n2. Accuracy under load (the connscope runs above; medians, lost summed over runs)\n")
    w(f"{KEY_HEAD} {'req/s':>8} {'records':>9} {'lost':>6} {'table_full':>10} "
      f"{'connscope p99':>14} {'client p99':>11} {'bpftrace p99<=':>14} {'daemon CPU':>10}\n")
    for r in results["overhead"]:
        cs = r["runs"]["connscope"]
        rep = [x["tool"] for x in cs]
        w(f"{row_key(r)} {median([x['rps'] for x in cs]) or 0:>8.0f} "
          f"{median([x.get('received') for x in rep]) or 0:>9.0f} "
          f"{sum(x.get('lost') or 0 for x in rep):>6} {sum(x.get('table_full') or 0 for x in rep):>10} "
          f"{fmt_us(median([x.get('p99_us') for x in rep])):>14} "
          f"{fmt_us(median([x['p99_us'] for x in cs])):>11} "
          f"{fmt_us(median([x['tool'].get('p99_bucket_us') for x in r['runs']['bpftrace']])):>14} "
          f"{fmt_pct(median([x.get('daemon_cpu') for x in rep])):>10}\n")
    for x in results.get("peak", []):
        t = x["tool"]
        w(f"{'csserver':9} {'wrk, csserver --workers 2':28} {'unpinned':8} {x['rps'] or 0:>8.0f} "
          f"{t.get('received') or 0:>9} {t.get('lost') or 0:>6} {t.get('table_full') or 0:>10} "
          f"{fmt_us(t.get('p99_us')):>14} {fmt_us(x['p99_us']):>11} {'':>14} "
          f"{fmt_pct(t.get('daemon_cpu')):>10}\n")
    w("   connscope p99: server side, data ready -> last byte sent (+ accept queue on a\n"
      "   connection's first request); client p99: wrk --latency / ab (whole ms), both with\n"
      "   connscope attached; bpftrace: first read -> first send, power-of-2 bucket bound.\n"
      "   daemon CPU: the connscope process's user+sys time while attached (loading and the\n"
      "   report left out) / that time, as a share of one CPU.\n")
    if not any("connscoped" in r["runs"] for r in results["overhead"]):
        return
    w("\n   connscoped in its default mode (the connscoped runs above; medians [min-max], lost summed)\n")
    w(f"   {KEY_HEAD} {'req/s':>8} {'traced share':20} {'windows':>7} {'traced req':>10} "
      f"{'events':>8} {'lost':>5} {'daemon CPU':>10}\n")
    for r in results["overhead"]:
        runs = r["runs"].get("connscoped", [])
        rep = [x["tool"] for x in runs]
        shares = [x.get("traced_share") for x in rep if x.get("traced_share") is not None]
        share = (f"{median(shares):.1%} [{min(shares):.1%}-{max(shares):.1%}]" if shares else "-")
        w(f"   {row_key(r)} {median([x['rps'] for x in runs]) or 0:>8.0f} {share:20} "
          f"{median([x.get('windows') for x in rep]) or 0:>7.0f} "
          f"{median([x.get('requests_traced') for x in rep]) or 0:>10.0f} "
          f"{median([x.get('received') for x in rep]) or 0:>8.0f} "
          f"{sum(x.get('lost') or 0 for x in rep):>5} "
          f"{fmt_pct(median([x.get('daemon_cpu') for x in rep])):>10}\n")
    w("   traced share: the time its per-request probes were attached (connscope status --json,\n"
      "   tracing.traced_s, before and after the run) over the run; windows: windows opened in it;\n"
      "   traced req: requests traced since the daemon started; events: taken in since it started;\n"
      "   daemon CPU: connscoped's user+sys time while watching, as a share of one CPU.\n")


def program_table(title, k, w):
    """One cost run: its BPF time per request, then its programs by their share of it."""
    total = sum(x["ns"] for x in k["programs"])
    w(f"   {title}: {k['rps'] or 0:.0f} req/s, "
      f"{total / k['requests'] if k['requests'] else 0:.0f} ns of BPF per request\n")
    w(f"   {'program':22} {'type':11} {'calls/req':>9} {'ns/call':>8} {'ns/req':>8} {'share':>6}\n")
    for x in k["programs"]:
        if not x["calls"]:
            continue
        w(f"   {x['name']:22} {x['type']:11} {x['calls_per_req']:>9.2f} {x['ns_per_call']:>8.0f} "
          f"{x['ns_per_req']:>8.0f} {x['ns'] / total if total else 0:>6.1%}\n")


def costs(results, w):
    w("\n3. Per-program cost (cost runs per target and load, in its first pinning,\n"
      "   kernel.bpf_stats_enabled=1): connscope attach, then connscoped between its windows\n"
      "   (--trace 1/3600: the programs that count every connection while requests are not\n"
      "   traced, 9 s in 10 of its default). req: a request (ab and churn: a connection)\n")
    for r in results["overhead"]:
        k = r.get("costs")
        if not k:
            continue
        program_table(f"{r['target']} under {r['label']}, {r.get('pinning', 'pinned')}", k, w)
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
        dk = k.get("daemon_between_windows")
        if dk and dk["requests"]:
            program_table("connscoped between windows", dk, w)


def summary(results, w):
    """The overhead rows once more, medians only: what `make bench` says in one table."""
    rows = results.get("overhead")
    if not rows:
        return
    w("\nSummary: overhead ratios, tool attached / bare in the same rounds (medians)\n")
    w(f"{KEY_HEAD} {'bare/s':>8} {'connscope':>9} {'connscoped':>10} {'floor':>6} {'bpftrace':>8} "
      f"{'connscope/floor':>15} {'connscoped/floor':>16}\n")

    def m(xs):
        v = median(xs or [])
        return "-" if v is None else f"{v:.3f}"
    for r in rows:
        base = median([x["rps"] for x in r["runs"]["none"]])
        w(f"{row_key(r)} {base or 0:>8.0f} {m(r.get('connscope')):>9} {m(r.get('connscoped')):>10} "
          f"{m(r.get('floor')):>6} {m(r.get('bpftrace')):>8} {m(r.get('cs_vs_floor')):>15} "
          f"{m(r.get('csd_vs_floor')):>16}\n")
    w("   bare/s: req/s (churn: connections/s) with nothing attached; connscoped: the daemon in its\n"
      "   default mode; x/floor: the tool's run over the floor's in the same round.\n")


def report(results, out):
    w = out.write
    header(results, w)
    if "overhead" in results:
        overhead_table(results, w)
        server_cpu_table(results, w)
        variants_table(results, w)
        accuracy(results, w)
        costs(results, w)
    floor_and_engine(results, w)
    scale_report(results, w)
    jvm_report(results, w)
    summary(results, w)


def floor_and_engine(results, w):
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


def scale_report(results, w):
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


def opt(value, spec):
    """A figure that may be missing, formatted."""
    return "-" if value is None else format(value, spec)


def jvm_report(results, w):
    """Section 6: the JVM pause probes, per pause and (not) per request."""
    j = results.get("jvm")
    if not j:
        return
    s, sch = j["summary"], j["schedule"]
    rounds = len(s["rps_ratio"])
    w(f"\n6. JVM pauses: java CsPauses (OpenJDK 17, HttpServer, SerialGC, live set {sch['live_mb']} MB, a full\n"
      f"   collection every {sch['gc_ms']} ms, a thread dump every {sch['dump_ms']} ms), csload -c16 keep-alive, "
      f"{j['seconds_s']} s runs,\n   {'pinned' if j['pinned'] else 'unpinned'}; connscope attach with and without "
      f"the pause probes (--no-pauses), {rounds} rounds, order rotated;\n"
      f"   kernel.bpf_stats_enabled=1 throughout. {j['section_s']:.0f} s in all; others' CPU "
      f"{fmt_pct(s.get('others_cpu'))} (median of the runs).\n")
    w(f"   pauses (runs with the probes): connscope {s['pauses_connscope']} ({s['collections_connscope']} "
      f"collections), the JVM's -Xlog:safepoint {s['pauses_jvm']} (-Xlog:gc {s['collections_jvm']}); "
      f"matched both ways: {s['pauses_matched']} and {s['safepoints_matched']}; without the probes the JVM "
      f"logged {s['pauses_jvm_without']}\n")
    w(f"   {'program':16} {'calls':>7} {'ns/call':>8} {'calls/pause':>11} {'calls/1000 req':>14}\n")
    for p in s["pause_programs"]:
        w(f"   {p['name']:16} {p['calls']:>7} {opt(p['ns_per_call'], '>8.0f')} "
          f"{opt(p['calls_per_pause'], '>11.2f')} {opt(p['calls_per_1000_req'], '>14.2f')}\n")
    per_pause = s["bpf_ns_per_pause"]
    w(f"   BPF a pause: {per_pause or 0:.0f} ns on average; {s['bpf_ns_pause_no_gc']:.0f} without a collection "
      f"(safepoint and operation pairs), {s['bpf_ns_pause_gc']:.0f} with one; the uprobe traps not counted\n")
    req = s["request_bpf_ns_per_req"]
    w(f"   BPF a request, the request path's programs (us, median [min-max]): with the pause probes "
      f"{us_cell(req['with'])}, without {us_cell(req['without'])};\n   the pause programs' time spread "
      f"over the requests: {s['pause_bpf_ns_per_req'] or 0:.1f} ns a request\n")
    cpu = s["server_cpu_ns_per_req"]
    w(f"   server CPU a request (us, median [min-max]): with {us_cell(cpu['with'])}, without "
      f"{us_cell(cpu['without'])}; with/without per round: {fmt_ratio(s['cpu_ratio'])}\n")
    w(f"   req/s: with {median(s['rps']['with']) or 0:.0f}, without {median(s['rps']['without']) or 0:.0f}; "
      f"with/without per round: {fmt_ratio(s['rps_ratio'])}\n")
    w("   calls/pause: over connscope's pauses (a safepoint and its operation: 1 each; the collections'\n"
      "   pair only in a collection); calls/1000 req: they follow the pauses (the JVM's clock), not the\n"
      "   requests. Server CPU: the JVM's threads (schedstat), the uprobe traps and collections included.\n")


def git_commit(repo):
    """The commit measured: its short hash, marked when the tree has changes."""
    try:
        head = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"
    return head + (" with uncommitted changes" if dirty else "")


def append_results(results, text, path, argv):
    """Append this run to the results file (bench/results.md): a heading with
    its date, commit, command and length, then the report as printed."""
    c = results["conditions"]
    repo = os.path.dirname(os.path.abspath(path))
    args = []
    skip = False
    for a in argv:  # the build directory is this machine's, not the run's
        if skip or a.startswith("--build="):
            skip = False
            continue
        if a == "--build":
            skip = True
            continue
        args.append(a)
    command = "make bench" + (f' BENCH_ARGS="{" ".join(args)}"' if args else "")
    with open(path, "a") as f:
        f.write(f"\n## {c['date']}, commit {git_commit(repo)}\n\n"
                f"`{command}`, {c.get('seconds', 0):.0f} s.\n\n```\n{text.rstrip()}\n```\n")
