"""graphi-tf cache list|show|clear and graphi-tf tune, run as separate processes
(python -m graphi_tf.lab.cli) on a private GRAPHI_CACHE_DIR; and the cache round trip: a
process that runs a graph tuned by another process starts with the cached setting."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import graphi_tf
from graphi_tf import _loader, cache
from graphi_tf import _loader
from graphi_tf import decision as _decision_record

pytestmark = pytest.mark.timeout(120)

# A tiny TF1 step on GRAPHI: four independent matmul chains over a variable (a variable,
# not a constant, so grappler cannot fold the graph away).
STEP_SCRIPT = textwrap.dedent("""
    import numpy as np
    import tensorflow as tf
    import graphi_tf

    def build_step():
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.get_variable(
                "x", initializer=np.random.RandomState(0).rand(32, 32).astype(np.float32) / 32,
                use_resource=True)
            init = tf.compat.v1.global_variables_initializer()
            outs = []
            for branch in range(4):
                y = x
                for _ in range(3):
                    y = tf.tanh(tf.matmul(y, x))
                outs.append(y)
            total = tf.add_n(outs)
        sess = tf.compat.v1.Session(graph=graph, config=graphi_tf.session_config())
        sess.run(init)
        return lambda: sess.run(total)

    if __name__ == "__main__":
        import json, sys
        step = build_step()
        step()
        json.dump(graphi_tf._loader.native().graphs(), sys.stdout)
""")



def decide(round_medians, default, order):
    """The native rule's decision, as graphi_tf.decision records it."""
    return _decision_record.decide(_loader.native(), round_medians, default, order)


def _env(cache_dir, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", GRAPHI_CACHE_DIR=str(cache_dir), **extra)
    return env


def graphi_cli(cache_dir, *argv, **env):
    return subprocess.run([sys.executable, "-m", "graphi_tf.lab.cli", *argv], env=_env(cache_dir, **env),
                          capture_output=True, text=True, timeout=110)


def _entry(signature, machine=None, executors=2, threads=1, median=12.5, created=1_700_000_000.0,
           evidence=None, load_class="alone"):
    return cache.CacheEntry.build(
        signature=signature, machine=machine or cache.machine_fingerprint(graphi_tf.info()),
        executors=executors, threads_per_executor=threads, policy="fifo", median_step_ms=median,
        node_count=2, node_costs_ns=[5, 7], node_names=["x", "y"], created_unix=created, note="test",
        evidence=evidence, load_class=load_class)


def _evidence():
    """2x1 adopted over the default 1x2 (ratios 0.625, 0.571, 0.625: faster in 3 of 3); 1x1
    eliminated after two rounds (1.5x, 1.52x)."""
    rounds = [{(1, 2): 20.0, (2, 1): 12.5, (1, 1): 30.0}, {(1, 2): 21.0, (2, 1): 12.0, (1, 1): 32.0},
              {(1, 2): 20.0, (2, 1): 12.5}]
    return decide(rounds, (1, 2), [(1, 1), (1, 2), (2, 1)]).to_dict()


@pytest.fixture
def cache_dir(tmp_path):
    cache._reset_reports()
    return tmp_path / "cache"


def require_profiler_api():
    if not hasattr(_loader.native(), "graphs"):
        pytest.skip("native profiler API not built yet")


# ----------------------------------------------------------------------------- cache


def test_cache_list_shows_key_signature_setting_median_created_and_status(cache_dir):
    ours = _entry("00000000000000aa")
    foreign = _entry("00000000000000bb", machine={"cpu_model": "Elsewhere CPU", "usable_cores": 68,
                                                  "tiles": [2] * 34}, executors=34, threads=2)
    for e in (ours, foreign):
        cache.write_entry(e, cache_dir)
    proc = graphi_cli(cache_dir, "cache", "list")
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert str(cache_dir) in lines[0] and "2 entries" in lines[0]
    assert lines[1].split() == ["key", "signature", "load", "setting", "median", "created", "status"]
    row = {line.split()[0]: line.split() for line in lines[2:]}
    assert row[ours.key][1:6] == ["00000000000000aa", "alone", "2x1", "fifo", "12.500"]
    assert row[ours.key][-1] == "ok"
    assert row[foreign.key][1:5] == ["00000000000000bb", "alone", "34x2", "fifo"]
    assert row[foreign.key][-1] == "foreign"


def test_cache_list_json_gives_one_object_per_entry(cache_dir):
    entry = _entry("00000000000000aa")
    cache.write_entry(entry, cache_dir)
    proc = graphi_cli(cache_dir, "cache", "list", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout)
    assert len(rows) == 1
    assert {k: rows[0][k] for k in ("key", "signature", "executors", "threads_per_executor",
                                    "load_class", "median_step_ms", "created_unix", "status")} == {
        "key": entry.key, "signature": "00000000000000aa", "executors": 2, "threads_per_executor": 1,
        "load_class": "alone", "median_step_ms": 12.5, "created_unix": 1_700_000_000.0, "status": "ok"}


def test_cache_list_reports_a_corrupt_entry_on_stderr_and_lists_the_others(cache_dir):
    entry = _entry("00000000000000aa")
    cache.write_entry(entry, cache_dir)
    (cache_dir / ("f" * 32 + ".json")).write_text("{not json")
    proc = graphi_cli(cache_dir, "cache", "list", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [r["key"] for r in json.loads(proc.stdout)] == [entry.key]
    assert "GraphiCacheWarning" in proc.stderr and "f" * 32 + ".json" in proc.stderr


def test_cache_show_says_an_under_load_entrys_median_is_per_request(cache_dir):
    entry = _entry("00000000000000aa", load_class="under_load_8")
    cache.write_entry(entry, cache_dir)
    proc = graphi_cli(cache_dir, "cache", "show", entry.key[:8])
    assert proc.returncode == 0, proc.stderr[-2000:]
    field = {line.split()[0]: line.split(None, 1)[1] for line in proc.stdout.splitlines()[:12] if line.strip()}
    assert field["load"].startswith("under_load_8 (tuned with 6-11 steps in flight")
    assert field["median"] == "12.500 ms per request"


def test_cache_show_json_prints_the_entry_file(cache_dir):
    entry = _entry("00000000000000aa", evidence=_evidence())
    cache.write_entry(entry, cache_dir)
    proc = graphi_cli(cache_dir, "cache", "show", entry.key, "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == entry.to_dict()


def test_cache_show_prints_the_setting_the_decision_and_its_evidence(cache_dir):
    entry = _entry("00000000000000aa", evidence=_evidence())
    cache.write_entry(entry, cache_dir)
    proc = graphi_cli(cache_dir, "cache", "show", entry.key[:8])
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    field = {line.split()[0]: line.split(None, 1)[1] for line in lines[:12] if line.strip()}
    assert field["key"] == entry.key and field["signature"] == "00000000000000aa"
    assert field["setting"] == "2x1 fifo" and field["median"] == "12.500 ms per step"
    assert field["load"] == "alone (tuned one step at a time)"
    assert field["decision"] == "2x1 adopted: 0.62 of the default 1x2, faster in 3 of 3 rounds, 3 needed"
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["setting", "median", "ms"])
    rows = {line.split()[0]: line for line in lines[header + 1:header + 4]}
    assert rows["2x1"].split()[1:4] == ["12.500", "0.62", "3/3"] and "<- chosen" in rows["2x1"]
    assert "<- default" in rows["1x2"] and "eliminated after 2 rounds" in rows["1x1"]
    per_round = lines[next(i for i, line in enumerate(lines) if line.startswith("per round")) + 1:]
    assert per_round[0].split() == ["setting", "round", "1", "round", "2", "round", "3"]
    assert per_round[1].split() == ["1x1", "30.000", "(1.50)", "32.000", "(1.52)", "-"]
    assert per_round[3].split() == ["2x1", "12.500", "(0.62)", "12.000", "(0.57)", "12.500", "(0.62)"]


def test_cache_show_of_an_entry_without_evidence_says_so(cache_dir):
    entry = _entry("00000000000000aa")
    cache.write_entry(entry, cache_dir)
    proc = graphi_cli(cache_dir, "cache", "show", entry.key)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "decision" in proc.stdout and "no evidence recorded" in proc.stdout


def test_cache_show_of_an_unknown_key_exits_2_naming_it(cache_dir):
    cache.write_entry(_entry("00000000000000aa"), cache_dir)
    proc = graphi_cli(cache_dir, "cache", "show", "0123456789abcdef0123456789abcdef")
    assert proc.returncode == 2
    assert "no cache entry '0123456789abcdef0123456789abcdef'" in proc.stderr
    assert proc.stdout == ""


def test_cache_clear_removes_every_entry_and_prints_the_count(cache_dir):
    for sig in ("00000000000000aa", "00000000000000bb"):
        cache.write_entry(_entry(sig), cache_dir)
    proc = graphi_cli(cache_dir, "cache", "clear")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == f"removed 2 cache entries from {cache_dir}"
    assert list(cache_dir.glob("*.json")) == []


# ----------------------------------------------------------------------------- tune


def test_tune_script_without_build_step_exits_2_with_a_message(cache_dir, tmp_path):
    script = tmp_path / "nothing.py"
    script.write_text("x = 1\n")
    proc = graphi_cli(cache_dir, "tune", "--script", str(script))
    assert proc.returncode == 2
    assert "defines no build_step()" in proc.stderr


def test_tune_rejects_a_setting_that_does_not_fit_before_running(cache_dir, tmp_path):
    script = tmp_path / "step.py"
    script.write_text("def build_step():\n    return lambda: None\n")
    proc = graphi_cli(cache_dir, "tune", "--script", str(script), "--settings", "1x1,4096x1")
    assert proc.returncode == 2
    assert "setting 4096x1" in proc.stderr and "allowed:" in proc.stderr
    assert not cache_dir.exists()


def test_tune_script_prints_the_table_and_caches_the_best_setting(cache_dir, tmp_path):
    require_profiler_api()
    script = tmp_path / "step.py"
    script.write_text(STEP_SCRIPT)
    proc = graphi_cli(cache_dir, "tune", "--script", str(script), "--warmup", "1", "--rounds", "3",
                      "--steps", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    settings = _loader.native().symmetric_settings()
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["setting", "median", "ms"])
    table = lines[header + 1:header + 1 + len(settings)]
    assert sorted(tuple(map(int, line.split()[0].split("x"))) for line in table) == sorted(settings)
    assert sum("<- chosen" in line for line in table) == 1
    assert sum("default" in line.split("<- ")[-1] for line in table if "<- " in line) == 1
    assert "then 3 rounds of 1 discarded + 3 timed steps" in proc.stdout
    assert " adopted: " in lines[-1] or lines[-1].startswith("kept the default")
    assert "graphi_tf.tune [" in proc.stderr  # the progress bar
    assert len(list(cache_dir.glob("*.json"))) >= 1


def _run_script(script, cache_dir, **env):
    proc = subprocess.run([sys.executable, str(script)], env=_env(cache_dir, **env),
                          capture_output=True, text=True, timeout=110)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {g["signature"]: g for g in json.loads(proc.stdout)}


def test_a_new_process_running_a_tuned_graph_starts_with_the_cached_setting(cache_dir, tmp_path):
    require_profiler_api()
    script = tmp_path / "step.py"
    script.write_text(STEP_SCRIPT)
    proc = graphi_cli(cache_dir, "tune", "--script", str(script), "--warmup", "1", "--rounds", "3",
                      "--steps", "3", "--json", "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    tuned = json.loads(proc.stdout)

    graphs = _run_script(script, cache_dir)
    main = graphs[tuned["signature"]]
    assert main["source"] == "cache"
    assert [main["executors"], main["threads_per_executor"]] == tuned["best"]
    assert main["costs_known"] is True

    untouched = _run_script(script, cache_dir, GRAPHI_TUNE="0")
    assert untouched[tuned["signature"]]["source"] != "cache"


def test_tune_model_lstm_runs_the_bundled_model(cache_dir):
    require_profiler_api()
    proc = graphi_cli(cache_dir, "tune", "--model", "lstm", "--layers", "1", "--hidden", "16",
                      "--batch", "4", "--time-steps", "3", "--warmup", "1", "--rounds", "3", "--steps", "2",
                      "--json", "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert tuple(result["best"]) in {tuple(s) for s in _loader.native().symmetric_settings()}
    assert result["cache_paths"] and all(os.path.exists(p) for p in result["cache_paths"])


def test_tune_model_pathnet_in_function_mode_runs_the_bundled_model(cache_dir):
    require_profiler_api()
    proc = graphi_cli(cache_dir, "tune", "--model", "pathnet", "--size", "small", "--mode", "function",
                      "--warmup", "1", "--rounds", "3", "--steps", "2", "--settings", "1x1", "--no-cache",
                      "--json", "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    default = list(_loader.native().default_setting())
    assert [[r["executors"], r["threads_per_executor"]] for r in result["settings"]] == \
        ([[1, 1]] if default == [1, 1] else [[1, 1], default])
    assert result["default_added"] is (default != [1, 1])
    assert result["best"] in ([1, 1], default)


def test_tune_help_gives_the_defaults_of_warmup_rounds_and_steps(cache_dir):
    proc = graphi_cli(cache_dir, "tune", "--help")
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = " ".join(proc.stdout.split())
    assert "--rounds ROUNDS" in text
    for flag, default in (("--warmup", 10), ("--rounds", 6), ("--steps", 10)):
        after = text.split("options:", 1)[1].split(f"{flag} {flag.strip('-').upper()}", 1)[1]
        assert f"(default {default}" in after.split("--", 1)[0], flag


def test_tune_rejects_two_rounds_naming_the_minimum(cache_dir, tmp_path):
    script = tmp_path / "step.py"
    script.write_text("def build_step():\n    return lambda: None\n")
    proc = graphi_cli(cache_dir, "tune", "--script", str(script), "--rounds", "2")
    assert proc.returncode == 2
    assert "--rounds" in proc.stderr and "allowed: a whole number >= 3" in proc.stderr


def test_tune_lstm_flags_with_another_model_exit_2_naming_the_flags(cache_dir):
    proc = graphi_cli(cache_dir, "tune", "--model", "googlenet", "--hidden", "16", "--no-progress")
    assert proc.returncode == 2
    assert "--hidden: for --model lstm only, not --model googlenet" in proc.stderr
