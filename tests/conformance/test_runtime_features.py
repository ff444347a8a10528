"""GRAPHI equals DEFAULT on runtime features: functional control flow that arrives
unlowered, multi-device functions (Send/Recv), collectives, session handles and
partial runs."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from conftest import FAKE, assert_same_results

pytestmark = pytest.mark.timeout(180)


def _loop_and_branch(x):
    total = tf.while_loop(lambda i, acc: i < 6, lambda i, acc: (i + 1, acc + tf.cast(i, tf.float32) * x),
                          [tf.constant(0), tf.zeros_like(x)])[1]
    return tf.cond(tf.reduce_sum(total) > 0, lambda: total * 2.0, lambda: total - 1.0)


def test_function_traced_unlowered_runs_its_if_and_while_kernels(run_both):
    def case(arm):
        f = tf.function(_loop_and_branch)
        x = tf.constant([1.0, -2.0, 3.0])
        # Tracing under SINGLE_THREADED_EXECUTOR keeps If/While functional
        # (no Switch/Merge): the GRAPHI call then runs the functional kernels,
        # whose bodies are instantiated with the calling executor's type.
        with tf.experimental.function_executor_type("SINGLE_THREADED_EXECUTOR"):
            f.get_concrete_function(x)
        ops = {op.type for op in f.get_concrete_function(x).graph.get_operations()}
        assert ops & {"While", "StatelessWhile"} and ops & {"If", "StatelessIf"}
        with arm.scope():
            return f(x)

    run_both(case)


def test_function_traced_lowered_under_default_runs_on_graphi(run_both):
    def case(arm):
        f = tf.function(_loop_and_branch)
        x = tf.constant([0.5, 1.5])
        first = f(x)  # traced and lowered for DEFAULT
        with arm.scope():
            return [first, f(x)]

    run_both(case)


def test_session_handles_keep_tensors_between_runs(run_both):
    def case(arm):
        g = tf.Graph()
        with g.as_default():
            a = tf.constant([1.0, 2.0]) * 3.0
            handle_op = tf.compat.v1.get_session_handle(a)
        with arm.session(g) as sess:
            handle = sess.run(handle_op)
            with g.as_default():
                placeholder, stored = tf.compat.v1.get_session_tensor(handle.handle, tf.float32)
                doubled = stored * 2.0
            return sess.run(doubled, {placeholder: handle.handle})

    run_both(case)


def test_partial_run_feeds_arrive_while_the_step_waits(run_both):
    def case(arm):
        g = tf.Graph()
        with g.as_default():
            a = tf.compat.v1.placeholder(tf.float32, [])
            b = tf.compat.v1.placeholder(tf.float32, [])
            c = tf.compat.v1.placeholder(tf.float32, [])
            r1 = a + b
            r2 = r1 * c
        with arm.session(g) as sess:
            h = sess.partial_run_setup([r1, r2], [a, b, c])
            first = sess.partial_run(h, r1, feed_dict={a: 1.0, b: 2.0})
            second = sess.partial_run(h, r2, feed_dict={c: 4.0})
            return [first, second]

    run_both(case)


# Logical devices must be set before TensorFlow initialises, so the multi-device
# cases run in a fresh process that runs both arms and prints the results.
_MULTI_DEVICE_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import tensorflow as tf
    fake = os.environ.get("GRAPHI_TEST_FAKE") == "1"
    if not fake:
        import graphi_tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

    def scope(arm):
        if arm == "DEFAULT":
            import contextlib
            return contextlib.nullcontext()
        return tf.experimental.function_executor_type("DEFAULT" if fake else "GRAPHI")

    def send_recv():
        @tf.function
        def f(x):
            with tf.device("/cpu:0"):
                y = tf.matmul(x, x) + 1.0
            with tf.device("/cpu:1"):
                z = tf.tanh(y) * 3.0
            with tf.device("/cpu:0"):
                return tf.reduce_sum(z + y)
        return float(f(tf.constant(np.arange(16, dtype=np.float32).reshape(4, 4) / 16)))

    def all_reduce(arm):
        # One tf.function per device, called from two threads at once: a
        # collective's async kernel waits for its peer, so the two halves must
        # run concurrently (inside one function auto control dependencies
        # would serialise them).
        import threading

        def member(i, out):
            @tf.function
            def f():
                with tf.device(f"/cpu:{i}"):
                    value = tf.constant([1.0, 2.0, 3.0]) * float(i + 1)
                    return tf.raw_ops.CollectiveReduceV2(
                        input=value, group_size=tf.constant(2), group_key=tf.constant(7),
                        instance_key=tf.constant(11 + len(results)), ordering_token=[],
                        merge_op="Add", final_op="Id")
            with scope(arm):
                out[i] = f().numpy().tolist()

        out = [None, None]
        threads = [threading.Thread(target=member, args=(i, out)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        return out

    results = {}
    for arm in ["DEFAULT", "GRAPHI"]:
        with scope(arm):
            results[arm] = {"send_recv": send_recv(), "all_reduce": all_reduce(arm)}
    print("RESULTS" + json.dumps(results))
""")


@pytest.fixture(scope="module")
def multi_device_results():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", _MULTI_DEVICE_SCRIPT], env=env,
                          capture_output=True, text=True, timeout=150)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULTS")]
    assert lines, f"multi-device script failed:\n{proc.stderr[-4000:]}"
    return json.loads(lines[0][len("RESULTS"):])


def test_function_split_over_two_devices_exchanges_tensors_with_send_recv(multi_device_results):
    r = multi_device_results
    np.testing.assert_allclose(r["GRAPHI"]["send_recv"], r["DEFAULT"]["send_recv"], rtol=1e-5)


def test_collective_all_reduce_across_two_devices(multi_device_results):
    r = multi_device_results
    assert r["DEFAULT"]["all_reduce"] == [[3.0, 6.0, 9.0]] * 2
    assert r["GRAPHI"]["all_reduce"] == r["DEFAULT"]["all_reduce"]
