"""tools/soak_serving.py: what a load-changing serving soak counts as a failure."""
import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "soak_serving.py")
MIB = 1024 * 1024


def _tool():
    spec = importlib.util.spec_from_file_location("soak_serving", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _phase(i, rss_mib=500, threads=10, errors=0, mismatches=0):
    return {"phase": i, "rss": rss_mib * MIB, "native_threads": threads, "errors": errors,
            "mismatches": mismatches, "first_error": "ValueError: x" if errors else None}


def _decision(load_class, signature="abc"):
    return {"signature": signature, "load_class": load_class, "state": "adopted"}


def test_a_steady_soak_passes():
    phases = [_phase(i) for i in range(6)]
    assert _tool().check(phases, [_decision("alone"), _decision("under_load_4")], 3, 50.0) == []


def test_a_class_decided_twice_fails():
    failures = _tool().check([_phase(0)], [_decision("under_load_8"), _decision("under_load_8")], 1, 50.0)
    assert len(failures) == 1 and "under_load_8 was decided 2 times" in failures[0]


def test_the_same_class_of_two_graphs_is_two_decisions():
    assert _tool().check([_phase(0)], [_decision("alone", "g1"), _decision("alone", "g2")], 1, 50.0) == []


def test_a_failed_request_or_a_wrong_response_fails():
    failures = _tool().check([_phase(0, errors=2), _phase(1, mismatches=1)], [], 2, 50.0)
    assert any("2 requests failed (first: ValueError: x)" in f for f in failures)
    assert any("1 responses differ" in f for f in failures)


def test_rss_growth_is_measured_from_the_first_cycles_end():
    # The first cycle may grow (exploring); later cycles may not.
    phases = [_phase(0, 400), _phase(1, 500), _phase(2, 520), _phase(3, 560)]
    failures = _tool().check(phases, [], 2, 50.0)
    assert len(failures) == 1 and "RSS grew by 60.0 MiB" in failures[0]
    assert _tool().check(phases[:3], [], 2, 50.0) == []


def test_more_native_threads_than_any_phase_of_the_first_cycle_fails():
    phases = [_phase(0, threads=12), _phase(1, threads=9), _phase(2, threads=12), _phase(3, threads=13)]
    failures = _tool().check(phases, [], 2, 50.0)
    assert len(failures) == 1 and "phase 3 ended with 13 native threads" in failures[0]


def _graph(state, load_class, reason="r", exploration_s=1.0):
    return {"signature": "g", "autotune": {"state": state, "load_class": load_class,
                                           "reason": reason, "exploration_s": exploration_s}}


def test_a_class_decided_before_and_shown_again_is_one_decision():
    states = iter([[_graph("adopted", "alone")], [_graph("exploring", "under_load_4")],
                   [_graph("waiting", "under_load_4")], [_graph("adopted", "alone")]])
    sampler = _tool().DecisionSampler(lambda: next(states))
    for _ in range(4):
        sampler.sample()
    assert [e["load_class"] for e in sampler.events] == ["alone"]


def test_a_class_decided_again_after_another_exploration_is_two_decisions():
    states = iter([[_graph("adopted", "alone", exploration_s=1.0)],
                   [_graph("exploring", "alone")],
                   [_graph("adopted", "alone", exploration_s=1.3)]])
    sampler = _tool().DecisionSampler(lambda: next(states))
    for _ in range(3):
        sampler.sample()
    tool = _tool()
    assert tool.decisions_by_class(sampler.events) == {"g/alone": 2}


def test_a_schedule_is_positive_client_counts():
    tool = _tool()
    assert tool.parse_schedule("1,8, 2") == [1, 8, 2]
    for bad in ("", "1,0", "1,x"):
        with pytest.raises(ValueError, match="--schedule"):
            tool.parse_schedule(bad)
