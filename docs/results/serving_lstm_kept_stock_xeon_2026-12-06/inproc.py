"""One process, the LSTM SavedModel served single-stream on GRAPHI with TensorFlow's pools
("stock"), timed before and after a middle phase, so that the comparison is within one process
(process-to-process noise on this VM is about ±10%, the effect looked for about 5%).

    python inproc.py explore   # middle phase: the autotuner explores (empty cache)
    python inproc.py control   # middle phase: as many stock steps, autotuning off

Block A: 3,000 steps after 1,500 warm-up steps, on stock (GRAPHI_EXECUTORS=stock), autotuning off. Middle phase. Then blocks B
and C of 3,000 steps each, on whatever the process runs then (stock unless the autotuner
adopted something else). Prints one JSON line: per-block median and mean (ms) and the
autotuner's decision and visit medians.
"""
import json, os, sys, time

import graphi_tf
from graphi_tf.lab import cli_common

arm = sys.argv[1]
middle_steps = int(sys.argv[2]) if len(sys.argv) > 2 else 2500
p = cli_common.argparse.ArgumentParser()
cli_common.add_case_arguments(p)
args = p.parse_args(["--saved-model", "/tmp/serving_models/lstm", "--input", "frames=1,50,32"])
step = cli_common.build_step(cli_common.Case.from_args(args), executor="GRAPHI")
# Block A on TensorFlow's own pools: without a setting, autotuning off means GRAPHI's default
# team layout, not stock. configure() reads the environment again.
os.environ["GRAPHI_EXECUTORS"] = "stock"
setting_a = graphi_tf.configure(autotune=False).get("setting")


def block(n=3000):
    times = []
    for _ in range(n):
        t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
    s = sorted(times)
    return {"median_ms": s[len(s) // 2] * 1e3, "mean_ms": sum(s) / len(s) * 1e3}


def main_graph():
    return max(graphi_tf.info()["graphs"], key=lambda g: g["node_count"])


for _ in range(1500):
    step()
a = block()
t0 = time.monotonic()
steps = 0
if arm == "explore":
    del os.environ["GRAPHI_EXECUTORS"]
    graphi_tf.configure(autotune=True)
    while steps < 60000:
        step(); steps += 1
        if steps % 50 == 0:
            st = (main_graph().get("autotune") or {}).get("state")
            if st not in (None, "waiting", "exploring"):
                break
else:
    for _ in range(middle_steps):
        step(); steps += 1
middle_s = time.monotonic() - t0
b = block()
c = block()
at = main_graph().get("autotune") or {}
print(json.dumps({"arm": arm, "setting_A": setting_a, "A": a, "B": b, "C": c, "middle_steps": steps, "middle_s": middle_s,
                  "setting": graphi_tf.info().get("setting"), "state": at.get("state"),
                  "reason": at.get("reason"), "round_medians_ms": at.get("round_medians_ms"),
                  "reference_step_ms": at.get("reference_step_ms")}))
