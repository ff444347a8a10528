"""graphi_tf.tune, against a fake native runtime whose step time depends on the configured
team layout, timed with a fake clock (so noise can be injected where a test wants it)."""
import json
import statistics
import time
import warnings

import numpy as np
import pytest

from graphi_tf import cache
from graphi_tf import _loader
from graphi_tf import decision as _decision_record
from graphi_tf.tune import (
    DEFAULT_ROUNDS,
    DEFAULT_STEPS,
    DEFAULT_WARMUP,
    DISCARD_STEPS_PER_VISIT,
    TuneArgumentError,
    TuneResult,
    TuneRow,
    default_settings,
    tune,
)

pytestmark = pytest.mark.timeout(120)

MAIN = "aaaaaaaaaaaaaaaa"
HELPER = "bbbbbbbbbbbbbbbb"
IDLE = "cccccccccccccccc"

# FakeNative's default layout is one team per tile: 2x1 on two one-core tiles.
DEFAULT = (2, 1)
# Step time per setting: 1x2 is twice as fast as the default, 1x1 1.5x slower.
STEP_MS = {(1, 1): 9.0, (1, 2): 3.0, (2, 1): 6.0}


class FakeNative:
    """The native API tune() uses: configure, runtime_info, symmetric_settings, graphs,
    graph_profile, adopt_setting, and the decision rule (the real one: decide_setting,
    settings_to_eliminate). Default layout: one team per tile."""

    decide_setting = staticmethod(_loader.native().decide_setting)
    settings_to_eliminate = staticmethod(_loader.native().settings_to_eliminate)

    def __init__(self, tiles=([0], [1]), symmetric=((1, 1), (1, 2), (2, 1)), policy="fifo",
                 source="default", candidates=None):
        self.tiles = [list(t) for t in tiles]
        self.symmetric = [tuple(s) for s in symmetric]
        self.candidates = None if candidates is None else [tuple(s) for s in candidates]
        self.default = (len(self.tiles), len(self.tiles[0]))
        self.current = self.default
        self.policy = policy
        self.source = source
        self.configure_calls = []
        self.visits = {}  # setting -> how many times it was configured
        self.adopted = []
        self.env_pin = None  # a layout GRAPHI_EXECUTORS/... pins once tune's own pin is dropped
        self.graph_table = {
            MAIN: {"node_count": 500, "steps_run": 0},
            HELPER: {"node_count": 20, "steps_run": 0},
            IDLE: {"node_count": 900, "steps_run": 7},
        }

    def runtime_info(self):
        return {
            "tiles": self.tiles, "usable_cpus": sorted(c for t in self.tiles for c in t),
            "usable_cores": sum(len(t) for t in self.tiles), "quota_cores": 64,
            "cpu_model": "Fake CPU", "executors": self.current[0],
            "threads_per_executor": self.current[1], "teams": [], "policy": self.policy,
            "setting_source": self.source,
        }

    def symmetric_settings(self):
        return list(self.symmetric)

    def tuning_candidates(self):
        return list(self.candidates if self.candidates is not None else self.symmetric)

    def default_setting(self):
        return self.default

    def configure(self, executors, threads_per_executor, policy):
        self.configure_calls.append((executors, threads_per_executor, policy))
        if (executors, threads_per_executor) == (0, 0):
            self.current, self.source, self.policy = self.default, "default", policy or "fifo"
            return
        if (executors, threads_per_executor) not in self.symmetric:
            raise ValueError(f"{executors}x{threads_per_executor} does not fit")
        self.current, self.source, self.policy = (executors, threads_per_executor), "configure", policy or "fifo"
        self.visits[self.current] = self.visits.get(self.current, 0) + 1

    def graphs(self):
        return [dict(signature=sig, executors=self.current[0], threads_per_executor=self.current[1],
                     policy=self.policy, source=self.source, costs_known=True, **g)
                for sig, g in self.graph_table.items()]

    def graph_profile(self, signature):
        n = self.graph_table[signature]["node_count"]
        return {"node_count": n, "node_costs_ns": [1000 + i for i in range(n)],
                "node_names": [f"{signature[:2]}/n{i}" for i in range(n)], "ranks_ns": [0] * n}

    def adopt_setting(self, signature, executors, threads_per_executor, policy, source, costs, names,
                      load_class="alone"):
        self.adopted.append((signature, executors, threads_per_executor, policy, source, costs, names))
        if source == "tuned" and self.env_pin is not None:
            self.current, self.source = self.env_pin, "environment"


class FakeClock:
    """A clock that only moves when a fake step advances it (seconds, like perf_counter)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def advance_ms(self, ms):
        self.now += ms / 1e3


class FakeStep:
    """One 'step': runs MAIN and HELPER on GRAPHI and takes step_ms[current setting] ms
    (1 ms for a setting not listed) on the fake clock, or really sleeps without one.

    noise: {(setting, round): factor} multiplies the step time of that setting's visit in
      that round (round = how many times the setting was configured, minus one).
    fresh_teams_ms: extra time of the first step after every re-partitioning.
    """

    def __init__(self, native, clock=None, step_ms=STEP_MS, graphs=(MAIN, HELPER), fail_on=None,
                 noise=None, fresh_teams_ms=0.0, raise_on_visit=None):
        self.native = native
        self.clock = clock
        self.step_ms = step_ms
        self.graphs = graphs
        self.fail_on = fail_on
        self.noise = noise or {}
        self.fresh_teams_ms = fresh_teams_ms
        self.raise_on_visit = raise_on_visit  # (setting, round, exception)
        self.calls = {}
        self._configures_seen = None

    def __call__(self):
        setting = self.native.current
        round_index = self.native.visits.get(setting, 0) - 1
        if setting == self.fail_on:
            raise RuntimeError("step failed")
        if self.raise_on_visit and self.raise_on_visit[:2] == (setting, round_index):
            raise self.raise_on_visit[2]
        self.calls[setting] = self.calls.get(setting, 0) + 1
        for sig in self.graphs:
            self.native.graph_table[sig]["steps_run"] += 1
        ms = self.step_ms.get(setting, 1.0) * self.noise.get((setting, round_index), 1.0)
        if self._configures_seen != len(self.native.configure_calls):
            self._configures_seen = len(self.native.configure_calls)
            ms += self.fresh_teams_ms
        if self.clock is None:
            time.sleep(ms / 1e3)
        else:
            self.clock.advance_ms(ms)


def decide(round_medians, default, order):
    """The native rule's decision, as graphi_tf.decision records it."""
    return _decision_record.decide(_loader.native(), round_medians, default, order)


@pytest.fixture(autouse=True)
def _own_cache(cache_env):
    """Every test here on a cache of its own (conftest's cache_env)."""
    return cache_env


def run_tune(native, step=None, **kw):
    """tune() on the fake native with a fake clock; small defaults for speed."""
    clock = kw.pop("clock", None) or (step.clock if step is not None and step.clock else FakeClock())
    kw.setdefault("warmup", 1)
    kw.setdefault("rounds", 3)
    kw.setdefault("steps", 3)
    kw.setdefault("progress", False)
    return tune(step or FakeStep(native, clock), native=native, clock=clock, **kw)


def sweep_calls(native):
    """The settings configured by the sweep, in order (the last configure applies the result)."""
    return [call[:2] for call in native.configure_calls[:-1]]


def row_of(result, setting):
    return next(row for row in result.settings if row.setting == setting)


# ----------------------------------------------------------------------------- deciding


def test_a_genuinely_faster_setting_is_adopted():
    native = FakeNative()
    result = run_tune(native)
    assert result.best == (1, 2) and result.adopted
    assert result.decision.reason == "1x2 adopted: 0.50 of the default 2x1, faster in 3 of 3 rounds, 3 needed"


def test_the_chosen_setting_is_the_one_the_table_shows_with_the_lowest_ratio():
    native = FakeNative()
    result = run_tune(native)
    assert result.best == min(result.settings, key=lambda row: row.ratio_median).setting
    assert result.best_median_ms == row_of(result, result.best).median_ms == pytest.approx(3.0)


def test_a_setting_equal_to_the_default_within_noise_keeps_the_default():
    native = FakeNative()
    clock = FakeClock()
    # 1x2 is the default's speed give or take 10% from round to round: its ratio median is
    # 0.975 (below 1) but its spread 0.075 covers 1.
    noise = {((1, 2), r): f for r, f in enumerate((0.9, 1.05, 0.95, 1.0, 0.92, 1.04))}
    step = FakeStep(native, clock, step_ms={(1, 1): 20.0, (1, 2): 6.0, (2, 1): 6.0}, noise=noise)
    result = run_tune(native, step, rounds=6)
    assert row_of(result, (1, 2)).ratio_median == pytest.approx(0.975)
    assert result.best == DEFAULT and not result.adopted
    assert result.decision.reason.startswith("kept the default 2x1: no setting beat it by more than its spread")


def test_a_burst_of_noise_that_makes_a_slow_setting_look_fastest_in_one_round_changes_nothing():
    # 1x2 is 10% slower than the default. In round 2 a 3x burst hits the default's window,
    # so in that round 1x2 looks the fastest by far. It must still not be adopted.
    step_ms = {(1, 1): 20.0, (1, 2): 11.0, (2, 1): 10.0}
    quiet_native = FakeNative()
    quiet = run_tune(quiet_native, FakeStep(quiet_native, FakeClock(), step_ms=step_ms), rounds=6)
    native = FakeNative()
    noisy = run_tune(native, FakeStep(native, FakeClock(), step_ms=step_ms, noise={(DEFAULT, 2): 3.0}),
                     rounds=6)
    burst_round = noisy.decision.evidence_for((1, 2)).round_medians_ms[2]
    assert burst_round < noisy.decision.evidence_for(DEFAULT).round_medians_ms[2] / 2  # the burst bites
    assert (noisy.best, noisy.adopted) == (quiet.best, quiet.adopted) == (DEFAULT, False)


def test_a_burst_in_another_setting_s_window_does_not_stop_a_faster_setting_being_adopted():
    step_ms = {(1, 1): 9.0, (1, 2): 4.0, (2, 1): 6.0}
    native = FakeNative()
    result = run_tune(native, FakeStep(native, FakeClock(), step_ms=step_ms, noise={((1, 1), 1): 3.0}),
                      rounds=6)
    assert result.best == (1, 2) and result.adopted


def test_ratios_are_taken_against_the_default_in_the_same_round():
    # A machine-wide slowdown in round 1 slows every setting alike: the ratios do not move.
    native = FakeNative()
    noise = {(s, 1): 2.0 for s in STEP_MS}
    result = run_tune(native, FakeStep(native, FakeClock(), noise=noise))
    row = row_of(result, (1, 2))
    assert row.round_medians_ms == pytest.approx((3.0, 6.0, 3.0))
    assert row.ratio_median == pytest.approx(0.5) and row.ratio_spread == pytest.approx(0.0, abs=1e-9)


def test_ratio_median_and_spread_come_from_the_per_round_medians():
    native = FakeNative()
    noise = {((1, 2), 0): 1.2, ((1, 2), 1): 0.8}
    result = run_tune(native, FakeStep(native, FakeClock(), noise=noise))
    default_medians = row_of(result, DEFAULT).round_medians_ms
    row = row_of(result, (1, 2))
    ratios = [m / d for m, d in zip(row.round_medians_ms, default_medians)]
    assert row.ratio_median == pytest.approx(statistics.median(ratios))
    assert row.ratio_spread == pytest.approx((max(ratios) - min(ratios)) / 2)
    assert row.median_ms == pytest.approx(statistics.median(row.round_medians_ms))


def test_the_decision_is_the_decision_rule_applied_to_the_round_medians():
    native = FakeNative()
    result = run_tune(native)
    rounds = [{row.setting: row.round_medians_ms[r] for row in result.settings
               if row.round_medians_ms[r] is not None} for r in range(result.rounds)]
    assert decide(rounds, DEFAULT, [row.setting for row in result.settings]) == result.decision


# ----------------------------------------------------------------------------- the sweep


def test_rounds_visit_the_settings_in_an_order_rotated_by_one_each_round():
    native = FakeNative()
    step = FakeStep(native, FakeClock(), step_ms={})
    run_tune(native, step, rounds=4, warmup=0, steps=1)
    a, b, c = (1, 1), (1, 2), (2, 1)
    assert sweep_calls(native) == [a, b, c, b, c, a, c, a, b, a, b, c]


def test_each_setting_warms_up_on_its_first_visit_only_then_discards_one_step_per_visit():
    native = FakeNative()
    step = FakeStep(native, FakeClock(), step_ms={})
    result = run_tune(native, step, warmup=2, rounds=3, steps=4)
    assert DISCARD_STEPS_PER_VISIT == 1
    assert step.calls == {s: 2 + 3 * (1 + 4) for s in STEP_MS}
    for row in result.settings:
        assert len(row.step_times_ms) == 3 * 4 and len(row.round_medians_ms) == 3


def test_the_first_step_after_re_partitioning_is_not_timed():
    native = FakeNative()
    step = FakeStep(native, FakeClock(), step_ms={(1, 1): 9.0, (1, 2): 3.0, (2, 1): 6.0}, fresh_teams_ms=500.0)
    result = run_tune(native, step, warmup=0)
    assert step.calls[(1, 2)] == 3 * (1 + 3)
    for row in result.settings:
        assert row.max_ms < 500.0
        assert row.min_ms == row.max_ms == pytest.approx(STEP_MS[row.setting])


def test_a_setting_much_slower_than_the_default_is_eliminated_after_two_rounds():
    native = FakeNative()
    step = FakeStep(native, FakeClock())  # 1x1 takes 1.5x the default
    result = run_tune(native, step, warmup=1, rounds=5, steps=3)
    row = row_of(result, (1, 1))
    assert row.eliminated_after_round == 1 and row.rounds == 2
    assert row.round_medians_ms[2:] == (None, None, None)
    assert step.calls[(1, 1)] == 1 + 2 * (1 + 3)
    assert (1, 1) not in sweep_calls(native)[6:]  # rounds 0 and 1 visit three settings each
    assert "eliminated after 2 rounds" in str(result)


def test_eliminated_settings_leave_the_rotation():
    native = FakeNative()
    run_tune(native, FakeStep(native, FakeClock()), warmup=0, rounds=4, steps=1)
    a, b, c = (1, 1), (1, 2), (2, 1)
    assert sweep_calls(native) == [a, b, c, b, c, a, b, c, c, b]


def test_a_setting_far_slower_than_one_that_beats_the_default_is_eliminated_once_that_one_qualifies():
    native = FakeNative()
    step = FakeStep(native, FakeClock(), step_ms={(1, 1): 5.4, (1, 2): 3.0, (2, 1): 6.0})
    result = run_tune(native, step, warmup=1, rounds=5, steps=3)
    # 1x1 beats the default (0.9x) but is 1.8x 1x2, which beats it by more from round 3 on.
    assert row_of(result, (1, 1)).eliminated_after_round == 2
    assert step.calls[(1, 1)] == 1 + 3 * (1 + 3)
    assert result.best == (1, 2)


def test_a_setting_slower_in_only_one_round_stays_in_the_sweep():
    native = FakeNative()
    step_ms = {(1, 1): 6.3, (1, 2): 6.0, (2, 1): 6.0}  # 1.05x the default; 1x2 no faster
    result = run_tune(native, FakeStep(native, FakeClock(), step_ms=step_ms, noise={((1, 1), 0): 2.0}),
                      rounds=4)
    assert row_of(result, (1, 1)).eliminated_after_round is None
    assert row_of(result, (1, 1)).rounds == 4


def test_the_default_clock_times_real_steps():
    native = FakeNative()
    step = FakeStep(native, clock=None, step_ms={(1, 1): 4.0, (1, 2): 1.0, (2, 1): 2.0})
    result = tune(step, native=native, warmup=0, rounds=3, steps=2, progress=False)
    for row in result.settings:
        assert row.min_ms >= {(1, 1): 4.0, (1, 2): 1.0, (2, 1): 2.0}[row.setting]


def test_the_defaults_cost_76_steps_per_setting():
    assert (DEFAULT_WARMUP, DEFAULT_ROUNDS, DEFAULT_STEPS) == (10, 6, 10)
    native = FakeNative()
    step = FakeStep(native, FakeClock(), step_ms={})
    tune(step, native=native, clock=step.clock, progress=False)
    assert step.calls == {s: 10 + 6 * (1 + 10) for s in STEP_MS}


# ----------------------------------------------------------------------------- applying


def test_tune_applies_the_chosen_setting_and_adopts_it_with_the_measured_costs():
    native = FakeNative()
    result = run_tune(native)
    assert native.current == result.best == (1, 2) and result.applied
    assert native.configure_calls[-1] == (*result.best, "fifo")
    main_profile = native.graph_profile(MAIN)
    assert native.adopted[0] == (MAIN, *result.best, "fifo", "tuned", main_profile["node_costs_ns"],
                                 main_profile["node_names"])


def test_a_kept_default_is_applied_adopted_and_cached_too(cache_env):
    native = FakeNative()
    step = FakeStep(native, FakeClock(), step_ms={(1, 1): 9.0, (1, 2): 6.0, (2, 1): 6.0})
    result = run_tune(native, step)
    assert result.best == DEFAULT and native.current == DEFAULT
    assert [a[:5] for a in native.adopted] == [(MAIN, 2, 1, "fifo", "tuned"), (HELPER, 2, 1, "fifo", "tuned")]
    entries = cache.load_matching_entries(native.runtime_info())
    assert len(entries) == 2
    for entry in entries:
        assert (entry.setting["executors"], entry.setting["threads_per_executor"]) == DEFAULT
        assert "kept the default 2x1" in entry.note
        assert entry.evidence["adopted"] is False and entry.evidence["chosen"] == "2x1"
    assert "kept the default 2x1" in str(result)


def test_tune_keeps_the_policy_in_force_when_none_is_given():
    native = FakeNative(policy="critical_path_first", source="environment")
    run_tune(native)
    assert {call[2] for call in native.configure_calls} == {"critical_path_first"}


def test_a_chosen_setting_the_environment_overrides_is_reported_as_not_applied():
    native = FakeNative()
    native.env_pin = (1, 1)
    with pytest.warns(RuntimeWarning, match="chosen setting 1x2 is not in force: 1x1 from environment"):
        result = run_tune(native, settings=[(1, 1), (1, 2)])
    assert result.best == (1, 2) and result.applied is False
    assert "not applied" in str(result)


# ----------------------------------------------------------------------------- settings


def test_default_settings_are_the_native_tuning_candidates():
    native = FakeNative(tiles=([0, 1], [2, 3]),
                        symmetric=((1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (2, 2), (4, 1)),
                        candidates=((1, 1), (1, 4), (2, 2), (4, 1)))
    assert default_settings(native) == [(1, 1), (1, 4), (2, 2), (4, 1)]


def test_tune_sweeps_the_default_settings_in_order():
    native = FakeNative(tiles=([0, 1], [2, 3]), symmetric=((1, 1), (1, 2), (1, 3), (2, 2)),
                        candidates=((1, 1), (1, 2), (2, 2)))
    result = run_tune(native, FakeStep(native, FakeClock(), step_ms={}), warmup=0, steps=1)
    assert [row.setting for row in result.settings] == [(1, 1), (1, 2), (2, 2)]
    assert not result.default_added


def test_the_default_is_added_last_when_the_settings_omit_it():
    native = FakeNative()
    result = run_tune(native, settings=[(1, 2), (1, 1)])
    assert [row.setting for row in result.settings] == [(1, 2), (1, 1), DEFAULT]
    assert result.default_added and result.to_dict()["default_added"] is True
    assert "default 2x1 (added: not in the given settings)" in str(result)
    assert result.best == (1, 2)


def test_a_setting_that_does_not_fit_is_rejected_before_any_step_runs():
    native = FakeNative()
    step = FakeStep(native, FakeClock())
    with pytest.raises(ValueError) as excinfo:
        run_tune(native, step, settings=[(1, 1), (4, 1)])
    assert isinstance(excinfo.value, TuneArgumentError)
    message = str(excinfo.value)
    assert "4x1" in message and "allowed: 1x1, 1x2, 2x1" in message
    assert step.calls == {} and native.configure_calls == []


@pytest.mark.parametrize("bad", [(2,), (1, 1, 1), ("1", 1), (1.0, 1), "11"])
def test_a_malformed_setting_is_rejected_with_a_message_naming_it(bad):
    native = FakeNative()
    with pytest.raises(TuneArgumentError, match="is invalid"):
        run_tune(native, settings=[bad])
    assert native.configure_calls == []


def test_an_unknown_policy_is_rejected():
    native = FakeNative()
    with pytest.raises(TuneArgumentError, match="policy='lifo' is invalid"):
        run_tune(native, policy="lifo")
    assert native.configure_calls == []


@pytest.mark.parametrize("kw, allowed", [
    ({"steps": 0}, ">= 1"), ({"warmup": -1}, ">= 0"), ({"rounds": 2}, ">= 3"), ({"rounds": True}, ">= 3"),
    ({"steps": 2.5}, ">= 1"),
])
def test_counts_out_of_range_are_rejected_naming_the_allowed_values(kw, allowed):
    native = FakeNative()
    with pytest.raises(TuneArgumentError, match=f"is invalid; allowed: a whole number {allowed}"):
        run_tune(native, **kw)
    assert native.configure_calls == []


def test_a_clock_that_is_not_callable_is_rejected():
    with pytest.raises(TypeError, match="clock must be a zero-argument callable"):
        tune(lambda: None, native=FakeNative(), clock=1.0, progress=False)


def test_explicit_settings_run_in_the_given_order_without_duplicates():
    native = FakeNative()
    result = run_tune(native, settings=[(2, 1), (1, 1), (2, 1)], steps=2)
    assert [row.setting for row in result.settings] == [(2, 1), (1, 1)]


# ----------------------------------------------------------------------------- graphs and cache


def test_graphs_the_step_ran_are_found_main_first():
    native = FakeNative()
    result = run_tune(native)
    assert result.signature == MAIN
    assert result.graphs == [MAIN, HELPER]  # IDLE has more nodes but did not run
    assert [a[0] for a in native.adopted] == [MAIN, HELPER]


def test_tune_writes_one_cache_entry_per_graph_that_ran_with_the_evidence(cache_env):
    native = FakeNative()
    result = run_tune(native)
    assert len(result.cache_paths) == 2
    entries = {e.signature: e for e in cache.load_matching_entries(native.runtime_info())}
    assert set(entries) == {MAIN, HELPER}
    for sig, entry in entries.items():
        assert entry.setting == {"executors": result.best[0], "threads_per_executor": result.best[1],
                                 "policy": "fifo"}
        assert entry.median_step_ms == result.best_median_ms
        assert entry.node_costs_ns == native.graph_profile(sig)["node_costs_ns"]
        assert entry.node_names == native.graph_profile(sig)["node_names"]
        assert [(r["executors"], r["threads_per_executor"], r["median_ms"], r["ratio_median"])
                for r in entry.table] == [(*row.setting, row.median_ms, row.ratio_median)
                                          for row in result.settings]
        assert entry.evidence == json.loads(json.dumps(result.decision.to_dict()))
        assert entry.decision() == result.decision
        assert "1x2 adopted" in entry.note
    assert sorted(str(cache_env / f"{e.key}.json") for e in entries.values()) == sorted(result.cache_paths)


def test_write_cache_false_writes_no_entry(cache_env):
    result = run_tune(FakeNative(), write_cache=False)
    assert result.cache_paths == []
    assert not cache_env.exists() or list(cache_env.iterdir()) == []


def test_an_unwritable_cache_is_reported_and_the_result_still_applied(cache_env):
    cache_env.parent.mkdir(parents=True, exist_ok=True)
    cache_env.write_text("a file where the cache directory should be")
    native = FakeNative()
    with pytest.warns(cache.GraphiCacheWarning, match="could not write the cache entry"):
        result = run_tune(native)
    assert result.cache_paths == []
    assert native.current == result.best


def test_a_step_that_runs_no_graphi_graph_fails_after_the_first_visit():
    native = FakeNative()
    step = FakeStep(native, FakeClock(), graphs=())
    with pytest.raises(RuntimeError, match="ran no graph on the GRAPHI executor"):
        run_tune(native, step, warmup=1, steps=2)
    assert step.calls == {(1, 1): 1 + 1 + 2}
    assert native.current == native.default and native.source == "default"


# ----------------------------------------------------------------------------- failure


def test_a_failing_step_restores_the_layout_configured_before():
    native = FakeNative()
    native.configure(2, 1, "critical_path_first")
    with pytest.raises(RuntimeError, match="step failed"):
        run_tune(native, FakeStep(native, FakeClock(), fail_on=(1, 2)))
    assert (native.current, native.policy, native.source) == ((2, 1), "critical_path_first", "configure")


def test_a_failing_step_goes_back_to_the_default_layout_if_none_was_configured():
    native = FakeNative()
    with pytest.raises(RuntimeError, match="step failed"):
        run_tune(native, FakeStep(native, FakeClock(), fail_on=(1, 2)))
    assert native.configure_calls[-1] == (0, 0, "")
    assert native.source == "default"


def test_ctrl_c_in_a_later_round_restores_the_layout_and_propagates(cache_env):
    native = FakeNative()
    native.configure(1, 1, "critical_path_first")
    step = FakeStep(native, FakeClock(), raise_on_visit=((1, 2), 2, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        run_tune(native, step, rounds=4)
    assert step.calls[(1, 2)] > 0  # it got that far
    assert (native.current, native.policy, native.source) == ((1, 1), "critical_path_first", "configure")
    assert native.adopted == []
    assert not cache_env.exists() or list(cache_env.iterdir()) == []


def test_a_failing_step_writes_no_cache_entry(cache_env):
    native = FakeNative()
    with pytest.raises(RuntimeError):
        run_tune(native, FakeStep(native, FakeClock(), fail_on=(2, 1)))
    assert not cache_env.exists() or list(cache_env.iterdir()) == []
    assert native.adopted == []


# ----------------------------------------------------------------------------- result


def _result(default_kept=False):
    a, b, d = (1, 1), (1, 2), (2, 1)
    rounds = [{a: 6.0, b: 2.0, d: 4.0}, {a: 6.5, b: 2.125, d: 4.0}, {b: 1.875, d: 4.25}]
    if default_kept:
        rounds = [{a: 6.0, b: 4.0, d: 4.0}, {a: 6.5, b: 4.2, d: 4.0}, {b: 3.9, d: 4.25}]
    decision = decide(rounds, d, [a, b, d])
    rows = []
    for ev in decision.evidence:
        medians = [m for m in ev.round_medians_ms if m is not None]
        rows.append(TuneRow(*ev.setting, median_ms=statistics.median(medians), min_ms=min(medians),
                            max_ms=max(medians), round_medians_ms=ev.round_medians_ms,
                            ratio_median=ev.ratio_median, ratio_spread=ev.ratio_spread, rounds=ev.rounds,
                            eliminated_after_round=ev.eliminated_after_round))
    return TuneResult(settings=rows, best=decision.chosen, best_median_ms=row_of_rows(rows, decision.chosen),
                      signature=MAIN, cache_paths=["/tmp/x/abc.json"], decision=decision, policy="fifo",
                      warmup=10, steps=10, rounds=3, graphs=[MAIN])


def row_of_rows(rows, setting):
    return next(r.median_ms for r in rows if r.setting == setting)


def test_table_has_a_header_and_one_aligned_row_per_setting():
    lines = str(_result()).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("setting"))
    columns = ["setting", "median ms", "vs default", "faster in"]
    positions = [lines[header].index(c) for c in columns]
    assert positions == sorted(positions)
    rows = lines[header + 1:header + 4]
    assert [r.split()[:4] for r in rows] == [
        ["1x1", "6.250", "1.56", "0/2"],
        ["1x2", "2.000", "0.50", "3/3"],
        ["2x1", "4.000", "1.00", "-"],
    ]
    ends = {len(line.split("  <- ")[0].split("  eliminated")[0].rstrip()) for line in rows}
    assert len(ends) == 1, "numeric columns are right-aligned to one width"


def test_table_marks_chosen_default_and_eliminated_settings():
    lines = str(_result()).splitlines()
    assert [line.split()[0] for line in lines if line.endswith("<- chosen")] == ["1x2"]
    assert [line.split()[0] for line in lines if line.endswith("<- default")] == ["2x1"]
    assert [line.split()[0] for line in lines if line.endswith("eliminated after 2 rounds")] == ["1x1"]


def test_table_marks_a_kept_default_as_chosen_and_default():
    lines = str(_result(default_kept=True)).splitlines()
    assert [line.split()[0] for line in lines if line.endswith("<- chosen, default")] == ["2x1"]


def test_table_ends_with_the_decision_sentence():
    assert str(_result()).splitlines()[-1] == ("1x2 adopted: 0.50 of the default 2x1, "
                                               "faster in 3 of 3 rounds, 3 needed")
    assert str(_result(default_kept=True)).splitlines()[-1].startswith("kept the default 2x1")


def test_table_names_the_graph_the_procedure_and_the_cache_file():
    text = str(_result())
    assert MAIN in text and "/tmp/x/abc.json" in text
    assert "10 warmup steps per setting, then 3 rounds of 1 discarded + 10 timed steps" in text


def test_to_dict_is_json_with_every_field():
    data = json.loads(json.dumps(_result().to_dict()))
    assert data["best"] == [1, 2] and data["best_median_ms"] == 2.0 and data["signature"] == MAIN
    assert data["default"] == [2, 1] and data["adopted"] is True and data["rounds"] == 3
    assert data["decision"]["chosen"] == "1x2"
    assert [(r["executors"], r["threads_per_executor"], r["rounds"], r["eliminated_after_round"])
            for r in data["settings"]] == [(1, 1, 2, 1), (1, 2, 3, None), (2, 1, 3, None)]
    assert data["settings"][0]["round_medians_ms"] == [6.0, 6.5, None]
    assert data["cache_paths"] == ["/tmp/x/abc.json"]


# ----------------------------------------------------------------------------- progress


def test_progress_bar_goes_to_stderr_only(capsys):
    native = FakeNative()
    run_tune(native, progress=True, steps=2)
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("\r") and err.endswith("\n") and err.count("\n") == 1
    for label in ("1x1", "1x2", "2x1"):
        assert f"setting {label}" in err
    assert "round 3/3" in err
    assert "3 settings, 3 rounds done; 1x2 adopted" in err


def test_no_progress_bar_when_disabled(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_tune(FakeNative(), progress=False)
    assert capsys.readouterr() == ("", "")


# ----------------------------------------------------------------------------- end to end


def test_tune_on_a_real_session_graph_decides_applies_and_caches(cache_env):
    import tensorflow as tf

    import graphi_tf
    from graphi_tf import _loader

    native = _loader.native()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.get_variable(
            "x", initializer=np.random.RandomState(0).rand(16, 16).astype(np.float32) / 16, use_resource=True)
        init = tf.compat.v1.global_variables_initializer()
        branches = []
        for _ in range(3):
            y = x
            for _ in range(2):
                y = tf.tanh(tf.matmul(y, x))
            branches.append(y)
        total = tf.add_n(branches)
    with tf.compat.v1.Session(graph=graph, config=graphi_tf.session_config()) as sess:
        sess.run(init)
        started = time.monotonic()
        result = tune(lambda: sess.run(total), warmup=1, rounds=3, steps=2, progress=False)
        elapsed = time.monotonic() - started
    assert elapsed < 20
    assert result.default == tuple(native.default_setting())
    assert {row.setting for row in result.settings} == {tuple(s) for s in default_settings()}
    assert all(row.rounds >= 2 or row.eliminated_after_round is not None for row in result.settings)
    assert result.best == result.decision.chosen
    main = next(g for g in native.graphs() if g["signature"] == result.signature)
    assert main["source"] == "tuned" and (main["executors"], main["threads_per_executor"]) == result.best
    entries = [e for e in cache.load_matching_entries() if e.signature == result.signature]
    assert len(entries) == 1 and entries[0].decision() == result.decision
