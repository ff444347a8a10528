"""Profiler: graph signatures, online cost model, critical-path-first order,
adopted settings, and what info()["graphs"] reports."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import graphi_tf
from graphi_tf import _loader

pytestmark = pytest.mark.timeout(180)

NATIVE = _loader.native()

_GRAPH_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np, tensorflow as tf, graphi_tf
    from graphi_tf import _loader
    extra = sys.argv[1] == "extra"
    scope = sys.argv[2] if len(sys.argv) > 2 else ""
    g = tf.Graph()
    with g.as_default(), tf.compat.v1.name_scope(scope or None):
        x = tf.compat.v1.placeholder(tf.float32, [8, 8], name="x")
        y = tf.tanh(tf.matmul(x, x)) + 1.0
        if extra:
            y = tf.nn.relu(y)
    with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        s.run(y, {x: np.ones((8, 8), np.float32)})
    print("GRAPHS" + json.dumps(_loader.native().graphs()))
""")


def _signatures(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", _GRAPH_SCRIPT, *args], env=env,
                          capture_output=True, text=True, timeout=120)
    line = [l for l in proc.stdout.splitlines() if l.startswith("GRAPHS")]
    assert line, proc.stderr[-3000:]
    return sorted(g["signature"] for g in json.loads(line[0][len("GRAPHS"):]))


def test_signature_is_identical_in_two_processes_running_the_same_model():
    assert _signatures("plain") == _signatures("plain")


def test_signature_changes_when_the_structure_changes():
    assert _signatures("plain") != _signatures("extra")


def test_signature_ignores_node_names():
    assert _signatures("plain") == _signatures("plain", "renamed_scope")


def _branchy_graph(long_first, size=160):
    """A root feeding a short branch and a long chain of matmuls.

    Every op is a matmul big enough to go through the scheduler rather than
    run inline, so with one team the ready-op order decides what runs first.
    `long_first` swaps which branch is built first, which changes the order
    in which the two become ready — all FIFO goes by.
    """
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [size, size], name="x")
        root = tf.matmul(x, x, name="root")

        def build_short():
            return tf.matmul(root, x, transpose_b=True, name="short_0")  # not CSE-able

        def build_long():
            v = root
            for i in range(6):
                v = tf.matmul(v, x, name=f"long_{i}")
            return v

        if long_first:
            v = build_long()
            short = build_short()
        else:
            short = build_short()
            v = build_long()
        out = tf.add(short, v, name="out")
    feed = {x: np.eye(size, dtype=np.float32) * 0.5}
    return g, out, feed


def _signature_of_graph_with_node(name):
    sigs = [r["signature"] for r in NATIVE.graphs()
            if name in NATIVE.graph_profile(r["signature"])["node_names"]]
    assert len(sigs) == 1, sigs
    return sigs[0]


def _first_start(timeline, name):
    return min(e["start_ns"] for e in timeline if e["node"] == name)


def _runs_long_chain_first(policy, long_first):
    graphi_tf.configure(executors=1, threads_per_executor=1, policy=policy)
    g, out, feed = _branchy_graph(long_first)
    # Grappler would re-sort the graph; without it the two branches become
    # ready in build order.
    base = tf.compat.v1.ConfigProto()
    base.graph_options.rewrite_options.disable_meta_optimizer = True
    with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config(base)) as sess:
        for _ in range(8):  # measure costs; ranks refresh on steps 1, 2, 4, 8
            sess.run(out, feed)
        sig = _signature_of_graph_with_node("long_0")
        assert NATIVE.graph_profile(sig)["costs_known"]
        NATIVE.record_next_step(sig)
        sess.run(out, feed)
    timeline = NATIVE.last_step_timeline(sig)
    return _first_start(timeline, "long_0") < _first_start(timeline, "short_0")


@pytest.mark.parametrize("long_first", [False, True])
def test_critical_path_first_runs_the_long_chain_before_the_short_branch(long_first):
    assert _runs_long_chain_first("critical_path_first", long_first)


def test_fifo_ignores_the_critical_path():
    # Whichever branch becomes ready first runs first, so across the two
    # build orders FIFO runs the short branch first at least once. One pair of
    # runs went long-first twice in about 1 of 10 runs of this file on a
    # 2-vCPU Xeon (before and after the change that noticed it), so up to
    # three pairs are tried; critical_path_first must go long-first every time.
    assert not all(_runs_long_chain_first("fifo", long_first)
                   for _ in range(3) for long_first in (False, True))


def test_info_lists_each_graph_with_steps_setting_source_and_costs():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 4])
        y = tf.matmul(x, x) * 3.0
    with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as sess:
        for _ in range(3):
            sess.run(y, {x: np.ones((4, 4), np.float32)})
    rows = [r for r in graphi_tf.info()["graphs"] if r["steps_run"] >= 3]
    assert rows
    row = rows[-1]
    assert len(row["signature"]) == 16 and row["node_count"] > 2
    assert row["source"] == "default" and row["costs_known"]
    assert (row["executors"], row["threads_per_executor"]) == (
        graphi_tf.info()["executors"], graphi_tf.info()["threads_per_executor"])


def test_adopted_cache_setting_is_used_and_reported_as_cache():
    info = graphi_tf.info()
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 4])
        y = tf.subtract(tf.tanh(x), 2.0, name="adopted_cache_probe")
    with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as sess:
        sess.run(y, {x: np.ones((4, 4), np.float32)})
        sig = _signature_of_graph_with_node(y.op.name)
        profile = NATIVE.graph_profile(sig)
        NATIVE.adopt_setting(sig, 1, 1, "fifo", "cache", profile["node_costs_ns"], profile["node_names"])
        sess.run(y, {x: np.ones((4, 4), np.float32)})
    row = [r for r in NATIVE.graphs() if r["signature"] == sig][0]
    assert row["source"] == "cache"
    assert (row["executors"], row["threads_per_executor"], row["policy"]) == (1, 1, "fifo")
    assert graphi_tf.info()["teams"] == [info["tiles"][0][:1]]


def test_user_configure_wins_over_an_adopted_setting():
    graphi_tf.configure(executors=1, threads_per_executor=1)
    NATIVE.adopt_setting("0123456789abcdef", info_e := 1, 1, "", "cache", [], [])
    assert graphi_tf.info()["setting_source"] == "configure"
    del info_e


def test_adopting_an_invalid_source_is_rejected():
    with pytest.raises(ValueError, match="cache, tuned"):
        NATIVE.adopt_setting("0123456789abcdef", 1, 1, "", "guess", [], [])
