"""A-B-A probe: does visiting a setting leave TensorFlow's own executor slower afterwards?

One process, GRAPHI_AUTOTUNE=0, empty cache. The main graph is switched between plain stock
(0x0: TensorFlow's executor on the process's pools) and each visited setting with
adopt_setting(source="tuned"). Stock windows are timed before and after every visit.
--control: every "visit" is stock too (drift of the process alone).
Prints one JSON line per window to stdout and to --out.
"""
import argparse
import json
import os
import resource
import sys
import tempfile
import time

os.environ["GRAPHI_AUTOTUNE"] = "0"
os.environ.setdefault("GRAPHI_CACHE_DIR", tempfile.mkdtemp(prefix="aba_cache_"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

p = argparse.ArgumentParser()
p.add_argument("--model", default="pathnet")
p.add_argument("--size", default="large")
p.add_argument("--visits", default="2x1,stock:2x1,stock:1x2,1x1")
p.add_argument("--stock-steps", type=int, default=5)
p.add_argument("--visit-steps", type=int, default=3)
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--control", action="store_true")
p.add_argument("--out", default=None)
a = p.parse_args()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procstat import thread_cpu  # noqa: E402
import graphi_tf  # noqa: E402
from graphi_tf import stepstats  # noqa: E402
from graphi_tf.lab import cli_common  # noqa: E402

native = graphi_tf._loader.native()
step = cli_common.build_step(cli_common.Case(model=a.model, size=a.size), executor="GRAPHI")
before = stepstats.steps_run(graphi_tf.info().get("graphs", []))
for _ in range(a.warmup):
    step()
ran = stepstats.ran_since(before, [dict(g) for g in native.graphs()])
sig = ran[0]["signature"]
out = open(a.out, "a") if a.out else None


def emit(rec):
    line = json.dumps(rec)
    print(line, flush=True)
    if out:
        out.write(line + "\n")
        out.flush()


def adopt(label):
    if label == "stock":
        native.adopt_setting(sig, 0, 0, "", "tuned", [], [])
    elif label.startswith("stock:"):
        i, j = label[len("stock:"):].split("x")
        native.adopt_setting(sig, 0, 0, "", "tuned", [], [], "alone", int(i), int(j))
    else:
        e, t = label.split("x")
        native.adopt_setting(sig, int(e), int(t), "", "tuned", [], [])


def window(label, n, kind):
    adopt(label)
    step()  # the first step on a new setting (teams start, pools spin up) is not timed
    ts = []
    ru0, cpu0 = resource.getrusage(resource.RUSAGE_SELF), thread_cpu()
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        ts.append((time.perf_counter() - t0) * 1e3)
    ru1, cpu1 = resource.getrusage(resource.RUSAGE_SELF), thread_cpu()
    per = {k: round((v - cpu0.get(k, 0.0)) / n, 1) for k, v in cpu1.items() if v - cpu0.get(k, 0.0) > 0}
    ru = {"cpu_ms": round(((ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)) * 1e3 / n, 1),
          "minflt": round((ru1.ru_minflt - ru0.ru_minflt) / n, 1),
          "nvcsw": round((ru1.ru_nvcsw - ru0.ru_nvcsw) / n, 1),
          "nivcsw": round((ru1.ru_nivcsw - ru0.ru_nivcsw) / n, 1)}
    ts.sort()
    setting = [g for g in native.graphs() if g["signature"] == sig][0]
    emit({"kind": kind, "label": label, "median_ms": ts[len(ts) // 2], "ms": ts,
          "in_force": setting.get("setting"), "threads": len(os.listdir("/proc/self/task")), "ru": ru, "thread_cpu_ms": per})


visits = a.visits.split(",")
emit({"model": a.model, "size": a.size, "control": a.control, "pid": os.getpid(),
      "candidates": list(native.autotune_candidates())})
for v in visits:
    window("stock", a.stock_steps, "stock")
    window("stock" if a.control else v, a.visit_steps, "visit:" + v)
window("stock", a.stock_steps, "stock")
