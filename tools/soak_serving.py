"""Soak: a zero-config GRAPHI serving process whose load keeps changing.

    python3 tools/soak_serving.py /tmp/serving_models/lstm --schedule 1,8,2,4,16,1,8,4 \
        --phase-s 6 --cycles 3 --out soak.jsonl

One process loads a SavedModel of tools/export_serving_models.py and serves its
serving_default signature through GRAPHI with online autotuning on and an empty cache, the way
a serving user who changes nothing runs it. The number of closed-loop client threads follows
``--schedule`` (one phase each, ``--phase-s`` seconds), ``--cycles`` times over, so the
autotuner sees its graph alone, at several levels of load, and levels it has decided before;
an exploration under load is abandoned when the load moves during it (docs/tuning.md).

Every response is compared with the stock executor's response to the same input, computed
first on the main thread. After each phase one JSON line goes to stdout and ``--out``:
requests, errors, mismatches, requests/s, the process's RSS, its thread count and threads by
name, and the main graph's load class, setting and autotuning state. A sampler thread reads the autotuner's
state every 0.1 s and records each decision ("adopted" or "kept_default" for a load class,
with its own reason and exploration time).

Checks:

* no error and no response that differs from stock's (``--rtol``, ``--atol``);
* no hang: every phase's clients finish within ``--timeout-s`` of its end (else every
  thread's stack is printed and the process exits with status 3);
* each load class is decided at most once in the process (a decided class is not explored
  again); the RESULT also lists the cache's entries per graph and class (one file per key,
  so at most one each by construction);
* RSS: the largest RSS after the first cycle minus the RSS at the first cycle's end is under
  ``--max-growth-mib``;
* threads: no phase after the first cycle ends with more native threads (TensorFlow's,
  GRAPHI's: those not named as the interpreter, /proc/self/comm) than the most any phase of
  the first cycle ended with. Python's own threads are left out: a client thread joined a
  moment ago may still be listed.

Prints ``RESULT {json}``; exit status 0 when every check passed, 1 otherwise, 2 on a usage
error, 3 on a hang.
"""
from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import os
import pathlib
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, TextIO

MIB = 1024 * 1024
DECIDED_STATES = ("adopted", "kept_default")


def parse_schedule(text: str) -> List[int]:
    """Client counts from "1,8,2": each a positive integer."""
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--schedule={text!r}: expected comma-separated client counts, e.g. 1,8,2,4")
    if not counts or any(c < 1 for c in counts):
        raise ValueError(f"--schedule={text!r}: every client count must be 1 or more")
    return counts


def proc_status() -> Dict[str, int]:
    """The process's RSS (bytes) and thread count, from /proc/self/status."""
    out: Dict[str, int] = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key == "VmRSS":
                out["rss"] = int(value.split()[0]) * 1024
            elif key == "Threads":
                out["threads"] = int(value.split()[0])
    return out


def thread_names() -> Dict[str, int]:
    """How many of the process's threads carry each name (/proc/self/task/*/comm)."""
    names: Dict[str, int] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:  # the thread ended while we looked
            continue
        names[name] = names.get(name, 0) + 1
    return dict(sorted(names.items()))


def native_thread_names(names: Dict[str, int]) -> Dict[str, int]:
    """``names`` less those of the interpreter's name (/proc/self/comm, which Python's own
    threads keep): the threads TensorFlow and GRAPHI started."""
    with open("/proc/self/comm") as f:
        interpreter = f.read().strip()
    return {name: n for name, n in names.items() if name != interpreter}


def main_graph(graphs: Sequence[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The largest graph GRAPHI has run (the signature's body), or None."""
    return max(graphs, key=lambda g: g["node_count"]) if graphs else None


def decisions_by_class(events: Sequence[Dict[str, Any]]) -> Dict[str, int]:
    """How many times each (graph, load class) was decided, from the sampler's events."""
    counts: Dict[str, int] = {}
    for e in events:
        key = f"{e['signature'][:12]}/{e['load_class']}"
        counts[key] = counts.get(key, 0) + 1
    return counts


def check(phases: Sequence[Dict[str, Any]], events: Sequence[Dict[str, Any]],
          cycle_len: int, max_growth_mib: float) -> List[str]:
    """The failed checks (see the module docstring), as sentences; empty when all passed."""
    failures: List[str] = []
    errors = sum(p["errors"] for p in phases)
    mismatches = sum(p["mismatches"] for p in phases)
    if errors:
        failures.append(f"{errors} requests failed (first: {next(p['first_error'] for p in phases if p['errors'])})")
    if mismatches:
        failures.append(f"{mismatches} responses differ from the stock executor's")
    for key, n in sorted(decisions_by_class(events).items()):
        if n > 1:
            failures.append(f"{key} was decided {n} times (at most once per process)")
    first, later = phases[:cycle_len], phases[cycle_len:]
    if later:
        growth = (max(p["rss"] for p in later) - first[-1]["rss"]) / MIB
        if growth >= max_growth_mib:
            failures.append(f"RSS grew by {growth:.1f} MiB after the first cycle (limit {max_growth_mib})")
        most = max(p["native_threads"] for p in first)
        grown = [p for p in later if p["native_threads"] > most]
        if grown:
            failures.append(f"phase {grown[0]['phase']} ended with {grown[0]['native_threads']} native "
                            f"threads; the first cycle's phases ended with at most {most}")
    return failures


def cache_entries_per_class(cache_dir: str) -> Dict[str, int]:
    """Entries per (graph, load class) in a GRAPHI cache directory (graphi_tf.cache)."""
    from graphi_tf import cache

    counts: Dict[str, int] = {}
    for entry in cache.list_entries(pathlib.Path(cache_dir)):
        key = f"{entry.signature[:12]}/{entry.load_class}"
        counts[key] = counts.get(key, 0) + 1
    return counts


class DecisionSampler:
    """Reads the autotuner's state of every graph every ``period_s`` and keeps each decision.

    A decision is a status "adopted" or "kept_default" for a (graph, load class), told apart
    from others by its reason and exploration time: a graph back in a class decided before
    shows that class's decision again, which is not a new one. Thread-safe: ``events`` is
    read after ``stop()``.
    """

    def __init__(self, graphs_fn, period_s: float = 0.1, timeline: bool = False) -> None:
        self._graphs_fn = graphs_fn
        self._period_s = period_s
        self._stop = threading.Event()
        self._seen: set = set()
        self.events: List[Dict[str, Any]] = []
        # With ``timeline``: each change of the main graph's class, the setting in force,
        # or the runtime's threads by name, as {"t", "load_class", "setting", "threads"}.
        self._timeline: Optional[List[Dict[str, Any]]] = [] if timeline else None
        self._thread = threading.Thread(target=self._run, name="decision-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()  # a decision made after the last period

    def _run(self) -> None:
        while not self._stop.wait(self._period_s):
            self.sample()

    def sample(self) -> None:
        """Reads the graphs' states once."""
        graphs = self._graphs_fn()
        if self._timeline is not None:
            self._note_timeline(graphs)
        for g in graphs:
            a = g.get("autotune") or {}
            if a.get("state") not in DECIDED_STATES:
                continue
            identity = (g["signature"], a.get("load_class"), a.get("exploration_s"), a.get("reason"))
            if identity in self._seen:
                continue
            self._seen.add(identity)
            self.events.append({"t": time.time(), "signature": g["signature"],
                                "load_class": a.get("load_class"), "state": a.get("state"),
                                "reason": a.get("reason"), "exploration_s": a.get("exploration_s")})


    @property
    def timeline(self) -> List[Dict[str, Any]]:
        return list(self._timeline or [])

    def _note_timeline(self, graphs: Sequence[Dict[str, Any]]) -> None:
        g = main_graph(graphs) or {}
        threads = native_thread_names(thread_names())
        point = {"load_class": g.get("load_class"), "setting": g.get("setting"), "threads": threads}
        if not self._timeline or {k: self._timeline[-1][k] for k in point} != point:
            self._timeline.append({"t": time.time(), **point})


def run_phase(call, reference, clients: int, seconds: float, timeout_s: float,
              rtol: float, atol: float) -> Dict[str, Any]:
    """``clients`` closed-loop threads calling ``call()`` for ``seconds``, each response checked
    against ``reference``. Exits the process with status 3 if the clients do not finish."""
    import numpy as np
    import tensorflow as tf

    lock = threading.Lock()
    stop = threading.Event()
    tally = {"requests": 0, "errors": 0, "mismatches": 0, "first_error": None}

    def client() -> None:
        # The executor type is thread-local: each client selects GRAPHI once, as a serving
        # thread would.
        with tf.experimental.function_executor_type("GRAPHI"):
            while not stop.is_set():
                error = None
                mismatch = False
                try:
                    out = call()
                    mismatch = any(not np.allclose(out[k].numpy(), reference[k], rtol=rtol, atol=atol)
                                   for k in reference)
                except Exception as e:  # a failed request is counted and reported, not fatal
                    error = f"{type(e).__name__}: {e}"
                with lock:
                    tally["requests"] += 1
                    tally["mismatches"] += int(mismatch)
                    if error is not None:
                        tally["errors"] += 1
                        tally["first_error"] = tally["first_error"] or error[:300]

    threads = [threading.Thread(target=client, name=f"client-{i}") for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    deadline = time.perf_counter() + timeout_s
    for t in threads:
        t.join(max(0.0, deadline - time.perf_counter()))
    if any(t.is_alive() for t in threads):
        print(f"HANG: {clients} clients did not finish within {timeout_s} s of the phase's end",
              file=sys.stderr, flush=True)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        os._exit(3)
    wall = time.perf_counter() - t0
    return {**tally, "requests_per_s": tally["requests"] / wall}


def emit(record: Dict[str, Any], out: Optional[TextIO]) -> None:
    line = json.dumps(record)
    print(line, flush=True)
    if out is not None:
        out.write(line + "\n")
        out.flush()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("saved_model", help="a SavedModel directory (tools/export_serving_models.py)")
    parser.add_argument("--schedule", default="1,8,2,4,16,1,8,4", help="clients per phase (default %(default)s)")
    parser.add_argument("--phase-s", type=float, default=6.0, help="seconds per phase (default %(default)s)")
    parser.add_argument("--cycles", type=int, default=3, help="times through the schedule (default %(default)s)")
    parser.add_argument("--timeout-s", type=float, default=60.0,
                        help="longest wait for a phase's clients to finish (default %(default)s)")
    parser.add_argument("--max-growth-mib", type=float, default=50.0, help="RSS limit (default %(default)s)")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--out", help="also write the JSON lines here")
    parser.add_argument("--timeline", action="store_true",
                        help="also record every change of the main graph's class, setting and "
                             "native threads (sampled every 0.1 s)")
    args = parser.parse_args(argv)
    try:
        schedule = parse_schedule(args.schedule)
    except ValueError as e:
        parser.error(str(e))
    if args.cycles < 1 or args.phase_s <= 0:
        parser.error("--cycles must be 1 or more and --phase-s positive")

    # A fresh cache, so every class is explored in this process (this is a tool, not the
    # library: it may set the environment it runs graphi_tf in).
    cache_dir = tempfile.mkdtemp(prefix="graphi_soak_cache_")
    os.environ["GRAPHI_CACHE_DIR"] = cache_dir
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    import graphi_tf

    model = tf.saved_model.load(args.saved_model)
    fn = model.signatures["serving_default"]
    name, spec = next(iter(fn.structured_input_signature[1].items()))
    shape = [1, 50, 32] if "lstm" in os.path.basename(os.path.normpath(args.saved_model)) else \
        [1] + [int(d) for d in spec.shape[1:]]
    x = tf.constant(np.random.RandomState(0).rand(*shape).astype(np.float32))

    def call():
        return fn(**{name: x})

    reference = {k: v.numpy() for k, v in call().items()}  # the stock executor's answer
    sampler = DecisionSampler(lambda: graphi_tf.info()["graphs"], timeline=args.timeline)
    sampler.start()
    out = open(args.out, "w") if args.out else None
    phases: List[Dict[str, Any]] = []
    t_start = time.time()
    try:
        for cycle in range(args.cycles):
            for clients in schedule:
                result = run_phase(call, reference, clients, args.phase_s, args.timeout_s,
                                   args.rtol, args.atol)
                names = thread_names()
                g = main_graph(graphi_tf.info()["graphs"]) or {}
                a = g.get("autotune") or {}
                record = {"phase": len(phases), "cycle": cycle, "clients": clients, **result,
                          **proc_status(), "thread_names": names, "native_threads": sum(native_thread_names(names).values()),
                          "load_class": g.get("load_class"), "setting": g.get("setting"),
                          "autotune_state": a.get("state"), "autotune_class": a.get("load_class"),
                          "autotune_reason": a.get("reason"), "t_s": round(time.time() - t_start, 1)}
                phases.append(record)
                emit(record, out)
    finally:
        sampler.stop()
    for e in sampler.events:
        emit({"decision": e}, out)
    for point in sampler.timeline:
        emit({"timeline": point}, out)
    cache_entries = cache_entries_per_class(cache_dir)
    failures = check(phases, sampler.events, len(schedule), args.max_growth_mib)
    summary = {"ok": not failures, "failures": failures, "phases": len(phases),
               "requests": sum(p["requests"] for p in phases),
               "decisions": decisions_by_class(sampler.events), "cache_entries": cache_entries,
               "rss_mib": [round(p["rss"] / MIB, 1) for p in phases],
               "threads": [p["threads"] for p in phases],
               "native_threads": [p["native_threads"] for p in phases], "wall_s": round(time.time() - t_start, 1)}
    emit({"RESULT": summary}, out)
    print("RESULT " + json.dumps(summary), flush=True)
    if out is not None:
        out.close()
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
