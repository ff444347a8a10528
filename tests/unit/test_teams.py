"""Executor teams: layout, pinning, intra-op confinement, re-partitioning."""
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf

import graphi_tf
from graphi_tf import _loader

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proc_threads  # noqa: E402

pytestmark = pytest.mark.timeout(120)

USABLE = graphi_tf.info()["usable_cores"]
needs_two_cores = pytest.mark.skipif(USABLE < 2, reason="needs 2 usable cores")


def _run_matmul_graph(steps=3, size=512, executor="GRAPHI"):
    g = tf.Graph()
    with g.as_default():
        # A placeholder keeps grappler from folding the work into constants.
        a = tf.compat.v1.placeholder(tf.float32, [size, size])
        outs = [tf.reduce_sum(tf.matmul(a + float(i), a)) for i in range(4)]
    feed = {a: np.random.RandomState(0).rand(size, size).astype(np.float32)}
    config = tf.compat.v1.ConfigProto()
    config.experimental.executor_type = executor
    with tf.compat.v1.Session(graph=g, config=config) as sess:
        for _ in range(steps):
            result = sess.run(outs, feed)
    return result


@needs_two_cores
def test_each_worker_thread_is_pinned_to_its_own_team_core():
    info = graphi_tf.configure(executors=2, threads_per_executor=1)
    _run_matmul_graph()
    workers = proc_threads.graphi_threads()
    for k, cpus in enumerate(info["teams"]):
        leader = workers[f"graphi-e{k}-t0"]
        assert leader.cpus_allowed == [cpus[0]]


@needs_two_cores
def test_a_team_of_two_has_a_leader_and_one_pinned_helper_per_core():
    info = graphi_tf.configure(executors=1, threads_per_executor=2)
    team = info["teams"][0]
    assert len(team) == 2
    _run_matmul_graph()
    workers = proc_threads.graphi_threads()
    assert workers["graphi-e0-t0"].cpus_allowed == [team[0]]
    assert workers["graphi-e0-h0"].cpus_allowed == [team[0]]
    assert workers["graphi-e0-h1"].cpus_allowed == [team[1]]


def test_more_executors_than_cores_is_rejected_with_the_allowed_range():
    with pytest.raises(ValueError, match=r"GRAPHI_EXECUTORS.*allowed"):
        graphi_tf.configure(executors=USABLE + 1, threads_per_executor=1)


def test_non_positive_setting_is_rejected_naming_the_setting():
    with pytest.raises(ValueError, match="threads_per_executor"):
        graphi_tf.configure(executors=1, threads_per_executor=0)


def test_unknown_policy_is_rejected_listing_the_policies():
    with pytest.raises(ValueError, match="fifo, critical_path_first"):
        graphi_tf.configure(policy="random")


def test_rejected_setting_keeps_the_previous_one():
    before = graphi_tf.configure(executors=1, threads_per_executor=1)
    with pytest.raises(ValueError):
        graphi_tf.configure(executors=USABLE + 1, threads_per_executor=1)
    assert graphi_tf.info()["teams"] == before["teams"]


@needs_two_cores
def test_layout_changes_between_steps_without_restart_and_results_stay_equal():
    expected = _run_matmul_graph(executor="DEFAULT")
    for e, t in [(2, 1), (1, 2), (1, 1)]:
        info = graphi_tf.configure(executors=e, threads_per_executor=t)
        assert (info["executors"], info["threads_per_executor"]) == (e, t)
        np.testing.assert_allclose(_run_matmul_graph(), expected, rtol=1e-5)
        assert _loader.native().scheduler_stats()["teams"] == info["teams"]


def _cpu_ticks_by_group(run):
    before = proc_threads.threads()
    run()
    after = proc_threads.threads()
    graphi, others = 0, 0
    for tid, t in after.items():
        delta = t.cpu_ticks - (before[tid].cpu_ticks if tid in before else 0)
        if t.name.startswith("graphi-"):
            graphi += delta
        elif tid != os.getpid():  # the main thread only waits in session.run
            others += delta
    return graphi, others


def test_intra_op_work_runs_on_the_team_not_on_tensorflows_shared_pool():
    graphi_tf.configure(executors=1, threads_per_executor=USABLE)
    _run_matmul_graph(steps=1)  # warm up: create kernels and threads
    graphi, others = _cpu_ticks_by_group(lambda: _run_matmul_graph(steps=20, size=768))
    assert graphi > 20, "the workload should take measurable CPU time"
    assert others <= 0.05 * graphi + 2, (graphi, others)


def test_the_stock_executor_uses_threads_outside_the_teams():
    # The check above can fail: under DEFAULT the same work lands on
    # TensorFlow's own threads.
    _run_matmul_graph(steps=1, executor="DEFAULT")
    graphi, others = _cpu_ticks_by_group(
        lambda: _run_matmul_graph(steps=20, size=768, executor="DEFAULT"))
    assert others > graphi


def test_fake_68_core_machine_with_two_core_tiles_gets_disjoint_whole_tile_teams(tmp_path):
    root = tmp_path / "sys"
    cpu_dir = root / "devices" / "system" / "cpu"
    cpu_dir.mkdir(parents=True)
    (cpu_dir / "online").write_text("0-67\n")
    for cpu in range(68):
        index = cpu_dir / f"cpu{cpu}" / "cache" / "index2"
        index.mkdir(parents=True)
        (index / "level").write_text("2\n")
        (index / "type").write_text("Unified\n")
        first = cpu - cpu % 2
        (index / "shared_cpu_list").write_text(f"{first}-{first + 1}\n")
    kwargs = dict(sysfs_root=str(root), cgroup_root=str(tmp_path / "nocgroup"),
                  proc_root=str(tmp_path / "noproc"), affinity=list(range(68)))
    native = _loader.native()
    topo = native.discover_topology(**kwargs)
    assert len(topo["tiles"]) == 34 and all(len(t) == 2 for t in topo["tiles"])
    teams = native.build_team_layout(17, 4, **kwargs)
    cpus = [c for team in teams for c in team]
    assert len(cpus) == len(set(cpus)) == 68
    tile_of = {c: i for i, t in enumerate(topo["tiles"]) for c in t}
    for a, team_a in enumerate(teams):
        for team_b in teams[a + 1:]:
            assert not {tile_of[c] for c in team_a} & {tile_of[c] for c in team_b}
    with pytest.raises(ValueError, match="exceeds"):
        native.build_team_layout(35, 2, **kwargs)


def _run_python(code, env_extra=None, timeout=120):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_invalid_environment_setting_fails_the_session_naming_the_variable():
    proc = _run_python("""
        import tensorflow as tf, graphi_tf
        with tf.Graph().as_default() as g:
            x = tf.constant(1.0) + 1.0
        try:
            with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as s:
                s.run(x)
        except tf.errors.InvalidArgumentError as e:
            print("ERROR:", e.message)
    """, {"GRAPHI_EXECUTORS": "lots"})
    assert "ERROR:" in proc.stdout, proc.stderr[-2000:]
    assert "GRAPHI_EXECUTORS='lots'" in proc.stdout


def test_info_gives_the_reason_topology_discovery_failed_and_then_single_cpu_tiles():
    info = graphi_tf.info()
    error = info["topology_error"]
    if error is None:
        return  # discovery worked: tiles come from sysfs
    assert isinstance(error, str) and error
    assert info["tiles"] == [[cpu] for cpu in info["usable_cpus"]]


@pytest.mark.parametrize("variable, value, message", [
    ("GRAPHI_INLINE_THRESHOLD_NS", "fast",
     r"GRAPHI_INLINE_THRESHOLD_NS='fast' is not a valid setting; allowed: a whole number >= 0"),
    ("GRAPHI_ARRIVAL_ORDER", "oldest",
     r"GRAPHI_ARRIVAL_ORDER='oldest' is not a valid setting; allowed: 0 \(off\) or 1 \(on, the default\)"),
], ids=["inline_threshold", "arrival_order"])
def test_an_invalid_executor_setting_fails_the_session_naming_the_variable_and_values(
        monkeypatch, variable, value, message):
    # Read when the executor is created: this session's executor only.
    monkeypatch.setenv(variable, value)
    with tf.Graph().as_default() as g:
        x = tf.constant(1.0) + 1.0
    with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            s.run(x)


def test_library_built_for_another_tensorflow_refuses_to_import_with_both_versions():
    proc = _run_python("""
        import sys, types
        fake = types.ModuleType("graphi_tf._build_info")
        fake.TF_VERSION = "2.0.0"
        sys.modules["graphi_tf._build_info"] = fake
        try:
            import graphi_tf
        except ImportError as e:
            print("IMPORT ERROR:", e)
    """)
    assert "IMPORT ERROR:" in proc.stdout, proc.stderr[-2000:]
    assert "2.0.0" in proc.stdout and "2.21.0" in proc.stdout and "pip install" in proc.stdout


def test_importing_twice_registers_the_executor_once():
    proc = _run_python("""
        import importlib, tensorflow as tf, graphi_tf
        from graphi_tf import _loader
        tf.load_library(_loader._library_path())  # a second load must not abort
        importlib.reload(graphi_tf)
        print("OK", graphi_tf._loader.native().executor_registered())
    """)
    assert "OK True" in proc.stdout, proc.stderr[-2000:]


def test_repartitioning_while_functions_with_nested_calls_run_keeps_results():
    # Teams are torn down and rebuilt between steps while nested function
    # calls (async kernels completing on team threads) keep running.
    @tf.function(experimental_attributes={"_noinline": True})
    def inner(x):
        return tf.tanh(tf.matmul(x, x))

    @tf.function
    def outer(x):
        return inner(x) + inner(x * 0.5)

    x = tf.constant(np.random.RandomState(1).rand(48, 48).astype(np.float32) / 48)
    expected = outer(x).numpy()
    layouts = [(1, 1), (USABLE, 1), (1, USABLE)]
    with graphi_tf.executor_scope():
        for i in range(30):
            e, t = layouts[i % len(layouts)]
            graphi_tf.configure(executors=e, threads_per_executor=t)
            for _ in range(3):
                np.testing.assert_allclose(outer(x).numpy(), expected, rtol=1e-5)
