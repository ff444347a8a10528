"""Serve the LSTM SavedModel with N clients for S seconds, GRAPHI (argv[3]=GRAPHI) or stock."""
import os, sys, threading, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf, graphi_tf
clients, seconds, executor = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
f = tf.saved_model.load("/tmp/serving_models/lstm").signatures["serving_default"]
x = tf.constant(np.random.RandomState(0).rand(1, 50, 32).astype(np.float32))
def phase(sec):
    stop = time.time() + sec; n = [0] * clients
    def run(i):
        ctx = tf.experimental.function_executor_type(executor) if executor != "DEFAULT" else None
        if ctx: ctx.__enter__()
        while time.time() < stop:
            f(frames=x); n[i] += 1
    ts = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    [t.start() for t in ts]; [t.join() for t in ts]
    return sum(n) / sec
phase(4)
open("/tmp/serve_ready", "w").write("1")
print(f"{executor} rps {phase(seconds):.0f}", flush=True)
