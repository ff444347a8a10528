"""The lower-bound math of graphi_tf.lab.bound on hand-built inputs."""
import itertools
import random

import pytest

from graphi_tf.lab import bound as step_bound


def _brute_force_longest_path(times, preds):
    succs = {n: [] for n in times}
    for n, ps in preds.items():
        for p in ps:
            succs[p].append(n)

    def paths_from(n):
        if not succs[n]:
            yield [n]
        for s in succs[n]:
            for rest in paths_from(s):
                yield [n] + rest

    return max(sum(times[n] for n in path) for n in times for path in paths_from(n))


def test_critical_path_of_a_diamond_takes_the_heavier_branch():
    times = {"a": 1.0, "b": 5.0, "c": 2.0, "d": 1.0}
    preds = {"b": ["a"], "c": ["a"], "d": ["b", "c"]}
    assert step_bound.critical_path_us(times, preds) == 7.0


@pytest.mark.parametrize("seed", range(5))
def test_critical_path_matches_brute_force_on_random_dags(seed):
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(9)]
    times = {n: float(rng.randint(0, 20)) for n in names}
    preds = {n: [p for p in names[:i] if rng.random() < 0.35] for i, n in enumerate(names)}
    assert step_bound.critical_path_us(times, preds) == _brute_force_longest_path(times, preds)


class _Stats:
    def __init__(self, name, start, end):
        self.node_name, self.op_start_rel_micros, self.op_end_rel_micros = name, start, end


class _Metadata:
    """Just the RunMetadata fields lower_bound reads."""

    def __init__(self, stats, nodes):
        dev = type("Dev", (), {"node_stats": stats})()
        self.step_stats = type("StepStats", (), {"dev_stats": [dev]})()
        graph = type("Graph", (), {"node": [
            type("Node", (), {"name": n, "op": op, "input": ins})() for n, op, ins in nodes]})()
        self.partition_graphs = [graph]


def test_lower_bound_is_work_over_cores_when_the_graph_is_wide():
    stats = [_Stats(f"n{i}", 0, 10) for i in range(4)]
    nodes = [(f"n{i}", "Add", []) for i in range(4)]
    b = step_bound.lower_bound(_Metadata(stats, nodes), cores=2)
    assert b["work_ms"] == pytest.approx(0.040)
    assert b["critical_path_ms"] == pytest.approx(0.010)
    assert b["lower_bound_ms"] == pytest.approx(0.020)


def test_lower_bound_is_the_critical_path_when_the_graph_is_a_chain():
    stats = [_Stats("a", 0, 10), _Stats("b", 10, 30)]
    nodes = [("a", "Add", []), ("b", "Add", ["a:0"])]
    b = step_bound.lower_bound(_Metadata(stats, nodes), cores=2)
    assert b["critical_path_ms"] == pytest.approx(0.030)
    assert b["lower_bound_ms"] == pytest.approx(0.030)


def test_next_iteration_back_edges_do_not_make_a_cycle():
    stats = [_Stats("merge", 0, 1), _Stats("body", 1, 5), _Stats("next", 5, 6)]
    nodes = [("merge", "Merge", ["enter", "next"]), ("body", "Add", ["merge"]),
             ("next", "NextIteration", ["body"])]
    b = step_bound.lower_bound(_Metadata(stats, nodes), cores=1)
    assert b["critical_path_ms"] == pytest.approx(0.006)
