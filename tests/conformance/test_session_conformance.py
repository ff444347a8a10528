"""Conformance of the GRAPHI executor in TF1 sessions (tf.compat.v1 graphs).

Each test states one behaviour of TensorFlow's DirectSession + executor that the
GRAPHI executor must share with the stock ("DEFAULT") executor.  Differential
tests (``run_both``) build a fresh graph and session per arm and compare the
fetched values; most also check the values against numpy so that they would
catch a behaviour that both arms got wrong.  Tests taking ``executor_type`` run
once per executor and check that executor on its own.
"""

import collections
import json
import os
import threading
import time

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.client import timeline
from tensorflow.python.ops import gen_state_ops

import cases
from conftest import LAYOUTS, assert_same_results

# "thread": a step stuck inside TensorFlow never returns to Python, so the
# default signal method could not interrupt it; this one dumps stacks and exits.
pytestmark = pytest.mark.timeout(120, method="thread")

v1 = tf.compat.v1
FAKE = os.environ.get("GRAPHI_TEST_FAKE") == "1"


def _run_threads(targets, timeout=60.0):
    """Runs each callable on its own thread; re-raises the first exception and
    fails if any thread is still running after ``timeout`` seconds."""
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
        return run

    threads = [threading.Thread(target=wrap(fn), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), f"threads still running after {timeout}s"
    if errors:
        raise errors[0]


# --------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------

@pytest.mark.skipif(FAKE, reason="GRAPHI arm runs on DEFAULT in fake mode")
def test_graphi_arm_session_config_requests_graphi_executor(arms):
    base = v1.ConfigProto(inter_op_parallelism_threads=3)
    config = arms["GRAPHI"].session_config(base)
    assert config.experimental.executor_type == "GRAPHI"
    assert config.inter_op_parallelism_threads == 3
    assert base.experimental.executor_type == ""


# --------------------------------------------------------------------------
# Basic dataflow (executor_test.cc-style graphs)
# --------------------------------------------------------------------------

def test_simple_add_of_fed_values(run_both):
    a_val = np.array([1.0, 2.5, -3.0], np.float32)
    b_val = np.array([0.5, 0.5, 4.0], np.float32)

    def case(arm):
        g = tf.Graph()
        with g.as_default():
            a = v1.placeholder(tf.float32, [3], name="a")
            b = v1.placeholder(tf.float32, [3], name="b")
            total = tf.add(a, b, name="total")
        with arm.session(g) as sess:
            return sess.run(total, {a: a_val, b: b_val})

    result, _ = run_both(case)
    np.testing.assert_array_equal(result, a_val + b_val)


def test_self_add_chain_doubles_ten_times(run_both):
    def case(arm):
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [], name="x")
            y = cases.self_add_chain(x, depth=10)
        with arm.session(g, cases.unoptimized_config()) as sess:
            return sess.run(y, {x: 1.0})

    result, _ = run_both(case)
    assert result == 1024.0


def test_random_add_tree_sums_all_512_leaves(run_both):
    def case(arm):
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [], name="x")
            total = cases.random_add_tree(x, leaves=512, seed=17)
        with arm.session(g, cases.unoptimized_config()) as sess:
            return [sess.run(total, {x: 1.0}) for _ in range(3)]

    result, _ = run_both(case)
    assert result == [512.0, 512.0, 512.0]


def test_lone_constant_runs_without_inputs(run_both):
    def case(arm):
        g = tf.Graph()
        with g.as_default():
            c = tf.constant([[1, 2], [3, 4]], tf.int64, name="lonely")
        with arm.session(g) as sess:
            return sess.run(c)

    result, _ = run_both(case)
    np.testing.assert_array_equal(result, [[1, 2], [3, 4]])


@pytest.mark.parametrize("optimization", ["grappler", "none"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_mixed_op_dag_matches_default(run_both, seed, optimization):
    values = cases.random_dag_inputs(seed)

    def case(arm):
        g = tf.Graph()
        with g.as_default():
            inputs = [v1.placeholder(tf.float32, [cases.DAG_DIM] * 2, name=f"in{i}")
                      for i in range(len(values))]
            sinks = cases.random_dag(inputs, seed=seed, num_nodes=100)
        base = cases.unoptimized_config() if optimization == "none" else None
        with arm.session(g, base) as sess:
            return sess.run(sinks, dict(zip(inputs, values)))

    result, _ = run_both(case)
    assert len(result) >= 2
    assert all(np.all(np.isfinite(r)) for r in result)


# --------------------------------------------------------------------------
# Control flow (v1 graphs and v2 graphs lowered by the session)
# --------------------------------------------------------------------------

CONTROL_FLOW_VERSIONS = ["v1", "v2"]


def _run_traced(sess, fetches, feed_dict=None):
    metadata = v1.RunMetadata()
    value = sess.run(fetches, feed_dict, options=cases.trace_options(), run_metadata=metadata)
    return value, cases.partition_op_types(metadata)


@pytest.mark.parametrize("version", CONTROL_FLOW_VERSIONS)
def test_cond_runs_only_the_selected_branch(run_both, version):
    def case(arm):
        g = tf.Graph()
        with g.as_default(), cases.control_flow_version(version):
            x = v1.placeholder(tf.float32, [], name="x")
            y = cases.cond_program(x)
        with arm.session(g) as sess:
            positive, ops = _run_traced(sess, y, {x: 1.5})
            negative = sess.run(y, {x: -1.5})
        assert cases.COND_OPS <= set(ops), f"cond was not lowered to Switch/Merge: {ops}"
        return [positive, negative]

    result, _ = run_both(case)
    assert result == [3.0, -2.5]


@pytest.mark.parametrize("version", CONTROL_FLOW_VERSIONS)
def test_while_loop_runs_all_iterations(run_both, version):
    def case(arm):
        g = tf.Graph()
        with g.as_default(), cases.control_flow_version(version):
            n = v1.placeholder(tf.int32, [], name="n")
            loop = cases.while_program(n)
        with arm.session(g) as sess:
            (count, total), ops = _run_traced(sess, loop, {n: 200})
            empty = sess.run(loop, {n: 0})
        assert cases.LOOP_OPS <= set(ops), f"while was not lowered to frames: {ops}"
        return [count, total, list(empty)]

    result, _ = run_both(case)
    assert result[:2] == [200, sum(range(200))]
    assert result[2] == [0, 0]


@pytest.mark.parametrize("version", CONTROL_FLOW_VERSIONS)
def test_nested_while_loops_run_inner_loop_per_outer_iteration(run_both, version):
    def case(arm):
        g = tf.Graph()
        with g.as_default(), cases.control_flow_version(version):
            n = v1.placeholder(tf.int32, [], name="n")
            total = cases.nested_while_program(n)
        with arm.session(g) as sess:
            value, ops = _run_traced(sess, total, {n: 12})
        assert ops["Enter"] >= 2 and ops["Exit"] >= 2, f"expected two loop frames: {ops}"
        return value

    result, _ = run_both(case)
    assert result == cases.expected_nested_while(12)


@pytest.mark.parametrize("version", CONTROL_FLOW_VERSIONS)
def test_while_loop_with_cond_in_body(run_both, version):
    def case(arm):
        g = tf.Graph()
        with g.as_default(), cases.control_flow_version(version):
            n = v1.placeholder(tf.int32, [], name="n")
            total = cases.while_with_cond_program(n)
        with arm.session(g) as sess:
            value, ops = _run_traced(sess, total, {n: 25})
        assert (cases.COND_OPS | cases.LOOP_OPS) <= set(ops), f"not lowered: {ops}"
        return value

    result, _ = run_both(case)
    assert result == cases.expected_while_with_cond(25)


def test_dead_branch_skips_its_ops_and_merge_forwards_the_live_value(run_both):
    def case(arm):
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [], name="x")
            pred = v1.placeholder(tf.bool, [], name="pred")
            hits = v1.Variable(0.0, use_resource=False, name="true_branch_hits")
            if_false, if_true = tf.raw_ops.Switch(data=x, pred=pred)
            false_chain = tf.tanh(if_false * 3.0)
            true_chain = tf.square((if_true + 1.0) * 2.0)
            with tf.control_dependencies([true_chain]):
                bump = v1.assign_add(hits, 1.0)  # dead, hence skipped, when pred is False
            true_out = true_chain + 0.0 * bump
            merged, taken = tf.raw_ops.Merge(inputs=[false_chain, true_out])
        with arm.session(g) as sess:
            sess.run(hits.initializer)
            runs = [sess.run([merged, taken], {x: 0.5, pred: p}) for p in (False, True, False, True, True)]
            return [runs, sess.run(hits)]

    (runs, hits), _ = run_both(case)
    false_value, true_value = np.tanh(np.float32(1.5)), np.float32(9.0)
    np.testing.assert_allclose([r[0] for r in runs], [false_value, true_value, false_value,
                                                      true_value, true_value], rtol=1e-6)
    assert [int(r[1]) for r in runs] == [0, 1, 0, 1, 1]
    assert hits == 3.0


def test_fetching_a_dead_tensor_is_invalid_argument(executor_type, arm):
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [], name="x")
        pred = v1.placeholder(tf.bool, [], name="pred")
        _, if_true = tf.raw_ops.Switch(data=x, pred=pred)
        doubled = if_true * 2.0
    with arm.session(g) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(doubled, {x: 1.0, pred: False})
        assert sess.run(doubled, {x: 1.0, pred: True}) == 2.0


# --------------------------------------------------------------------------
# State: ref variables and temporary variables
# --------------------------------------------------------------------------

def test_ref_variable_assign_and_assign_add_persist_across_runs(run_both):
    def case(arm):
        g = tf.Graph()
        with g.as_default():
            var = v1.Variable(1.0, use_resource=False, name="ref_var")
            assert var.dtype._is_ref_dtype  # a classic RefVariable, not a resource
            add_two = v1.assign_add(var, 2.0)
            set_ten = v1.assign(var, 10.0)
        with arm.session(g) as sess:
            sess.run(var.initializer)
            values = [sess.run(add_two) for _ in range(3)]
            values.append(sess.run(set_ten))
            values.append(sess.run(add_two))
            values.append(sess.run(var))
            return values

    result, _ = run_both(case)
    assert result == [3.0, 5.0, 7.0, 10.0, 12.0, 12.0]


def test_concurrent_locked_assign_adds_in_one_step_all_land(run_both):
    def case(arm):
        g = tf.Graph()
        with g.as_default():
            var = v1.Variable(0.0, use_resource=False, name="counter")
            bumps = [v1.assign_add(var, 1.0, use_locking=True) for _ in range(64)]
            step = tf.group(*bumps)
        with arm.session(g) as sess:
            sess.run(var.initializer)
            for _ in range(4):
                sess.run(step)
            return sess.run(var)

    result, _ = run_both(case)
    assert result == 256.0


def test_reading_an_uninitialized_ref_variable_fails_precondition(executor_type, arm):
    g = tf.Graph()
    with g.as_default():
        var = v1.Variable(3.0, use_resource=False, name="never_initialized")
        doubled = var * 2.0
    with arm.session(g) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
            sess.run(doubled)
        sess.run(var.initializer)
        assert sess.run(doubled) == 6.0


def test_temporary_variable_lives_for_exactly_one_step(run_both):
    def case(arm):
        g = tf.Graph()
        with g.as_default():
            scratch = gen_state_ops.temporary_variable(
                shape=[3], dtype=tf.float32, var_name="scratch")
            init = v1.assign(scratch, tf.constant([1.0, 2.0, 3.0]))
            accumulated = v1.assign_add(init, tf.constant([10.0, 10.0, 10.0]))
            with tf.control_dependencies([accumulated]):
                final = gen_state_ops.destroy_temporary_variable(scratch, var_name="scratch")
        with arm.session(g) as sess:
            # A second step can create the variable again only if the first
            # step's container was cleaned up.
            return [sess.run(final), sess.run(final)]

    result, _ = run_both(case)
    for value in result:
        np.testing.assert_array_equal(value, [11.0, 12.0, 13.0])


# --------------------------------------------------------------------------
# Step statistics (RunMetadata, Timeline)
# --------------------------------------------------------------------------

def _traced_run_of_loop_free_graph(arm):
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4, 4], name="x")
        tree = cases.random_add_tree(x, leaves=16, seed=3)
        y = tf.add(tf.tanh(tf.matmul(tree, x, name="mm")), x, name="y")
    with arm.session(g, cases.unoptimized_config()) as sess:
        sess.run(y, {x: np.eye(4, dtype=np.float32)})  # warm-up
        metadata = v1.RunMetadata()
        before_us = time.time() * 1e6
        sess.run(y, {x: np.eye(4, dtype=np.float32)},
                 options=cases.trace_options(full_trace=True), run_metadata=metadata)
        after_us = time.time() * 1e6
    return metadata, before_us, after_us


def test_full_trace_records_one_node_stats_per_executed_node(executor_type, arm):
    metadata, _, _ = _traced_run_of_loop_free_graph(arm)
    recorded = cases.node_stats_names(metadata)
    executed = cases.partition_node_names(metadata)
    assert recorded, "FULL_TRACE produced no node_stats"
    duplicates = [name for name, n in collections.Counter(recorded).items() if n > 1]
    assert not duplicates, f"nodes recorded more than once: {duplicates}"
    missing = sorted(set(executed) - set(recorded))
    assert not missing, f"executed nodes without node_stats: {missing}"
    unknown = sorted(set(recorded) - set(executed) - {"_SOURCE", "_SINK"})
    assert not unknown, f"node_stats for nodes not in the partition graphs: {unknown}"


def test_full_trace_node_stats_have_plausible_times_and_outputs(executor_type, arm):
    metadata, before_us, after_us = _traced_run_of_loop_free_graph(arm)
    assert cases.node_stats_names(metadata), "FULL_TRACE produced no node_stats"
    slack_us = 1e6
    for device in metadata.step_stats.dev_stats:
        assert device.device.endswith("CPU:0"), device.device
        for stats in device.node_stats:
            assert before_us - slack_us <= stats.all_start_micros <= after_us + slack_us, stats.node_name
            assert 0 <= stats.op_start_rel_micros <= stats.op_end_rel_micros <= stats.all_end_rel_micros
            assert stats.all_start_micros + stats.all_end_rel_micros <= after_us + slack_us
            if stats.node_name.startswith(("tree_add_", "mm", "y")):
                assert [o.tensor_description.dtype for o in stats.output] == [tf.float32.as_datatype_enum], \
                    f"{stats.node_name}: outputs not recorded"


def test_full_trace_converts_to_a_chrome_timeline(executor_type, arm):
    metadata, _, _ = _traced_run_of_loop_free_graph(arm)
    trace = timeline.Timeline(metadata.step_stats).generate_chrome_trace_format(show_memory=True)
    events = json.loads(trace)["traceEvents"]
    op_events = {e["args"]["name"] for e in events if e.get("ph") == "X" and "args" in e}
    missing = sorted(set(cases.partition_node_names(metadata)) - op_events)
    assert not missing, f"timeline lacks events for {missing}"


# --------------------------------------------------------------------------
# Errors, cancellation and timeouts
# --------------------------------------------------------------------------

def test_check_numerics_failure_is_invalid_argument_and_session_stays_usable(executor_type, arm):
    g = tf.Graph()
    with g.as_default():
        num = v1.placeholder(tf.float32, [], name="num")
        den = v1.placeholder(tf.float32, [], name="den")
        checked = tf.debugging.check_numerics(num / den, message="ratio")
        result = checked + 1.0
    with arm.session(g) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="ratio"):
            sess.run(result, {num: 1.0, den: 0.0})
        assert sess.run(result, {num: 1.0, den: 4.0}) == 1.25
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(result, {num: 0.0, den: 0.0})
        assert sess.run(result, {num: 3.0, den: 1.0}) == 4.0


def test_failed_assert_is_invalid_argument(executor_type, arm):
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.int32, [2], name="a")
        b = v1.placeholder(tf.int32, [2], name="b")
        check = v1.assert_equal(a, b, message="operands differ")
        with tf.control_dependencies([check]):
            total = tf.add(a, b)
    with arm.session(g) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="operands differ"):
            sess.run(total, {a: [1, 2], b: [1, 3]})
        np.testing.assert_array_equal(sess.run(total, {a: [1, 2], b: [1, 2]}), [2, 4])


def test_kernel_error_from_fed_shapes_is_invalid_argument(executor_type, arm):
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.float32, None, name="a")
        b = v1.placeholder(tf.float32, None, name="b")
        product = tf.matmul(a, b)
    with arm.session(g) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(product, {a: np.ones((2, 3)), b: np.ones((2, 3))})
        np.testing.assert_array_equal(sess.run(product, {a: np.ones((2, 3)), b: np.ones((3, 2))}),
                                      np.full((2, 2), 3.0))


def test_feed_not_convertible_to_placeholder_dtype_is_rejected(executor_type, arm):
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.float32, [2], name="a")
        doubled = a * 2.0
    with arm.session(g) as sess:
        with pytest.raises((ValueError, TypeError)):
            sess.run(doubled, {a: ["not", "numbers"]})
        np.testing.assert_array_equal(sess.run(doubled, {a: [1.0, 2.0]}), [2.0, 4.0])


def test_dequeue_from_empty_queue_hits_run_timeout(executor_type, arm):
    g = tf.Graph()
    with g.as_default():
        queue = tf.queue.FIFOQueue(4, tf.float32, shapes=[[]])
        dequeue = queue.dequeue()
        enqueue = queue.enqueue(7.0)
    with arm.session(g) as sess:
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(dequeue, options=v1.RunOptions(timeout_in_ms=500))
        elapsed = time.monotonic() - start
        assert 0.4 <= elapsed < 5.0, f"timed out after {elapsed:.2f}s"
        sess.run(enqueue)
        assert sess.run(dequeue) == 7.0


# --------------------------------------------------------------------------
# Concurrency
# --------------------------------------------------------------------------

def test_eight_threads_run_one_session_concurrently(executor_type, arm):
    weights = np.random.RandomState(5).uniform(-1, 1, size=(16, 16)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [16, 16], name="x")
        n = v1.placeholder(tf.int32, [], name="n")
        features = tf.reduce_sum(tf.tanh(tf.matmul(x, tf.constant(weights))), axis=1)
        _, count = v1.while_loop(lambda i, c: i < n, lambda i, c: (i + 1, c + 2), [0, 0])
    inputs = [np.random.RandomState(100 + k).uniform(-1, 1, size=(16, 16)).astype(np.float32)
              for k in range(8)]
    with arm.session(g) as sess:
        def worker(k):
            def run():
                want = np.tanh(inputs[k] @ weights).sum(axis=1)
                for _ in range(25):
                    got_features, got_count = sess.run([features, count], {x: inputs[k], n: k + 1})
                    np.testing.assert_allclose(got_features, want, rtol=1e-5, atol=1e-5)
                    assert got_count == 2 * (k + 1)
            return run

        _run_threads([worker(k) for k in range(8)])


def test_sessions_on_both_executors_run_at_once(arms):
    sessions = []
    try:
        for k in range(4):
            chosen = arms["DEFAULT"] if k % 2 == 0 else arms["GRAPHI"]
            g = tf.Graph()
            with g.as_default():
                x = v1.placeholder(tf.float32, [], name="x")
                y = cases.random_add_tree(x * float(k + 1), leaves=64, seed=k)
            sessions.append((chosen.session(g), x, y, 64.0 * (k + 1)))

        def worker(sess, x, y, want):
            def run():
                for _ in range(20):
                    assert sess.run(y, {x: 1.0}) == want
            return run

        _run_threads([worker(*s) for s in sessions])
    finally:
        for sess, *_ in sessions:
            sess.close()


def test_queue_producer_and_consumer_threads_both_finish(executor_type, arm):
    items = 40
    g = tf.Graph()
    with g.as_default():
        queue = tf.queue.FIFOQueue(2, tf.int32, shapes=[[]])
        item = v1.placeholder(tf.int32, [], name="item")
        enqueue = queue.enqueue(item)
        dequeue = queue.dequeue()
    received = []
    with arm.session(g) as sess:
        def produce():
            for i in range(items):
                sess.run(enqueue, {item: i}, options=v1.RunOptions(timeout_in_ms=30000))

        def consume():
            for _ in range(items):
                received.append(int(sess.run(dequeue, options=v1.RunOptions(timeout_in_ms=30000))))

        _run_threads([consume, produce])
    assert received == list(range(items))


# --------------------------------------------------------------------------
# Python kernels and thread pool settings
# --------------------------------------------------------------------------

def test_py_func_and_py_function_run_inside_the_graph(run_both):
    def case(arm):
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [3], name="x")
            numpy_side = v1.py_func(lambda a: (a * 2.0 + 1.0).astype(np.float32), [x], tf.float32)
            eager_side = tf.py_function(func=lambda a: tf.square(a) - 1.0, inp=[x], Tout=tf.float32)
            combined = numpy_side + eager_side
        with arm.session(g) as sess:
            return sess.run([numpy_side, eager_side, combined], {x: [0.0, 1.0, 2.0]})

    (numpy_side, eager_side, combined), _ = run_both(case)
    np.testing.assert_array_equal(numpy_side, [1.0, 3.0, 5.0])
    np.testing.assert_array_equal(eager_side, [-1.0, 0.0, 3.0])
    np.testing.assert_array_equal(combined, [0.0, 3.0, 8.0])


@pytest.mark.parametrize("pool", ["one_thread", "inline"])
def test_session_with_single_inter_op_thread_runs_everything(run_both, pool):
    if pool == "one_thread":
        base = v1.ConfigProto(inter_op_parallelism_threads=1, use_per_session_threads=True)
    else:  # negative: run kernels inline on the caller thread
        base = v1.ConfigProto(inter_op_parallelism_threads=-1)

    def case(arm):
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [], name="x")
            tree = cases.random_add_tree(x, leaves=128, seed=9)
            n = v1.placeholder(tf.int32, [], name="n")
            loop_total = cases.while_with_cond_program(n)
            via_python = v1.py_func(lambda a: np.float32(a + 1.0), [tree], tf.float32)
        with arm.session(g, base) as sess:
            return sess.run([tree, loop_total, via_python], {x: 1.0, n: 30})

    result, _ = run_both(case)
    assert result == [128.0, cases.expected_while_with_cond(30), 129.0]


# --------------------------------------------------------------------------
# Floating-point environment
# --------------------------------------------------------------------------

def _denormal_arithmetic(arm, size):
    """A denormal input times 1, and 1e-20 * 1e-20 (a denormal result), on ``size``
    float32 elements; grappler cannot fold either (the factors are fed)."""
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [size], name="x")
        small = v1.placeholder(tf.float32, [size], name="small")
        one = v1.placeholder(tf.float32, [], name="one")
        reads, makes = x * one, small * (one * 1e-20)
    with arm.session(g) as sess:
        return sess.run([reads, makes], {x: np.full(size, 1e-39, np.float32),
                                         small: np.full(size, 1e-20, np.float32), one: 1.0})


# 8 elements run on one thread; 2**20 are split over the intra-op pool.
@pytest.mark.parametrize("size", [8, 1 << 20])
def test_kernels_flush_denormals_to_zero_as_on_tensorflows_pools_in_every_layout(arms, size):
    # TensorFlow's pool threads flush denormal results to zero and read denormal inputs
    # as zero, so a model's results depend on it: GRAPHI's threads must give those bits.
    import graphi_tf
    want = _denormal_arithmetic(arms["DEFAULT"], size)
    assert not want[0].any() and not want[1].any(), "TensorFlow no longer flushes denormals"
    for e, t in ([(None, None)] if FAKE else LAYOUTS):
        if not FAKE:
            graphi_tf.configure(executors=e, threads_per_executor=t)
        got = _denormal_arithmetic(arms["GRAPHI"], size)
        assert_same_results(want, got, rtol=0, atol=0)
