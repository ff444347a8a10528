"""GRAPHI on the "stock" setting (TensorFlow's own executor over GRAPHI's kernels) gives
the stock executor's results: the session, function, runtime-feature, fault and fuzz-seed
conformance suites, run again in a pytest subprocess with GRAPHI_TEST_EXECUTORS=stock
(tests/conftest.py), so that every GRAPHI step no test configures runs there. The same
again on a stock point, "stock:2x1": TensorFlow's executor on GRAPHI's own inter-op pool
of 2 threads, its kernels on an intra-op pool of 1.

The autotuner picks this setting for graphs whose team layouts do not beat it, so it must
conform as the teams do.
"""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(900)

HERE = os.path.dirname(os.path.abspath(__file__))
SUITES = ["test_session_conformance.py", "test_function_conformance.py", "test_runtime_features.py",
          "test_faults.py", "test_fuzz_seeds.py"]


def _run_graphi(code, **graphi_env):
    """Runs `code` in a fresh Python with only these GRAPHI_* variables; returns its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(graphi_env, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("setting", ["stock", "stock:2x1"])
def test_the_conformance_suites_pass_on_tensorflows_executor(setting):
    env = dict(os.environ, GRAPHI_TEST_EXECUTORS=setting, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *[os.path.join(HERE, s) for s in SUITES]],
        env=env, capture_output=True, text=True, timeout=880, cwd=os.path.dirname(HERE))
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary, summary


def test_graphi_executors_stock_runs_every_step_on_tensorflows_executor():
    code = (
        "import tensorflow as tf, graphi_tf\n"
        "g = tf.Graph()\n"
        "with g.as_default(): c = tf.matmul(tf.ones([8, 8]), tf.ones([8, 8]))\n"
        "with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as s:\n"
        "    v = [s.run(c) for _ in range(3)][-1]\n"
        "i = graphi_tf.info()\n"
        "print(float(v[0, 0]), i['stock_pools'], [x['stock_pools'] for x in i['graphs']],\n"
        "      [[x['steps_run'], x['steps_on_stock_executor']] for x in i['graphs']])\n"
    )
    out = _run_graphi(code, GRAPHI_EXECUTORS="stock")
    assert out.split() == ["8.0", "True", "[True]", "[[3,", "3]]"], out


def test_a_stock_points_intra_op_threads_flush_denormals_as_tensorflows_pools_do():
    # 2**20 elements: the product is split over the stock point's intra-op pool of 2.
    code = (
        "import numpy as np, tensorflow as tf, graphi_tf\n"
        "v1 = tf.compat.v1\n"
        "g = tf.Graph()\n"
        "with g.as_default():\n"
        "    x = v1.placeholder(tf.float32, [1 << 20]); one = v1.placeholder(tf.float32, [])\n"
        "    y = x * one\n"
        "with v1.Session(graph=g, config=graphi_tf.session_config()) as s:\n"
        "    v = s.run(y, {x: np.full(1 << 20, 1e-39, np.float32), one: 1.0})\n"
        "print(np.count_nonzero(v), graphi_tf.info()['setting'])\n"
    )
    out = _run_graphi(code, GRAPHI_EXECUTORS="stock:1x2", GRAPHI_AUTOTUNE="0")
    assert out.split() == ["0", "stock:1x2"], out


def test_a_step_on_teams_does_not_run_on_tensorflows_executor():
    code = (
        "import tensorflow as tf, graphi_tf\n"
        "graphi_tf.configure(executors=1, threads_per_executor=1)\n"
        "g = tf.Graph()\n"
        "with g.as_default(): c = tf.matmul(tf.ones([8, 8]), tf.ones([8, 8]))\n"
        "with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as s:\n"
        "    v = [s.run(c) for _ in range(3)][-1]\n"
        "print([[x['steps_run'], x['steps_on_stock_executor']] for x in graphi_tf.info()['graphs']])\n"
    )
    out = _run_graphi(code)
    assert out.split() == ["[[3,", "0]]"], out


# An outer function whose op (a PartitionedCall: the inner one is not inlined) calls an inner
# one twice a step.
_NESTED_FUNCTION_CODE = (
    "import tensorflow as tf, graphi_tf\n"
    "@tf.function(experimental_attributes={'_noinline': True})\n"
    "def inner(x): return tf.tanh(tf.matmul(x, x))\n"
    "@tf.function\n"
    "def outer(x): return inner(x) + inner(x * 0.5)\n"
    "x = tf.ones([16, 16]) / 16\n"
    "with graphi_tf.executor_scope():\n"
    "    for _ in range(3): outer(x).numpy()\n"
    "print(sorted([g['steps_run'], g['steps_on_stock_executor'], g['autotune'] is None]\n"
    "             for g in graphi_tf.info()['graphs']))\n"
)


@pytest.mark.parametrize("setting", ["stock:2x1", "stock"], ids=["stock_point", "tensorflows_own_pools"])
def test_a_function_an_op_of_a_step_on_tensorflows_executor_calls_is_part_of_that_step(setting):
    # The inner function runs in a nested executor started by an op on an inter-op thread
    # (the stock point's, or TensorFlow's own): it must count as part of the outer step
    # (step_order.h), so the autotuner never sees it as a step of its own. On TensorFlow's
    # own pools the ops' closures carry the step's number only in graphs with an op that
    # names a function (graphi_executor.h, ops_may_start_nested_steps_), as outer's does.
    out = _run_graphi(_NESTED_FUNCTION_CODE, GRAPHI_EXECUTORS=setting)
    # outer: 3 top-level steps; inner: 6 nested ones, never seen by the autotuner.
    assert out.split() == ["[[3,", "3,", "False],", "[6,", "6,", "True]]"], out
