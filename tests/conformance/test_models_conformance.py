"""The bundled models compute the same losses on GRAPHI as on the stock executor."""
import numpy as np
import pytest

from graphi_tf import models

pytestmark = pytest.mark.timeout(120)

TINY = {
    "lstm": dict(batch=4, hidden=8, layers=2, time_steps=3, input_size=6, classes=3, learning_rate=0.5),
    "phased_lstm": dict(batch=4, hidden=8, layers=2, time_steps=4, input_size=6, classes=3, learning_rate=0.5,
                        tau_max=4.0, r_on=0.3),
    "pathnet": dict(batch=4, width=8, layers=2, modules=3, active=2, max_depth=2, classes=3, learning_rate=0.2),
    "googlenet": dict(batch=2, image=16, width=0.0625, modules=3, classes=3, learning_rate=0.05),
}


@pytest.mark.parametrize("mode", models.MODES)
@pytest.mark.parametrize("name", models.MODELS)
def test_graphi_gives_the_default_executors_losses(name, mode):
    losses = {}
    for executor in ("DEFAULT", "GRAPHI"):
        with models.build_step(name, size="small", mode=mode, executor=executor, **TINY[name]) as step:
            losses[executor] = [step.loss_value() for _ in range(3)]
    np.testing.assert_allclose(losses["GRAPHI"], losses["DEFAULT"], rtol=1e-5, atol=1e-6)
