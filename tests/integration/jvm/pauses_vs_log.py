#!/usr/bin/env python3
"""connscope's pauses (a report's "pauses" list) against the JVM's own log.

usage: pauses_vs_log.py REPORT_JSON JVM_LOG FROM_NS TO_NS

The JVM runs with -Xlog:gc,safepoint:file=JVM_LOG:tn, so that each line is
stamped with CLOCK_MONOTONIC nanoseconds, the clock of the probes. Both
lines of a pause are written while the JVM still holds its threads, so a
line's stamp lies inside the pause connscope saw. Only what falls within
[FROM_NS, TO_NS] (connscope attached the whole time) is compared, both
ways: every JVM line has its pause, every pause inside the window its
line. Prints one JSON object:

  gc_lines, gc_matched, gc_pauses, gc_pauses_matched: collections
  gc_worst_error: the largest error over the collections, of connscope's
      gc_us against the "Pause ... N.NNNms" of -Xlog:gc: (JVM - connscope)
      / JVM, or (connscope - its VM thread's waits for a CPU in the
      collection - JVM) / JVM. The JVM times a part of the collection
      (GCTraceTime) inside the span of its gc__begin/end probes; where the
      VM thread waits for a CPU in the rest (the JIT's threads, others'
      work), the collection lasts that longer than the JVM's line says.
  gc_pairs_us: [JVM's, connscope's gc_us, its gc_cpu_wait_us] per collection
  vm_cpu_wait_us: the VM thread's waits for a CPU in the window's pauses
  safepoints, safepoints_matched, pauses_in_window, pauses_matched
  pause_over_total: the largest (connscope - JVM) / JVM of whole pauses of
      1 ms or more (pause_us against -Xlog:safepoint's Total, which goes on
      to the end's bookkeeping: connscope's pause ends before it, with the
      operation, so this stays at or below 0)
  pause_worst_error: the largest |connscope - JVM| / JVM of the same
  operations: {name: [JVM's count, connscope's count (its name), of them GC]}
  unmatched: what did not match, for the test's message
"""
import json
import re
import sys

GC_LINE = re.compile(r"^\[(\d+)ns\] GC\(\d+\) Pause (.*) (\d+\.\d+)ms$")
SAFEPOINT_LINE = re.compile(r'^\[(\d+)ns\] Safepoint "([^"]+)",.* Total: (\d+) ns$')
# The safepoint's line is written in its end's bookkeeping, after the
# operation's end that ends connscope's pause (the VM thread, preempted
# there on a busy machine, writes it tens of ms later): a line belongs to
# the latest pause begun before it, if that one ended at most this long
# before the line.
LATE_NS = 200_000_000


def containing(pauses, stamp):
    """The latest pause begun at or before stamp, if the stamp is within it or just after."""
    before = [p for p in pauses if p["begin_ns"] <= stamp]
    if not before:
        return None
    p = max(before, key=lambda p: p["begin_ns"])
    return p if stamp <= p["end_ns"] + LATE_NS else None


def main():
    report, log, lo, hi = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    pauses = json.load(open(report))["pauses"]
    all_gc, all_safepoints = [], []  # every line: a pause inside the window may log after it
    for line in open(log, errors="replace"):
        line = line.rstrip("\n")
        m = GC_LINE.match(line)
        if m:
            all_gc.append((int(m.group(1)), float(m.group(3)) * 1000.0, m.group(2)))
        m = SAFEPOINT_LINE.match(line)
        if m:
            all_safepoints.append((int(m.group(1)), m.group(2), int(m.group(3)) / 1000.0))
    gc_lines = [g for g in all_gc if lo <= g[0] <= hi]
    safepoints = [s for s in all_safepoints if lo <= s[0] <= hi]
    out = {"gc_lines": len(gc_lines), "gc_matched": 0, "gc_worst_error": 0.0,
           "safepoints": len(safepoints), "safepoints_matched": 0, "pause_worst_error": 0.0,
           "pause_over_total": -1.0,
           "gc_pairs_us": [], "operations": {}, "unmatched": []}
    for stamp, jvm_us, what in gc_lines:
        p = containing([p for p in pauses if p["gc"]], stamp)
        if not p:
            out["unmatched"].append(f"GC at {stamp} ({what}, {jvm_us:.0f} us): no pause")
            continue
        out["gc_matched"] += 1
        waited_us = p["gc_cpu_wait_us"] or 0.0
        out["gc_pairs_us"].append([round(jvm_us), round(p["gc_us"]), round(waited_us)])
        error_us = max(jvm_us - p["gc_us"], p["gc_us"] - waited_us - jvm_us)
        out["gc_worst_error"] = max(out["gc_worst_error"], error_us / jvm_us)
    for stamp, name, total_us in safepoints:
        ops = out["operations"].setdefault(name, [0, 0, 0])
        ops[0] += 1
        p = containing(pauses, stamp)
        if not p or p["operation"] != name:
            out["unmatched"].append(f"safepoint {name} at {stamp}: {p['operation'] if p else 'no pause'}")
            continue
        out["safepoints_matched"] += 1
        if total_us >= 1000.0:
            out["pause_worst_error"] = max(out["pause_worst_error"], abs(p["pause_us"] - total_us) / total_us)
            out["pause_over_total"] = max(out["pause_over_total"], (p["pause_us"] - total_us) / total_us)
    inside = [p for p in pauses if lo <= p["begin_ns"] and p["end_ns"] <= hi]
    out["pauses_in_window"] = len(inside)
    out["vm_cpu_wait_us"] = round(sum(p["vm_cpu_wait_us"] or 0.0 for p in inside), 3)
    out["pauses_matched"] = 0
    out["gc_pauses"] = sum(1 for p in inside if p["gc"])
    out["gc_pauses_matched"] = 0
    for p in inside:
        ops = out["operations"].setdefault(p["operation"] or "(none)", [0, 0, 0])
        ops[1] += 1
        ops[2] += p["gc"]
        seen = [s for s in all_safepoints if containing(pauses, s[0]) is p]
        if seen:
            out["pauses_matched"] += 1
        else:
            out["unmatched"].append(f"pause {p['operation']} at {p['begin_ns']}: no safepoint line")
        if p["gc"] and any(containing(pauses, g[0]) is p for g in all_gc):
            out["gc_pauses_matched"] += 1
        elif p["gc"]:
            out["unmatched"].append(f"GC pause at {p['begin_ns']}: no GC line")
    out["gc_worst_error"] = round(out["gc_worst_error"], 4)
    out["pause_worst_error"] = round(out["pause_worst_error"], 4)
    out["pause_over_total"] = round(out["pause_over_total"], 4)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
