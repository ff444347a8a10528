"""The physical lower bound of a step from one traced run.

From a RunMetadata with step stats (RunOptions.FULL_TRACE) and its partition
graphs:
  W  = total op time: the sum over executed nodes of their compute time;
  CP = critical path: the longest chain of data/control dependencies, each node
       weighted by its compute time (NextIteration back edges are ignored);
  LB = max(CP, W / cores): no schedule on `cores` cores can beat it.
Efficiency of a measured step = LB / step time.

Pure Python on the RunMetadata protobuf's fields (no TensorFlow import), so the math is
testable on hand-built stand-ins. The path and bound maths are ``graphi_tf.stepstats``'s.
"""
from __future__ import annotations

from typing import Dict, Iterable, List

from graphi_tf import stepstats

__all__ = ["critical_path_us", "lower_bound", "node_times_us", "predecessors"]


def node_times_us(run_metadata) -> Dict[str, float]:
    """Compute time (µs) of each executed node, summed over devices and repeats."""
    times: Dict[str, float] = {}
    for dev in run_metadata.step_stats.dev_stats:
        for ns in dev.node_stats:
            name = ns.node_name.split(":")[0]
            t = max(0, ns.op_end_rel_micros - ns.op_start_rel_micros)
            times[name] = times.get(name, 0.0) + t
    return times


def predecessors(run_metadata) -> Dict[str, List[str]]:
    """Predecessors of each node, over all partition graphs."""
    preds: Dict[str, List[str]] = {}
    next_iterations = set()
    for graph in run_metadata.partition_graphs:
        for node in graph.node:
            if node.op == "NextIteration":
                next_iterations.add(node.name)
    for graph in run_metadata.partition_graphs:
        for node in graph.node:
            ins = []
            for inp in node.input:
                src = inp.lstrip("^").split(":")[0]
                if src not in next_iterations:
                    ins.append(src)
            preds[node.name] = ins
    return preds


def critical_path_us(times: Dict[str, float], preds: Dict[str, Iterable[str]]) -> float:
    """Longest path through `preds` (a DAG) with node weights `times` (``stepstats.critical_path``)."""
    return stepstats.critical_path_by_name(times, preds)


def lower_bound(run_metadata, cores: int) -> Dict[str, float]:
    """Returns {"work_ms", "critical_path_ms", "lower_bound_ms", "nodes"}.

    Raises ValueError unless ``cores`` is a whole number >= 1 (``stepstats.lower_bound``).
    """
    times = node_times_us(run_metadata)
    work = sum(times.values())
    cp = critical_path_us(times, predecessors(run_metadata))
    return {
        "work_ms": work / 1e3,
        "critical_path_ms": cp / 1e3,
        "lower_bound_ms": stepstats.lower_bound(work, cp, cores) / 1e3,
        "nodes": len(times),
    }
