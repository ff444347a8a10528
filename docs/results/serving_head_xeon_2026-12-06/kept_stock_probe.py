"""Explored-then-stock against GRAPHI stock from the first step, on a SavedModel: step time and CPU per thread group.

    python3 kept_stock_probe.py auto|gstock OUT.jsonl   (the LSTM of tools/export_serving_models.py in /tmp/serving_models)
"""
import argparse, json, os, statistics, sys, tempfile, time
arm, out = sys.argv[1], sys.argv[2]
for k in [k for k in os.environ if k.startswith("GRAPHI_")]:
    del os.environ[k]
os.environ["GRAPHI_CACHE_DIR"] = tempfile.mkdtemp(prefix="kg_")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if arm == "gstock":
    os.environ["GRAPHI_EXECUTORS"] = "stock"; os.environ["GRAPHI_AUTOTUNE"] = "0"
import graphi_tf
from graphi_tf import stepstats
from graphi_tf.lab import cli_common
from graphi_tf.lab._ab_worker import setting_from_info
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kept_stock_probe_xeon_2026-12-06"))
from procstat import thread_cpu
p = argparse.ArgumentParser(); cli_common.add_case_arguments(p)
case = cli_common.Case.from_args(p.parse_args(["--saved-model", "/tmp/serving_models/lstm", "--input", "frames=1,50,32"]))
step = cli_common.build_step(case, executor="GRAPHI")
built = stepstats.steps_run(graphi_tf.info().get("graphs", []))
for _ in range(100): step()
n = 0
while True:
    s = setting_from_info(graphi_tf.info(), built)
    st = (s.get("autotune") or {}).get("state")
    if arm == "gstock" and n >= 800: break
    if arm == "auto" and st not in ("waiting", "exploring"): break
    step(); n += 1
time.sleep(0.3)
rec = {"arm": arm, "pre": n, "state": st, "chosen": (s.get("autotune") or {}).get("chosen"), "windows": []}
for w in range(3):
    c0 = thread_cpu(); ts = []
    for _ in range(300):
        t = time.perf_counter(); step(); ts.append((time.perf_counter() - t) * 1e3)
    c1 = thread_cpu()
    rec["windows"].append({"median_ms": round(statistics.median(ts), 3),
        "cpu_us_per_step": {k: round((v - c0.get(k, 0)) * 1e3 / 300) for k, v in c1.items() if v - c0.get(k, 0) > 0},
        "nthreads": len(os.listdir("/proc/self/task"))})
with open(out, "a") as f: f.write(json.dumps(rec) + "\n")
