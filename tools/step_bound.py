"""The physical lower bound of a step from one traced run: W, CP, LB = max(CP, W / cores).

The code lives in ``graphi_tf.bound`` (used by ``graphi-tf ab``); this module re-exports
it for the tools here (``lstm_bench.py --trace-steps``) and older scripts.
"""
from graphi_tf.bound import (  # noqa: F401
    _edges,
    _node_times_us,
    critical_path_us,
    lower_bound,
    node_times_us,
    predecessors,
)
