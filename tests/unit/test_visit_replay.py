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


def _record(tmp_path, name, other_ms_per_round):
    rounds = [{"order": [[0, 0], [2, 1]], "ms": {"0x0": [20.0] * 5, "2x1": [ms] * 5}}
              for ms in other_ms_per_round]
    path = tmp_path / name
    path.write_text(__import__("json").dumps(
        {"model": "lstm", "size": "small", "layout": "2x1", "timed": 5, "warmup": 0, "rounds": rounds}))
    return str(path)


def test_runoff_counts_a_window_the_runoff_adopts_after_rounds_that_did_not(tmp_path, capsys):
    # Rounds 0.97, 0.91, 1.01 (close: faster in 2 of 3, 3 needed), then a runoff faster in 4 of 4.
    path = _record(tmp_path, "r.json", [19.4, 18.2, 20.2, 19.2, 19.2, 19.6, 19.2])
    assert _tool().main(["runoff", path, "--skip", "0", "--runoff-rounds", "4"]) == 0
    out = capsys.readouterr().out
    assert "1 windows" in out
    assert "the rounds alone: 0% (0)" in out
    assert "the rounds, then the runoff: 100% (1)" in out
