"""Prints this folder's serving table: per model and client count, stock default, the best
stock arm (by median requests/s over rounds), GRAPHI auto, and the medians of per-round
throughput ratios (auto / default, auto / best). Usage: python3 table.py"""
import json
import statistics

for model, name in (("lstm", "LSTM"), ("mobilenet_v2", "MobileNetV2")):
    arms = json.load(open(f"{model}/ab.json"))["clients"]["arms"]
    for c in ("1", "4", "8"):
        rps = {a: v[c]["throughput_rps"]["per_round"] for a, v in arms.items()}
        p99 = {a: v[c]["p99_ms"]["median"] for a, v in arms.items()}
        med = {a: statistics.median(r) for a, r in rps.items()}
        best = max((a for a in arms if a.startswith("stock_") and a != "stock_default"), key=med.get)
        ratio = lambda a, b: statistics.median(x / y for x, y in zip(rps[a], rps[b]))
        print(f"| {name} | {c} | {med['stock_default']:.0f}, {p99['stock_default']:.1f} ms "
              f"| {med[best]:.0f}, {p99[best]:.1f} ms ({best[len('stock_'):]}) "
              f"| {med['graphi_auto']:.0f}, {p99['graphi_auto']:.1f} ms "
              f"| {ratio('graphi_auto', 'stock_default'):.2f}x | {ratio('graphi_auto', best):.2f}x |")
