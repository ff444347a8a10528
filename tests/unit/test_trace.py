"""Step timelines: graphi_tf.trace (Chrome trace JSON, critical path, GRAPHI_TRACE, graphi-tf trace)."""
import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

pytestmark = pytest.mark.timeout(60)

FAKE = os.environ.get("GRAPHI_TEST_FAKE") == "1"
needs_graphi = pytest.mark.skipif(FAKE, reason="needs the GRAPHI executor")

# A tiny TF1 step with two branches of different length (placeholders, so grappler
# cannot fold it away).
TINY_SCRIPT = textwrap.dedent("""
    import numpy as np
    import tensorflow as tf
    import graphi_tf


    def build_step():
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [48, 48])
            a = tf.matmul(tf.matmul(x, x), x)
            b = tf.nn.relu(x) + 1.0
            out = tf.reduce_sum(tf.matmul(a, b)) + tf.reduce_sum(tf.tanh(b))
        sess = tf.compat.v1.Session(graph=g, config=graphi_tf.session_config())
        feed = {x: np.full((48, 48), 0.01, np.float32)}

        def step():
            return sess.run(out, feed)

        step.session = sess
        step.close = sess.close
        return step


    if __name__ == "__main__":
        step = build_step()
        for _ in range(3):
            step()
""")


@pytest.fixture
def tiny_script(tmp_path):
    path = tmp_path / "tiny_step.py"
    path.write_text(TINY_SCRIPT)
    return str(path)


def _load(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("tiny_step_for_trace", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _x_events(doc, pid=None):
    return [e for e in doc["traceEvents"] if e["ph"] == "X" and (pid is None or e["pid"] == pid)]


def _thread_names(doc, pid):
    return {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
            if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == pid}


def _assert_no_partial_overlap_on_a_track(doc):
    # Perfetto and chrome://tracing need slices on one track to nest; ours never overlap.
    tracks = {}
    for e in _x_events(doc):
        tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in tracks.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert start >= end - 1e-9, spans


def _reachable(successors, src, dst):
    seen, stack = set(), [src]
    while stack:
        n = stack.pop()
        if n == dst:
            return True
        if n in seen:
            continue
        seen.add(n)
        stack.extend(successors[n])
    return False


@pytest.fixture
def recorded(tiny_script):
    from graphi_tf import trace

    step = _load(tiny_script).build_step()
    try:
        yield trace.record_step(step, warmup=3)
    finally:
        step.close()


# --- critical path math ------------------------------------------------------


def test_critical_path_of_a_synthetic_dag_is_the_hand_computed_longest_chain():
    from graphi_tf.stepstats import critical_path

    #   0 -> 1 -> 3 -> 4      weights 1, 5, 1, 3  => 10 (the answer)
    #   0 -> 2 -> 3           2 weighs 2          => 0-2-3-4 = 7
    #   5 (alone)             weighs 9
    #   6 -> 7 -> 6 (a cycle left in: each counts alone)  weigh 4, 4
    successors = [[1, 2], [3], [3], [4], [], [], [7], [6]]
    weights = [1, 5, 2, 1, 3, 9, 4, 4]
    length, path = critical_path(successors, weights)
    assert length == 10
    assert path == [0, 1, 3, 4]


def test_graph_step_weights_nodes_by_summed_executions_and_skips_unexecuted_nodes():
    from graphi_tf.trace import GraphStep

    # 0 -> 1 -> 3, 0 -> 2 -> 3. Node 1 runs twice (a loop body): 2 x 30 = 60 > node 2's 50.
    # Node 4 (after 3) never ran: it weighs 0 and is not drawn on the critical path.
    g = GraphStep(
        signature="s", node_names=["a", "b", "c", "d", "e"], node_types=["A", "B", "C", "D", "E"],
        successors=[[1, 2], [3], [3], [4], []], step=1, start_ns=1000, end_ns=1300,
        executions=[
            {"node_id": 0, "team": 0, "start_ns": 1000, "end_ns": 1010},
            {"node_id": 1, "team": 0, "start_ns": 1010, "end_ns": 1040},
            {"node_id": 2, "team": 1, "start_ns": 1010, "end_ns": 1060},
            {"node_id": 1, "team": 0, "start_ns": 1040, "end_ns": 1070},
            {"node_id": 3, "team": 0, "start_ns": 1070, "end_ns": 1075},
        ])
    assert g.work_ns == 10 + 60 + 50 + 5
    assert g.critical_path_ns == 10 + 60 + 5
    assert g.critical_path_nodes == [0, 1, 3]


# --- Chrome trace JSON ----------------------------------------------------------


@needs_graphi
def test_chrome_json_has_required_keys_known_tracks_and_a_critical_path_chain(recorded):
    doc = json.loads(json.dumps(recorded.to_chrome_json()))  # plain JSON round trip
    assert set(doc) >= {"traceEvents", "displayTimeUnit", "otherData"}
    assert doc["displayTimeUnit"] == "ms"
    for e in doc["traceEvents"]:
        assert {"name", "ph", "pid", "tid", "ts"} <= set(e), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "process_sort_index", "thread_name", "thread_sort_index")
            assert isinstance(e["args"], dict)
        else:
            assert e["ph"] == "X", e
            assert {"cat", "dur", "args"} <= set(e)
            assert e["ts"] >= 0 and e["dur"] >= 0
            assert {"op", "node", "team", "critical_path"} <= set(e["args"])

    g = recorded.graphs[0]
    other = doc["otherData"]
    assert other["step_ms"] > 0 and other["work_ms"] > 0
    assert other["critical_path_ms"] <= other["work_ms"] + 1e-9
    assert other["lower_bound_ms"] == pytest.approx(
        max(other["critical_path_ms"], other["work_ms"] / other["cores"]))
    assert other["executors"] * other["threads_per_executor"] == sum(len(t) for t in other["team_cpus"])

    _assert_no_partial_overlap_on_a_track(doc)
    pid = 1
    names = _thread_names(doc, pid)
    xs = _x_events(doc, pid)
    assert xs and all(e["tid"] in names for e in xs)
    teams = {e["args"]["team"] for e in xs}
    for team in teams:
        primary = [n for n in names.values() if n.startswith(f"team {team} (cpus ") and "overlap" not in n]
        assert len(primary) == 1, names

    cp = sorted((e for e in xs if names[e["tid"]].startswith("critical path")), key=lambda e: e["ts"])
    assert cp and all(e["args"]["critical_path"] for e in cp)
    assert sum(e["dur"] for e in cp) == pytest.approx(other["critical_path_ms"] * 1e3, abs=1e-3)
    index = {name: i for i, name in enumerate(g.node_names)}
    for prev, nxt in zip(cp, cp[1:]):
        assert _reachable(g.successors, index[prev["name"]], index[nxt["name"]]), (prev["name"], nxt["name"])
        assert nxt["ts"] >= prev["ts"] + prev["dur"] - 1e-3


@needs_graphi
def test_native_profile_exposes_op_types_and_static_edges(recorded):
    from graphi_tf import _loader

    g = recorded.graphs[0]
    profile = _loader.native().graph_profile(g.signature)
    assert len(profile["node_types"]) == len(profile["node_names"]) == len(profile["successors"])
    assert "Relu" in profile["node_types"]
    relu = profile["node_types"].index("Relu")
    assert profile["successors"][relu], "Relu feeds the add"
    assert all(e["op"] == profile["node_types"][e["node_id"]] for e in g.executions)


def test_merged_entry_is_drawn_on_every_team_it_used_and_counted_once():
    from graphi_tf.trace import GraphStep, Trace

    g = GraphStep(
        signature="m", node_names=["x", "big"], node_types=["Const", "MatMul"], successors=[[1], []],
        step=5, start_ns=0, end_ns=100,
        executions=[{"node_id": 0, "team": 0, "start_ns": 0, "end_ns": 10},
                    {"node_id": 1, "team": 0, "teams": [0, 1], "merged": True, "start_ns": 10, "end_ns": 90}])
    t = Trace(graphs=[g], executors=2, threads_per_executor=1, team_cpus=[[0], [1]])
    doc = t.to_chrome_json()
    names = _thread_names(doc, 1)
    big = [e for e in _x_events(doc) if e["name"] == "big" and not names[e["tid"]].startswith("critical")]
    assert sorted(names[e["tid"]] for e in big) == ["team 0 (cpus 0)", "team 1 (cpus 1)"]
    assert all(e["args"]["merged"] is True and e["args"]["teams"] == [0, 1] for e in big)
    assert doc["otherData"]["work_ms"] == pytest.approx(90 / 1e6)
    assert t.team_busy_ns(g) == {0: 90, 1: 80}


def test_summary_shows_each_teams_time_helping_other_teams():
    from graphi_tf.trace import GraphStep, Trace

    g = GraphStep(
        signature="w", node_names=["big"], node_types=["MatMul"], successors=[[]],
        step=5, start_ns=0, end_ns=2_000_000,
        executions=[{"node_id": 0, "team": 0, "start_ns": 0, "end_ns": 2_000_000}])
    t = Trace(graphs=[g], executors=2, threads_per_executor=1, team_cpus=[[0], [1]],
              stolen_ns={0: 0, 1: 1_500_000})
    text = t.summary()
    assert "team 0 (cpus 0): busy 2.000 ms (100%), helping other teams 0.000 ms (0%)" in text
    assert "team 1 (cpus 1): busy 0.000 ms (0%), helping other teams 1.500 ms (75%)" in text


def test_a_shared_op_is_marked_on_its_own_teams_track_only():
    from graphi_tf.trace import GraphStep, Trace

    g = GraphStep(
        signature="s", node_names=["big", "small"], node_types=["MatMul", "Relu"],
        successors=[[1], []], step=5, start_ns=0, end_ns=100,
        executions=[{"node_id": 0, "team": 0, "shared": True, "start_ns": 0, "end_ns": 80},
                    {"node_id": 1, "team": 0, "shared": False, "start_ns": 80, "end_ns": 90}])
    doc = Trace(graphs=[g], executors=2, threads_per_executor=1, team_cpus=[[0], [1]]).to_chrome_json()
    names = _thread_names(doc, 1)
    on_teams = [e for e in _x_events(doc) if not names[e["tid"]].startswith("critical")]
    assert sorted((e["name"], names[e["tid"]], e["args"].get("shared")) for e in on_teams) == [
        ("big", "team 0 (cpus 0)", True), ("small", "team 0 (cpus 0)", None)]


def test_summary_counts_the_ops_offered_to_idle_teams():
    from graphi_tf.trace import GraphStep, Trace

    g = GraphStep(
        signature="s", node_names=["a", "b", "c"], node_types=["MatMul", "MatMul", "Relu"],
        successors=[[2], [2], []], step=5, start_ns=0, end_ns=5_000_000,
        executions=[{"node_id": 0, "team": 0, "shared": True, "start_ns": 0, "end_ns": 2_000_000},
                    {"node_id": 1, "team": 1, "shared": True, "start_ns": 2_000_000, "end_ns": 3_500_000},
                    {"node_id": 2, "team": 0, "shared": False, "start_ns": 3_500_000, "end_ns": 4_000_000}])
    text = Trace(graphs=[g], executors=2, threads_per_executor=1, team_cpus=[[0], [1]]).summary()
    assert "ops offered to idle teams: 2 op runs, 3.500 ms" in text


def test_summary_has_no_shared_line_when_nothing_was_shared():
    from graphi_tf.trace import GraphStep, Trace

    g = GraphStep(signature="n", node_names=["a"], node_types=["Relu"], successors=[[]], step=1,
                  start_ns=0, end_ns=10, executions=[{"node_id": 0, "team": 0, "start_ns": 0, "end_ns": 10}])
    assert "offered to idle teams" not in Trace(graphs=[g], team_cpus=[[0]]).summary()


def test_overlapping_ops_on_one_track_go_to_an_overlap_track():
    from graphi_tf.trace import GraphStep, Trace

    # b overlaps a on team 0; a (loop body, twice) and b are both on the critical path, and
    # b's run overlaps a's second run.
    g = GraphStep(signature="o", node_names=["a", "b"], node_types=["A", "B"], successors=[[1], []],
                  step=1, start_ns=0, end_ns=50,
                  executions=[{"node_id": 0, "team": 0, "start_ns": 0, "end_ns": 8},
                              {"node_id": 0, "team": 1, "start_ns": 9, "end_ns": 40},
                              {"node_id": 1, "team": 0, "start_ns": 10, "end_ns": 20}])
    doc = Trace(graphs=[g], team_cpus=[[0], [1]]).to_chrome_json()
    _assert_no_partial_overlap_on_a_track(doc)
    names = _thread_names(doc, 1)
    placed = sorted((e["name"], e["ts"], names[e["tid"]]) for e in _x_events(doc))
    assert placed == [
        ("a", 0.0, "critical path (0.049 us)"), ("a", 0.0, "team 0 (cpus 0)"),
        ("a", 0.009, "critical path (0.049 us)"), ("a", 0.009, "team 1 (cpus 1)"),
        ("b", 0.01, "critical path (0.049 us) overlap 1"), ("b", 0.01, "team 0 (cpus 0)"),
    ]


@needs_graphi
def test_gantt_png_is_written(recorded, tmp_path):
    pytest.importorskip("matplotlib")
    path = recorded.write_gantt(str(tmp_path / "gantt.png"))
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_record_step_rejects_zero_warmup():
    from graphi_tf import trace

    with pytest.raises(ValueError, match="warmup=0 is invalid; allowed: a whole number >= 1"):
        trace.record_step(lambda: None, warmup=0)


# --- GRAPHI_TRACE -----------------------------------------------------------------


def test_graphi_trace_step_bad_value_warns_and_uses_the_default():
    from graphi_tf import environment, trace

    with pytest.warns(RuntimeWarning, match=r"GRAPHI_TRACE_STEP='abc' is invalid; allowed: a whole number >= 1"):
        assert trace._trace_step_from_env(environment.read({"GRAPHI_TRACE_STEP": "abc"})) == trace.DEFAULT_TRACE_STEP
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert trace._trace_step_from_env(environment.read({"GRAPHI_TRACE_STEP": "7"})) == 7
        assert trace._trace_step_from_env(environment.read({})) == 10


def _run_traced(script, out, **env):
    full_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", GRAPHI_TRACE=out, **env)
    return subprocess.run([sys.executable, script], env=full_env, capture_output=True, text=True, timeout=50)


@needs_graphi
def test_graphi_trace_env_records_the_asked_step_and_writes_json_and_png_at_exit(tiny_script, tmp_path):
    out = str(tmp_path / "t.json")
    proc = _run_traced(tiny_script, out, GRAPHI_TRACE_STEP="2", GRAPHI_TRACE_PNG="1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open(out) as f:
        doc = json.load(f)
    assert _x_events(doc)
    assert doc["otherData"]["step"] == 2
    assert os.path.getsize(str(tmp_path / "t.png")) > 0


@needs_graphi
def test_graphi_trace_env_with_a_bad_step_warns_and_records_the_last_of_fewer_steps(tiny_script, tmp_path):
    out = str(tmp_path / "t.json")
    proc = _run_traced(tiny_script, out, GRAPHI_TRACE_STEP="abc")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "GRAPHI_TRACE_STEP='abc' is invalid" in proc.stderr
    with open(out) as f:
        doc = json.load(f)
    assert doc["otherData"]["step"] == 3  # default 10, but the script ran 3 steps
    assert _x_events(doc)


# --- CLI --------------------------------------------------------------------------


@needs_graphi
def test_cli_trace_on_a_script_writes_json_png_and_prints_the_summary(tiny_script, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from graphi_tf.lab import cli

    out, png = str(tmp_path / "cli.json"), str(tmp_path / "cli.png")
    assert cli.main(["trace", "--script", tiny_script, "-o", out, "--png", png, "--warmup", "2"]) == 0
    text = capsys.readouterr().out
    for needle in ("step ", " W ", " CP ", " LB ", "busy", "critical path:"):
        assert needle in text, text
    with open(out) as f:
        assert _x_events(json.load(f))
    assert os.path.getsize(png) > 0


def test_cli_trace_requires_a_model_or_script(capsys):
    from graphi_tf.lab import cli

    with pytest.raises(SystemExit) as exc:
        cli.main(["trace", "-o", "x.json"])
    assert exc.value.code == 2
    assert "--model" in capsys.readouterr().err
