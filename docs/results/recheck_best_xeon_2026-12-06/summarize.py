#!/usr/bin/env python3
"""Prints this folder's summary (README.md quotes it): GRAPHI auto against each stock arm.

    python3 summarize.py > summary_table.txt

Training cases: per round, stock's step time over GRAPHI auto's (above 1: GRAPHI faster),
median and IQR over rounds, and the same ratios grouped by what the autotuner settled on.
On 2 cores stock default's pools are inter=2 intra=2, so stock default is a point of the
sweep here. Serving: the report's own throughput comparisons (ab.json "clients").
"""
import glob
import json
import os
import re
import statistics as st

HERE = os.path.dirname(os.path.abspath(__file__))


def quartiles(values):
    if len(values) < 2:
        return values[0], values[0]
    q = st.quantiles(values, n=4)
    return q[0], q[2]


def decisions(log_path):
    out = []
    for line in open(log_path):
        if line.startswith("[round") and "graphi_auto:" in line:
            m = re.search(r"autotune (adopted \S+|kept_default \S+)", line)
            out.append(m.group(1) if m else "?")
    return out


def step_case(name, data):
    arms = data["arms"]
    auto = arms["graphi_auto"]["round_medians_ms"]
    made = decisions(os.path.join(HERE, name + ".log"))
    print(f"## {name}: {len(auto)} rounds; GRAPHI auto median {arms['graphi_auto']['median_ms']:.2f} ms")
    for other in arms:
        if other == "graphi_auto":
            continue
        ref = arms[other]["round_medians_ms"]
        ratios = [r / a for a, r in zip(auto, ref)]
        lo, hi = quartiles(ratios)
        print(f"  auto vs {other} ({arms[other]['median_ms']:.2f} ms): median {st.median(ratios):.3f} "
              f"[IQR {lo:.3f}-{hi:.3f}]")
        groups = {}
        for ratio, what in zip(ratios, made):
            groups.setdefault(what, []).append(ratio)
        for what, values in sorted(groups.items()):
            print(f"    {what}: {len(values)} rounds, median {st.median(values):.3f}, "
                  f"{' '.join(f'{v:.3f}' for v in values)}")


def serving_case(name, data):
    clients = data["clients"]
    print(f"## {name}: throughput, {clients['duration_s']} s phases")
    for c in clients["comparisons"]:
        if c["arm"] == "graphi_auto" and c["metric"] == "throughput_rps":
            lo, hi = c["iqr"]
            print(f"  {c['clients']} clients, auto vs {c['baseline']}: {c['ratio']:.2f}x "
                  f"[IQR {lo:.2f}-{hi:.2f}] over {c['rounds']} rounds")


def main():
    for path in sorted(glob.glob(os.path.join(HERE, "*", "ab.json"))):
        name = os.path.basename(os.path.dirname(path))
        with open(path) as f:
            data = json.load(f)
        (serving_case if data.get("clients") else step_case)(name, data)


if __name__ == "__main__":
    main()
