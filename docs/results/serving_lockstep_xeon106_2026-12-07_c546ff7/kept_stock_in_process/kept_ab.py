"""In one process: TensorFlow's executor vs GRAPHI that kept TensorFlow's pools, alternating phases."""
import os, sys, tempfile, threading, time, statistics as st
os.environ.setdefault("GRAPHI_CACHE_DIR", tempfile.mkdtemp(prefix="keptab_"))
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np
import tensorflow as tf
import graphi_tf
clients_list = [int(c) for c in sys.argv[1].split(",")] if len(sys.argv) > 1 else [4]
cycles = int(sys.argv[2]) if len(sys.argv) > 2 else 10
m = tf.saved_model.load("/tmp/serving_models/lstm")
f = m.signatures["serving_default"]
x = tf.constant(np.random.RandomState(0).rand(1, 50, 32).astype(np.float32))
def phase(clients, seconds, executor):
    stop = time.time() + seconds
    n = [0] * clients
    def run(i):
        ctx = tf.experimental.function_executor_type(executor) if executor else None
        if ctx: ctx.__enter__()
        while time.time() < stop:
            f(frames=x); n[i] += 1
        if ctx: ctx.__exit__(None, None, None)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    [t.start() for t in ts]; [t.join() for t in ts]
    return sum(n) / seconds
def state():
    main = max(graphi_tf.info()["graphs"], key=lambda r: r.get("node_count", 0))
    a = main.get("autotune") or {}
    return f"{a.get('state')} {a.get('chosen')} {a.get('load_class')}"
for c in clients_list:
    for _ in range(4):  # settle GRAPHI under this load
        phase(c, 3, "GRAPHI")
    phase(c, 2, None)
    print(f"clients={c} GRAPHI: {state()}", flush=True)
    ratios = []
    for k in range(cycles):
        order = [None, "GRAPHI"] if k % 2 == 0 else ["GRAPHI", None]
        r = {}
        for e in order:
            r[e] = phase(c, 1.5, e)
        ratios.append(r["GRAPHI"] / r[None])
        print(f"  cycle {k}: stock {r[None]:.0f} graphi {r['GRAPHI']:.0f} ratio {ratios[-1]:.3f}", flush=True)
    q = st.quantiles(ratios, n=4)
    print(f"clients={c} GRAPHI/stock median {st.median(ratios):.3f} IQR [{q[0]:.3f}-{q[2]:.3f}] state at end: {state()}", flush=True)
