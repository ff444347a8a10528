"""Step-graph maths and run bookkeeping shared by trace, bound, report, tune and the A/B worker.

Pure Python: no TensorFlow, no native library, no other graphi_tf module.

* ``critical_path``: the longest weighted path through a step's DAG (the one implementation;
  ``graphi_tf.trace`` calls it on node ids, ``graphi_tf.lab.bound`` on node names).
* ``lower_bound``: LB = max(CP, W / cores), the physical limit no schedule on ``cores``
  cores beats. The rule for ``cores``: a whole number >= 1, else ValueError. A caller that
  may not know its cores (a trace without a team layout) decides what it counts before it
  asks (``graphi_tf.trace.Trace.cores`` counts at least one).
* ``steps_run`` and ``ran_since``: which GRAPHI graphs ran since a snapshot of their step
  counts (native ``graphs()`` or ``graphi_tf.info()["graphs"]`` dicts), main graph first.
* ``time_steps``: the timing loop: untimed steps, then timed ones (ms).
* ``median``: the one median (``statistics.median``: the mean of the two middle values for an
  even count). ``graphi_tf.decision`` calls ``statistics.median`` itself: it imports no
  graphi_tf module at all (the C++ twin of its rule is checked against it).
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

StepCallback = Callable[[str, int, int], None]
"""``on_step(phase, done, total)`` after every step of ``time_steps``; phase "untimed" or "timed"."""


def median(values: Iterable[float]) -> float:
    """The median of ``values`` (``statistics.median``); raises ValueError for no values."""
    data = list(values)
    if not data:
        raise ValueError("median of no values")
    return statistics.median(data)


# --------------------------------------------------------------------------- the step graph


def critical_path(successors: Sequence[Sequence[int]], weights: Sequence[float]) -> Tuple[float, List[int]]:
    """Longest weighted path through a DAG.

    Args:
      successors: successors[n] = nodes that depend on n (ids outside 0..n-1 are ignored).
        Nodes on a cycle (which the caller should have broken), and nodes after one, count
        with their own weight and no predecessors.
      weights: weights[n] >= 0, one per node.

    Returns:
      (length, nodes): the summed weight of the heaviest path and its nodes in order,
      source first (nodes of weight 0 included).
    """
    n = len(weights)
    if len(successors) != n:
        raise ValueError(f"successors has {len(successors)} nodes but weights has {n}")
    if n == 0:
        return 0.0, []
    indegree = [0] * n
    for node in range(n):
        for s in successors[node]:
            if 0 <= s < n:
                indegree[s] += 1
    finish = [float(w) for w in weights]  # what stays for nodes Kahn's order never reaches
    best_in = [0.0] * n
    best_pred = [-1] * n
    ready = [node for node in range(n) if indegree[node] == 0]
    while ready:  # Kahn's order; best_in[s] is the heaviest finished predecessor so far
        node = ready.pop()
        finish[node] = best_in[node] + weights[node]
        for s in successors[node]:
            if not 0 <= s < n:
                continue
            if best_pred[s] < 0 or finish[node] > best_in[s]:
                best_in[s] = finish[node]
                best_pred[s] = node
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    for node in range(n):
        if indegree[node] > 0:  # on or after a cycle: own weight only
            best_pred[node] = -1
    end = max(range(n), key=lambda i: finish[i])
    path, node, seen = [], end, set()
    while node >= 0 and node not in seen:
        seen.add(node)
        path.append(node)
        node = best_pred[node]
    path.reverse()
    return finish[end], path


def critical_path_by_name(times: Mapping[str, float], preds: Mapping[str, Iterable[str]]) -> float:
    """``critical_path`` on named nodes: ``preds[name]`` its predecessors, ``times[name]``
    its weight (0 for a node without one). Returns the length."""
    names = sorted(set(times) | set(preds) | {p for ps in preds.values() for p in ps})
    index = {name: i for i, name in enumerate(names)}
    successors: List[List[int]] = [[] for _ in names]
    for name, ps in preds.items():
        for p in ps:
            successors[index[p]].append(index[name])
    length, _ = critical_path(successors, [float(times.get(name, 0.0)) for name in names])
    return length


def lower_bound(work: float, critical_path_length: float, cores: int) -> float:
    """LB = max(CP, W / cores), in the unit of ``work`` and ``critical_path_length``.

    Raises ValueError unless ``cores`` is a whole number >= 1.
    """
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise ValueError(f"cores={cores!r} is invalid; allowed: a whole number >= 1")
    return max(float(critical_path_length), float(work) / cores)


# --------------------------------------------------------------------------- run bookkeeping


def steps_run(graphs: Iterable[Mapping[str, Any]]) -> Dict[str, int]:
    """The snapshot ``ran_since`` compares with: steps_run per graph signature."""
    return {str(g["signature"]): int(g.get("steps_run", 0)) for g in graphs}


def ran_since(snapshot: Optional[Mapping[str, int]], graphs: Iterable[Mapping[str, Any]]) -> List[dict]:
    """The graphs whose steps_run grew since ``snapshot`` (``steps_run()`` taken earlier;
    None or {}: every graph that ran at all), the main graph first: most nodes, then the
    smaller signature. Taking the snapshot after a step is built keeps one-off graphs such as
    variable initializers, however large, from being taken for the step's."""
    snapshot = snapshot or {}
    ran = [dict(g) for g in graphs if int(g.get("steps_run", 0)) > snapshot.get(str(g["signature"]), 0)]
    ran.sort(key=lambda g: (-int(g.get("node_count", 0)), str(g["signature"])))
    return ran


def time_steps(step: Callable[[], Any], steps: int, *, untimed: int = 0,
               clock: Callable[[], float] = time.perf_counter, on_step: Optional[StepCallback] = None,
               before_timing: Optional[Callable[[], None]] = None) -> List[float]:
    """Runs ``untimed`` steps, calls ``before_timing()``, then times ``steps`` steps.

    Args:
      step: runs one step; its return value is ignored.
      steps: timed steps.
      untimed: steps run first and not timed (warm-up, or steps discarded after a change).
      clock: seconds as a float, read before and after each timed step.
      on_step: called after every step as ``on_step(phase, done, total)``.
      before_timing: called once between the untimed and the timed steps.

    Returns:
      The timed steps' durations in ms, in order.
    """
    for i in range(untimed):
        step()
        if on_step is not None:
            on_step("untimed", i + 1, untimed)
    if before_timing is not None:
        before_timing()
    times: List[float] = []
    for i in range(steps):
        t0 = clock()
        step()
        times.append((clock() - t0) * 1e3)
        if on_step is not None:
            on_step("timed", i + 1, steps)
    return times
