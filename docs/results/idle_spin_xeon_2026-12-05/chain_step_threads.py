import os, sys, time, json, statistics, glob
import tensorflow as tf
tf1 = tf.compat.v1
n_nodes, executor, inter, intra = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if executor == "GRAPHI":
    import graphi_tf
g = tf.Graph()
with g.as_default():
    one = tf1.Variable(1.0).read_value(); y = one
    for _ in range(n_nodes): y = y + one
    fetch = y.op; init = tf1.global_variables_initializer()
config = tf1.ConfigProto(inter_op_parallelism_threads=inter, intra_op_parallelism_threads=intra)
if executor == "GRAPHI": config.experimental.executor_type = "GRAPHI"
config.graph_options.rewrite_options.disable_meta_optimizer = True
config.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
config.graph_options.optimizer_options.do_constant_folding = False
def cpu():
    out = {}
    for t in glob.glob(f"/proc/{os.getpid()}/task/*"):
        try:
            st = open(t + "/stat").read(); comm = open(t + "/comm").read().strip()
            f = st.rsplit(")", 1)[1].split(); out[t.rsplit("/",1)[1] + ":" + comm] = int(f[11]) + int(f[12])
        except OSError: pass
    return out
with tf1.Session(graph=g, config=config) as s:
    s.run(init)
    for _ in range(300): s.run(fetch)
    c0 = cpu(); ts = []; t00 = time.perf_counter()
    for _ in range(1000):
        t0 = time.perf_counter_ns(); s.run(fetch); ts.append(time.perf_counter_ns() - t0)
    wall = time.perf_counter() - t00
    c1 = cpu()
busy = {k: (c1[k] - c0.get(k, 0)) / 100 / wall for k in c1 if c1[k] - c0.get(k, 0) > 0}
print(json.dumps({"median_us": statistics.median(ts) / 1e3, "threads_busy": busy}))
