#!/usr/bin/env python3
"""twin_trace_summary.py -- where the time goes in a board-twin trace (ork bench --trace FILE,
docs/twin.md "In the engine"): modelled RK3588 time, not the host's.

Prints, for the whole trace: the model-clock span, each NPU core's busy share, per NPU op label
(one per executor op: qkv, o, gate_up, down, the LM head) its runs, mean time and the weight +
output bytes it streamed over its time (GB/s: the core's DRAM share while it ran, launch and MAC
time included), per A76 phase its total time per step, and for W4A8 runs the K-slices each op's
int16 partials were rebuilt from (the rebuild's label, which follows the op's NPU tasks).

usage: tools/twin_trace_summary.py TRACE.json [STEPS]   (STEPS: divide totals by it)
"""
import collections
import json
import re
import sys


def main():
    d = json.load(open(sys.argv[1]))
    steps = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    t0 = min(e["ts"] for e in ev)
    t1 = max(e["ts"] + e["dur"] for e in ev)
    span = t1 - t0
    print("span %.3f ms (model clock), %.3f ms per step" % (span / 1e3, span / 1e3 / steps))
    busy = collections.defaultdict(float)
    npu = collections.OrderedDict()
    cpu = collections.defaultdict(float)
    for e in ev:
        if e["pid"] == 1:
            busy[e["tid"]] += e["dur"]
            s = npu.setdefault(e["name"], [0, 0.0, 0.0])
            s[0] += 1
            s[1] += e["dur"]
            s[2] += e["args"].get("bytes", 0)
        elif not e["args"].get("idle"):
            cpu[e["cat"]] += e["dur"]
    print("NPU busy: " + " / ".join("%.1f %%" % (100 * busy[c] / span) for c in sorted(busy)))
    print("%-28s %6s %10s %12s %8s" % ("NPU op (per core task)", "runs", "mean us", "MB a run", "GB/s"))
    for name, (n, dur, b) in npu.items():
        print("%-28s %6d %10.1f %12.3f %8.2f" % (name, n, dur / n, b / n / 1e6, b / dur / 1e3))
    print("A76 phases, ms per step (core-time of non-idle ops):")
    for cat, dur in sorted(cpu.items(), key=lambda x: -x[1]):
        print("  %-14s %10.4f" % (cat, dur / 1e3 / steps))
    # K-slices per op: each rebuild names them; its op is the nearest NPU op before it
    last_npu = None
    ks = collections.OrderedDict()
    for e in sorted(ev, key=lambda e: (e["ts"], e["args"].get("op", 0))):
        if e["pid"] == 1:
            last_npu = e["name"]
        m = re.match(r"rebuild C \(int16 -> int32, (\d+|> 16) K-slices\)", e["name"])
        if m and last_npu:
            ks.setdefault(last_npu, collections.Counter())[m.group(1)] += 1
    if ks:
        print("W4A8 K-slices per op (rebuilds):")
        for name, c in ks.items():
            print("  %-26s %s" % (name, ", ".join("%s slices x%d" % kv for kv in c.items())))


if __name__ == "__main__":
    main()
