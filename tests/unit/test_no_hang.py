"""A kernel that blocks must never hang the step while the op it waits for is queued."""
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

import graphi_tf
from graphi_tf import _loader

pytestmark = pytest.mark.timeout(60)


def _blocking_pair_graph():
    """Two independent py_funcs that can only finish while both run at once.

    Each waits at a two-party barrier, so whichever a team starts first blocks
    that team until the other one runs somewhere else.
    """
    barrier = threading.Barrier(2, timeout=20)

    def meet(x):
        barrier.wait()  # raises BrokenBarrierError if the partner never runs
        return x

    g = tf.Graph()
    with g.as_default():
        a = tf.constant(np.float32(1.0))
        left = tf.compat.v1.py_func(meet, [a], tf.float32, stateful=True)
        right = tf.compat.v1.py_func(meet, [a + 1.0], tf.float32, stateful=True)
        out = left + right
    return g, out, barrier


def test_a_blocked_single_team_gets_a_substitute_and_the_step_finishes():
    graphi_tf.configure(executors=1, threads_per_executor=1)
    before = _loader.native().scheduler_stats()["substitutes_started"]
    g, out, _ = _blocking_pair_graph()
    with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as sess:
        start = time.time()
        assert sess.run(out) == 3.0
        assert time.time() - start < 10
    # One team cannot run both halves of the barrier: the watchdog must have
    # started a substitute on the team's core.
    assert _loader.native().scheduler_stats()["substitutes_started"] > before


def test_repeated_blocking_steps_all_finish():
    graphi_tf.configure(executors=1, threads_per_executor=1)
    for _ in range(5):
        g, out, _ = _blocking_pair_graph()
        with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as sess:
            assert sess.run(out) == 3.0


def test_nested_synchronous_functions_on_a_single_team_do_not_deadlock():
    graphi_tf.configure(executors=1, threads_per_executor=1)

    @tf.function
    def inner(x):
        return tf.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v * 2.0), [0, x])[1]

    @tf.function
    def outer(x):
        return tf.map_fn(inner, x)

    with graphi_tf.executor_scope():
        got = outer(tf.ones([4])).numpy()
    np.testing.assert_allclose(got, np.full([4], 32.0))
