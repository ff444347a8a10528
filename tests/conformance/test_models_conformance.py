"""The bundled models compute the same losses on GRAPHI as on the stock executor."""
import numpy as np
import pytest

from graphi_tf.lab import models
from tiny_models import TINY  # tests/conformance, on sys.path via conftest

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("mode", models.MODES)
@pytest.mark.parametrize("name", models.MODELS)
def test_graphi_gives_the_default_executors_losses(name, mode):
    losses = {}
    for executor in ("DEFAULT", "GRAPHI"):
        with models.build_step(name, size="small", mode=mode, executor=executor, **TINY[name]) as step:
            losses[executor] = [step.loss_value() for _ in range(3)]
    np.testing.assert_allclose(losses["GRAPHI"], losses["DEFAULT"], rtol=1e-5, atol=1e-6)
