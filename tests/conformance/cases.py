"""Graph builders and helpers shared by the conformance tests.

Builders only create TensorFlow ops (they work in a tf.compat.v1 graph and inside
a tf.function); the tests decide how to run them.  Everything random is seeded,
so two calls with the same arguments build the same graph.
"""

import collections
import contextlib

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context
from tensorflow.python.ops import control_flow_util

# Op types that only exist in a graph once control flow has been lowered (or was
# built with v1 control flow in the first place).
COND_OPS = frozenset({"Switch", "Merge"})
LOOP_OPS = frozenset({"Enter", "Exit", "NextIteration", "LoopCond"})

# Shape of every tensor in random_dag.
DAG_DIM = 8


def unoptimized_config(base=None):
    """ConfigProto that turns off Grappler and the classic graph optimizer, so the
    executor sees the graph exactly as built (every Identity, every Add)."""
    config = tf.compat.v1.ConfigProto()
    if base is not None:
        config.CopyFrom(base)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    config.graph_options.optimizer_options.do_constant_folding = False
    config.graph_options.optimizer_options.do_common_subexpression_elimination = False
    config.graph_options.optimizer_options.do_function_inlining = False
    return config


@contextlib.contextmanager
def control_flow_version(version):
    """Builds tf.compat.v1.cond/while_loop as v1 (Switch/Merge/Enter/Exit in the
    GraphDef) or v2 (If/While ops that the session lowers before execution)."""
    if version not in ("v1", "v2"):
        raise ValueError(version)
    saved = control_flow_util.ENABLE_CONTROL_FLOW_V2
    control_flow_util.ENABLE_CONTROL_FLOW_V2 = version == "v2"
    try:
        yield
    finally:
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = saved


def trace_options(partition_graphs=True, full_trace=False):
    level = tf.compat.v1.RunOptions.FULL_TRACE if full_trace else tf.compat.v1.RunOptions.NO_TRACE
    return tf.compat.v1.RunOptions(trace_level=level, output_partition_graphs=partition_graphs)


def partition_op_types(run_metadata):
    """Counter of op types over the partition graphs the executors ran."""
    return collections.Counter(
        node.op for graph in run_metadata.partition_graphs for node in graph.node)


def partition_node_names(run_metadata):
    return [node.name for graph in run_metadata.partition_graphs for node in graph.node]


def node_stats_names(run_metadata):
    return [stats.node_name
            for device in run_metadata.step_stats.dev_stats
            for stats in device.node_stats]


def function_partition_op_types(fn, *args):
    """Calls ``fn(*args)`` eagerly with run metadata collection on and returns
    (result, Counter of op types over all partition graphs of the functions run).
    The executor type is whatever the caller's scope selects."""
    ctx = context.context()
    ctx.enable_run_metadata()
    try:
        result = fn(*args)
        metadata = ctx.export_run_metadata()
    finally:
        ctx.disable_run_metadata()
    counts = collections.Counter()
    for function_graph in metadata.function_graphs:
        for graph in function_graph.partition_graphs:
            counts.update(node.op for node in graph.node)
    return result, counts


# --------------------------------------------------------------------------
# Executor-test style graphs
# --------------------------------------------------------------------------

def self_add_chain(x, depth=10):
    """depth times x = x + x (one tensor feeding both inputs of each Add)."""
    for i in range(depth):
        x = tf.add(x, x, name=f"self_add_{i}")
    return x


def random_add_tree(x, leaves=512, seed=0):
    """``leaves`` Identity copies of x summed by a randomly shaped Add tree."""
    rng = np.random.RandomState(seed)
    nodes = [tf.identity(x, name=f"leaf_{i}") for i in range(leaves)]
    count = 0
    while len(nodes) > 1:
        a = nodes.pop(rng.randint(len(nodes)))
        b = nodes.pop(rng.randint(len(nodes)))
        nodes.append(tf.add(a, b, name=f"tree_add_{count}"))
        count += 1
    return nodes[0]


def random_dag(inputs, seed, num_nodes=100):
    """A seeded random DAG of mixed ops over [DAG_DIM, DAG_DIM] float32 tensors.

    Ops: add, mul, matmul, tanh, concat(+reduce back to shape), reduce(+broadcast).
    Every op keeps values in [-1, 1] when inputs are, so float error stays small.
    Returns the list of sink tensors (nodes nobody consumed), last node included.
    """
    rng = np.random.RandomState(seed)
    pool = list(inputs)
    used = [False] * len(pool)
    kinds = ("add", "mul", "matmul", "tanh", "concat", "reduce")

    def pick():
        # Prefer recent nodes to get depth, but reach back for width.
        if rng.rand() < 0.6:
            index = len(pool) - 1 - rng.randint(min(len(pool), 8))
        else:
            index = rng.randint(len(pool))
        used[index] = True
        return pool[index]

    for k in range(num_nodes):
        kind = kinds[rng.randint(len(kinds))]
        name = f"dag_{kind}_{k}"
        if kind == "add":
            out = tf.multiply(tf.add(pick(), pick()), 0.5, name=name)
        elif kind == "mul":
            out = tf.multiply(pick(), pick(), name=name)
        elif kind == "matmul":
            out = tf.multiply(tf.matmul(pick(), pick()), 1.0 / DAG_DIM, name=name)
        elif kind == "tanh":
            out = tf.tanh(pick(), name=name)
        elif kind == "concat":
            joined = tf.concat([pick(), pick()], axis=1)
            pairs = tf.reshape(joined, [DAG_DIM, DAG_DIM, 2])
            out = tf.reduce_max(pairs, axis=2, name=name)
        else:  # reduce
            row_mean = tf.reduce_mean(pick(), axis=1, keepdims=True)
            out = tf.multiply(tf.add(row_mean, pick()), 0.5, name=name)
        pool.append(out)
        used.append(False)
    return [t for t, was_used in zip(pool[len(inputs):], used[len(inputs):]) if not was_used]


def random_dag_inputs(seed, count=4):
    rng = np.random.RandomState(1000 + seed)
    return [rng.uniform(-1.0, 1.0, size=(DAG_DIM, DAG_DIM)).astype(np.float32)
            for _ in range(count)]


# --------------------------------------------------------------------------
# Control flow programs (expected values computed in numpy by the tests)
# --------------------------------------------------------------------------

def cond_program(x):
    """x * 2 if x > 0 else x - 1."""
    return tf.compat.v1.cond(x > 0, lambda: x * 2.0, lambda: x - 1.0)


def while_program(n):
    """(n, sum(range(n))) with a while loop over int32 counters."""
    return tf.compat.v1.while_loop(
        lambda i, acc: i < n, lambda i, acc: (i + 1, acc + i), [tf.constant(0), tf.constant(0)])


def nested_while_program(n):
    """sum over 0 <= j < i < n of i * j, two nested while loops."""

    def outer_body(i, acc):
        _, inner = tf.compat.v1.while_loop(
            lambda j, a: j < i, lambda j, a: (j + 1, a + i * j), [tf.constant(0), acc])
        return i + 1, inner

    return tf.compat.v1.while_loop(
        lambda i, acc: i < n, outer_body, [tf.constant(0), tf.constant(0)])[1]


def while_with_cond_program(n):
    """sum over i < n of (i if i is even else -3 * i), a cond inside a loop."""

    def body(i, acc):
        step = tf.compat.v1.cond(tf.equal(i % 2, 0), lambda: i, lambda: -3 * i)
        return i + 1, acc + step

    return tf.compat.v1.while_loop(
        lambda i, acc: i < n, body, [tf.constant(0), tf.constant(0)])[1]


def expected_nested_while(n):
    return sum(i * j for i in range(n) for j in range(i))


def expected_while_with_cond(n):
    return sum(i if i % 2 == 0 else -3 * i for i in range(n))
