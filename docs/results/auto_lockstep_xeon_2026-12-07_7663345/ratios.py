"""Median [IQR] over lockstep phases of BASE's phase median over each arm's: speed vs BASE.

    python3 ratios.py RUN BASE     e.g. python3 ratios.py mnv2_thr stock_i2_a1
"""
import json
import statistics
import sys

run, base = sys.argv[1], sys.argv[2]
arms = json.load(open(f"{run}/phases.json"))
b = arms[base]["phase_medians_ms"]
for name, arm in arms.items():
    ratios = sorted(x / y for x, y in zip(b, arm["phase_medians_ms"]))
    q = lambda p: ratios[int(p * (len(ratios) - 1))]
    print(f"  {name:15s} speed vs {base}: median {statistics.median(ratios):.3f} "
          f"IQR {q(.25):.3f}-{q(.75):.3f} (n={len(ratios)})")
