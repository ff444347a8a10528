"""Per-phase ratios of a lockstep ab.json: python3 summarize.py AB_JSON BASELINE[,BASELINE...] ARM
prints ARM against each baseline: median, IQR, bootstrap 90% interval of the median, and the
median of each round of processes."""
import json, sys, statistics as st, random
doc = json.load(open(sys.argv[1]))
arms = doc["arms"]
def phase_medians(name):
    return [(r["process_round"], st.median(r["step_times_ms"]) if r["ok"] else None) for r in arms[name]["rounds"]]
base_names = sys.argv[2].split(",")
x = sys.argv[3]
for b in base_names:
    xs, bs = phase_medians(x), phase_medians(b)
    ratios = [(p, bm / xm) for (p, xm), (_, bm) in zip(xs, bs) if xm and bm]
    per = {}
    for p, r in ratios: per.setdefault(p, []).append(r)
    allr = sorted(r for _, r in ratios)
    random.seed(0)
    boots = sorted(st.median(random.choices(allr, k=len(allr))) for _ in range(2000))
    print(f"{x} vs {b}: median {st.median(allr):.3f} IQR {allr[len(allr)//4]:.3f}-{allr[3*len(allr)//4]:.3f} n={len(allr)} boot90 {boots[100]:.3f}-{boots[1900]:.3f}; per process round " + " ".join(f"{st.median(v):.3f}" for p, v in sorted(per.items())))
