"""Work-conserving teams: while one team runs a long parallel op, the leader of an
idle team takes blocks of it on its own core (GRAPHI_STEAL_THRESHOLD_NS,
GRAPHI_SHARE_ALWAYS_NS), without putting more runnable GRAPHI threads on the
machine than it has cores.

The thresholds are read when an executor is created, so each test builds its own
session after setting them.
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
needs_two_cores = pytest.mark.skipif(USABLE < 2, reason="work conservation needs two teams")
pytestmark = pytest.mark.timeout(300)

SIZE = 1024


def _matmul_graph(size=SIZE):
    """One large matmul: a single op, so only one team is handed work."""
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.float32, [size, size])
        out = tf.reduce_sum(tf.matmul(a, a))
    return g, a, out


def _feed(a):
    size = int(a.shape[0])
    return {a: np.random.RandomState(0).rand(size, size).astype(np.float32) / size}


def _team_ticks(team):
    """CPU ticks of team `team`'s leader and helpers."""
    return sum(t.cpu_ticks for t in threads().values() if t.name.startswith(f"graphi-e{team}-"))


def _per_step_team_ticks(steps, warmup=3):
    """Per timed step: the CPU ticks of each of the two teams during it."""
    # Large enough for tens of clock ticks (10 ms) per step.
    g, a, out = _matmul_graph(size=2048)
    feed = _feed(a)
    per_step = []
    with v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        for _ in range(warmup):  # profiles the matmul
            s.run(out, feed)
        for _ in range(steps):
            before = (_team_ticks(0), _team_ticks(1))
            s.run(out, feed)
            per_step.append((_team_ticks(0) - before[0], _team_ticks(1) - before[1]))
    return per_step


@needs_two_cores
def test_an_idle_teams_threads_work_during_the_other_teams_long_matmul():
    graphi_tf.configure(executors=2, threads_per_executor=1)
    before = native.scheduler_stats()["blocks_stolen_per_team"]
    per_step = _per_step_team_ticks(steps=4)
    after = native.scheduler_stats()["blocks_stolen_per_team"]
    assert sum(after) > sum(before), "no block was stolen"
    # One op per step runs on one team; without work conservation the other
    # team gets (almost) nothing of it. Here both share it.
    for team0, team1 in per_step:
        assert min(team0, team1) >= 0.25 * (team0 + team1), per_step


@needs_two_cores
def test_work_conservation_off_leaves_the_idle_team_idle(monkeypatch):
    monkeypatch.setenv("GRAPHI_STEAL_THRESHOLD_NS", "off")
    graphi_tf.configure(executors=2, threads_per_executor=1)
    before = native.scheduler_stats()["blocks_stolen_per_team"]
    per_step = _per_step_team_ticks(steps=3)
    assert native.scheduler_stats()["blocks_stolen_per_team"] == before
    for team0, team1 in per_step:
        assert min(team0, team1) <= 0.1 * (team0 + team1), per_step


def _matmul_execution_recorded(steps=3):
    """The timeline entry of the large matmul in a recorded step, after `steps` profiled ones."""
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.float32, [SIZE, SIZE])
        out = tf.reduce_sum(tf.matmul(a, a, name="big_matmul"))
    feed = _feed(a)
    with v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        for _ in range(steps):
            s.run(out, feed)
        sig, = [r["signature"] for r in native.graphs()
                if "big_matmul" in native.graph_profile(r["signature"])["node_names"]]
        native.record_next_step(sig)
        s.run(out, feed)
    entry, = [e for e in native.last_step_timeline(sig) if e["node"] == "big_matmul"]
    return entry


@needs_two_cores
def test_the_timeline_marks_a_matmul_offered_to_the_idle_team_as_shared():
    graphi_tf.configure(executors=2, threads_per_executor=1)
    assert _matmul_execution_recorded()["shared"] is True


@needs_two_cores
def test_the_timeline_leaves_that_matmul_unshared_with_work_conservation_off(monkeypatch):
    monkeypatch.setenv("GRAPHI_STEAL_THRESHOLD_NS", "off")
    graphi_tf.configure(executors=2, threads_per_executor=1)
    assert _matmul_execution_recorded()["shared"] is False


# An elementwise op of tens of microseconds (a tanh over 64 Ki floats, 0.23 ms a step with the
# reduction and the feed on the 2-vCPU Xeon): Eigen splits it into blocks an idle team can take,
# but they are too short to be worth the hand-off, so by default it is not shared (docs/design.md,
# "Which ops are worth sharing"; shared, that step took 0.31 ms).
SHORT_OP_FLOATS = 64 * 1024


def _blocks_stolen_running_tanh(steps=20):
    """Blocks stolen by idle leaders while a tanh graph runs `steps` steps."""
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.float32, [SHORT_OP_FLOATS])
        out = tf.reduce_sum(tf.math.tanh(a))
    feed = {a: np.random.RandomState(0).rand(SHORT_OP_FLOATS).astype(np.float32)}
    with v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        for _ in range(3):  # profiles the ops
            s.run(out, feed)
        before = sum(native.scheduler_stats()["blocks_stolen_per_team"])
        for _ in range(steps):
            s.run(out, feed)
        return sum(native.scheduler_stats()["blocks_stolen_per_team"]) - before


@needs_two_cores
def test_a_short_op_stays_on_its_team_although_another_team_is_idle():
    graphi_tf.configure(executors=2, threads_per_executor=1)
    assert _blocks_stolen_running_tanh() == 0


@needs_two_cores
def test_a_threshold_of_zero_shares_that_same_short_op(monkeypatch):
    # The control of the test above: the op is one an idle team can take blocks of.
    monkeypatch.setenv("GRAPHI_STEAL_THRESHOLD_NS", "0")
    graphi_tf.configure(executors=2, threads_per_executor=1)
    assert _blocks_stolen_running_tanh() > 0


# Two chains: A, one long matmul, and B, a shorter matmul and then a long one
# that starts while A's team is busy. On a 1-core team an op on its own pool
# runs on the leader alone; split for every core, half its blocks go to the
# helper that shares the leader's core (or to a thief, rarely: the helper has
# usually claimed them first). So the helpers' CPU time shows whether the op
# was split. The idle-team rule is kept out with a threshold no op reaches,
# which leaves the always-share rule alone.
LONG_OP_SIZE = 768
NO_IDLE_TEAM_SHARING = {"GRAPHI_STEAL_THRESHOLD_NS": str(60 * 10**9)}


def _helpers_cpu_share_beside_a_busy_team(steps=8):
    """The team helpers' part of the GRAPHI threads' CPU time over `steps` steps."""
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [LONG_OP_SIZE, LONG_OP_SIZE])
        y = v1.placeholder(tf.float32, [LONG_OP_SIZE // 2, LONG_OP_SIZE // 2])
        chain_a = tf.reduce_sum(tf.matmul(x, x))
        scale = tf.reduce_sum(tf.matmul(y, y))
        chain_b = tf.reduce_sum(tf.matmul(x * scale, x))
        out = chain_a + chain_b
    rng = np.random.RandomState(0)
    feed = {x: rng.rand(LONG_OP_SIZE, LONG_OP_SIZE).astype(np.float32) / LONG_OP_SIZE,
            y: rng.rand(LONG_OP_SIZE // 2, LONG_OP_SIZE // 2).astype(np.float32) / LONG_OP_SIZE}
    with v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        for _ in range(3):  # profiles the ops
            s.run(out, feed)
        used = _schedstat_deltas(lambda: [s.run(out, feed) for _ in range(steps)])
    cpu = {name: ns for name, (ns, _) in used.items()}
    helpers = sum(ns for name, ns in cpu.items() if "-h" in name)
    print("CPU ms per GRAPHI thread:", {name: round(ns / 1e6, 1) for name, ns in cpu.items()})
    return helpers / sum(cpu.values())


@needs_two_cores
def test_a_long_op_started_while_the_other_team_is_busy_stays_on_its_team(monkeypatch):
    # Splitting it anyway queued its extra blocks on the owner's one core until
    # the other team freed up: 2x1 ran 19% slower on the LSTM large step
    # (docs/design.md, "Work conservation"). Seen: 0.0 of the CPU time.
    for name, value in NO_IDLE_TEAM_SHARING.items():
        monkeypatch.setenv(name, value)
    graphi_tf.configure(executors=2, threads_per_executor=1)
    assert _helpers_cpu_share_beside_a_busy_team() <= 0.05


@needs_two_cores
def test_share_always_splits_that_op_onto_its_teams_helper(monkeypatch):
    # The control of the test above, and the opt-in it stays available as.
    # Seen: 0.38 and 0.79 of the CPU time on the 2-vCPU Xeon.
    for name, value in NO_IDLE_TEAM_SHARING.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GRAPHI_SHARE_ALWAYS_NS", str(1000 * 1000))
    graphi_tf.configure(executors=2, threads_per_executor=1)
    assert _helpers_cpu_share_beside_a_busy_team() >= 0.15


@needs_two_cores
def test_shared_matmul_gives_the_stock_result():
    graphi_tf.configure(executors=2, threads_per_executor=1)
    g, a, out = _matmul_graph()
    feed = _feed(a)
    with v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        got = [s.run(out, feed) for _ in range(5)]
    with v1.Session(graph=g) as s:
        expected = s.run(out, feed)
    np.testing.assert_allclose(got, [expected] * 5, rtol=1e-5)


def _schedstats():
    """Per GRAPHI thread name: (ns on a CPU, ns runnable but waiting for one)."""
    base = f"/proc/{os.getpid()}/task"
    out = {}
    for info in threads().values():
        if not info.name.startswith("graphi-e"):
            continue
        try:
            with open(f"{base}/{info.tid}/schedstat") as f:
                fields = f.read().split()
        except OSError:
            continue
        out[info.name] = (int(fields[0]), int(fields[1]))
    return out


def _schedstat_deltas(run):
    """Per GRAPHI thread name: (ns on a CPU, ns runnable but waiting) while `run()` ran."""
    before = _schedstats()
    run()
    after = _schedstats()
    return {name: (after[name][0] - before[name][0], after[name][1] - before[name][1])
            for name in after if name in before}


def _op_workers_wait(session, out, feed, steps=12):
    """Over `steps` steps: (run-queue wait, CPU time) summed over the threads
    that did the op's work, and the per-thread figures.

    The leader that calls the kernel is left out: it hands the blocks to its
    helpers and waits (Eigen's contraction and oneDNN wake it at block
    boundaries, briefly runnable beside the helper on its core), so its wait
    is its own team's helper running, not a second worker. It is known by its
    role, the leader whose helper ran more than it did: its CPU share (mostly
    ~1%, once 10.6% in CI, where it then counted as a worker by share alone and
    its wake-ups beside its helper put the check at 0.31). Of the other threads,
    one doing a tenth of the work or more counts as a worker.
    """
    used = _schedstat_deltas(lambda: [session.run(out, feed) for _ in range(steps)])
    total = sum(cpu for cpu, _ in used.values())
    callers = {name for name in used if name.endswith("-t0")
               and used[name][0] < used.get(name[:-3] + "-h0", (0, 0))[0]}
    workers = {name: v for name, v in used.items() if v[0] >= 0.1 * total and name not in callers}
    wait = sum(delay for _, delay in workers.values())
    cpu = sum(cpu for cpu, _ in workers.values())
    return wait, cpu, used


@needs_two_cores
def test_no_core_keeps_two_graphi_workers_while_a_matmul_is_shared():
    # Two threads doing the op's work on one core would each wait for the
    # other about as long as they run (wait/CPU near 1); on separate cores
    # they wait for little else (seen: 0.01-0.12 on the 2-vCPU Xeon, and 0.77-0.88
    # with every thread forced onto one core).
    graphi_tf.configure(executors=2, threads_per_executor=1)
    g, a, out = _matmul_graph()
    feed = _feed(a)
    with v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        for _ in range(3):
            s.run(out, feed)
        stolen = sum(native.scheduler_stats()["blocks_stolen_per_team"])
        wait, cpu, used = _op_workers_wait(s, out, feed)
    assert sum(native.scheduler_stats()["blocks_stolen_per_team"]) > stolen
    print(f"op workers waited {wait / cpu:.3f} of their CPU time", used)
    assert wait <= 0.3 * cpu, used


@needs_two_cores
def test_the_run_queue_check_sees_two_workers_forced_onto_one_core():
    # The check above can fail: pin every GRAPHI thread to one core, as a
    # team layout that put a thief on a busy team's core would.
    graphi_tf.configure(executors=2, threads_per_executor=1)
    g, a, out = _matmul_graph()
    feed = _feed(a)
    with v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        for _ in range(3):
            s.run(out, feed)
        core = sorted(os.sched_getaffinity(0))[0]
        pinned = {t.tid: t.cpus_allowed for t in threads().values() if t.name.startswith("graphi-")}
        try:
            for tid in pinned:
                os.sched_setaffinity(tid, {core})
            wait, cpu, used = _op_workers_wait(s, out, feed)
        finally:  # later tests may run on these same teams
            for tid, cpus in pinned.items():
                os.sched_setaffinity(tid, cpus)
    print(f"forced onto one core, op workers waited {wait / cpu:.3f} of their CPU time")
    assert wait >= 0.5 * cpu, used


def test_an_invalid_threshold_is_reported_naming_the_setting_and_allowed_values():
    code = (
        "import tensorflow as tf, graphi_tf\n"
        "g = tf.Graph()\n"
        "with g.as_default(): c = tf.constant(1.0) + 1.0\n"
        "try:\n"
        "    with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as s: print(s.run(c))\n"
        "except tf.errors.InvalidArgumentError as e:\n"
        "    print('ERROR:', e.message)\n"
    )
    env = dict(os.environ, GRAPHI_STEAL_THRESHOLD_NS="soon", TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ERROR:" in done.stdout, done.stdout + done.stderr[-2000:]
    assert "GRAPHI_STEAL_THRESHOLD_NS='soon'" in done.stdout
    assert "a whole number >= 0" in done.stdout and '"off"' in done.stdout


@needs_two_cores
def test_a_steps_variable_handles_run_inline_instead_of_one_task_each():
    # Forty variable handles start the step; they run no kernel (constants),
    # so no cost is measured for them. Handed out one by one they would keep
    # every team busy while the ops they lead to could use the other teams.
    graphi_tf.configure(executors=2, threads_per_executor=1)
    g = tf.Graph()
    with g.as_default():
        variables = [tf.Variable(np.float32(i), name=f"v{i}") for i in range(40)]
        out = tf.add_n([v.read_value() for v in variables])
        init = v1.global_variables_initializer()
    with v1.Session(graph=g, config=graphi_tf.session_config()) as s:
        s.run(init)
        for _ in range(3):
            s.run(out)
        before = sum(native.scheduler_stats()["tasks_run_per_team"])
        assert s.run(out) == sum(range(40))
        tasks = sum(native.scheduler_stats()["tasks_run_per_team"]) - before
    # One task for the step's start and what it makes ready inline; a read
    # that measured expensive once may still be handed out on its own.
    assert tasks <= 5, tasks
