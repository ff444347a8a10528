#!/usr/bin/env python3
"""Prints this folder's figures (README.md quotes them): per round, stock's step time over
GRAPHI auto's (above 1: GRAPHI faster), median and IQR over rounds, a bootstrap 90% interval
of that median, and the ratios grouped by what the autotuner settled on.

    python3 summarize.py
"""
import json
import os
import random
import re
import statistics as st

HERE = os.path.dirname(os.path.abspath(__file__))
arms = json.load(open(os.path.join(HERE, "lstm_small", "ab.json")))["arms"]
made = []
for line in open(os.path.join(HERE, "lstm_small.log")):
    if line.startswith("[round") and "graphi_auto:" in line:
        m = re.search(r"autotune (adopted \S+|kept_default \S+)", line)
        made.append(m.group(1) if m else "?")
auto = arms["graphi_auto"]["round_medians_ms"]
print(f"{len(auto)} rounds; medians: " + ", ".join(f"{a} {arms[a]['median_ms']:.2f} ms" for a in arms))
rng = random.Random(0)
for other in ("stock_i2_a1", "stock_default"):
    ratios = [r / a for a, r in zip(auto, arms[other]["round_medians_ms"])]
    q = st.quantiles(ratios, n=4)
    boot = sorted(st.median(rng.choices(ratios, k=len(ratios))) for _ in range(10000))
    print(f"auto vs {other}: median {st.median(ratios):.3f} [IQR {q[0]:.3f}-{q[2]:.3f}], "
          f"bootstrap 90% interval of the median {boot[500]:.3f}-{boot[9499]:.3f}")
    groups = {}
    for ratio, what in zip(ratios, made):
        groups.setdefault(what, []).append(ratio)
    for what, values in sorted(groups.items()):
        print(f"  {what}: {len(values)} rounds, median {st.median(values):.3f}")
ref = arms["stock_i2_a1"]["round_medians_ms"]
default = arms["stock_default"]["round_medians_ms"]
print(f"stock inter=2 intra=1's step time over stock default's, per round: median "
      f"{st.median([r / d for d, r in zip(default, ref)]):.3f}")
