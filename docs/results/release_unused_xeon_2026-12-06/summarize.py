"""Per-process and per-round figures of run_release.sh's jsonl: python3 summarize.py FILE."""
import json, statistics, sys

rows = [json.loads(line) for line in open(sys.argv[1])]
procs, cur = [], None
for r in rows:
    if "window" not in r:
        cur = {"label": r["label"], "state": r.get("state"), "explore_s": r.get("pre_s"), "windows": []}
        procs.append(cur)
    else:
        cur["windows"].append(r["median_ms"])
        cur.update(threads=r["nthreads"], rss_mb=r["vmrss_mb"], maxrss_mb=r["maxrss_mb"])
print("round label   state         settle_s   window medians (ms)   threads  RSS MB (peak)")
for i, p in enumerate(procs):
    print(f"{i // 3 + 1:5d} {p['label']:7s} {p['state']:13s} {p['explore_s']:9.1f}  "
          f"{str(p['windows']):22s} {p['threads']:7d}  {p['rss_mb']} ({p['maxrss_mb']})")
# Per round: each auto arm's last window against gstock's last window (the first window of an
# explored process sometimes holds the slow steps right after settling).
ratios = {"new": [], "old": []}
for k in range(0, len(procs), 3):
    rnd = {p["label"]: p["windows"][-1] for p in procs[k:k + 3]}
    for label in ratios:
        if label in rnd and "gstock" in rnd:
            ratios[label].append(rnd[label] / rnd["gstock"])
for label, rs in ratios.items():
    if rs:
        print(f"{label}/gstock step time per round: {', '.join(f'{r:.3f}' for r in rs)}; "
              f"median {statistics.median(rs):.3f}")
