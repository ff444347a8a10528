"""Stock points: GRAPHI_EXECUTORS=stock:IxA runs every step on TensorFlow's own executor, with
its ops on an inter-op pool of I threads GRAPHI owns and their kernels' intra-op work on a
pool of A threads (TensorFlow's inter_op / intra_op_parallelism_threads, without a new
process). Each case runs in its own process, since the setting is read when a graph's
executor is made."""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(180)

SCRIPT = r"""
import glob, json, os
import numpy as np
import tensorflow as tf
import graphi_tf

g = tf.Graph()
with g.as_default():
    # 768x768: oneDNN runs a matmul whose operands fit in L2 on one thread
    # (ExecuteSingleThreadedGemm: 384x384's 1.8 MB did, on a 2 MB-L2 Xeon), and these
    # (7 MB) must split over the intra-op pool.
    x = tf.compat.v1.placeholder(tf.float32, [768, 768])  # fed: grappler cannot fold the step
    y = x
    for _ in range(3):
        y = tf.nn.relu(tf.matmul(y, x) * 0.005)
    total = tf.reduce_sum(y)
config = graphi_tf.session_config() if os.environ.get("ARM") == "graphi" else None
with tf.compat.v1.Session(graph=g, config=config) as s:
    feed = {x: np.random.RandomState(0).rand(768, 768).astype(np.float32)}
    values = [float(s.run(total, feed)) for _ in range(10)]

def threads(prefix):
    out = []
    for task in glob.glob(f"/proc/{os.getpid()}/task/*"):
        with open(f"{task}/comm") as f:
            if f.read().strip().startswith(prefix):
                with open(f"{task}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                out.append(int(fields[11]) + int(fields[12]))  # utime + stime, ticks
    return out

info = graphi_tf.info()
print(json.dumps({"value": values[-1], "setting": info.get("setting"),
                  "steps": [[x["steps_run"], x["steps_on_stock_executor"]] for x in info["graphs"]],
                  "inter": threads("gstock-inter"), "intra": threads("gstock-intra")}))
"""


def run(arm, executors=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", GRAPHI_AUTOTUNE="0", ARM=arm)
    if executors is not None:
        env["GRAPHI_EXECUTORS"] = executors
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=150)
    return done


def result(arm, executors=None):
    import json

    done = run(arm, executors)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_stock_point_runs_every_step_on_tensorflows_executor_with_stocks_result():
    stock = result("stock")
    point = result("graphi", "stock:2x1")
    assert point["setting"] == "stock:2x1"
    assert point["steps"] == [[10, 10]]
    assert point["value"] == pytest.approx(stock["value"], rel=1e-5)


def test_a_stock_point_has_its_inter_op_and_intra_op_threads():
    point = result("graphi", "stock:1x2")
    assert len(point["inter"]) == 1 and len(point["intra"]) == 2
    point = result("graphi", "stock:2x1")
    assert len(point["inter"]) == 2 and len(point["intra"]) == 1


def test_kernels_on_a_stock_point_split_their_work_over_its_intra_op_pool():
    # Matmuls of 768x768 on an intra-op pool of 2: its threads take blocks, so they use CPU.
    point = result("graphi", "stock:1x2")
    assert sum(point["intra"]) > 0, point


def test_plain_stock_makes_no_pools_of_its_own():
    point = result("graphi", "stock")
    assert point["setting"] == "stock" and point["inter"] == [] and point["intra"] == []


@pytest.mark.parametrize("bad", ["stock:0x1", "stock:2", "stock:2x1x1", "stock:"])
def test_an_invalid_stock_point_names_the_variable_and_the_allowed_values(bad):
    done = run("graphi", bad)
    assert done.returncode != 0
    assert f"GRAPHI_EXECUTORS='{bad}' is not a valid setting; allowed: \"stock\", \"stock:IxA\"" in done.stderr


SWITCH = r"""
import collections, json, os, time
import numpy as np
import tensorflow as tf
import graphi_tf

g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [256, 256])
    y = x
    for _ in range(4):
        y = tf.tanh(tf.matmul(y, x * 0.01))
    total = tf.reduce_sum(y)
feed = {x: np.ones((256, 256), np.float32)}

def threads():
    # Thread name prefix ("graphi-e0", "gstock-inter") -> count.
    out = collections.Counter()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue  # ended meanwhile
        if name.startswith(("graphi-e", "gstock-")):
            out[name.rsplit("-", 1)[0]] += 1
    return dict(out)

seen = {}
with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as s:
    if os.environ.get("ASK_FOR_TEAMS"):
        # As a step that looked just before the setting moved to stock, or one nested on a
        # team thread, does: ask for the teams while steps run on TensorFlow's executor,
        # from the start or right after a switch back from teams.
        s.run(total, feed)
        if os.environ["ASK_FOR_TEAMS"] == "after a switch":
            graphi_tf.configure(2, 1)
            for _ in range(3):
                s.run(total, feed)
            graphi_tf.configure()
        graphi_tf._loader.native().scheduler_stats()
        seen["asked"] = threads()
        for _ in range(3):
            s.run(total, feed)
        time.sleep(0.2)
        seen["after"] = threads()
    else:
        for label, layout in [("stock:2x1", None), ("2x1", (2, 1)), ("stock:2x1 again", None)]:
            graphi_tf.configure(*layout) if layout else graphi_tf.configure()
            for _ in range(3):
                s.run(total, feed)
            time.sleep(0.2)  # let go threads exit
            seen[label] = threads()
print(json.dumps(seen))
"""


def switch(**extra_env):
    import json

    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", GRAPHI_AUTOTUNE="0", GRAPHI_EXECUTORS="stock:2x1",
               **extra_env)
    done = subprocess.run([sys.executable, "-c", SWITCH], env=env, capture_output=True, text=True,
                          timeout=150)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_nothing_keeps_the_threads_of_a_setting_no_longer_in_force():
    # A stock point's pools end once another setting is in force and nothing explores, and
    # teams end once steps run on TensorFlow's executor again: a process holds the threads of
    # the setting it runs on, as a process started on that setting does.
    seen = switch()
    assert seen["stock:2x1"] == {"gstock-inter": 2, "gstock-intra": 1}, seen
    assert seen["2x1"] == {"graphi-e0": 2, "graphi-e1": 2}, seen  # a leader and a helper each
    assert seen["stock:2x1 again"] == {"gstock-inter": 2, "gstock-intra": 1}, seen


def test_teams_asked_for_while_steps_run_on_tensorflows_executor_end_with_its_next_step():
    # A step that looked at the setting just before it moved to stock, or one nested on a team
    # thread, may still ask for teams; they must not stay beside the stock point's pools.
    seen = switch(ASK_FOR_TEAMS="on stock")
    assert {"graphi-e0", "graphi-e1"} <= seen["asked"].keys(), seen  # the teams started
    assert seen["after"] == {"gstock-inter": 2, "gstock-intra": 1}, seen


def test_teams_asked_for_before_the_first_step_on_stock_end_with_the_next_one():
    # The teams in force when the setting moves to stock, asked for again before any step on
    # stock let them go, go with the next step on stock all the same.
    seen = switch(ASK_FOR_TEAMS="after a switch")
    assert {"graphi-e0", "graphi-e1"} <= seen["asked"].keys(), seen  # the teams started
    assert seen["after"] == {"gstock-inter": 2, "gstock-intra": 1}, seen


EXPLORE = r"""
import glob, json, os, time
import numpy as np
import tensorflow as tf
import graphi_tf

g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [64, 256])
    w = tf.constant(np.random.RandomState(0).rand(256, 256).astype(np.float32) * 0.01)
    branches = []
    for _ in range(4):
        y = x
        for _ in range(20):
            y = tf.tanh(tf.matmul(y, w))
        branches.append(y)
    total = tf.add_n(branches)
feed = {x: np.random.RandomState(1).rand(64, 256).astype(np.float32)}
def allowed(task):
    with open(f"{task}/status") as f:
        return next(l.split(":", 1)[1].strip() for l in f if l.startswith("Cpus_allowed_list"))

def graphi_threads():
    # "name@tid" -> allowed cpus, for the teams' and the stock points' threads.
    out = {}
    for task in glob.glob(f"/proc/{os.getpid()}/task/*"):
        try:
            with open(f"{task}/comm") as f:
                name = f.read().strip()
            if name.startswith(("graphi-e", "gstock")):
                out[name + "@" + os.path.basename(task)] = allowed(task)
        except (OSError, StopIteration):
            continue  # ended meanwhile
    return out

explored = {}  # every team and pool thread seen while exploring
with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as s:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        for _ in range(20):
            s.run(total, feed)
        main = max(graphi_tf.info()["graphs"], key=lambda x: x["node_count"])
        state = (main["autotune"] or {}).get("state")
        if state == "exploring":
            explored.update(graphi_threads())
        if state not in (None, "waiting", "exploring"):
            break
    for _ in range(3):  # the first steps after the decision let go of what it does not use
        s.run(total, feed)
    time.sleep(0.2)
    after = graphi_threads()

print(json.dumps({"state": main["autotune"]["state"], "visited": main["autotune"]["screening_medians_ms"],
                  "chosen": main["autotune"]["chosen"], "setting": graphi_tf.info()["setting"],
                  "process": allowed(f"/proc/{os.getpid()}/task/{os.getpid()}"),
                  "explored": explored, "after": after}))
"""


def explore(tmp_path):
    import json

    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", GRAPHI_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", EXPLORE], env=env, capture_output=True, text=True,
                          timeout=150)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_stock_points_the_autotuner_visits_run_on_every_usable_cpu(tmp_path):
    # The autotuner switches settings from whichever thread ends a step, often a pinned team
    # thread: a stock point's threads made there must not inherit its one-cpu mask.
    out = explore(tmp_path)
    assert any(label.startswith("stock:") for label in out["visited"]), out
    pools = {name: cpus for name, cpus in out["explored"].items() if name.startswith("gstock")}
    assert pools, out
    assert set(pools.values()) == {out["process"]}, out


def test_after_exploring_only_the_chosen_settings_threads_remain_those_it_was_explored_on(tmp_path):
    out = explore(tmp_path)
    assert out["state"] in ("adopted", "kept_default"), out
    after = set(out["after"])
    # The very threads the chosen setting ran on while it was explored, and no others.
    assert after <= set(out["explored"]), out
    kinds = {name.split("@")[0].rsplit("-", 1)[0] for name in after}
    if out["setting"] == "stock":
        assert kinds == set(), out
    elif out["setting"].startswith("stock:"):
        assert kinds == {"gstock-inter", "gstock-intra"}, out
    else:
        assert kinds and all(kind.startswith("graphi-e") for kind in kinds), out
