#!/usr/bin/env python3
"""Every recorded runoff of the online autotuner (graphi_auto processes in ab.json files),
decided again both ways: with every round in the spread (as it was decided) and with the
one ratio farthest from the median set aside (the runoff's rule since 2026-12-06).

    python3 recorded_runoffs.py ../recheck_best_xeon_2026-12-06 [more folders or ab.json]
"""
import glob
import json
import os
import sys

from graphi_tf import _loader, decision


def setting(label):
    if label == "stock":
        return decision.STOCK
    if label.startswith("stock:"):
        i, a = label[len("stock:"):].split("x")
        return decision.stock_point(int(i), int(a))
    e, t = label.split("x")
    return (int(e), int(t))


def main(paths):
    native = _loader.native()
    for root in paths:
        files = [root] if root.endswith(".json") else sorted(
            glob.glob(os.path.join(root, "**", "ab.json"), recursive=True))
        for path in files:
            data = json.load(open(path))
            arm = data.get("arms", {}).get("graphi_auto") or {}
            for run in arm.get("rounds", []):
                st = run.get("autotune") or {}
                if not st.get("runoff") or not st.get("runoff_medians_ms"):
                    continue
                other = setting(st["runoff"])
                rounds = [{setting(k): v for k, v in r.items() if k in ("stock", st["runoff"])}
                          for r in st["runoff_medians_ms"]]
                order = [decision.STOCK, other]
                before = decision.decide(native, rounds, decision.STOCK, order)
                now = decision.decide(native, rounds, decision.STOCK, order, runoff=True)
                ratios = " ".join(f"{x:.3f}" for x in now.evidence_for(other).ratios)
                print(f"{os.path.relpath(path)}: {st['runoff']} [{ratios}] "
                      f"every round: {'adopted' if before.adopted else 'kept stock'}; "
                      f"one set aside: {'adopted' if now.adopted else 'kept stock'}")


if __name__ == "__main__":
    main(sys.argv[1:])
