"""tools/visit_replay.py: a design is the first steps of each recorded visit, decided by the native rule."""
import importlib.util
import os
import sys

from graphi_tf import _loader

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "visit_replay.py")


def _tool():
    spec = importlib.util.spec_from_file_location("visit_replay", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _rounds(default_ms, other_ms, n=4):
    return [{"0x0": list(default_ms), "2x1": list(other_ms)} for _ in range(n)]


def test_a_setting_faster_in_every_round_is_adopted():
    adopted, ratio = _tool().block_decision(_loader.native(), _rounds([20.0] * 8, [18.0] * 8), "2x1", 8)
    assert adopted
    assert abs(ratio - 0.9) < 1e-9


def test_a_tie_is_not_adopted():
    adopted, ratio = _tool().block_decision(_loader.native(), _rounds([20.0] * 8, [20.0] * 8), "2x1", 8)
    assert not adopted
    assert ratio == 1.0


def test_a_design_of_t_steps_sees_only_the_first_t_steps_of_each_visit():
    # The other setting is fast for its first 3 steps and slow after: a 3-step visit would
    # have seen it faster, an 8-step one slower.
    rounds = _rounds([20.0] * 8, [18.0] * 3 + [25.0] * 5)
    tool = _tool()
    assert tool.block_decision(_loader.native(), rounds, "2x1", 3)[0]
    assert not tool.block_decision(_loader.native(), rounds, "2x1", 8)[0]


def test_scale_multiplies_the_other_settings_times():
    adopted, ratio = _tool().block_decision(_loader.native(), _rounds([20.0] * 8, [18.0] * 8), "2x1", 8,
                                            scale=1.25)
    assert not adopted
    assert abs(ratio - 1.125) < 1e-9
