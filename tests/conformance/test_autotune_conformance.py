"""While the autotuner re-partitions the teams between steps, GRAPHI still computes the
stock executor's losses, step after step (graph and tf.function mode)."""
import numpy as np
import pytest

import graphi_tf
from graphi_tf import models
from tiny_models import TINY  # tests/conformance, on sys.path via conftest

pytestmark = pytest.mark.timeout(240)

STEPS = 150  # enough for the tiny model's whole exploration


@pytest.mark.parametrize("mode", models.MODES)
def test_training_under_autotuning_gives_the_default_executors_losses(mode):
    losses = {}
    with models.build_step("lstm", size="small", mode=mode, executor="DEFAULT", **TINY["lstm"]) as step:
        losses["DEFAULT"] = [step.loss_value() for _ in range(STEPS)]
    graphi_tf.configure(autotune=True)
    before = {g["signature"]: g["steps_run"] for g in graphi_tf.info()["graphs"]}
    with models.build_step("lstm", size="small", mode=mode, executor="GRAPHI", **TINY["lstm"]) as step:
        losses["GRAPHI"] = [step.loss_value() for _ in range(STEPS)]
        ran = [g for g in graphi_tf.info()["graphs"] if g["steps_run"] > before.get(g["signature"], 0)]
        main = max(ran, key=lambda g: g["node_count"])
    visited = {label for r in main["autotune"]["round_medians_ms"] for label in r}
    assert len(visited) >= 2, main["autotune"]  # the layout really changed during training
    np.testing.assert_allclose(losses["GRAPHI"], losses["DEFAULT"], rtol=1e-5, atol=1e-6)
