"""Team merging: an expensive op that runs while every other team is idle borrows
those teams and uses all their cores (GRAPHI_MERGE_THRESHOLD_NS).

The threshold is read when an executor is created, so each test builds its own
session after setting it.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import graphi_tf
from graphi_tf import _graphi_tf as native
from proc_threads import threads

v1 = tf.compat.v1
USABLE = len(os.sched_getaffinity(0))
needs_two_cores = pytest.mark.skipif(USABLE < 2, reason="merging needs two teams")


def _chain_graph():
    """A chain of large matmuls: one op ready at a time, the other team idle."""
    g = tf.Graph()
    with g.as_default():
        rng = np.random.RandomState(0)
        # A variable, so that grappler cannot fold the chain into a constant.
        x = tf.Variable(rng.rand(384, 384).astype(np.float32) / 384).read_value()
        w = tf.constant(rng.rand(384, 384).astype(np.float32) / 384)
        for _ in range(12):
            x = tf.matmul(x, w) + 0.5
        out = tf.reduce_sum(x)
        init = v1.global_variables_initializer()
    return g, out, init


def _is_chain(signature):
    types = native.graph_profile(signature)["node_types"]
    return sum("MatMul" in t for t in types) == 12


def _run(config, steps):
    g, out, init = _chain_graph()
    with v1.Session(graph=g, config=config) as s:
        s.run(init)
        values = [s.run(out) for _ in range(steps)]
    return values


def _helper_ticks(team):
    return sum(t.cpu_ticks for t in threads().values() if t.name.startswith(f"graphi-e{team}-h"))


@needs_two_cores
def test_an_op_alone_on_two_teams_runs_merged_and_gives_the_stock_result(monkeypatch):
    monkeypatch.setenv("GRAPHI_MERGE_THRESHOLD_NS", "0")
    graphi_tf.configure(executors=2, threads_per_executor=1)
    before = native.scheduler_stats()["merged_ops"]
    got = _run(graphi_tf.session_config(), steps=5)
    assert native.scheduler_stats()["merged_ops"] > before
    expected = _run(v1.ConfigProto(), steps=1)[0]
    np.testing.assert_allclose(got, [expected] * 5, rtol=1e-5)


@needs_two_cores
def test_merged_ops_use_the_idle_teams_cores(monkeypatch):
    monkeypatch.setenv("GRAPHI_MERGE_THRESHOLD_NS", "0")
    graphi_tf.configure(executors=2, threads_per_executor=1)
    _run(graphi_tf.session_config(), steps=2)
    idle_team_before = _helper_ticks(1)
    _run(graphi_tf.session_config(), steps=150)
    # With one-core teams a split op never reaches the helpers (its leader
    # runs it); a merged op's work is dealt to every team's helper.
    assert _helper_ticks(1) - idle_team_before > 0


@needs_two_cores
def test_merging_off_leaves_every_op_on_one_team(monkeypatch):
    monkeypatch.setenv("GRAPHI_MERGE_THRESHOLD_NS", "off")
    graphi_tf.configure(executors=2, threads_per_executor=1)
    before = native.scheduler_stats()["merged_ops"]
    helpers_before = _helper_ticks(0) + _helper_ticks(1)
    _run(graphi_tf.session_config(), steps=150)
    assert native.scheduler_stats()["merged_ops"] == before
    # One-core teams run their ops on the leader: the helpers stay idle.
    assert _helper_ticks(0) + _helper_ticks(1) - helpers_before <= 2


@needs_two_cores
def test_the_timeline_marks_merged_ops_with_every_team(monkeypatch):
    monkeypatch.setenv("GRAPHI_MERGE_THRESHOLD_NS", "0")
    graphi_tf.configure(executors=2, threads_per_executor=1)
    g, out, init = _chain_graph()
    with v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        s.run(init)
        for _ in range(3):
            s.run(out)
        sig = next(p["signature"] for p in graphi_tf.info()["graphs"] if _is_chain(p["signature"]))
        native.record_next_step(sig)
        s.run(out)
    merged = [e for e in native.last_step_timeline(sig) if e["merged"]]
    assert merged, "no op ran merged"
    assert all(e["teams"] == [0, 1] for e in merged)


def test_an_invalid_threshold_is_reported_naming_the_setting_and_allowed_values():
    code = (
        "import tensorflow as tf, graphi_tf\n"
        "g = tf.Graph()\n"
        "with g.as_default(): c = tf.constant(1.0) + 1.0\n"
        "with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as s: print(s.run(c))\n"
    )
    env = dict(os.environ, GRAPHI_MERGE_THRESHOLD_NS="soon", TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "2.0" in done.stdout
    assert "GRAPHI_MERGE_THRESHOLD_NS=soon" in done.stderr
    assert "nanoseconds >= 0" in done.stderr and '"off"' in done.stderr
