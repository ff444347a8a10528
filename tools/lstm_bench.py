#!/usr/bin/env python3
"""Training-step benchmark: unrolled multi-layer LSTM in a TF1 graph.

The model is written out op by op (matmul / sigmoid / tanh per time step,
unrolled in Python), so the executor sees hundreds of small, partly independent
ops per step -- the workload Graphi's inter-op scheduling is about.

Defaults: 4 layers, batch 32, hidden 256, 20 time steps, input size = hidden,
loss = mean of the last layer's last output, plain gradient descent.  Inputs are
a seeded constant; variables use seeded initializers.

Examples:
  tools/lstm_bench.py --executor DEFAULT
  tools/lstm_bench.py --executor DEFAULT --inter 2 --intra 1 --json
  tools/lstm_bench.py --executor GRAPHI --executors 2 --threads 1

Each configuration should run in a fresh process (TensorFlow sizes its global
thread pools from the first session); tools/ab_lstm.py does that.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

EXECUTORS = ("DEFAULT", "GRAPHI", "SINGLE_THREADED_EXECUTOR")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Time the training step of an unrolled multi-layer LSTM (TF1 graph + Session).")
    parser.add_argument("--executor", choices=EXECUTORS, default="DEFAULT",
                        help="ConfigProto.experimental.executor_type (default: DEFAULT)")
    parser.add_argument("--inter", type=int, default=None,
                        help="inter_op_parallelism_threads (omit both --inter and --intra for a "
                             "default ConfigProto)")
    parser.add_argument("--intra", type=int, default=None, help="intra_op_parallelism_threads")
    parser.add_argument("--executors", type=int, default=None,
                        help="GRAPHI only: number of executor teams (graphi_tf.configure)")
    parser.add_argument("--threads", type=int, default=None,
                        help="GRAPHI only: threads per executor team (graphi_tf.configure)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed steps first (default 100)")
    parser.add_argument("--steps", type=int, default=100, help="timed steps (default 100)")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--time-steps", type=int, default=20)
    parser.add_argument("--input-size", type=int, default=None, help="default: --hidden")
    parser.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trace-steps", type=int, default=0,
                        help="traced steps after timing, for the lower bound "
                             "max(critical path, work / cores); meaningful on a sequential "
                             "run (--inter 1 --intra 1), where op times are uncontended "
                             "(default 0: skip)")
    parser.add_argument("--model", choices=["lstm", "pathnet"], default="lstm",
                        help="lstm: unrolled multi-layer LSTM (default); pathnet: --layers "
                             "layers of --modules parallel dense modules of width --hidden")
    parser.add_argument("--modules", type=int, default=6, help="pathnet: modules per layer")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object on stdout (and nothing else)")
    args = parser.parse_args(argv)

    if args.executor != "GRAPHI" and (args.executors is not None or args.threads is not None):
        parser.error("--executors/--threads apply only to --executor GRAPHI")
    if args.warmup < 0:
        parser.error("--warmup must be >= 0")
    if args.steps < 1:
        parser.error("--steps must be >= 1")
    for name in ("layers", "batch", "hidden", "time_steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.input_size is None:
        args.input_size = args.hidden
    return args


def build_pathnet(tf, np, args):
    """PathNet-like multi-branch training step: `layers` layers of `modules`
    parallel modules whose outputs are summed; module m is a stack of
    1 + m % 3 dense+relu blocks of width `hidden`, so branches differ in length
    and the critical path runs through the deepest ones.
    Returns (graph, train_op, loss, init_op)."""
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(args.seed)
        rng = np.random.RandomState(args.seed)
        h = tf.constant(rng.uniform(-1, 1, (args.batch, args.hidden)).astype(np.float32))
        for layer in range(args.layers):
            outs = []
            for m in range(args.modules):
                v = h
                for d in range(1 + m % 3):
                    with v1.variable_scope(f"l{layer}_m{m}_d{d}"):
                        w = v1.get_variable("w", [args.hidden, args.hidden], use_resource=True,
                                            initializer=v1.glorot_uniform_initializer(seed=args.seed))
                        b = v1.get_variable("b", [args.hidden], use_resource=True,
                                            initializer=v1.zeros_initializer())
                        v = tf.nn.relu(tf.matmul(v, w) + b)
                outs.append(v)
            h = tf.add_n(outs) / float(args.modules)
        loss = tf.reduce_mean(tf.square(h), name="loss")
        optimizer = (v1.train.AdamOptimizer(args.learning_rate) if args.optimizer == "adam"
                     else v1.train.GradientDescentOptimizer(args.learning_rate))
        train_op = optimizer.minimize(loss)
        init_op = v1.global_variables_initializer()
    return graph, train_op, loss, init_op


def build_model(tf, np, args):
    """Returns (graph, train_op, loss, init_op)."""
    if args.model == "pathnet":
        return build_pathnet(tf, np, args)
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(args.seed)
        rng = np.random.RandomState(args.seed)
        data = rng.uniform(-1.0, 1.0, size=(args.time_steps, args.batch, args.input_size))
        inputs = tf.unstack(tf.constant(data.astype(np.float32), name="inputs"))

        hidden = args.hidden
        for layer in range(args.layers):
            in_size = args.input_size if layer == 0 else hidden
            with v1.variable_scope(f"lstm_{layer}"):
                w_input = v1.get_variable(
                    "w_input", [in_size, 4 * hidden], use_resource=True,
                    initializer=v1.glorot_uniform_initializer(seed=args.seed + 2 * layer))
                w_hidden = v1.get_variable(
                    "w_hidden", [hidden, 4 * hidden], use_resource=True,
                    initializer=v1.glorot_uniform_initializer(seed=args.seed + 2 * layer + 1))
                bias = v1.get_variable("bias", [4 * hidden], use_resource=True,
                                       initializer=v1.zeros_initializer())
                h = tf.zeros([args.batch, hidden])
                c = tf.zeros([args.batch, hidden])
                outputs = []
                for t, x in enumerate(inputs):
                    with tf.name_scope(f"t{t}"):
                        gates = tf.matmul(x, w_input) + tf.matmul(h, w_hidden) + bias
                        i, j, f, o = tf.split(gates, 4, axis=1)
                        c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(j)
                        h = tf.sigmoid(o) * tf.tanh(c)
                    outputs.append(h)
                inputs = outputs

        loss = tf.reduce_mean(inputs[-1], name="loss")
        if args.optimizer == "adam":
            optimizer = v1.train.AdamOptimizer(args.learning_rate)
        else:
            optimizer = v1.train.GradientDescentOptimizer(args.learning_rate)
        train_op = optimizer.minimize(loss)
        init_op = v1.global_variables_initializer()
    return graph, train_op, loss, init_op


def session_config(tf, args, graphi_tf):
    base = tf.compat.v1.ConfigProto()
    if args.inter is not None:
        base.inter_op_parallelism_threads = args.inter
    if args.intra is not None:
        base.intra_op_parallelism_threads = args.intra
    if args.executor == "GRAPHI":
        return graphi_tf.session_config(base)
    base.experimental.executor_type = args.executor
    return base


def run(args):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    graphi_tf = None
    graphi_info = None
    if args.executor == "GRAPHI":
        if REPO_ROOT not in sys.path:
            sys.path.append(REPO_ROOT)  # an installed graphi_tf wins over the source tree
        import graphi_tf
        if args.executors is not None or args.threads is not None:
            try:
                graphi_tf.configure(executors=args.executors, threads_per_executor=args.threads)
            except ValueError as e:
                print(f"lstm_bench.py: error: graphi_tf.configure: {e}", file=sys.stderr)
                sys.exit(2)
        graphi_info = graphi_tf.info()

    graph, train_op, loss, init_op = build_model(tf, np, args)
    config = session_config(tf, args, graphi_tf)
    step_ms = []
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        sess.run(init_op)
        first_loss = float(sess.run(loss))
        start = time.perf_counter()
        for _ in range(args.warmup):
            sess.run(train_op)
        warmup_s = time.perf_counter() - start
        for _ in range(args.steps):
            t0 = time.perf_counter()
            sess.run(train_op)
            step_ms.append((time.perf_counter() - t0) * 1e3)
        last_loss = float(sess.run(loss))
        bound = None
        if args.trace_steps > 0:
            # The physical limit of this arm, from its own traced steps.
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import step_bound

            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
            options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE,
                                              output_partition_graphs=True)
            bounds = []
            for _ in range(args.trace_steps):
                metadata = tf.compat.v1.RunMetadata()
                sess.run(train_op, options=options, run_metadata=metadata)
                bounds.append(step_bound.lower_bound(metadata, cores))
            bound = {key: statistics.median(b[key] for b in bounds) for key in bounds[0]}
            bound["cores"] = cores

    return {
        "benchmark": f"{args.model}_train_step",
        "config": {
            "executor": args.executor,
            "inter": args.inter,
            "intra": args.intra,
            "executors": args.executors,
            "threads": args.threads,
            "default_config_proto": args.inter is None and args.intra is None,
            "warmup": args.warmup,
            "steps": args.steps,
            "model": args.model,
            "modules": args.modules,
            "layers": args.layers,
            "batch": args.batch,
            "hidden": args.hidden,
            "time_steps": args.time_steps,
            "input_size": args.input_size,
            "optimizer": args.optimizer,
            "learning_rate": args.learning_rate,
            "seed": args.seed,
        },
        "median_ms": statistics.median(step_ms),
        "min_ms": min(step_ms),
        "max_ms": max(step_ms),
        "mean_ms": statistics.fmean(step_ms),
        "step_times_ms": step_ms,
        "warmup_s": warmup_s,
        "bound": bound,
        "efficiency": (bound["lower_bound_ms"] / statistics.median(step_ms)) if bound else None,
        "loss_before": first_loss,
        "loss_after": last_loss,
        "graph_nodes": len(graph.as_graph_def().node),
        "tf_version": tf.__version__,
        "graphi_info": graphi_info,
        "host": {
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "env": {k: v for k, v in sorted(os.environ.items())
                    if k.startswith(("GRAPHI_", "TF_NUM_", "OMP_", "KMP_", "TF_ENABLE_ONEDNN"))},
        },
    }


def format_report(result):
    cfg = result["config"]
    threads = ("default ConfigProto" if cfg["default_config_proto"]
               else f"inter={cfg['inter']} intra={cfg['intra']}")
    lines = [
        f"lstm_bench ({cfg['model']}): executor={cfg['executor']} {threads}"
        + (f" executors={cfg['executors']} threads={cfg['threads']}"
           if cfg["executor"] == "GRAPHI" else ""),
        (f"  model: {cfg['layers']} layers x hidden {cfg['hidden']}, batch {cfg['batch']}, "
         f"{cfg['time_steps']} time steps, {cfg['optimizer']}, {result['graph_nodes']} graph nodes"
         if cfg["model"] == "lstm" else
         f"  model: pathnet, {cfg['layers']} layers x {cfg['modules']} modules of width "
         f"{cfg['hidden']}, batch {cfg['batch']}, {cfg['optimizer']}, "
         f"{result['graph_nodes']} graph nodes"),
        f"  steps: warmup {cfg['warmup']}, timed {cfg['steps']}; TF {result['tf_version']}",
        f"  step time: median {result['median_ms']:.2f} ms, min {result['min_ms']:.2f} ms, "
        f"max {result['max_ms']:.2f} ms",
        f"  loss: {result['loss_before']:.6f} -> {result['loss_after']:.6f}",
    ]
    if result.get("bound"):
        b = result["bound"]
        lines.append(f"  lower bound: {b['lower_bound_ms']:.2f} ms = max(CP {b['critical_path_ms']:.2f}, "
                     f"W {b['work_ms']:.2f} / {b['cores']} cores); efficiency {result['efficiency']:.2f}")
    if result["graphi_info"] is not None:
        info = result["graphi_info"]
        lines.append(f"  graphi: executors={info.get('executors')} "
                     f"threads_per_executor={info.get('threads_per_executor')} "
                     f"teams={info.get('teams')}")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    result = run(args)
    if args.json:
        print(json.dumps(result))
    else:
        print(format_report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
