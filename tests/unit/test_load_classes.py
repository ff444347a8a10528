"""Settings per load class, end to end: a graph follows the adopted setting of the load
class it is in (one step at a time, or a level of steps in flight), changes class when
the load lasts, and the autotuner caches one decision per class.

Each case runs in its own process (the runtime and autotuner are process-wide) on a
private GRAPHI_CACHE_DIR. The class tracker and the autotuner's per-class rules are
specified by the C++ unit tests (tests/cc/load_class_test.cc, autotuner_test.cc); these
tests check the wiring through the executor, the registry, the runtime and the cache.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(240)

# A TF1 step of a millisecond or two on GRAPHI. Phases (argv): "alone N" runs N steps one
# at a time, "load N" runs N steps on each of 4 threads at once; after each phase it
# records the main graph's load class and the setting in force.
SCRIPT = textwrap.dedent("""
    import json, os, sys, threading, time
    import numpy as np
    import tensorflow as tf
    import graphi_tf
    from graphi_tf import _loader

    native = _loader.native()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.get_variable(  # a variable, so that grappler folds nothing
            "x", initializer=np.random.RandomState(0).rand(256, 256).astype(np.float32) / 256,
            use_resource=True)
        init = tf.compat.v1.global_variables_initializer()
        y = x
        for _ in range(8):
            y = tf.tanh(tf.matmul(y, x))
    sess = tf.compat.v1.Session(graph=graph, config=graphi_tf.session_config())
    sess.run(init)
    expected = sess.run(y)

    def main_graph():
        return max(graphi_tf.info()["graphs"], key=lambda g: g["node_count"])

    def run_alone(n):
        return all(np.array_equal(sess.run(y), expected) for _ in range(n))

    def run_loaded(n, clients=4):
        same = []
        def client():
            same.append(all(np.array_equal(sess.run(y), expected) for _ in range(n)))
        threads = [threading.Thread(target=client) for _ in range(clients)]
        for t in threads: t.start()
        for t in threads: t.join()
        return all(same)

    def decided_for(load_class):  # "alone", or "under_load": any level
        a = main_graph()["autotune"] or {}
        return a.get("load_class", "").startswith(load_class) and \
            a.get("state") in ("adopted", "kept_default")

    phases = []
    args = sys.argv[1:]
    while args:
        what, n = args[0], args[1]
        args = args[2:]
        if what == "adopt":  # "adopt alone:1x1,under_load:stock" (under_load: every level)
            sig = main_graph()["signature"]
            for item in n.split(","):
                load_class, setting = item.split(":")
                e, t = (0, 0) if setting == "stock" else map(int, setting.split("x"))
                levels = [f"under_load_{2 ** k}" for k in range(1, 7)]
                for c in (levels if load_class == "under_load" else [load_class]):
                    native.adopt_setting(sig, e, t, "", "cache", [], [], c)
            continue
        until = n.endswith("+")  # "N+": N steps, then on until decided for this class
        n = int(n.rstrip("+"))
        run = run_alone if what == "alone" else run_loaded
        same = run(n)
        deadline = time.monotonic() + 90
        while until and not decided_for("alone" if what == "alone" else "under_load") \\
                and time.monotonic() < deadline:
            same = run(20) and same
        g = main_graph()
        rt = graphi_tf.info()
        phases.append({"phase": what, "load_class": g["load_class"], "stock_pools": rt["stock_pools"],
                       "setting": [rt["executors"], rt["threads_per_executor"]],
                       "source": g["source"], "steps_on_stock_executor": g["steps_on_stock_executor"],
                       "autotune": g["autotune"], "same": same})
    from graphi_tf import autotune_persister, cache
    autotune_persister.persist_decisions()
    entries = [{"load_class": e.load_class, "setting": list(cache.setting_of(e.setting))}
               for e in cache.list_entries()]
    json.dump({"phases": phases, "entries": entries}, sys.stdout)
""")


def run(tmp_path, *phases, **env_extra):
    script = tmp_path / "load.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", GRAPHI_CACHE_DIR=str(tmp_path / "cache"), **env_extra)
    done = subprocess.run([sys.executable, str(script), *phases], env=env,
                          capture_output=True, text=True, timeout=220)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_graph_follows_the_adopted_setting_of_the_load_class_it_is_in(tmp_path):
    out = run(tmp_path, "alone", "3", "adopt", "alone:1x1,under_load:stock",
              "alone", "20", "load", "60", "alone", "40", GRAPHI_AUTOTUNE="0")
    _, alone, loaded, alone_again = out["phases"]
    assert (alone["load_class"], alone["stock_pools"], alone["setting"]) == ("alone", False, [1, 1])
    assert loaded["load_class"].startswith("under_load_"), loaded
    assert loaded["stock_pools"]
    assert loaded["steps_on_stock_executor"] > 0
    assert (alone_again["load_class"], alone_again["stock_pools"], alone_again["setting"]) == \
        ("alone", False, [1, 1])
    assert all(p["same"] for p in out["phases"])


def test_a_few_overlapping_steps_keep_the_graph_alone(tmp_path):
    out = run(tmp_path, "alone", "3", "adopt", "alone:1x1,under_load:stock",
              "load", "2", GRAPHI_AUTOTUNE="0")
    assert out["phases"][-1]["load_class"] == "alone"
    assert out["phases"][-1]["setting"] == [1, 1]


def test_a_class_without_its_own_setting_runs_with_another_classs(tmp_path):
    out = run(tmp_path, "alone", "3", "adopt", "alone:1x1", "load", "60", GRAPHI_AUTOTUNE="0")
    loaded = out["phases"][-1]
    assert loaded["load_class"].startswith("under_load_"), loaded
    assert (loaded["stock_pools"], loaded["setting"]) == (False, [1, 1])


def test_the_autotuner_caches_one_decision_per_load_class(tmp_path):
    out = run(tmp_path, "alone", "400+", "load", "100+")
    alone, loaded = out["phases"]
    assert alone["autotune"]["load_class"] == "alone", alone["autotune"]
    level = loaded["autotune"]["load_class"]
    assert level.startswith("under_load_"), loaded["autotune"]
    assert loaded["autotune"]["load_clients"] >= 2
    classes = sorted(e["load_class"] for e in out["entries"])
    assert classes[0] == "alone" and level in classes, out["entries"]
    assert all(c.startswith("under_load_") for c in classes[1:]), out["entries"]
    chosen = {a["autotune"]["load_class"]: a["autotune"]["chosen"] for a in (alone, loaded)}
    for e in out["entries"]:
        if e["load_class"] in chosen:
            assert e["setting"] == chosen[e["load_class"]]
    assert all(p["same"] for p in out["phases"])


def test_adopting_an_unknown_load_class_names_the_allowed_ones():
    from graphi_tf import _loader

    with pytest.raises(ValueError, match="load_class='busy' is invalid; allowed: alone, under_load_2, "
                                         "under_load_4, under_load_8, under_load_16, under_load_32, "
                                         "under_load_64"):
        _loader.native().adopt_setting("0123456789abcdef", 1, 1, "", "cache", [], [], "busy")
