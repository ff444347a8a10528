"""Users' own models give the same numbers on GRAPHI as on the stock executor: SavedModels
(a Keras MobileNetV2 and an LSTM classifier, exported here) through both loaders, and a
``.keras`` file for inference and for ``train_on_batch``."""
import os

import keras
import numpy as np
import pytest

from graphi_tf.lab import external_models as em

pytestmark = pytest.mark.timeout(300, method="thread")

FAKE = os.environ.get("GRAPHI_TEST_FAKE") == "1"
BATCH = 4
LSTM_INPUT = f"frames={BATCH},12,8"  # the LSTM's sequence length is unknown in its signature


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """``{"mobilenet_v2": dir, "lstm": dir, "keras": file}``, made once per test session."""
    root = tmp_path_factory.mktemp("external_models")
    keras.utils.set_random_seed(11)
    mobilenet = keras.applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35, weights=None, classes=10)
    mobilenet.export(str(root / "mobilenet_v2"), verbose=False)
    frames = keras.Input((None, 8), name="frames")
    lstm = keras.Model(frames, keras.layers.Dense(5, activation="softmax")(keras.layers.LSTM(16)(frames)))
    lstm.export(str(root / "lstm"), verbose=False)
    small = keras.Sequential([
        keras.Input((6,), name="features"),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dropout(0.25),
        keras.layers.Dense(3, activation="softmax"),
    ])
    small.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    small.save(str(root / "small.keras"))
    return {"mobilenet_v2": str(root / "mobilenet_v2"), "lstm": str(root / "lstm"), "keras": str(root / "small.keras")}


def _executor(arm):
    return arm.executor_type or "DEFAULT"


def _graphi_steps_run():
    import graphi_tf

    return sum(int(g.get("steps_run", 0)) for g in graphi_tf.info().get("graphs", []))


def _run_on(arm, step, calls):
    """``calls`` results of ``step.outputs()``; on the real GRAPHI arm also checks that the
    step ran GRAPHI graphs (and on DEFAULT that it ran none)."""
    before = None if FAKE else _graphi_steps_run()
    results = [step.outputs() for _ in range(calls)]
    if before is not None:
        ran = _graphi_steps_run() - before
        assert (ran > 0) == arm.is_graphi, f"{arm.name} arm ran {ran} GRAPHI graph steps"
    return results


@pytest.mark.parametrize("loader", em.LOADERS)
@pytest.mark.parametrize("model, options", [("mobilenet_v2", {"batch": BATCH}), ("lstm", {"inputs": [LSTM_INPUT]})])
def test_saved_model_outputs_on_graphi_equal_default(exported, run_both, model, options, loader):
    def case(arm):
        with em.saved_model_step(exported[model], _executor(arm), loader=loader, seed=3, **options) as step:
            assert step.examples_per_step == BATCH and step.graph_nodes > 0
            return _run_on(arm, step, calls=2)

    result, _ = run_both(case)
    assert result[0]["output_0"].shape == (BATCH, 10 if model == "mobilenet_v2" else 5)


def test_both_loaders_give_the_same_outputs(exported):
    outputs = {}
    for loader in em.LOADERS:
        with em.saved_model_step(exported["lstm"], "DEFAULT", loader=loader, inputs=[LSTM_INPUT]) as step:
            outputs[loader] = step.outputs()["output_0"]
    np.testing.assert_allclose(outputs["tf1"], outputs["tf2"], rtol=1e-5, atol=1e-6)


def test_keras_inference_on_graphi_equals_default(exported, run_both):
    def case(arm):
        with em.keras_model_step(exported["keras"], _executor(arm), batch=BATCH, seed=3) as step:
            return _run_on(arm, step, calls=2)

    result, _ = run_both(case)
    assert result[0]["output"].shape == (BATCH, 3)


def test_keras_training_on_graphi_gives_the_default_executors_losses(exported):
    losses = {}
    for name in ("DEFAULT", "GRAPHI"):
        executor = "DEFAULT" if FAKE else name
        with em.keras_model_step(exported["keras"], executor, train=True, batch=16, seed=3) as step:
            before = None if FAKE else _graphi_steps_run()
            losses[name] = [step.loss_value() for _ in range(4)]
            if before is not None:
                assert (_graphi_steps_run() > before) == (name == "GRAPHI")
    assert all(np.isfinite(losses["DEFAULT"])) and losses["DEFAULT"][0] != losses["DEFAULT"][-1]
    np.testing.assert_allclose(losses["GRAPHI"], losses["DEFAULT"], rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(FAKE, reason="runs the real GRAPHI in graphi-tf ab's worker processes")
@pytest.mark.parametrize("model, options", [("mobilenet_v2", ["--batch", str(BATCH)]), ("lstm", ["--input", LSTM_INPUT])])
def test_graphi_tf_ab_runs_on_the_exported_saved_model(exported, cli_env, tmp_path, model, options):
    import json
    import subprocess
    import sys

    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "graphi_tf.lab.cli", "ab", "--saved-model", exported[model], *options,
         "--arms", "stock_default,graphi_untuned", "--repeats", "1", "--warmup", "1", "--steps", "2",
         "--trace-steps", "0", "--no-png", "--out-dir", str(out)],
        env=cli_env, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "ab.json").read_text())
    assert doc["case"]["name"] == f"{model}_tf2" and doc["examples_per_step"] == BATCH
    assert all(arm["status"] == "ok" for arm in doc["arms"].values()), doc["arms"]
