"""Smoke test of a graphi_tf native library built outside pip (by Bazel).

    python tests/bazel/smoke_check.py bazel-bin/_graphi_tf.cpython-311-x86_64-linux-gnu.so

In a fresh process that does not import graphi_tf, it

1. checks that executor type "GRAPHI" is not known yet (so what follows
   exercises this library, not another copy);
2. loads the library with tf.load_library, which runs its registrar;
3. imports the same file as the Python module _graphi_tf (the pybind11
   bindings) and checks that it reports GRAPHI registered and the TensorFlow
   version it was built against;
4. runs a small TF1 session graph (parallel matmul branches, a reduction, a
   cond) under DEFAULT and under GRAPHI: the results must match, and GRAPHI's
   teams must have run tasks.

Exits 0 and prints "smoke test passed" on success; any failure raises.
(pytest collects this file by its name but finds no tests in it.)
"""
import importlib.util
import os
import sys


def _load_module(path):
    """Imports the extension at `path` as module _graphi_tf (its PyInit name)."""
    spec = importlib.util.spec_from_file_location("_graphi_tf", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"{path} cannot be imported as an extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build_graph(tf):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [128, 128], name="x")
        branches = []
        for k in range(4):
            w = tf.constant((k + 1) * 0.01, tf.float32, [128, 128])
            h = tf.tanh(tf.matmul(x, w) + float(k))
            branches.append(tf.reduce_sum(h, axis=1))
        total = tf.add_n(branches)
        picked = tf.cond(tf.reduce_sum(total) > 0.0, lambda: total * 2.0, lambda: total - 1.0)
        out = tf.identity(picked, name="out")
    return graph, x, out


def _run(tf, executor_type, feed):
    graph, x, out = _build_graph(tf)
    config = tf.compat.v1.ConfigProto()
    config.experimental.executor_type = executor_type
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        return [sess.run(out, {x: feed}) for _ in range(3)]


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    path = os.path.abspath(argv[1])
    if not os.path.isfile(path):
        print(f"no such file: {path}", file=sys.stderr)
        return 2

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    feed = np.random.default_rng(0).standard_normal((128, 128)).astype(np.float32)

    # 1. Nothing has registered "GRAPHI" yet in this process.
    try:
        _run(tf, "GRAPHI", feed)
    except (tf.errors.NotFoundError, tf.errors.InvalidArgumentError):
        pass
    else:
        raise AssertionError("executor type GRAPHI already works before loading the library")
    print("before loading: executor type GRAPHI is unknown (as expected)")

    # 2. Load it the way graphi_tf does.
    tf.load_library(path)
    print(f"tf.load_library OK: {path}")

    # 3. The same file is the Python module.
    native = _load_module(path)
    assert native.executor_registered(), "the library loaded but GRAPHI is not registered"
    assert native.BUILT_AGAINST_TF == tf.__version__, (
        f"built against TensorFlow {native.BUILT_AGAINST_TF}, running {tf.__version__}")
    print(f"module _graphi_tf OK: executor_registered() = True, "
          f"BUILT_AGAINST_TF = {native.BUILT_AGAINST_TF!r}")

    # 4. GRAPHI gives DEFAULT's results, and its teams did the work.
    expected = _run(tf, "DEFAULT", feed)
    got = _run(tf, "GRAPHI", feed)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
    stats = native.scheduler_stats()
    tasks = sum(stats["tasks_run_per_team"])
    assert tasks > 0, f"GRAPHI's teams ran no tasks: {stats}"
    print(f"session: GRAPHI == DEFAULT on {len(got)} runs (output shape {got[0].shape}); "
          f"teams {stats['teams']} ran {stats['tasks_run_per_team']} tasks")
    print("smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
