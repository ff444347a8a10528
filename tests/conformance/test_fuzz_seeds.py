"""The fixed set of random-graph fuzzer seeds CI runs (tools/fuzz_executor.py).

Each seed's graph runs for several steps under DEFAULT and under GRAPHI in every
team layout this machine allows; every step must give the same results (or fail with
the same error class). Reproduce one with
``python3 tools/fuzz_executor.py --seeds N:N+1 --mode MODE --shrink``.
"""
import importlib.util
import os

import pytest

from conftest import FAKE

_TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "fuzz_executor.py")
_spec = importlib.util.spec_from_file_location("fuzz_executor", _TOOL)
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)

CI_SEEDS = range(25)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", fuzz.MODES)
@pytest.mark.parametrize("seed", CI_SEEDS)
def test_fuzz_seed_gives_the_same_results_under_graphi_in_every_layout(seed, mode):
    if FAKE:
        pytest.skip("needs the GRAPHI executor (GRAPHI_TEST_FAKE=1)")
    spec = fuzz.generate(seed, mode)
    differences = fuzz.check_spec(spec, fuzz.layouts_allowed(), timeout=60)
    assert not differences, "\n".join(differences[:10]) + "\n" + fuzz.describe(spec)

