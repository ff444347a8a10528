"""Times the bundled models' training steps (how docs/models.md's table was measured).

    python -m graphi_tf.lab.models.calibrate [--executor DEFAULT] [--inter 2 --intra 1] [--mode graph]
                                         [--warmup 3] [--steps 5] [MODEL:SIZE ...]

Prints one JSON line per MODEL:SIZE (all twelve if none are given): median and min step ms,
graph nodes, build seconds. Run one thread setting per process: TensorFlow sizes its global
thread pools from the first session (graph mode) or the first op (function mode).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import List, Optional, Sequence


def main(argv: Optional[Sequence[str]] = None) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from graphi_tf import stepstats
    from graphi_tf.lab import models

    parser = argparse.ArgumentParser(prog="python -m graphi_tf.lab.models.calibrate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executor", choices=models.EXECUTORS, default="DEFAULT")
    parser.add_argument("--inter", type=int, default=None, help="inter_op threads (default: TensorFlow's)")
    parser.add_argument("--intra", type=int, default=None, help="intra_op threads (default: TensorFlow's)")
    parser.add_argument("--mode", choices=models.MODES, default="graph")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("runs", nargs="*", metavar="MODEL:SIZE")
    args = parser.parse_args(argv)
    runs: List[str] = args.runs or [f"{m}:{s}" for m in models.MODELS for s in models.SIZES]
    for run in runs:
        name, _, size = run.partition(":")
        started = time.perf_counter()
        try:
            step = models.build_step(name, size or "small", mode=args.mode, executor=args.executor,
                                     inter_op=args.inter, intra_op=args.intra)
        except ValueError as e:
            parser.error(str(e))
        with step:
            build_s = time.perf_counter() - started
            times = stepstats.time_steps(step, args.steps, untimed=args.warmup)
            print(json.dumps(dict(model=name, size=step.size, mode=args.mode, executor=args.executor,
                                  inter=args.inter, intra=args.intra, median_ms=round(stepstats.median(times), 1),
                                  min_ms=round(min(times), 1), graph_nodes=step.graph_nodes,
                                  build_s=round(build_s, 1))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
