"""The rule that decides whether a tuned setting replaces the default (the native rule,
through graphi_tf.decision), and graphi_tf.decision's record of its decisions.

Settings: D = (2, 1) is the default; A = (1, 2) and B = (1, 1) are the others."""
import json
import subprocess
import sys

import pytest

from graphi_tf import _loader, decision
from graphi_tf.decision import (
    ELIMINATE_RATIO,
    RUNOFF_BELOW_RATIO,
    SCREEN_OUT_RATIO,
    MIN_ROUNDS_TO_ADOPT,
    SIGN_TEST_ALPHA,
    Decision,
    SettingEvidence,
    round_ratios,
)

NATIVE = _loader.native()


def decide(round_medians, default, order):
    return decision.decide(NATIVE, round_medians, default, order)

D, A, B = (2, 1), (1, 2), (1, 1)
ORDER = [B, A, D]


def rounds_of(**columns):
    """rounds_of(D=[10, 10], A=[8, None]) -> [{D: 10, A: 8}, {D: 10}] (None: absent)."""
    names = {"D": D, "A": A, "B": B}
    n = max(len(v) for v in columns.values())
    out = []
    for r in range(n):
        out.append({names[k]: v[r] for k, v in columns.items() if r < len(v) and v[r] is not None})
    return out


# ----------------------------------------------------------------------------- the constants


def test_the_rule_constants_are_the_specified_ones():
    assert MIN_ROUNDS_TO_ADOPT == 3
    assert SIGN_TEST_ALPHA == 0.2
    assert ELIMINATE_RATIO == 1.1
    assert SCREEN_OUT_RATIO == 1.3
    assert RUNOFF_BELOW_RATIO == 0.98


def test_the_records_constants_are_the_native_rules():
    assert NATIVE.decision_rule() == {"min_rounds_to_adopt": MIN_ROUNDS_TO_ADOPT,
                                      "sign_test_alpha": SIGN_TEST_ALPHA,
                                      "eliminate_ratio": ELIMINATE_RATIO,
                                      "screen_out_ratio": SCREEN_OUT_RATIO,
                                      "runoff_below_ratio": RUNOFF_BELOW_RATIO}


# ----------------------------------------------------------------------------- ratios


def test_ratios_are_taken_per_round_against_the_default_where_both_were_timed():
    medians = rounds_of(D=[10, 20, 10, None], A=[8, 10, None, 5])
    assert round_ratios(medians, A, D) == (0.8, 0.5)


def test_the_spread_reaches_from_the_median_to_the_ratio_the_sign_test_bounds_it_by():
    # Six rounds: faster in 5 of 6 is needed (7/64 <= 1/5 < 22/64), so the bound is the 5th
    # smallest.
    medians = rounds_of(D=[10] * 6, A=[8, 7, 9, 6, 9.5, 10.2])
    ev = decide(medians, D, ORDER).evidence_for(A)
    assert ev.ratios == pytest.approx((0.8, 0.7, 0.9, 0.6, 0.95, 1.02))
    assert ev.ratio_median == pytest.approx(0.85)
    assert ev.ratio_median + ev.ratio_spread == pytest.approx(0.95)


def test_the_default_has_ratio_one_and_no_spread():
    ev = decide(rounds_of(D=[10, 12], A=[8, 9]), D, ORDER).evidence_for(D)
    assert ev.ratios == (1.0, 1.0) and ev.ratio_median == 1.0 and ev.ratio_spread == 0.0


def test_evidence_keeps_every_round_median_with_none_where_absent():
    ev = decide(rounds_of(D=[10, 10, 10], A=[8, None, 9]), D, ORDER).evidence_for(A)
    assert ev.round_medians_ms == (8.0, None, 9.0)


def test_a_setting_no_round_timed_has_empty_evidence():
    ev = decide(rounds_of(D=[10, 10], A=[8, 8]), D, ORDER).evidence_for(B)
    assert ev.round_medians_ms == (None, None) and ev.ratios == ()
    assert ev.ratio_median is None and ev.ratio_spread is None


# ----------------------------------------------------------------------------- qualifying


def test_a_setting_that_beats_the_default_by_more_than_its_spread_is_adopted():
    result = decide(rounds_of(D=[10, 10, 10], A=[8, 8.5, 7.5]), D, ORDER)
    assert result.chosen == A and result.adopted
    assert result.reason == "1x2 adopted: 0.80 of the default 2x1, faster in 3 of 3 rounds, 3 needed"


def test_a_setting_faster_by_less_than_its_spread_keeps_the_default():
    # Median 0.9, but slower in one round of three: the bound is 1.05.
    result = decide(rounds_of(D=[10, 10, 10], A=[9, 7.5, 10.5]), D, ORDER)
    assert result.chosen == D and not result.adopted
    assert result.reason.startswith("kept the default 2x1: no setting beat it by more than its spread")
    assert "closest: 1x2 at 0.90, faster in 2 of 3 rounds, 3 needed" in result.reason


def test_a_round_at_exactly_the_defaults_time_is_not_a_win():
    result = decide(rounds_of(D=[4, 4, 4], A=[3, 4, 3]), D, ORDER)
    assert result.evidence_for(A).ratio_median + result.evidence_for(A).ratio_spread == 1.0
    assert result.chosen == D


def test_one_slow_round_among_many_counts_once_whatever_its_size():
    # Faster in 7 of 8 (6 needed); the slow round is 3x: one lost round, not a wide spread.
    result = decide(rounds_of(D=[10] * 8, A=[8, 8, 8, 30, 8, 8, 8, 8]), D, ORDER)
    assert result.evidence_for(A).ratio_median == pytest.approx(0.8)
    assert result.chosen == A


def test_one_slow_round_of_few_keeps_the_default_rather_than_risk_it():
    # Faster in 4 of 5: enough; in 3 of 4: not (4 of 4 needed).
    assert decide(rounds_of(D=[10] * 5, A=[8, 8, 8, 24, 8]), D, ORDER).chosen == A
    assert decide(rounds_of(D=[10] * 4, A=[8, 8, 24, 8]), D, ORDER).chosen == D


def test_two_rounds_are_not_enough_however_fast_the_setting():
    result = decide(rounds_of(D=[10, 10], A=[2, 2]), D, ORDER)
    assert result.chosen == D
    assert "closest: 1x2 at 0.20 in only 2 rounds, 3 needed" in result.reason


def test_a_setting_compared_in_only_one_round_of_several_is_not_adopted():
    result = decide(rounds_of(D=[10, 10, 10, 10], A=[5, None, 5, None]), D, ORDER)
    assert result.evidence_for(A).rounds == 2
    assert result.chosen == D


def test_the_lowest_ratio_median_among_qualifying_settings_wins():
    result = decide(rounds_of(D=[10, 10, 10], A=[8, 8, 8], B=[6, 6.2, 6]), D, ORDER)
    assert result.chosen == B


def test_a_lower_median_that_does_not_qualify_loses_to_one_that_does():
    # B: median 0.6 but slower in one round of three; A: 0.8 in every round.
    result = decide(rounds_of(D=[10, 10, 10], A=[8, 8, 8], B=[1, 6, 11]), D, ORDER)
    assert result.chosen == A


def test_a_tie_goes_to_the_setting_earlier_in_order():
    medians = rounds_of(D=[10, 10, 10], A=[8, 8, 8], B=[8, 8, 8])
    assert decide(medians, D, [B, A, D]).chosen == B
    assert decide(medians, D, [A, B, D]).chosen == A


def test_with_only_the_default_the_default_is_kept():
    result = decide(rounds_of(D=[10, 10]), D, [D])
    assert result.chosen == D and result.reason == "kept the default 2x1: no other setting was compared with it"


def test_a_round_without_the_default_gives_no_ratio():
    result = decide(rounds_of(D=[None, 10], A=[5, 5]), D, ORDER)
    assert result.evidence_for(A).ratios == (0.5,)
    assert result.chosen == D


def test_evidence_follows_order():
    result = decide(rounds_of(D=[10, 10], A=[8, 8], B=[9, 9]), D, [A, D, B])
    assert [ev.setting for ev in result.evidence] == [A, D, B]


# ----------------------------------------------------------------------------- elimination


@pytest.mark.parametrize("ratios, expected", [
    ((), False),
    ((3.0,), False),              # one round is not enough
    ((1.3, 1.25), True),
    ((1.3, 1.1), False),          # 1.1 is not > 1.1
    ((1.5, 1.05, 1.6), False),    # one round within 10%
    ((1.21, 1.21, 1.21), True),
])
def test_a_setting_is_eliminated_after_two_rounds_all_over_the_ratio_to_the_default(ratios, expected):
    rounds = [{"2x1": 10.0, "1x1": 10.0 * r} for r in ratios]
    assert NATIVE.settings_to_eliminate(rounds, ["2x1", "1x1"], "2x1") == (["1x1"] if expected else [])


def test_a_setting_far_slower_than_one_that_beats_the_default_is_eliminated():
    # B is 0.9x the default but 1.29x A, which beats the default beyond its spread.
    rounds = rounds_of(D=[10, 10, 10], A=[7, 7, 7], B=[9, 9, 9])
    assert decision.settings_to_eliminate(NATIVE, rounds, [B, A, D], D) == [B]


def test_a_setting_is_not_eliminated_behind_one_that_does_not_beat_the_default():
    # A's ratios 0.7 and 1.05 (two rounds, one of them slower) do not qualify it, so B,
    # 1.29x and 1.105x A, stays.
    rounds = rounds_of(D=[10, 10], A=[7, 10.5], B=[9, 11.6])
    assert decision.settings_to_eliminate(NATIVE, rounds, [B, A, D], D) == []


def test_the_default_is_never_eliminated():
    rounds = rounds_of(D=[20, 20], A=[10, 10])
    assert decision.settings_to_eliminate(NATIVE, rounds, [A, D], D) == []


def test_decide_reports_the_round_after_which_a_setting_was_eliminated():
    result = decide(rounds_of(D=[10, 10, 10, 10], B=[13, 10.5, 13, 14], A=[10, 10, 10, 10]), D, ORDER)
    # B's ratios 1.3, 1.05, 1.3, 1.4: one round within 10%, so never eliminated.
    assert result.evidence_for(B).eliminated_after_round is None
    result = decide(rounds_of(D=[10, 10, 10], B=[13, 14, None], A=[9, 9, 9]), D, ORDER)
    assert result.evidence_for(B).eliminated_after_round == 1
    assert result.evidence_for(A).eliminated_after_round is None
    assert result.evidence_for(D).eliminated_after_round is None


# ----------------------------------------------------------------------------- runoff


def test_the_closest_setting_below_the_runoff_ratio_earns_a_runoff_when_none_was_adopted():
    # A: 0.95 and B: 0.97, each slower in one round of three; A is the closer.
    rounds = rounds_of(D=[10, 10, 10], A=[8.5, 9.5, 10.5], B=[8.7, 9.7, 10.7])
    assert not decide(rounds, D, ORDER).adopted
    assert decision.runoff_candidate(NATIVE, rounds, D, ORDER) == A


def test_no_runoff_when_the_rounds_adopted_a_setting():
    rounds = rounds_of(D=[10, 10, 10], A=[8, 8.5, 7.5], B=[9, 9.5, 10.5])
    assert decide(rounds, D, ORDER).adopted
    assert decision.runoff_candidate(NATIVE, rounds, D, ORDER) is None


def test_no_runoff_for_a_median_at_the_runoff_ratio_or_above():
    rounds = rounds_of(D=[10, 10, 10], A=[8.8, 9.8, 10.8])  # median 0.98
    assert decision.runoff_candidate(NATIVE, rounds, D, ORDER) is None


def test_no_runoff_on_two_rounds():
    assert decision.runoff_candidate(NATIVE, rounds_of(D=[10, 10], A=[9, 9]), D, ORDER) is None


# ----------------------------------------------------------------------------- bad input


def test_a_default_missing_from_order_is_rejected():
    with pytest.raises(ValueError, match="default 2x1 is not in order"):
        decide(rounds_of(D=[10]), D, [A, B])


def test_a_round_setting_missing_from_order_is_rejected():
    with pytest.raises(ValueError, match="round 0 has setting 1x1, which is not in order"):
        decide(rounds_of(D=[10], B=[5]), D, [A, D])


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_a_median_that_is_not_a_positive_finite_number_is_rejected(bad):
    with pytest.raises(ValueError, match="must be a finite number > 0"):
        decide([{D: 10.0, A: bad}], D, ORDER)


# ----------------------------------------------------------------------------- serialization


def _sample():
    return decide(rounds_of(D=[10, 10, 10], A=[8, 8.5, 7.5], B=[13, 14, None]), D, ORDER)


def test_to_dict_is_json_with_settings_as_labels():
    data = json.loads(json.dumps(_sample().to_dict()))
    assert data["default"] == "2x1" and data["chosen"] == "1x2" and data["adopted"] is True
    assert data["rule"] == {"min_rounds_to_adopt": 3, "sign_test_alpha": 0.2, "eliminate_ratio": 1.1,
                            "screen_out_ratio": 1.3, "runoff_below_ratio": 0.98}
    assert [e["setting"] for e in data["evidence"]] == ["1x1", "1x2", "2x1"]
    b = data["evidence"][0]
    assert b["round_medians_ms"] == [13.0, 14.0, None]
    assert b["eliminated_after_round"] == 1


def test_from_dict_reads_to_dict_back():
    original = _sample()
    assert Decision.from_dict(json.loads(json.dumps(original.to_dict()))) == original


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("chosen"), "no field 'chosen'"),
    (lambda d: d.update(adopted="yes"), "'adopted' is str"),
    (lambda d: d.update(chosen="1y2"), "setting label '1y2' is invalid"),
    (lambda d: d.update(adopted=False), "adopted=False but chosen 1x2 and default 2x1 differ"),
    (lambda d: d["evidence"][0].update(ratios=["x"]), r"evidence\[0\].ratios is not a list of numbers"),
    (lambda d: d["evidence"][1].pop("ratio_spread"), r"evidence\[1\] has no field 'ratio_spread'"),
    (lambda d: d["evidence"][0].update(eliminated_after_round=-1), "not a round index"),
])
def test_from_dict_rejects_a_malformed_field_naming_it(mutate, message):
    data = _sample().to_dict()
    mutate(data)
    with pytest.raises(ValueError, match=message):
        Decision.from_dict(data)


def test_format_evidence_marks_chosen_default_and_eliminated_settings():
    lines = decision.format_evidence(_sample())
    assert lines[0].split() == ["setting", "median", "ms", "vs", "default", "faster", "in"]
    by_setting = {line.split()[0]: line for line in lines[1:]}
    assert by_setting["1x2"].split()[1:4] == ["8.000", "0.80", "3/3"]
    assert by_setting["1x1"].split()[1:4] == ["13.500", "1.35", "0/2"]
    assert by_setting["2x1"].split()[1:4] == ["10.000", "1.00", "-"]
    assert by_setting["1x2"].endswith("<- chosen")
    assert by_setting["2x1"].endswith("<- default")
    assert by_setting["1x1"].endswith("eliminated after 2 rounds")


def test_setting_evidence_is_frozen():
    ev = _sample().evidence[0]
    assert isinstance(ev, SettingEvidence)
    with pytest.raises(AttributeError):
        ev.ratio_median = 0.1


def _native_decision(chosen, reason="native reason"):
    return {"default": list(D), "chosen": list(chosen), "adopted": tuple(chosen) != D, "reason": reason,
            "evidence": [{"setting": list(A), "ratios": [0.9, 1.1], "ratio_median": 1.0, "ratio_spread": 0.1,
                          "qualifies": False},
                         {"setting": list(D), "ratios": [1.0, 1.0], "ratio_median": 1.0, "ratio_spread": 0.0,
                          "qualifies": False}]}


def test_from_native_stores_the_native_choice_and_reason_without_deciding_again():
    rounds = rounds_of(D=[10, 10], A=[9, 11])
    assert decide(rounds, D, [A, D]).chosen == D  # the rule would keep the default here
    made = decision.from_native(_native_decision(A), rounds, [A, D], {})
    assert (made.chosen, made.adopted, made.reason) == (A, True, "native reason")
    assert made.evidence_for(A).ratios == (0.9, 1.1)
    assert made.evidence_for(A).round_medians_ms == (9, 11)


def test_from_native_takes_eliminations_from_the_autotuner_and_leaves_untimed_settings_empty():
    rounds = rounds_of(D=[10, 10], A=[13, 13])
    made = decision.from_native(_native_decision(D), rounds, [B, A, D], {A: 1})
    assert made.evidence_for(A).eliminated_after_round == 1
    assert made.evidence_for(B).ratios == () and made.evidence_for(B).ratio_median is None
    assert Decision.from_dict(json.loads(json.dumps(made.to_dict()))) == made


def test_from_native_keeps_what_the_screening_round_said_of_each_setting():
    native = _native_decision(D)
    native["evidence"][0].update(screening_ratio=1.7, screened_out=True)
    made = decision.from_native(native, rounds_of(D=[10, 10]), [A, D], {})
    assert (made.evidence_for(A).screening_ratio, made.evidence_for(A).screened_out) == (1.7, True)
    assert made.evidence_for(D).screening_ratio is None and not made.evidence_for(D).screened_out
    assert Decision.from_dict(json.loads(json.dumps(made.to_dict()))) == made
    assert any("screened out at 1.70x in its first visit" in line
               for line in decision.format_evidence(made))


def test_from_dict_reads_evidence_written_before_screening():
    data = decide(rounds_of(D=[10, 10], A=[8, 8]), D, [A, D]).to_dict()
    for item in data["evidence"]:
        del item["screening_ratio"], item["screened_out"]
    assert Decision.from_dict(data).evidence_for(A).screened_out is False


def test_from_native_rejects_a_choice_outside_the_order():
    with pytest.raises(ValueError, match="chose 1x1, which is not in order"):
        decision.from_native(_native_decision(B), rounds_of(D=[10, 10]), [A, D], {})


def test_the_module_imports_neither_tensorflow_nor_the_native_library():
    code = ("import sys, importlib.util; "
            "spec = importlib.util.spec_from_file_location('d', sys.argv[1]); "
            "m = importlib.util.module_from_spec(spec); sys.modules['d'] = m; spec.loader.exec_module(m); "
            "print(sorted(k for k in sys.modules if k.startswith(('tensorflow', 'graphi_tf'))))")
    proc = subprocess.run([sys.executable, "-c", code, decision.__file__], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
