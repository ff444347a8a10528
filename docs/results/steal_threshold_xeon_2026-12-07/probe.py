"""One-op graphs on GRAPHI's 2x1 layout: blocks stolen by the idle team and ms per step.

    GRAPHI_STEAL_THRESHOLD_NS=0|off python3 probe.py matmul|tanh SIZE...

matmul: a SIZE x SIZE matmul, then reduce_sum; tanh: tanh over SIZE floats, then reduce_sum.
3 untimed steps (the profiler measures the ops), then 20 timed; the time includes the feed.
"""
import sys
import time

import numpy as np
import tensorflow as tf

import graphi_tf
from graphi_tf import _graphi_tf as native

v1 = tf.compat.v1
op = sys.argv[1]
graphi_tf.configure(executors=2, threads_per_executor=1)
for size in [int(x) for x in sys.argv[2:]]:
    shape = [size, size] if op == "matmul" else [size]
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.float32, shape)
        out = tf.reduce_sum(tf.matmul(a, a) if op == "matmul" else tf.math.tanh(a))
    feed = {a: np.random.rand(*shape).astype(np.float32) / (size if op == "matmul" else 1)}
    with v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        for _ in range(3):
            s.run(out, feed)
        stolen = sum(native.scheduler_stats()["blocks_stolen_per_team"])
        start = time.perf_counter()
        for _ in range(20):
            s.run(out, feed)
        per_step = (time.perf_counter() - start) / 20
        stolen = sum(native.scheduler_stats()["blocks_stolen_per_team"]) - stolen
        print(size, "stolen", stolen, f"{per_step * 1e3:.3f} ms/step")
