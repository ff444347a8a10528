"""Serves a SavedModel to N closed-loop client threads and reports CPU time per thread
name (from /proc/self/task/*/stat) over a timed window, with requests/s.

Usage: thread_cpu_probe.py tf|graphi MODEL_DIR CLIENTS SECONDS
  tf:     TensorFlow's own executor on inter=2 intra=1 pools (tf.config.threading)
  graphi: the GRAPHI executor (set GRAPHI_EXECUTORS etc. in the environment)
Prints one JSON line."""
import collections, json, os, re, sys, threading, time

import numpy as np
import tensorflow as tf

mode, path, clients, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
if mode == "tf":
    tf.config.threading.set_inter_op_parallelism_threads(2)
    tf.config.threading.set_intra_op_parallelism_threads(1)
else:
    import graphi_tf  # noqa: F401  registers the executor
model = tf.saved_model.load(path)
fn = model.signatures["serving_default"]
spec = fn.structured_input_signature[1]
rng = np.random.RandomState(0)
inputs = {k: tf.constant(rng.rand(1, *s.shape[1:]).astype(s.dtype.as_numpy_dtype)) for k, s in spec.items()}
tick = os.sysconf("SC_CLK_TCK")


def thread_cpu():
    out = collections.Counter()
    for tid in os.listdir("/proc/self/task"):
        try:
            stat = open(f"/proc/self/task/{tid}/stat").read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[re.sub(r"[-_]?\d+$", "", name)] += (int(fields[11]) + int(fields[12])) / tick
    return out


stop = threading.Event()
counts = [0] * clients
timing = threading.Event()


def client(i):
    ctx = tf.experimental.function_executor_type("GRAPHI") if mode == "graphi" else None
    if ctx is not None:
        ctx.__enter__()
    while not stop.is_set():
        fn(**inputs)
        if timing.is_set():
            counts[i] += 1


threads = [threading.Thread(target=client, args=(i,), name=f"client{i}") for i in range(clients)]
for t in threads:
    t.start()
time.sleep(3.0)  # warm-up (and the graph's first steps)
before, t0 = thread_cpu(), time.perf_counter()
timing.set()
time.sleep(seconds)
timing.clear()
after, t1 = thread_cpu(), time.perf_counter()
stop.set()
for t in threads:
    t.join()
cpu = {k: round(after[k] - before[k], 2) for k in after if after[k] - before[k] > 0.005}
print(json.dumps({"mode": mode, "env": {k: v for k, v in os.environ.items() if k.startswith("GRAPHI_")},
                  "rps": sum(counts) / (t1 - t0), "cpu_s": cpu, "cpu_total_s": round(sum(cpu.values()), 2),
                  "wall_s": round(t1 - t0, 2)}))
