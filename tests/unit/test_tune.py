"""The profiling sweep graphi_tf.tune, against a fake native runtime whose step time
depends on the configured team layout."""
import json
import time
import warnings

import pytest

from graphi_tf import cache
from graphi_tf.tune import TuneArgumentError, TuneResult, TuneRow, default_settings, tune

pytestmark = pytest.mark.timeout(120)

MAIN = "aaaaaaaaaaaaaaaa"
HELPER = "bbbbbbbbbbbbbbbb"
IDLE = "cccccccccccccccc"

# Step time per setting: the fastest is neither first nor last in sweep order.
SLEEP_MS = {(1, 1): 9.0, (1, 2): 3.0, (2, 1): 6.0}


class FakeNative:
    """The native API tune() uses: configure, runtime_info, symmetric_settings, graphs,
    graph_profile, adopt_setting. Default layout: one team per tile."""

    def __init__(self, tiles=([0], [1]), symmetric=((1, 1), (1, 2), (2, 1)), policy="fifo",
                 source="default"):
        self.tiles = [list(t) for t in tiles]
        self.symmetric = [tuple(s) for s in symmetric]
        self.default = (len(self.tiles), len(self.tiles[0]))
        self.current = self.default
        self.policy = policy
        self.source = source
        self.configure_calls = []
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

    def configure(self, executors, threads_per_executor, policy):
        self.configure_calls.append((executors, threads_per_executor, policy))
        if (executors, threads_per_executor) == (0, 0):
            self.current, self.source, self.policy = self.default, "default", policy or "fifo"
            return
        if (executors, threads_per_executor) not in self.symmetric:
            raise ValueError(f"{executors}x{threads_per_executor} does not fit")
        self.current, self.source, self.policy = (executors, threads_per_executor), "configure", policy or "fifo"

    def graphs(self):
        return [dict(signature=sig, executors=self.current[0], threads_per_executor=self.current[1],
                     policy=self.policy, source=self.source, costs_known=True, **g)
                for sig, g in self.graph_table.items()]

    def graph_profile(self, signature):
        n = self.graph_table[signature]["node_count"]
        return {"node_count": n, "node_costs_ns": [1000 + i for i in range(n)],
                "node_names": [f"{signature[:2]}/n{i}" for i in range(n)], "ranks_ns": [0] * n}

    def adopt_setting(self, signature, executors, threads_per_executor, policy, source, costs, names):
        self.adopted.append((signature, executors, threads_per_executor, policy, source, costs, names))
        if source == "tuned" and self.env_pin is not None:
            self.current, self.source = self.env_pin, "environment"


class FakeStep:
    """One 'step': runs MAIN and HELPER on GRAPHI and takes SLEEP_MS[current setting]."""

    def __init__(self, native, graphs=(MAIN, HELPER), sleep_ms=SLEEP_MS, fail_on=None):
        self.native = native
        self.graphs = graphs
        self.sleep_ms = sleep_ms
        self.fail_on = fail_on
        self.calls = {}

    def __call__(self):
        setting = self.native.current
        if setting == self.fail_on:
            raise RuntimeError("step failed")
        self.calls[setting] = self.calls.get(setting, 0) + 1
        for sig in self.graphs:
            self.native.graph_table[sig]["steps_run"] += 1
        time.sleep(self.sleep_ms.get(setting, 0.0) / 1e3)


@pytest.fixture(autouse=True)
def cache_env(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("GRAPHI_CACHE_DIR", str(directory))
    cache._reset_reports()
    return directory


def run_tune(native, step=None, **kw):
    kw.setdefault("warmup", 1)
    kw.setdefault("steps", 5)
    kw.setdefault("progress", False)
    return tune(step or FakeStep(native), native=native, **kw)


# ----------------------------------------------------------------------------- choosing


def test_tune_picks_the_setting_its_own_table_says_is_fastest():
    native = FakeNative()
    result = run_tune(native)
    fastest_row = min(result.settings, key=lambda row: row.median_ms)
    assert result.best == fastest_row.setting
    assert result.best_median_ms == fastest_row.median_ms
    assert result.best == (1, 2)  # SLEEP_MS makes 1x2 the fastest by 3 ms


def test_tune_applies_the_best_setting_and_adopts_it_with_the_measured_costs():
    native = FakeNative()
    result = run_tune(native)
    assert native.current == result.best and result.applied
    assert native.configure_calls[-1] == (*result.best, "fifo")
    main_profile = native.graph_profile(MAIN)
    assert native.adopted[0] == (MAIN, *result.best, "fifo", "tuned", main_profile["node_costs_ns"],
                                 main_profile["node_names"])


def test_every_setting_runs_warmup_then_timed_steps():
    native = FakeNative()
    step = FakeStep(native)
    result = run_tune(native, step, warmup=2, steps=4)
    assert step.calls == {(1, 1): 6, (1, 2): 6, (2, 1): 6}
    for row in result.settings:
        assert len(row.step_times_ms) == 4
        assert row.min_ms <= row.median_ms <= row.max_ms
        assert row.min_ms >= SLEEP_MS[row.setting]  # timed steps include the step's sleep


def test_vs_best_is_each_median_over_the_best_median():
    native = FakeNative()
    result = run_tune(native)
    for row in result.settings:
        assert row.vs_best == pytest.approx(row.median_ms / result.best_median_ms)
    assert [row.vs_best for row in result.settings if row.setting == result.best] == [1.0]


def test_tune_keeps_the_policy_in_force_when_none_is_given():
    native = FakeNative(policy="critical_path_first", source="environment")
    run_tune(native)
    assert {call[2] for call in native.configure_calls} == {"critical_path_first"}


def test_a_best_setting_the_environment_overrides_is_reported_as_not_applied():
    native = FakeNative()
    native.env_pin = (1, 1)
    with pytest.warns(RuntimeWarning, match="best setting 1x2 is not in force: 1x1 from environment"):
        result = run_tune(native, settings=[(1, 1), (1, 2)])
    assert result.best == (1, 2) and result.applied is False
    assert "not applied" in str(result)


# ----------------------------------------------------------------------------- settings


def test_default_settings_are_symmetric_ones_with_whole_tiles_or_one_thread():
    native = FakeNative(tiles=([0, 1], [2, 3]),
                        symmetric=((1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (2, 2), (4, 1)))
    assert default_settings(native) == [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (4, 1)]


def test_tune_sweeps_the_default_settings_in_order():
    native = FakeNative(tiles=([0, 1], [2, 3]), symmetric=((1, 1), (1, 2), (1, 3), (2, 2)))
    result = run_tune(native, FakeStep(native, sleep_ms={}), warmup=0, steps=1)
    assert [row.setting for row in result.settings] == [(1, 1), (1, 2), (2, 2)]


def test_a_setting_that_does_not_fit_is_rejected_before_any_step_runs():
    native = FakeNative()
    step = FakeStep(native)
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


@pytest.mark.parametrize("kw", [{"steps": 0}, {"warmup": -1}])
def test_step_counts_out_of_range_are_rejected(kw):
    with pytest.raises(TuneArgumentError, match="is invalid"):
        run_tune(FakeNative(), **kw)


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


def test_tune_writes_one_cache_entry_per_graph_that_ran(cache_env):
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
        assert [(r["executors"], r["threads_per_executor"], r["median_ms"]) for r in entry.table] == \
            [(*row.setting, row.median_ms) for row in result.settings]
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


def test_a_step_that_runs_no_graphi_graph_fails_after_the_first_setting():
    native = FakeNative()
    step = FakeStep(native, graphs=())
    with pytest.raises(RuntimeError, match="ran no graph on the GRAPHI executor"):
        run_tune(native, step, warmup=1, steps=2)
    assert step.calls == {(1, 1): 3}
    assert native.current == native.default and native.source == "default"


# ----------------------------------------------------------------------------- failure


def test_a_failing_step_restores_the_layout_configured_before():
    native = FakeNative()
    native.configure(2, 1, "critical_path_first")
    with pytest.raises(RuntimeError, match="step failed"):
        run_tune(native, FakeStep(native, fail_on=(1, 2)))
    assert (native.current, native.policy, native.source) == ((2, 1), "critical_path_first", "configure")


def test_a_failing_step_goes_back_to_the_default_layout_if_none_was_configured():
    native = FakeNative()
    with pytest.raises(RuntimeError, match="step failed"):
        run_tune(native, FakeStep(native, fail_on=(1, 2)))
    assert native.configure_calls[-1] == (0, 0, "")
    assert native.source == "default"


def test_a_failing_step_writes_no_cache_entry(cache_env):
    native = FakeNative()
    with pytest.raises(RuntimeError):
        run_tune(native, FakeStep(native, fail_on=(2, 1)))
    assert not cache_env.exists() or list(cache_env.iterdir()) == []
    assert native.adopted == []


# ----------------------------------------------------------------------------- result


def _result():
    rows = [
        TuneRow(1, 1, median_ms=6.0, min_ms=5.5, max_ms=7.25, vs_best=3.0),
        TuneRow(1, 2, median_ms=2.0, min_ms=1.875, max_ms=2.5, vs_best=1.0),
        TuneRow(2, 1, median_ms=4.0, min_ms=3.5, max_ms=12.125, vs_best=2.0),
    ]
    return TuneResult(settings=rows, best=(1, 2), best_median_ms=2.0, signature=MAIN,
                      cache_paths=["/tmp/x/abc.json"], policy="fifo", warmup=20, steps=30,
                      graphs=[MAIN])


def test_table_has_a_header_and_one_aligned_row_per_setting():
    lines = str(_result()).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("setting"))
    columns = ["setting", "median ms", "min ms", "max ms", "vs best"]
    positions = [lines[header].index(c) for c in columns]
    assert positions == sorted(positions)
    rows = lines[header + 1:header + 4]
    assert [r.split()[:5] for r in rows] == [
        ["1x1", "6.000", "5.500", "7.250", "3.00x"],
        ["1x2", "2.000", "1.875", "2.500", "1.00x"],
        ["2x1", "4.000", "3.500", "12.125", "2.00x"],
    ]
    ends = {len(r.rstrip().removesuffix("<- best").rstrip()) for r in rows}
    assert len(ends) == 1, "numeric columns are right-aligned to one width"


def test_table_marks_only_the_best_setting():
    text = str(_result())
    marked = [line for line in text.splitlines() if line.endswith("<- best")]
    assert len(marked) == 1 and marked[0].startswith("1x2")


def test_table_names_the_graph_the_step_counts_and_the_cache_file():
    text = str(_result())
    assert MAIN in text and "20 warmup + 30 timed" in text and "/tmp/x/abc.json" in text


def test_to_dict_is_json_with_every_field():
    data = json.loads(json.dumps(_result().to_dict()))
    assert data["best"] == [1, 2] and data["best_median_ms"] == 2.0 and data["signature"] == MAIN
    assert [(r["executors"], r["threads_per_executor"], r["vs_best"]) for r in data["settings"]] == \
        [(1, 1, 3.0), (1, 2, 1.0), (2, 1, 2.0)]
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
    assert "settings done; best" in err


def test_no_progress_bar_when_disabled(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_tune(FakeNative(), progress=False)
    assert capsys.readouterr() == ("", "")
