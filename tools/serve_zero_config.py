"""What a serving user who changes nothing gets: one process loads a SavedModel of
tools/export_serving_models.py and N closed-loop client threads call its serving_default
signature from the first request, for DURATION seconds, with a fresh GRAPHI cache.

    python3 tools/serve_zero_config.py ARM MODEL_DIR CLIENTS DURATION

ARM: stock (TensorFlow's executor), auto (GRAPHI, zero-config autotuning), untuned (GRAPHI,
GRAPHI_AUTOTUNE=0). Prints one JSON line: requests/s and p99 latency over the last 5 s, and
what GRAPHI's autotuner decided. The LSTM model gets frames of shape 1x50x32; other models
batch 1. Run each arm in its own process, interleaved over rounds (docs/serving.md).
"""
import contextlib, os, sys, time, json, threading, tempfile
arm, model, clients, dur = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
os.environ["GRAPHI_CACHE_DIR"] = tempfile.mkdtemp()
if arm == "untuned": os.environ["GRAPHI_AUTOTUNE"] = "0"
import numpy as np, tensorflow as tf
import graphi_tf
m = tf.saved_model.load(model)
f = m.signatures["serving_default"]
spec = list(f.structured_input_signature[1].values())[0]
shape = [1,50,32] if "lstm" in model else [1]+[int(d) for d in spec.shape[1:]]
x = tf.constant(np.random.RandomState(0).rand(*shape).astype(np.float32))
name = list(f.structured_input_signature[1].keys())[0]
lat = []; done = []; stop = threading.Event(); lock = threading.Lock()
def client():
    # The executor type is thread-local: each client selects it once, as a serving thread
    # would, so the GRAPHI arms pay no per-request context switch under the GIL.
    scope = contextlib.nullcontext() if arm == "stock" else tf.experimental.function_executor_type("GRAPHI")
    with scope:
        while not stop.is_set():
            t = time.perf_counter(); f(**{name: x}); e = time.perf_counter()
            with lock: done.append(e); lat.append((e, e - t))
t0 = time.perf_counter()
ths = [threading.Thread(target=client) for _ in range(clients)]
for t in ths: t.start()
time.sleep(dur); stop.set()
for t in ths: t.join()
last = [d for d in done if d > t0 + dur - 5]
st = None
if arm != "stock":
    g = max(graphi_tf.info()["graphs"], key=lambda g: g["node_count"])
    a = g["autotune"] or {}
    st = {"state": a.get("state"), "chosen": a.get("chosen"), "load": a.get("load_clients"), "expl_s": a.get("exploration_s"), "stock_pools": g.get("stock_pools")}
l5 = [x for e, x in lat if e > t0 + dur - 5]
print(json.dumps({"arm": arm, "model": os.path.basename(model), "clients": clients, "total": len(done), "last5_rps": len(last)/5.0, "p99_ms": float(np.percentile(l5, 99))*1e3 if l5 else None, "status": st}))
