"""LSTM small train step (graph mode): per-step time and CPU per thread group over N steps."""
import sys, time, statistics, json, os, re, collections
executor, inter, intra, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
model = os.environ.get("MODEL", "lstm")
from graphi_tf.lab import models
step = models.build_step(model, size="small", mode="graph", executor=executor, inter_op=inter or None, intra_op=intra or None)
for _ in range(300): step()
tck = os.sysconf("SC_CLK_TCK")
def snap():
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            st = open(f"/proc/self/task/{tid}/stat").read()
            name = st[st.index("(")+1:st.rindex(")")]
            f = st[st.rindex(")")+2:].split()
            cpu = (int(f[11]) + int(f[12])) / tck
            s = open(f"/proc/self/task/{tid}/status").read()
            v = int(re.search(r"voluntary_ctxt_switches:\s+(\d+)", s).group(1))
            nv = int(re.search(r"nonvoluntary_ctxt_switches:\s+(\d+)", s).group(1))
            out[tid] = (name, cpu, v, nv)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out
a = snap(); ts = []
t0 = time.perf_counter()
for _ in range(n):
    s = time.perf_counter(); step(); ts.append(time.perf_counter() - s)
wall = time.perf_counter() - t0
b = snap()
groups = collections.defaultdict(lambda: [0.0, 0, 0, 0])
for tid, (name, cpu, v, nv) in b.items():
    pa = a.get(tid, (name, 0.0, 0, 0))
    g = re.sub(r"[-_]?\d+$", "", name)
    groups[g][0] += cpu - pa[1]; groups[g][1] += v - pa[2]; groups[g][2] += nv - pa[3]; groups[g][3] += 1
print(json.dumps({"median_ms": 1e3 * statistics.median(ts), "wall_ms_per_step": 1e3 * wall / n,
                  "cpu_ms_per_step": {g: round(1e3 * v[0] / n, 2) for g, v in sorted(groups.items()) if v[0] > 0},
                  "vcs_per_step": {g: round(v[1] / n, 1) for g, v in sorted(groups.items()) if v[1] > 0},
                  "nvcs_per_step": {g: round(v[2] / n, 2) for g, v in sorted(groups.items()) if v[2] > 0},
                  "threads": {g: v[3] for g, v in sorted(groups.items())}}))
