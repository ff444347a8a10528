import json, sys, statistics as st
rows=[json.loads(l) for l in open(sys.argv[1])]
by={}
for d in rows:
    r=d["r"]; A,B,C=(r[k]["mean_ms"] for k in "ABC")
    BC=(B+C)/2
    kind = r["arm"] + ("/kept" if r["arm"]=="explore" and r["setting"]=="stock" else ("/"+r["setting"] if r["arm"]=="explore" else ""))
    by.setdefault(kind,[]).append(BC/A)
    print(d["round"], r["arm"], r["setting_A"], r["setting"], f"A {A:.3f} B {B:.3f} C {C:.3f}  (B+C)/2A {BC/A:.3f} mid {r['middle_steps']} {r['middle_s']:.1f}s")
for k,v in sorted(by.items()): print(k, len(v), "median", round(st.median(v),3), [round(x,3) for x in sorted(v)])
