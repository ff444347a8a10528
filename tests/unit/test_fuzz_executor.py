"""The random-graph fuzzer itself: deterministic per seed, covering what it claims,
comparing with the conformance rule, and shrinking a failure to the op that causes it."""
import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest

import conftest

_TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "fuzz_executor.py")
_spec = importlib.util.spec_from_file_location("fuzz_executor", _TOOL)
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)

pytestmark = pytest.mark.timeout(300)


def _op_types(spec):
    case = fuzz.GraphCase(spec)
    types = {node.op for node in case.graph.as_graph_def().node}
    for function in case.graph.as_graph_def().library.function:
        types.update(node.op for node in function.node_def)
    return types


@pytest.mark.parametrize("mode", fuzz.MODES)
def test_the_same_seed_generates_the_same_spec(mode):
    for seed in range(20):
        first = fuzz.generate(seed, mode)
        assert fuzz.generate(seed, mode) == first
        assert json.loads(json.dumps(first)) == first, "a spec must survive JSON (replay)"


@pytest.mark.parametrize("mode", fuzz.MODES)
def test_different_seeds_generate_different_specs(mode):
    specs = {json.dumps(fuzz.generate(seed, mode)["nodes"]) for seed in range(30)}
    assert len(specs) >= 25


def test_the_same_spec_builds_the_same_graph():
    for seed in range(10):
        spec = fuzz.generate(seed, "graph")
        first = [(n.name, n.op) for n in fuzz.GraphCase(spec).graph.as_graph_def().node]
        second = [(n.name, n.op) for n in fuzz.GraphCase(spec).graph.as_graph_def().node]
        assert first == second


def test_generated_graphs_cover_every_feature_the_fuzzer_claims():
    kinds, seen = set(), set()
    for seed in range(300):
        for mode in fuzz.MODES:
            spec = fuzz.generate(seed, mode)
            for path in fuzz._node_paths(spec):
                node = spec["nodes"][path[0]]
                for k in range(1, len(path), 2):
                    node = node[path[k]][path[k + 1]]
                kinds.add((mode, node["op"]))
            seen.update(f"variable:{v}" for v in spec["variables"])
            flags = {"assert": spec["assert_step"] is not None, "threads": spec["threads"] > 0,
                     "unoptimized": not spec["optimize"]}
            seen.update(name for name, present in flags.items() if present)
            for plan in spec["plans"]:
                seen.update(key for key in ("partial", "timeout", "feed", "feed_nodes") if plan.get(key))
    every_op = {(m, op) for m in fuzz.MODES for op in fuzz.ARITY if not (m == "function" and op == "queue")}
    assert every_op <= kinds, f"never generated: {sorted(every_op - kinds)}"
    assert {"variable:resource", "variable:ref", "assert", "threads", "unoptimized",
            "partial", "timeout", "feed", "feed_nodes"} <= seen


def test_graph_mode_builds_v1_control_flow_and_function_mode_v2():
    spec = {"seed": 0, "mode": "graph", "inputs": 2, "variables": [], "assert_step": None,
            "optimize": True, "threads": 0, "value_seed": 1, "outputs": [],
            "nodes": [{"op": "while", "in": [0, 1], "iterations": 2,
                       "body": [{"op": "cond", "in": [0, 1], "body": [{"op": "tanh", "in": [0]}],
                                 "else": [{"op": "add", "in": [0, 1]}]}]}],
            "plans": [{"feed": [], "fetch": [2], "feed_nodes": [], "partial": False, "timeout": False}]}
    assert {"Switch", "Merge", "Enter", "Exit", "NextIteration"} <= _op_types(spec)


def test_comparison_uses_the_conformance_suites_tolerance():
    assert (fuzz.FLOAT_RTOL, fuzz.FLOAT_ATOL) == (conftest.FLOAT_RTOL, conftest.FLOAT_ATOL)
    base = {"ok": {"n": fuzz.np.ones((2, 2), fuzz.np.float32)}}
    close = {"ok": {"n": base["ok"]["n"] + 1e-7}}
    far = {"ok": {"n": base["ok"]["n"] + 1e-3}}
    assert fuzz.compare_steps(base, close, "s") == []
    assert fuzz.compare_steps(base, far, "s")
    assert fuzz.compare_steps({"error": "InvalidArgumentError"}, {"error": "InvalidArgumentError"}, "s") == []
    assert fuzz.compare_steps({"error": "InvalidArgumentError"}, {"error": "AbortedError"}, "s")
    assert fuzz.compare_steps({"error": "InvalidArgumentError"}, base, "s")


def _run(*steps):
    return {"steps": list(steps), "threads": []}


INVALID = {"error": "InvalidArgumentError", "message": "Graph execution error:"}
CANCELLED = {"error": "CancelledError", "message": "Graph execution error:"}


def test_a_cancelled_step_after_a_failed_partial_run_is_not_a_difference():
    failed_partial = dict(INVALID, partial=True)
    assert fuzz.compare_runs(_run(failed_partial, INVALID), _run(failed_partial, CANCELLED), "x") == []
    assert fuzz.compare_runs(_run(failed_partial, CANCELLED), _run(failed_partial, INVALID), "x") == []


def test_a_cancelled_step_without_a_failed_partial_run_before_it_is_a_difference():
    assert fuzz.compare_runs(_run(INVALID, INVALID), _run(INVALID, CANCELLED), "x") != []
    ok_partial = {"ok": {}, "partial": True}
    assert fuzz.compare_runs(_run(ok_partial, INVALID), _run(ok_partial, CANCELLED), "x") != []
    failed_plain = dict(INVALID, partial=False)
    assert fuzz.compare_runs(_run(failed_plain, INVALID), _run(failed_plain, CANCELLED), "x") != []


def test_removing_a_node_points_its_consumers_at_its_first_input():
    spec = fuzz.generate(0, "graph")
    spec["inputs"] = 1
    spec["nodes"] = [{"op": "tanh", "in": [0]}, {"op": "add", "in": [1, 0]}, {"op": "mul", "in": [2, 1]}]
    spec["plans"] = [{"feed": [], "fetch": [1, 3], "feed_nodes": [], "partial": False, "timeout": False}]
    spec["assert_step"], spec["variables"] = None, []
    smaller = fuzz.remove_node(spec, (0,))
    assert smaller["nodes"] == [{"op": "add", "in": [0, 0]}, {"op": "mul", "in": [1, 0]}]
    assert smaller["plans"][0]["fetch"] == [2]


def test_shrinker_cuts_an_injected_failure_down_to_the_op_that_causes_it():
    # A fake "executor comparison" that fails whenever the built graph has a MatMul.
    def fails(spec):
        return "MatMul" in _op_types(spec)

    seed = next(s for s in range(100) if fuzz.size(fuzz.generate(s, "graph")) >= 10
                and fails(fuzz.generate(s, "graph")))
    original = fuzz.generate(seed, "graph")
    small = fuzz.shrink(original, fails)
    assert fails(small)
    assert fuzz.size(small) == 1 < fuzz.size(original), fuzz.describe(small)
    assert len(small["plans"]) == 1


def test_hoisting_a_loop_body_keeps_the_references_of_later_ops():
    spec = fuzz.generate(0, "graph")
    spec["inputs"], spec["assert_step"], spec["variables"] = 1, None, []
    spec["nodes"] = [{"op": "while", "in": [0, 0], "iterations": 2,
                      "body": [{"op": "tanh", "in": [1]}, {"op": "add", "in": [2, 0]}]},
                     {"op": "mul", "in": [1, 0]}]
    spec["plans"] = [{"feed": [], "fetch": [2], "feed_nodes": [], "partial": False, "timeout": False}]
    flat = fuzz.hoist_body(spec, 0, "body")
    assert flat["nodes"] == [{"op": "tanh", "in": [0]}, {"op": "add", "in": [1, 0]},
                             {"op": "mul", "in": [2, 0]}]
    assert flat["plans"][0]["fetch"] == [3]


def test_shrinker_keeps_a_failure_that_depends_on_a_feature():
    # Fails only while the spec runs from threads: the shrinker must keep them.
    seed = next(s for s in range(200) if fuzz.generate(s, "graph")["threads"])
    small = fuzz.shrink(fuzz.generate(seed, "graph"), lambda spec: spec["threads"] > 0)
    assert small["threads"] > 0 and fuzz.size(small) == 1


def test_a_run_over_its_time_limit_is_a_hang():
    start = time.monotonic()
    with pytest.raises(fuzz.Hang, match="no result after 0.2 s"):
        fuzz._with_timeout(lambda: time.sleep(3), 0.2, "sleeper")
    assert time.monotonic() - start < 2


def test_a_hang_report_prints_every_threads_stack(capfd):
    fuzz._report_hang("seed 7 mode graph: stuck")
    err = capfd.readouterr().err
    assert "HANG seed 7 mode graph: stuck" in err
    assert "Current thread" in err or "Thread 0x" in err


def test_cli_runs_seeds_and_writes_the_totals(tmp_path):
    out = tmp_path / "fuzz.json"
    proc = subprocess.run([sys.executable, _TOOL, "--seeds", "3:5", "--mode", "graph", "--layouts", "1x1",
                           "--json", str(out)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    totals = json.loads(out.read_text())
    assert (totals["seeds"], totals["graphs"], totals["runs"], totals["differences"], totals["hangs"]) \
        == (2, 2, 4, 0, 0)


def test_cli_rejects_a_layout_above_the_cores_naming_it():
    proc = subprocess.run([sys.executable, _TOOL, "--seeds", "0:1", "--layouts", "64x64"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "--layouts 64x64" in proc.stderr and "EXECUTORS" in proc.stderr.upper()
