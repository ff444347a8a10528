"""While the autotuner re-partitions the teams between steps, GRAPHI still computes the
stock executor's losses, step after step (graph and tf.function mode)."""
import numpy as np
import pytest

import graphi_tf
from graphi_tf.lab import models
from tiny_models import TINY  # tests/conformance, on sys.path via conftest

pytestmark = pytest.mark.timeout(240)

MAX_STEPS = 5000  # the tiny model's exploration ends long before (it begins after 0.5 s)


def _main_graph(before):
    ran = [g for g in graphi_tf.info()["graphs"] if g["steps_run"] > before.get(g["signature"], 0)]
    return max(ran, key=lambda g: g["node_count"]) if ran else None


def _run_until_decided(step_once, before):
    """Runs GRAPHI steps until the autotuner decided on the main graph; their results."""
    results = []
    while len(results) < MAX_STEPS:
        results.extend(step_once() for _ in range(10))
        main = _main_graph(before)
        if main and (main["autotune"] or {}).get("state") in ("adopted", "kept_default", "skipped"):
            break
    return results


@pytest.mark.parametrize("mode", models.MODES)
def test_training_under_autotuning_gives_the_default_executors_losses(mode):
    losses = {}
    graphi_tf.configure(autotune=True)
    before = {g["signature"]: g["steps_run"] for g in graphi_tf.info()["graphs"]}
    with models.build_step("lstm", size="small", mode=mode, executor="GRAPHI", **TINY["lstm"]) as step:
        losses["GRAPHI"] = _run_until_decided(step.loss_value, before)
        main = _main_graph(before)
    with models.build_step("lstm", size="small", mode=mode, executor="DEFAULT", **TINY["lstm"]) as step:
        losses["DEFAULT"] = [step.loss_value() for _ in range(len(losses["GRAPHI"]))]
    visited = {label for r in main["autotune"]["round_medians_ms"] for label in r}
    assert len(visited) >= 2, main["autotune"]  # the layout really changed during training
    np.testing.assert_allclose(losses["GRAPHI"], losses["DEFAULT"], rtol=1e-5, atol=1e-6)


def _random_walk_function():
    """A tf.function whose random op is a stateful kernel (its generator advances every
    call), beside enough matmuls to be the process's main GRAPHI graph."""
    tf = pytest.importorskip("tensorflow")
    tf.random.set_seed(1)
    w = tf.constant(np.random.RandomState(0).rand(32, 32).astype(np.float32) / 32)

    @tf.function
    def step():
        noise = tf.random.uniform([32, 32], seed=7)
        branches = []
        for _ in range(3):
            y = noise
            for _ in range(3):
                y = tf.tanh(tf.matmul(y, w))
            branches.append(y)
        return noise, tf.add_n(branches)

    return step


def test_stateful_kernels_keep_one_state_when_steps_move_to_tensorflows_executor():
    # Under the "stock" setting GRAPHI runs steps on TensorFlow's own executor, over the
    # kernels its teams run. Were they separate kernels, the random op's sequence would
    # restart whenever the autotuner moved the graph between teams and stock.
    tf = pytest.importorskip("tensorflow")
    from tensorflow.python.eager import context

    graphi_tf.configure(autotune=True)
    before = {g["signature"]: g["steps_run"] for g in graphi_tf.info()["graphs"]}
    with context.function_executor_type("GRAPHI"):
        step = _random_walk_function()
        actual = _run_until_decided(lambda: [t.numpy() for t in step()], before)
    main = _main_graph(before)
    with context.function_executor_type("DEFAULT"):
        step = _random_walk_function()
        expected = [[t.numpy() for t in step()] for _ in range(len(actual))]
    ran_stock = main["steps_on_stock_executor"]
    assert 0 < ran_stock < main["steps_run"] - before.get(main["signature"], 0), main
    for i, (want, got) in enumerate(zip(expected, actual)):
        np.testing.assert_allclose(got[0], want[0], rtol=0, atol=0, err_msg=f"noise, step {i}")
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6, err_msg=f"output, step {i}")
