"""How the online autotuner's decisions become cache entries (graphi_tf.autotune_persister),
on decisions shaped as the native status gives them (python/bindings.cc), from a stand-in
for the native module."""
import pytest

from graphi_tf import autotune_persister, cache


def _evidence(setting, ratios, screening_ratio, screened_out=False):
    ratios = list(ratios)
    median = sorted(ratios)[len(ratios) // 2] if ratios else 1.0
    return {"setting": setting, "ratios": ratios, "ratio_median": median,
            "ratio_spread": (max(ratios) - min(ratios)) / 2 if ratios else 0.0, "qualifies": False,
            "screening_ratio": screening_ratio, "screened_out": screened_out}


def _runoff_decision():
    """stock (the default), 2x1 (close: 0.96 within its spread, then 0.95-0.96 in the runoff)
    and 1x1 (screened out at 1.8x)."""
    return {
        "signature": "00000000000000aa", "state": "adopted", "load_class": "alone", "load_clients": 0,
        "order": [[0, 0], [2, 1], [1, 1]],
        "discard_per_visit": 1, "timed_per_visit": 5, "screening_timed_per_visit": 2,
        "runoff_timed_per_visit": 10, "exploration_s": 3.9, "cost_ms": -20.0, "reference_step_ms": 25.0,
        "screening_medians_ms": {"stock": 25.0, "2x1": 24.0, "1x1": 45.0},
        "round_medians_ms": [{"stock": 25.0, "2x1": 22.75}, {"stock": 25.0, "2x1": 25.25}],
        "eliminated_after_round": {},
        "runoff": "2x1",
        "runoff_medians_ms": [{"stock": 25.0, "2x1": 24.0}, {"stock": 25.0, "2x1": 23.75}],
        "decision": {
            "default": [0, 0], "chosen": [2, 1], "adopted": True,
            "reason": "2x1 adopted: 0.95 ± 0.01 of the default stock over 2 rounds",
            "evidence": [_evidence([0, 0], [1.0, 1.0], 1.0), _evidence([2, 1], [0.96, 0.95], 0.96),
                         _evidence([1, 1], [], 1.8, screened_out=True)],
        },
    }


class _Native:
    """What persist_decisions asks of the native module."""

    def __init__(self, decisions):
        self._decisions = decisions

    def take_autotune_decisions(self):
        out, self._decisions = self._decisions, []
        return out

    def graph_profile(self, signature):
        raise KeyError(signature)


def test_after_a_runoff_the_entry_records_the_runoff_rounds_that_decided(cache_env):
    paths = autotune_persister.persist_decisions(_Native([_runoff_decision()]))
    assert len(paths) == 1
    (entry,) = cache.list_entries(cache_env)
    assert cache.setting_of(entry.setting) == (2, 1)
    record = entry.evidence
    assert record["runoff"] == "2x1"
    by_label = {ev["setting"]: ev for ev in record["evidence"]}
    assert by_label["2x1"]["round_medians_ms"] == [24.0, 23.75]
    assert by_label["1x1"]["screened_out"] is True and by_label["1x1"]["screening_ratio"] == 1.8
    assert record["rounds_before_runoff_ms"] == [{"stock": 25.0, "2x1": 22.75}, {"stock": 25.0, "2x1": 25.25}]
    assert record["screening_medians_ms"] == {"stock": 25.0, "2x1": 24.0, "1x1": 45.0}


def test_without_a_runoff_the_rounds_are_the_record(cache_env):
    decision = _runoff_decision()
    decision.update(runoff=None, runoff_medians_ms=[])
    decision["decision"]["evidence"][1]["ratios"] = [0.91, 1.01]
    autotune_persister.persist_decisions(_Native([decision]))
    (entry,) = cache.list_entries(cache_env)
    by_label = {ev["setting"]: ev for ev in entry.evidence["evidence"]}
    assert by_label["2x1"]["round_medians_ms"] == [22.75, 25.25]
    assert entry.evidence["runoff"] is None and entry.evidence["rounds_before_runoff_ms"] is None
