"""graphi_tf.lab.models: the bundled benchmark models' training steps, at tiny sizes."""
import math

import numpy as np
import pytest
import tensorflow as tf

from graphi_tf.lab import models
from tiny_models import TINY  # tests/conformance, on sys.path via conftest

pytestmark = pytest.mark.timeout(120)


def tiny_step(name, mode="graph", executor="DEFAULT", seed=0, **overrides):
    return models.build_step(name, size="small", mode=mode, executor=executor, seed=seed,
                             **{**TINY[name], **overrides})


def test_the_registry_lists_four_models_three_sizes_two_modes():
    assert models.MODELS == ("lstm", "phased_lstm", "pathnet", "googlenet")
    assert models.SIZES == ("small", "medium", "large")
    assert models.MODES == ("graph", "function")
    for name in models.MODELS:
        spec = models.get(name)
        assert spec.name == name and spec.description
        assert set(spec.sizes) == set(models.SIZES)
        for hp in spec.sizes.values():
            assert set(hp) == set(spec.hparams)


@pytest.mark.parametrize("mode", models.MODES)
@pytest.mark.parametrize("name", models.MODELS)
def test_one_step_runs_and_reports_its_batch_nodes_and_a_finite_loss(name, mode):
    with tiny_step(name, mode) as step:
        step()
        loss = step.loss_value()
        assert isinstance(loss, float) and math.isfinite(loss) and loss > 0.0
        assert step.examples_per_step == TINY[name]["batch"]
        assert step.graph_nodes > 20
        if mode == "graph":
            assert isinstance(step.session, tf.compat.v1.Session)
        else:
            assert step.session is None


@pytest.mark.parametrize("mode", models.MODES)
@pytest.mark.parametrize("name", models.MODELS)
def test_loss_decreases_over_a_few_sgd_steps(name, mode):
    with tiny_step(name, mode) as step:
        losses = [step.loss_value() for _ in range(8)]
    assert losses[-1] < losses[0] - 1e-3, losses


@pytest.mark.parametrize("name", models.MODELS)
def test_same_seed_gives_the_same_initial_loss_in_both_modes_and_across_builds(name):
    first = []
    for mode in ("graph", "graph", "function", "function"):
        with tiny_step(name, mode, seed=3) as step:
            first.append(step.loss_value())
    np.testing.assert_allclose(first, first[0], rtol=1e-5)


@pytest.mark.parametrize("name", models.MODELS)
def test_another_seed_gives_another_initial_loss(name):
    with tiny_step(name, seed=0) as a, tiny_step(name, seed=1) as b:
        assert a.loss_value() != pytest.approx(b.loss_value(), rel=1e-6)


def test_the_same_seed_builds_the_same_graph():
    with tiny_step("pathnet") as a, tiny_step("pathnet") as b:
        assert a.graph.as_graph_def().SerializeToString(deterministic=True) == \
            b.graph.as_graph_def().SerializeToString(deterministic=True)


def test_pathnet_path_picks_active_of_modules_per_layer_and_depends_on_the_seed():
    from graphi_tf.lab.models import pathnet

    hp = models.get("pathnet").resolve("small", dict(layers=5, modules=10, active=3))
    path = pathnet.path(hp, seed=0)
    assert len(path) == 5
    assert all(len(layer) == 3 == len(set(layer)) and all(0 <= m < 10 for m in layer) for layer in path)
    assert pathnet.path(hp, seed=0) == path
    assert pathnet.path(hp, seed=1) != path


def test_phased_lstm_time_gate_follows_the_open_rising_falling_and_closed_phases():
    from graphi_tf.lab.models import phased_lstm

    tau, shift, r_on, alpha = 10.0, 2.0, 0.2, 1e-3
    t = tf.constant([[2.5], [3.0], [3.5], [7.0], [12.5]])  # phi = 0.05, 0.1, 0.15, 0.5, 0.05
    k = phased_lstm.time_gate(tf, t, tf.constant([tau]), tf.constant([shift]), r_on, alpha).numpy()[:, 0]
    np.testing.assert_allclose(k, [0.5, 1.0, 0.5, alpha * 0.5, 0.5], rtol=1e-5)


def test_run_traced_returns_step_stats_and_partition_graphs_in_graph_mode():
    with tiny_step("lstm") as step:
        metadata = step.run_traced()
    assert isinstance(metadata, tf.compat.v1.RunMetadata)
    assert metadata.step_stats.dev_stats and metadata.partition_graphs


def test_run_traced_in_function_mode_raises_naming_the_mode():
    with tiny_step("lstm", "function") as step:
        with pytest.raises(ValueError, match="mode='graph'"):
            step.run_traced()


@pytest.mark.parametrize("kwargs, match", [
    (dict(name="resnet"), r"model='resnet' is invalid; allowed: lstm, phased_lstm, pathnet, googlenet"),
    (dict(size="huge"), r"size='huge' is invalid; allowed: small, medium, large"),
    (dict(mode="eager"), r"mode='eager' is invalid; allowed: graph, function"),
    (dict(executor="FAST"), r"executor='FAST' is invalid; allowed: GRAPHI, DEFAULT, SINGLE_THREADED_EXECUTOR"),
    (dict(inter_op=0), r"inter_op=0 is invalid; allowed: a whole number >= 1"),
    (dict(intra_op="2"), r"intra_op='2' is invalid; allowed: a whole number >= 1"),
    (dict(seed=-1), r"seed=-1 is invalid; allowed: a whole number >= 0"),
    (dict(depth=3), r"pathnet has no hparam 'depth'; allowed: batch, width, layers, modules, active"),
    (dict(width=0), r"pathnet hparam width=0 is invalid; allowed: a whole number >= 1"),
    (dict(learning_rate=-0.1), r"pathnet hparam learning_rate=-0.1 is invalid; allowed: a number > 0"),
    (dict(active=4, modules=3), r"pathnet hparam active=4 is invalid; allowed: 1..modules"),
])
def test_bad_arguments_raise_value_error_naming_the_setting_and_allowed_values(kwargs, match):
    kwargs = {"name": "pathnet", **kwargs}
    with pytest.raises(ValueError, match=match):
        models.build_step(**kwargs)


def test_model_specific_hparam_checks_name_the_allowed_range():
    with pytest.raises(ValueError, match=r"googlenet hparam modules=10 is invalid; allowed: 1\.\.9"):
        models.get("googlenet").resolve("small", {"modules": 10})
    with pytest.raises(ValueError, match=r"phased_lstm hparam r_on=1.5 is invalid; allowed: 0 < r_on < 1"):
        models.get("phased_lstm").resolve("small", {"r_on": 1.5})


def test_function_mode_threads_after_tensorflow_started_raise_naming_the_setting():
    tf.constant(1.0) + 1.0  # the eager context is running from here on
    current = tf.config.threading.get_inter_op_parallelism_threads()
    with pytest.raises(RuntimeError, match=f"inter_op={current + 7} cannot be applied"):
        tiny_step("lstm", "function", inter_op=current + 7)


def test_legacy_lstm_build_step_and_build_graph_still_work():
    from graphi_tf.lab.models import lstm

    graph, train_op, loss, init_op = lstm.build_graph(batch=2, hidden=4, layers=1, time_steps=2)
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init_op)
        assert math.isfinite(session.run([train_op, loss])[1])
    with lstm.build_step(batch=2, hidden=4, layers=1, time_steps=2) as step:
        step()
        assert step.executor == "GRAPHI" and step.hparams["input_size"] == 4
    with pytest.raises(ValueError, match="hidden=0 is invalid"):
        lstm.build_graph(hidden=0)
