"""Stress: graphi_tf.configure() re-partitions the teams in a loop while threads run steps.

    PYTHONPATH=. python3 tools/stress_configure.py --iterations 1000 --threads 4

Each worker thread runs steps of a small graph that has a matmul chain, parallel branches and
a v1 while loop (graph mode, a TF1 Session) or the same computation in a tf.function (function
mode), and checks every result against the stock executor's. The main thread meanwhile calls
``configure()`` with the next layout of a cycle (every layout the affinity mask allows, then
the default) ``--iterations`` times, waiting between calls until each worker has finished a
step on the new layout (or ``--dwell`` seconds, whichever is first), so steps really start on
every layout and some are in flight while the teams they run on are dropped.

Pass rule: no wrong result, no error, every worker finishes; a worker that makes no progress
for ``--hang-timeout`` seconds is a hang (every thread's stack is printed). The thread count is
sampled after the warm-up and at the end: teams dropped by configure() must not leave threads
behind. A crash ends the process with a signal (its caller sees it).

Prints one line ``RESULT {json}`` with the counts. Exit status: 0 pass, 1 a wrong result, an
error or leftover threads, 3 a hang, 2 a usage error.
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import os
import sys
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Autotuning would re-partition the teams on its own during the graphs' first steps.
os.environ.setdefault("GRAPHI_AUTOTUNE", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import graphi_tf  # noqa: E402

v1 = tf.compat.v1
ALL_LAYOUTS = ((1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (1, 4))
MODES = ("graph", "function", "both")


def threads_now() -> int:
    """The process's thread count (/proc/self/status Threads)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise RuntimeError("no Threads line in /proc/self/status")


def layout_cycle() -> List[Optional[Tuple[int, int]]]:
    """Every layout the affinity mask allows, then None (the default)."""
    cores = len(os.sched_getaffinity(0))
    return [(e, t) for e, t in ALL_LAYOUTS if e * t <= cores] + [None]


def _inputs(seed: int) -> Tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(seed)
    return (rng.uniform(-1, 1, (64, 64)).astype(np.float32),
            rng.uniform(-1, 1, (64, 64)).astype(np.float32))


def _compute(x, w, while_loop):
    """Four parallel matmul branches, joined, then a loop of five matmul+tanh steps."""
    branches = [tf.tanh(tf.matmul(x, w) * float(k + 1)) for k in range(4)]
    joined = tf.add_n(branches) / 4.0
    _, out = while_loop(lambda i, h: i < 5, lambda i, h: (i + 1, tf.tanh(tf.matmul(h, w))),
                        (tf.constant(0), joined))
    return tf.reduce_sum(out), tf.reduce_max(out)


class GraphRunner:
    """A TF1 session on one graph (v1 while loop: Enter/Exit/NextIteration frames)."""

    def __init__(self, seed: int, config: v1.ConfigProto):
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.x = v1.placeholder(tf.float32, [64, 64])
            w = tf.constant(_inputs(seed)[1])
            self.fetches = _compute(self.x, w, lambda c, b, v: v1.while_loop(c, b, v))
        self.session = v1.Session(graph=self.graph, config=config)
        self.feed = _inputs(seed)[0]

    def __call__(self) -> List[float]:
        return [float(v) for v in self.session.run(self.fetches, {self.x: self.feed})]

    def close(self) -> None:
        self.session.close()


class FunctionRunner:
    """A tf.function (while_v2, run on GRAPHI through the thread's executor scope)."""

    def __init__(self, seed: int, graphi: bool):
        x, w = (tf.constant(a) for a in _inputs(seed))
        self.graphi = graphi

        @tf.function
        def f():
            return _compute(x, w, lambda c, b, v: tf.while_loop(c, b, v))

        self.f = f

    def __call__(self) -> List[float]:
        if self.graphi:
            with graphi_tf.executor_scope():
                out = self.f()
        else:
            out = self.f()
        return [float(v.numpy()) for v in out]

    def close(self) -> None:
        pass


def make_runner(mode: str, seed: int, graphi: bool) -> Callable[[], List[float]]:
    if mode == "graph":
        config = graphi_tf.session_config() if graphi else v1.ConfigProto()
        return GraphRunner(seed, config)
    return FunctionRunner(seed, graphi)


class Worker(threading.Thread):
    """Runs steps until told to stop; records progress, wrong results and errors."""

    def __init__(self, index: int, mode: str, expected: List[float], seed: int):
        super().__init__(name=f"stress-{mode}-{index}", daemon=True)
        self.mode, self.expected, self.seed = mode, expected, seed
        self.stop = threading.Event()
        self.steps = 0
        self.last_progress = time.monotonic()
        self.wrong: List[str] = []
        self.errors: List[str] = []

    def run(self) -> None:
        runner = make_runner(self.mode, self.seed, graphi=True)
        try:
            while not self.stop.is_set():
                try:
                    got = runner()
                except Exception as e:  # noqa: BLE001 -- every error is a failure, reported
                    self.errors.append(f"{type(e).__name__}: {str(e)[:300]}")
                    got = None
                if got is not None and not np.allclose(got, self.expected, rtol=1e-5, atol=1e-5):
                    self.wrong.append(f"step {self.steps}: {got} != {self.expected}")
                self.steps += 1
                self.last_progress = time.monotonic()
        finally:
            runner.close()


def hang(workers: List[Worker], why: str) -> None:
    print(f"HANG: {why}", flush=True)
    for w in workers:
        print(f"  {w.name}: {w.steps} steps, last progress {time.monotonic() - w.last_progress:.1f} s ago")
    faulthandler.dump_traceback(all_threads=True)
    sys.stdout.flush()
    os._exit(3)


def wait_for_steps(workers: List[Worker], marks: Dict[str, int], dwell: float, hang_timeout: float) -> None:
    """Waits until every worker finished a step since `marks`, or `dwell` s passed; a worker
    without progress for `hang_timeout` s is a hang."""
    deadline = time.monotonic() + dwell
    while time.monotonic() < deadline:
        if all(w.steps > marks[w.name] for w in workers):
            return
        time.sleep(0.0005)
    now = time.monotonic()
    for w in workers:
        if now - w.last_progress > hang_timeout:
            hang(workers, f"{w.name} made no progress for {now - w.last_progress:.0f} s")


def run(iterations: int, threads: int, mode: str, dwell: float, hang_timeout: float,
        warmup_steps: int = 3) -> dict:
    modes = ["graph", "function"] if mode == "both" else [mode]
    worker_modes = [modes[i % len(modes)] for i in range(threads)]
    expected = {}
    for i, m in enumerate(worker_modes):
        ref = make_runner(m, seed=i, graphi=False)
        expected[i] = ref()
        ref.close()
    workers = [Worker(i, m, expected[i], seed=i) for i, m in enumerate(worker_modes)]
    for w in workers:
        w.start()
    start = time.monotonic()
    while any(w.steps < warmup_steps for w in workers):
        if time.monotonic() - start > hang_timeout:
            hang(workers, "warm-up steps did not finish")
        time.sleep(0.01)
    cycle = layout_cycle()
    # One full cycle first, so every layout's teams have been built once.
    for layout in cycle:
        graphi_tf.configure(*(layout or (None, None)))
        wait_for_steps(workers, {w.name: w.steps for w in workers}, dwell, hang_timeout)
    threads_after_warmup = threads_now()
    layouts_seen: Dict[str, int] = {}
    t0 = time.monotonic()
    for it in range(iterations):
        layout = cycle[it % len(cycle)]
        setting = graphi_tf.configure(*(layout or (None, None)))
        name = f"{setting['executors']}x{setting['threads_per_executor']}"
        layouts_seen[name] = layouts_seen.get(name, 0) + 1
        wait_for_steps(workers, {w.name: w.steps for w in workers}, dwell, hang_timeout)
    loop_s = time.monotonic() - t0
    for w in workers:
        w.stop.set()
    for w in workers:
        w.join(timeout=hang_timeout)
        if w.is_alive():
            hang(workers, f"{w.name} did not finish its last step")
    graphi_tf.configure()
    # Dropped teams are destroyed (their threads joined) when their last step lets go of
    # them, possibly on a short-lived thread: give that a moment.
    threads_end = threads_now()
    deadline = time.monotonic() + 5
    while threads_end > threads_after_warmup and time.monotonic() < deadline:
        time.sleep(0.05)
        threads_end = threads_now()
    return {
        "iterations": iterations,
        "threads": threads,
        "modes": worker_modes,
        "layouts": layouts_seen,
        "steps": sum(w.steps for w in workers),
        "steps_per_worker": [w.steps for w in workers],
        "wrong": sum(len(w.wrong) for w in workers),
        "errors": sum(len(w.errors) for w in workers),
        "first_problems": [p for w in workers for p in (w.wrong + w.errors)][:5],
        "threads_after_warmup": threads_after_warmup,
        "threads_end": threads_end,
        "loop_s": round(loop_s, 1),
        "hangs": 0,
    }


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=1000, help="configure() calls (default 1000)")
    p.add_argument("--threads", type=int, default=4, help="worker threads running steps (default 4)")
    p.add_argument("--mode", default="both", help=f"one of {', '.join(MODES)} (default both)")
    p.add_argument("--dwell", type=float, default=0.5,
                   help="longest wait per layout for every worker to finish a step (s, default 0.5)")
    p.add_argument("--hang-timeout", type=float, default=60.0,
                   help="a worker without progress this long is a hang (s, default 60)")
    args = p.parse_args(argv)
    if args.mode not in MODES:
        p.error(f"--mode {args.mode!r} is invalid; allowed: {', '.join(MODES)}")
    if args.iterations < 1 or args.threads < 1:
        p.error("--iterations and --threads must be >= 1")
    result = run(args.iterations, args.threads, args.mode, args.dwell, args.hang_timeout)
    print("RESULT " + json.dumps(result), flush=True)
    ok = result["wrong"] == 0 and result["errors"] == 0 and result["threads_end"] <= result["threads_after_warmup"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
