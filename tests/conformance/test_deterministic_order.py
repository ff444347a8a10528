"""TF_DETERMINISTIC_ORDER=1: GRAPHI runs ready ops in the stock executor's order.

With the variable set, TensorFlow 2.21's executor (executor.cc,
``ExecutorImpl::RunAsyncInternal``) runs every step with ``OrderedPropagatorState``
(propagator_state.h): the nodes one thread made ready and runs inline are taken
highest (node id, frame id, iteration) first, not in the order the propagator found
them. GRAPHI chooses its propagator the same way (cc/executor/graphi_step.cc,
``WithPropagator``).

The graph below makes that order visible: six cheap stack pushes (StackPushV2 is
never expensive, so both executors run them inline) become ready together when
one NoOp finishes, and nothing else orders them; six chained pops then read the
stack back, so the fetched vector is the push order reversed. TensorFlow reads the
variable once per process, so each setting runs in its own subprocess.
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import FAKE

pytestmark = pytest.mark.timeout(300)

_SCRIPT = r"""
import json, os, sys
sys.path.insert(0, os.environ["GRAPHI_TEST_CONFORMANCE_DIR"])
import tensorflow as tf
from conftest import FAKE, LAYOUTS, Arm

v1 = tf.compat.v1
PUSHES = 6
STEPS = 5


def stack_graph():
    g = tf.Graph()
    with g.as_default():
        handle = tf.raw_ops.StackV2(max_size=-1, elem_type=tf.int32, stack_name="order")
        values = [tf.constant(i, name=f"value{i}") for i in range(PUSHES)]
        # Every input of every push is done before the gate: the pushes become
        # ready together, when the gate finishes.
        with tf.control_dependencies(values + [handle]):
            gate = tf.no_op(name="gate")
        pushes = []
        for i, value in enumerate(values):
            with tf.control_dependencies([gate]):
                pushes.append(tf.raw_ops.StackPushV2(handle=handle, elem=value, name=f"push{i}"))
        pops, after = [], pushes
        for i in range(PUSHES):
            with tf.control_dependencies(after):
                pop = tf.raw_ops.StackPopV2(handle=handle, elem_type=tf.int32, name=f"pop{i}")
            pops.append(pop)
            after = [pop]
        popped = tf.stack(pops)
    return g, popped


def run(arm):
    base = v1.ConfigProto()
    # Grappler would prune or reorder the control edges the case is made of.
    base.graph_options.rewrite_options.disable_meta_optimizer = True
    g, popped = stack_graph()
    with arm.session(g, base) as sess:
        return [sess.run(popped).tolist() for _ in range(STEPS)]


results = {"DEFAULT": run(Arm("DEFAULT")), "GRAPHI": {}}
for e, t in ([(1, 1)] if FAKE else LAYOUTS):
    if not FAKE:
        import graphi_tf
        graphi_tf.configure(executors=e, threads_per_executor=t)
    results["GRAPHI"][f"{e}x{t}"] = run(Arm("GRAPHI"))
print("RESULTS" + json.dumps(results))
"""


def _run_with_deterministic_order(value: str) -> dict:
    env = dict(os.environ, TF_DETERMINISTIC_ORDER=value, TF_CPP_MIN_LOG_LEVEL="2",
               GRAPHI_TEST_CONFORMANCE_DIR=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=240)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULTS")]
    assert lines, f"script failed (status {proc.returncode}):\n{proc.stderr[-4000:]}"
    return json.loads(lines[0][len("RESULTS"):])


@pytest.fixture(scope="module")
def ordered():
    return _run_with_deterministic_order("1")


@pytest.fixture(scope="module")
def unordered():
    return _run_with_deterministic_order("0")


def test_stock_executor_orders_the_pushes_only_under_deterministic_order(ordered, unordered):
    # The case is order-sensitive: ordered propagation changes the stock result.
    assert len({tuple(r) for r in ordered["DEFAULT"]}) == 1
    assert ordered["DEFAULT"][0] != unordered["DEFAULT"][0]
    # Highest node id first: push5 ... push0, so the pops read 0 ... 5.
    assert ordered["DEFAULT"][0] == list(range(6))


def test_graphi_gives_the_ordered_result_of_the_stock_executor_in_every_layout(ordered):
    assert ordered["GRAPHI"], "no layout ran"
    for layout, steps in ordered["GRAPHI"].items():
        assert steps == ordered["DEFAULT"], f"layout {layout}"
