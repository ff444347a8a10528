"""Zero-config autotuning, end to end: a process that runs a graph nobody tuned explores
the layouts during its first steps, adopts the result and caches it; a later process
starts from the cache; the switches and explicit settings are obeyed.

Each case runs in its own process (the autotuner and the teams are process-wide) on a
private GRAPHI_CACHE_DIR. The state machine itself is specified by the C++ unit tests
(tests/cc/autotuner_test.cc) with a fake clock; these tests check the wiring, not speed.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from graphi_tf import decision

pytestmark = pytest.mark.timeout(240)

# A small TF1 step on GRAPHI, run `steps` times; prints what info() says afterwards.
SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import tensorflow as tf
    import graphi_tf

    until_decided = sys.argv[1].endswith("+")  # "N+": N steps, then on until decided
    steps = int(sys.argv[1].rstrip("+"))
    mode = sys.argv[2] if len(sys.argv) > 2 else ""
    if mode == "configure_off":
        graphi_tf.configure(autotune=False)
    elif mode == "configure_layout":
        graphi_tf.configure(executors=1, threads_per_executor=1)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.get_variable(
            "x", initializer=np.random.RandomState(0).rand(48, 48).astype(np.float32) / 48,
            use_resource=True)
        init = tf.compat.v1.global_variables_initializer()
        outs = []
        for branch in range(4):
            y = x
            for _ in range(4):
                y = tf.tanh(tf.matmul(y, x))
            outs.append(y)
        total = tf.add_n(outs)
    sess = tf.compat.v1.Session(graph=graph, config=graphi_tf.session_config())
    sess.run(init)
    results = [sess.run(total) for _ in range(steps)]
    if until_decided:
        # Exploration begins once the graph has run for half a second; go on until the
        # autotuner has decided (or at most a minute of steps).
        def state():
            graphs = graphi_tf.info()["graphs"]
            main = max(graphs, key=lambda g: g["node_count"])
            return (main["autotune"] or {}).get("state")
        import time
        deadline = time.monotonic() + 60
        while state() in ("waiting", "exploring", None) and time.monotonic() < deadline:
            results.extend(sess.run(total) for _ in range(20))
        # The first step past the decision lets go of what the setting does not use
        # (cc/executor/runtime.h); the decision may have come with the batch's last step.
        results.append(sess.run(total))
    same = all(np.array_equal(results[0], r) for r in results)
    info = graphi_tf.info()
    main = max(info["graphs"], key=lambda g: g["node_count"])
    from graphi_tf import autotune_persister
    written = autotune_persister.persist_decisions()
    if mode == "write_stock_entry":
        from graphi_tf import cache
        cache.write_entry(cache.CacheEntry.build(
            signature=main["signature"], machine=cache.machine_fingerprint(info), executors=0,
            threads_per_executor=0, policy="", median_step_ms=1.0, note="test: stock"))
    if mode == "write_stock_point_entry":
        from graphi_tf import cache
        cache.write_entry(cache.CacheEntry.build(
            signature=main["signature"], machine=cache.machine_fingerprint(info), executors=0,
            threads_per_executor=0, inter_op_threads=2, intra_op_threads=1, policy="",
            median_step_ms=1.0, note="test: stock:2x1"))
    from graphi_tf import _loader
    native = _loader.native()
    team_threads = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                team_threads += f.read().startswith("graphi-e")
        except OSError:
            pass  # ended meanwhile
    json.dump({"main": main, "same_results": same, "enabled": info["autotune_enabled"],
               "team_threads": team_threads,
               # Of the set in force (scheduler_stats starts one if there is none: last).
               "generation": native.scheduler_stats()["generation"],
               "candidates": [list(c) for c in native.tuning_candidates()],
               "written": written, "cache": sorted(os.listdir(os.environ["GRAPHI_CACHE_DIR"]))
               if os.path.isdir(os.environ["GRAPHI_CACHE_DIR"]) else []}, sys.stdout)
""")


def run(tmp_path, steps, mode="", **env_extra):
    script = tmp_path / "step.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", GRAPHI_CACHE_DIR=str(tmp_path / "cache"), **env_extra)
    done = subprocess.run([sys.executable, str(script), str(steps), mode], env=env,
                          capture_output=True, text=True, timeout=200)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_an_untuned_graph_is_explored_then_adopted_and_cached(tmp_path):
    out, _ = run(tmp_path, "400+")
    tune = out["main"]["autotune"]
    assert tune["state"] in ("adopted", "kept_default"), tune
    assert out["main"]["source"] == "autotuned"
    assert decision.setting_label(tune["chosen"]) == out["main"]["setting"]
    # The rounds decide: the screening never drops every other setting.
    assert len(tune["round_medians_ms"]) >= 2, tune
    assert set(tune["screening_medians_ms"]) == {decision.setting_label(s) for s in tune["order"]}
    assert out["cache"], "the decision was not cached"
    assert out["same_results"]


def test_exploration_builds_one_team_set_per_layout_and_settles_on_it(tmp_path):
    # Later rounds revisit a layout on the threads of its first visit, and a layout chosen
    # keeps running on them, not on a new set with cold thread-local caches. Settled on
    # TensorFlow's executor (stock or a stock point), the process keeps no teams.
    out, _ = run(tmp_path, "400+")
    tune = out["main"]["autotune"]
    assert tune["state"] in ("adopted", "kept_default"), tune
    layouts = [c for c in out["candidates"] if not decision.is_stock(c)]
    assert tune["visits_done"] >= len(out["candidates"]), tune  # the screening round at least
    if decision.is_stock(tune["chosen"]):
        assert out["team_threads"] == 0, out
    else:
        assert out["team_threads"] > 0, out
        assert out["generation"] <= len(layouts), out["generation"]


def test_a_later_process_starts_from_the_cached_decision(tmp_path):
    first, _ = run(tmp_path, "400+")
    assert first["main"]["autotune"]["state"] in ("adopted", "kept_default")
    second, _ = run(tmp_path, 20)
    assert second["main"]["source"] == "cache"
    assert second["main"]["autotune"]["state"] == "skipped"
    assert second["main"]["setting"] == decision.setting_label(first["main"]["autotune"]["chosen"])


def test_every_layout_is_judged_against_tensorflows_own_pools(tmp_path):
    out, _ = run(tmp_path, "400+")
    tune = out["main"]["autotune"]
    assert tune["state"] in ("adopted", "kept_default"), tune
    assert all("stock" in round_ for round_ in tune["round_medians_ms"]), tune
    # Kept the default: the graph now runs on TensorFlow's pools; adopted: on teams, or on
    # TensorFlow's executor on a stock point's pools.
    assert out["main"]["stock_pools"] is decision.is_stock(tune["chosen"])
    assert out["same_results"]


def test_a_graph_cached_as_stock_starts_on_tensorflows_pools(tmp_path):
    run(tmp_path, 5, "write_stock_entry", GRAPHI_AUTOTUNE="0")
    out, _ = run(tmp_path, 5)
    assert out["main"]["source"] == "cache"
    assert out["main"]["stock_pools"] is True
    assert [out["main"]["executors"], out["main"]["threads_per_executor"]] == [0, 0]
    assert out["main"]["autotune"]["state"] == "skipped"
    assert out["same_results"]


def test_a_graph_cached_on_a_stock_point_starts_on_its_pools(tmp_path):
    run(tmp_path, 5, "write_stock_point_entry", GRAPHI_AUTOTUNE="0")
    out, _ = run(tmp_path, 5)
    assert out["main"]["source"] == "cache"
    assert (out["main"]["stock_pools"], out["main"]["setting"]) == (True, "stock:2x1")
    assert out["main"]["steps_on_stock_executor"] == out["main"]["steps_run"]
    assert out["main"]["autotune"]["state"] == "skipped"
    assert out["same_results"]


def test_graphi_executors_stock_runs_on_tensorflows_pools_and_is_never_overridden(tmp_path):
    out, _ = run(tmp_path, 100, GRAPHI_EXECUTORS="stock")
    assert out["main"]["source"] == "environment"
    assert out["main"]["stock_pools"] is True
    assert out["main"]["autotune"]["state"] == "waiting"
    assert out["same_results"]


def test_graphi_executors_stock_with_a_thread_count_names_both_settings(tmp_path):
    script = tmp_path / "step.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", GRAPHI_CACHE_DIR=str(tmp_path / "cache"),
               GRAPHI_EXECUTORS="stock", GRAPHI_THREADS_PER_EXECUTOR="2")
    done = subprocess.run([sys.executable, str(script), "3"], env=env, capture_output=True,
                          text=True, timeout=200)
    assert done.returncode != 0
    assert "GRAPHI_THREADS_PER_EXECUTOR=2 cannot go with GRAPHI_EXECUTORS=stock" in done.stderr


def test_graphi_autotune_0_leaves_the_default_layout(tmp_path):
    out, _ = run(tmp_path, 100, GRAPHI_AUTOTUNE="0")
    assert out["enabled"] is False
    assert out["main"]["autotune"]["state"] == "waiting"
    assert "autotuning is off" in out["main"]["autotune"]["reason"]
    assert out["main"]["source"] == "default"
    assert out["cache"] == []


def test_graphi_tune_0_turns_autotuning_off_too(tmp_path):
    out, _ = run(tmp_path, 100, GRAPHI_TUNE="0")
    assert out["enabled"] is False
    assert out["main"]["autotune"]["state"] == "waiting"
    assert "autotuning is off" in out["main"]["autotune"]["reason"]


def test_configure_autotune_false_turns_it_off(tmp_path):
    out, _ = run(tmp_path, 100, "configure_off")
    assert out["enabled"] is False
    assert out["main"]["autotune"]["state"] == "waiting"
    assert "autotuning is off" in out["main"]["autotune"]["reason"]


def test_an_explicit_layout_is_never_overridden(tmp_path):
    out, _ = run(tmp_path, 100, "configure_layout")
    assert out["main"]["source"] == "configure"
    assert [out["main"]["executors"], out["main"]["threads_per_executor"]] == [1, 1]
    assert out["main"]["autotune"]["state"] == "waiting"
    assert "explicit" in out["main"]["autotune"]["reason"]


def test_an_environment_layout_is_never_overridden(tmp_path):
    out, _ = run(tmp_path, 100, GRAPHI_EXECUTORS="1", GRAPHI_THREADS_PER_EXECUTOR="1")
    assert out["main"]["source"] == "environment"
    assert out["main"]["autotune"]["state"] == "waiting"


@pytest.mark.parametrize("switch", ["GRAPHI_AUTOTUNE", "GRAPHI_TUNE"])
def test_an_invalid_switch_names_the_setting(tmp_path, switch):
    script = tmp_path / "step.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", GRAPHI_CACHE_DIR=str(tmp_path / "cache"), **{switch: "maybe"})
    done = subprocess.run([sys.executable, str(script), "3"], env=env, capture_output=True,
                          text=True, timeout=200)
    assert done.returncode != 0
    assert f"{switch}='maybe' is not a valid setting; allowed: 0 (off) or 1 (on" in done.stderr
