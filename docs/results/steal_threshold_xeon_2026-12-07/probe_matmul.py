import os, sys, time, numpy as np, tensorflow as tf, graphi_tf
from graphi_tf import _graphi_tf as native
v1=tf.compat.v1
graphi_tf.configure(executors=2, threads_per_executor=1)
for size in [int(x) for x in sys.argv[1:]]:
    g=tf.Graph()
    with g.as_default():
        a=v1.placeholder(tf.float32,[size,size]); out=tf.reduce_sum(tf.matmul(a,a))
    feed={a: np.random.rand(size,size).astype(np.float32)/size}
    with v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        for _ in range(3): s.run(out,feed)
        b=sum(native.scheduler_stats()["blocks_stolen_per_team"]); t=time.perf_counter()
        for _ in range(20): s.run(out,feed)
        dt=(time.perf_counter()-t)/20
        print(size, "stolen", sum(native.scheduler_stats()["blocks_stolen_per_team"])-b, f"{dt*1e3:.3f} ms/step")
