"""Faults: a failing kernel, timeouts and close() under load, exit during a step, and a
layout that does not fit the cores.

Already covered elsewhere and not repeated here: a fixed CheckNumerics/Assert failure
(test_session_conformance.py, test_function_conformance.py), a timed-out dequeue on an
idle session (test_dequeue_from_empty_queue_hits_run_timeout), configure() above the
cores (tests/unit/test_teams.py) and a malformed GRAPHI_EXECUTORS value (ditto).
"""
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from cases import random_dag, random_dag_inputs
from conftest import FAKE, LAYOUTS, USABLE, assert_same_results

pytestmark = pytest.mark.timeout(180)

v1 = tf.compat.v1


def _poisoned_dag(seed):
    """A random DAG where one random node, chosen by ``seed``, goes through CheckNumerics
    after adding a fed scalar: feeding NaN fails exactly that node's kernel."""
    rng = np.random.RandomState(seed)
    g = tf.Graph()
    with g.as_default():
        inputs = [v1.placeholder(tf.float32, [8, 8], name=f"x{i}") for i in range(4)]
        poison = v1.placeholder_with_default(np.float32(0.0), [], name="poison")
        sinks = random_dag(inputs, seed, num_nodes=40)
        victim_index = rng.randint(len(sinks))
        checked = tf.debugging.check_numerics(sinks[victim_index] + poison, "poisoned node",
                                              name="poisoned_check")
        fetches = [tf.reduce_sum(s) for s in sinks] + [tf.reduce_sum(checked)]
    return g, inputs, poison, fetches


def _run_poisoned(seed, config, bad_step, steps=5):
    g, inputs, poison, fetches = _poisoned_dag(seed)
    feeds = dict(zip(inputs, random_dag_inputs(seed)))
    results = []
    with v1.Session(graph=g, config=config) as sess:
        for step in range(steps):
            feed = dict(feeds)
            if step == bad_step:
                feed[poison] = np.float32(np.nan)
            try:
                results.append(("ok", sess.run(fetches, feed)))
            except tf.errors.OpError as e:
                results.append((type(e).__name__, "poisoned_check" in e.message))
    return results


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_kernel_error_at_a_random_node_fails_only_its_step_in_every_layout(arms, seed):
    import graphi_tf
    bad_step = np.random.RandomState(seed).randint(1, 4)
    want = _run_poisoned(seed, arms["DEFAULT"].session_config(), bad_step)
    assert want[bad_step] == ("InvalidArgumentError", True)
    for e, t in ([(None, None)] if FAKE else LAYOUTS):
        if not FAKE:
            graphi_tf.configure(executors=e, threads_per_executor=t)
        got = _run_poisoned(seed, arms["GRAPHI"].session_config(), bad_step)
        assert got[bad_step] == ("InvalidArgumentError", True), f"layout {e}x{t}"
        for step in range(len(want)):
            if step != bad_step:
                assert got[step][0] == "ok", f"layout {e}x{t} step {step}: {got[step]}"
                assert_same_results(want[step][1], got[step][1])


def _busy_graph():
    """A step long enough (about 10-50 ms) to be in flight when another thread acts."""
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(np.random.RandomState(0).uniform(-1, 1, (64, 64)).astype(np.float32))
        _, y = tf.compat.v1.while_loop(lambda i, y: i < 200,
                                       lambda i, y: (i + 1, tf.tanh(tf.matmul(y, x) * 0.1)),
                                       [tf.constant(0), x])
        out = tf.reduce_sum(y)
        queue = tf.queue.FIFOQueue(1, tf.float32, shapes=[[]])
        dequeue = queue.dequeue()
    return g, out, dequeue


def test_run_timeout_while_other_threads_have_steps_in_flight(executor_type, arm):
    g, out, dequeue = _busy_graph()
    with arm.session(g) as sess:
        want = sess.run(out)
        stop = threading.Event()
        outcomes = []

        def worker():
            while not stop.is_set():
                outcomes.append(sess.run(out))

        threads = [threading.Thread(target=worker) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            for _ in range(3):
                start = time.monotonic()
                with pytest.raises(tf.errors.DeadlineExceededError):
                    sess.run(dequeue, options=v1.RunOptions(timeout_in_ms=200))
                assert time.monotonic() - start < 10
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=60)
        assert not any(t.is_alive() for t in threads), "a step never finished"
        assert outcomes and all(np.isclose(v, want, rtol=1e-5, atol=1e-6) for v in outcomes)


def test_session_close_while_other_threads_have_steps_in_flight(executor_type, arm):
    g, out, _ = _busy_graph()
    sess = arm.session(g)
    want = sess.run(out)
    errors, values = [], []

    def worker():
        while True:
            try:
                values.append(sess.run(out))
            except (tf.errors.CancelledError, RuntimeError) as e:  # closed under it
                errors.append(type(e).__name__)
                return

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    sess.close()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a step in flight hung after close()"
    assert len(errors) == 3
    assert all(np.isclose(v, want, rtol=1e-5, atol=1e-6) for v in values)
    with arm.session(g) as fresh:  # the executor still works for the next session
        assert np.isclose(fresh.run(out), want, rtol=1e-5, atol=1e-6)


_EXIT_DURING_STEP = textwrap.dedent("""
    import os, sys, threading, time
    import tensorflow as tf
    config = tf.compat.v1.ConfigProto()
    if os.environ.get("GRAPHI_TEST_FAKE") != "1":
        import graphi_tf
        config = graphi_tf.session_config()
    g = tf.Graph()
    with g.as_default():
        queue = tf.queue.FIFOQueue(1, tf.float32, shapes=[[]])
        blocked = queue.dequeue()              # waits forever: nobody enqueues
        x = tf.random.uniform([256, 256])
        _, busy = tf.compat.v1.while_loop(lambda i, y: i < 100000,
                                          lambda i, y: (i + 1, tf.tanh(tf.matmul(y, x))), [0, x])
    sess = tf.compat.v1.Session(graph=g, config=config)
    for fetch in (blocked, busy):
        threading.Thread(target=sess.run, args=(fetch,), daemon=True).start()
    time.sleep(1.0)
    print("EXITING", flush=True)
    sys.exit(0)
""")


def test_interpreter_exit_while_steps_run_does_not_hang():
    # Only the hang is checked. The exit status is not: with steps still in flight in daemon
    # threads, TensorFlow's stock executor itself dies with SIGSEGV in interpreter teardown in
    # some runs (2 of 6 with GRAPHI_TEST_FAKE=1 on 2026-12-02, and GRAPHI 2 of 6;
    # docs/reliability.md), so "no crash" is not a property this test can demand of GRAPHI.
    proc = subprocess.run([sys.executable, "-c", _EXIT_DURING_STEP], capture_output=True, text=True,
                          timeout=90)
    assert "EXITING" in proc.stdout, proc.stderr[-3000:]


_LAYOUT_ABOVE_MASK = textwrap.dedent("""
    import os
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    import tensorflow as tf, graphi_tf
    with tf.Graph().as_default() as g:
        x = tf.constant(1.0) + 1.0
    try:
        with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as s:
            print("RAN", s.run(x))
    except tf.errors.InvalidArgumentError as e:
        print("ERROR:", e.message)
""")


@pytest.mark.skipif(FAKE, reason="needs the GRAPHI executor")
@pytest.mark.skipif(USABLE < 2, reason="needs 2 cores to restrict the mask below the layout")
def test_environment_layout_above_the_affinity_mask_fails_naming_the_limit():
    env = dict(os.environ, GRAPHI_EXECUTORS="2", GRAPHI_THREADS_PER_EXECUTOR="1")
    proc = subprocess.run([sys.executable, "-c", _LAYOUT_ABOVE_MASK], env=env, capture_output=True,
                          text=True, timeout=120)
    assert "ERROR:" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    message = proc.stdout.split("ERROR:", 1)[1]
    assert "GRAPHI_EXECUTORS x GRAPHI_THREADS_PER_EXECUTOR = 2 x 1" in message, message
    assert "exceeds the 1 usable cores" in message and "<= 1" in message, message
