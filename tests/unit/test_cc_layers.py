"""The native library's folders are layers: each includes only the layers below it.

Order, lowest first: util, platform, teams, tuning, profiler, executor (README, "Layout").
The TensorFlow-free layers include no TensorFlow header.
"""
import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("util", "platform", "teams", "tuning", "profiler", "executor")
TF_FREE_LAYERS = ("util", "platform", "tuning")
INCLUDE = re.compile(r'^#include "([^"]+)"', re.MULTILINE)


def _includes(layer):
    for path in sorted((REPO_ROOT / "cc" / layer).glob("*")):
        for included in INCLUDE.findall(path.read_text()):
            yield path.relative_to(REPO_ROOT).as_posix(), included


def test_every_native_source_lives_in_a_layer():
    folders = {p.name for p in (REPO_ROOT / "cc").iterdir() if p.is_dir()}
    assert folders == set(LAYERS)


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_includes_only_itself_and_the_layers_below(layer):
    allowed = LAYERS[:LAYERS.index(layer) + 1]
    wrong = [(source, included) for source, included in _includes(layer)
             if included.startswith("cc/") and included.split("/")[1] not in allowed]
    assert wrong == []


@pytest.mark.parametrize("layer", TF_FREE_LAYERS)
def test_tensorflow_free_layers_include_no_tensorflow_header(layer):
    wrong = [(source, included) for source, included in _includes(layer)
             if included.startswith(("tensorflow/", "unsupported/Eigen", "absl/"))]
    assert wrong == []


def test_the_executor_and_its_steps_meet_only_in_the_step_plan():
    executor = {included for source, included in _includes("executor") if "/graphi_executor." in source}
    step = {included for source, included in _includes("executor") if "/graphi_step." in source}
    assert "cc/executor/step_plan.h" in executor and "cc/executor/step_plan.h" in step
    assert not any("graphi_step" in included for included in executor)
    assert "cc/executor/graphi_executor.h" not in step
