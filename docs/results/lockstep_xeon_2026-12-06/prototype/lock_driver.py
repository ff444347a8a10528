import json, os, subprocess, sys, tempfile, statistics as st, time
arms = {"default": ("DEFAULT", 0, 0), "default2": ("DEFAULT", 0, 0), "i2_a1": ("DEFAULT", 2, 1), "auto": ("GRAPHI", 0, 0)}
names = sys.argv[1].split(","); cycles = int(sys.argv[2]); n = int(sys.argv[3]); out = sys.argv[4]
procs = {}
env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
for name in names:
    e = dict(env, GRAPHI_CACHE_DIR=tempfile.mkdtemp())
    pr = subprocess.Popen([sys.executable, "/work/scratch/lock_worker.py", *map(str, arms[name])], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=e)
    ready = json.loads(pr.stdout.readline()); procs[name] = pr
    print(name, ready, flush=True)
res = {k: [] for k in names}
with open(out, "w") as f:
    for c in range(cycles):
        order = names[c % len(names):] + names[:c % len(names)]
        for name in order:
            procs[name].stdin.write(f"run {n} 3\n"); procs[name].stdin.flush()
            r = json.loads(procs[name].stdout.readline()); res[name].append(r["mean_ms"])
            f.write(json.dumps({"cycle": c, "arm": name, **r}) + "\n")
for pr in procs.values():
    pr.stdin.write("quit\n"); pr.stdin.flush(); pr.wait()
base = names[0]
for name in names[1:]:
    ratios = sorted(a / b for a, b in zip(res[base], res[name]))  # >1: name faster than base
    q = lambda x: ratios[int(x * (len(ratios) - 1))]
    print(f"{base}/{name} (speed of {name} vs {base}) median {st.median(ratios):.3f} IQR {q(.25):.3f}-{q(.75):.3f} n={len(ratios)}")
for name in names: print(name, "median phase ms", round(st.median(res[name]), 3))
