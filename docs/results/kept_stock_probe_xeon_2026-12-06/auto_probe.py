"""After the autotuner settles on stock: what runs during stock steps, against fixed stock.

--arm auto: no GRAPHI_* variables, empty cache: steps until the autotuner stops exploring.
--arm gstock: GRAPHI_EXECUTORS=stock GRAPHI_AUTOTUNE=0, --pre steps instead.
Then --windows windows of --steps timed steps, each with per-thread CPU and rusage.
"""
import argparse, json, os, resource, sys, tempfile, time
p = argparse.ArgumentParser()
p.add_argument("--arm", choices=["auto", "gstock"], required=True)
p.add_argument("--model", default="pathnet")
p.add_argument("--size", default="large")
p.add_argument("--pre", type=int, default=30)
p.add_argument("--windows", type=int, default=3)
p.add_argument("--steps", type=int, default=5)
p.add_argument("--out", required=True)
a = p.parse_args()
for k in [k for k in os.environ if k.startswith("GRAPHI_")]:
    del os.environ[k]
os.environ["GRAPHI_CACHE_DIR"] = tempfile.mkdtemp(prefix="ap_cache_")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if a.arm == "gstock":
    os.environ["GRAPHI_EXECUTORS"] = "stock"
    os.environ["GRAPHI_AUTOTUNE"] = "0"
import graphi_tf
from graphi_tf import stepstats
from graphi_tf.lab import cli_common
from graphi_tf.lab._ab_worker import setting_from_info
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procstat import procs_cpu, system_cpu, thread_cpu
out = open(a.out, "a")
def masks():
    m = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            comm = open(f"/proc/self/task/{tid}/comm").read().strip()
            allowed = [l.split()[1] for l in open(f"/proc/self/task/{tid}/status") if l.startswith("Cpus_allowed_list")][0]
        except OSError:
            continue
        m.setdefault(allowed, []).append(comm)
    return {k: sorted(v) for k, v in m.items()}
def emit(r):
    out.write(json.dumps(r) + "\n"); out.flush()
step = cli_common.build_step(cli_common.Case(model=a.model, size=a.size), executor="GRAPHI")
built = stepstats.steps_run(graphi_tf.info().get("graphs", []))
for _ in range(3):
    step()
t0 = time.perf_counter(); n = 0; state = None
while True:
    s = setting_from_info(graphi_tf.info(), built)
    state = (s.get("autotune") or {}).get("state")
    if a.arm == "auto" and state not in ("waiting", "exploring"):
        break
    if a.arm == "gstock" and n >= a.pre:
        break
    step(); n += 1
emit({"arm": a.arm, "label": os.environ.get("ARM_LABEL", a.arm), "graphi_tf": graphi_tf.__file__, "pid": os.getpid(), "pre_steps": n, "pre_s": round(time.perf_counter() - t0, 1),
      "state": state, "setting": {k: s.get(k) for k in ("executors", "threads_per_executor", "source")}})
for w in range(a.windows):
    ru0, c0, s0, p0 = resource.getrusage(resource.RUSAGE_SELF), thread_cpu(), system_cpu(), procs_cpu()
    ts = []
    for _ in range(a.steps):
        t = time.perf_counter(); step(); ts.append((time.perf_counter() - t) * 1e3)
    ru1, c1, s1, p1 = resource.getrusage(resource.RUSAGE_SELF), thread_cpu(), system_cpu(), procs_cpu()
    sysd = {k: round((s1[k] - s0[k]) / a.steps, 1) for k in s1}
    others = {k: round((v - p0.get(k, 0.0)) / a.steps, 1) for k, v in p1.items() if v - p0.get(k, 0.0) > 0 and not k.startswith(str(os.getpid()) + ":")}
    order = [round(x) for x in ts]
    ts.sort()
    emit({"arm": a.arm, "label": os.environ.get("ARM_LABEL", a.arm), "window": w, "median_ms": round(ts[len(ts) // 2], 1), "ms": [round(x) for x in ts],
          "cpu_ms": round(((ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)) * 1e3 / a.steps, 1),
          "minflt": round((ru1.ru_minflt - ru0.ru_minflt) / a.steps, 1),
          "nvcsw": round((ru1.ru_nvcsw - ru0.ru_nvcsw) / a.steps), "nivcsw": round((ru1.ru_nivcsw - ru0.ru_nivcsw) / a.steps),
          "threads": {k: round((v - c0.get(k, 0.0)) / a.steps) for k, v in c1.items() if v - c0.get(k, 0.0) > 0},
          "order": order, "sys_per_step": sysd, "other_procs": others, "masks": masks(), "nthreads": len(os.listdir("/proc/self/task")), "maxrss_mb": ru1.ru_maxrss // 1024, "vmrss_mb": [int(l.split()[1]) // 1024 for l in open("/proc/self/status") if l.startswith("VmRSS")][0]})
