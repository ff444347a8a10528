"""Stress: `graphi-tf tune` subprocesses in a row, under a CPU hog.

    PYTHONPATH=. python3 tools/stress_tune.py --runs 100 --timeout 300

Starts ``--hogs`` busy-loop processes (default 1), then runs ``graphi-tf tune`` (this tree's
graphi_tf, through ``python3 -m graphi_tf.lab.cli``) ``--runs`` times one after another, each with
a time limit, and counts how each ended:

* ok: exit status 0 and a JSON result on stdout;
* crash: killed by a signal (negative return code): the signal and the tail of stderr are
  printed; with ``--core-dir`` the run is started with an unlimited core size in that
  directory, so the core can be read with ``gdb python3 CORE``;
* hang: over ``--timeout``: the process group is killed (SIGABRT first, so Python's
  faulthandler prints every thread's stack into the stderr tail shown, then SIGKILL);
* error: any other non-zero status (stderr tail printed).

Each run has its own empty ``GRAPHI_CACHE_DIR`` and ``--no-cache``, so no run starts tuned
from an earlier one. Prints ``RESULT {json}``; exit status 0 when every run was ok, else 1
(2: usage error).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from typing import List, Optional

HOG = "while True:\n    pass\n"
# This tree's graphi_tf, whatever directory a run starts in (--core-dir).
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_hogs(n: int) -> List[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(n)]


def stop_hogs(hogs: List[subprocess.Popen]) -> None:
    for h in hogs:
        h.kill()
        h.wait()


def tune_command(args: argparse.Namespace) -> List[str]:
    return [sys.executable, "-m", "graphi_tf.lab.cli", "tune", "--model", args.model, "--size", args.size,
            "--mode", args.mode, "--rounds", str(args.rounds), "--steps", str(args.steps),
            "--warmup", str(args.warmup), "--no-cache", "--no-progress", "--json"]


def _allow_core_dumps() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def run_once(cmd: List[str], timeout: float, core_dir: Optional[str]) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", GRAPHI_CACHE_DIR=tempfile.mkdtemp(prefix="stress_tune_cache_"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, os.environ.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONFAULTHANDLER", "1")  # a fatal signal prints the Python stacks
    cwd = core_dir or None

    def preexec() -> None:
        os.setsid()
        if core_dir:
            _allow_core_dumps()

    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=preexec)
    try:
        out, err = proc.communicate(timeout=timeout)
        outcome = None
    except BaseException as e:
        if not isinstance(e, subprocess.TimeoutExpired):  # e.g. SIGTERM: leave no run behind
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        os.killpg(proc.pid, signal.SIGABRT)
        try:
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        outcome = "hang"
    seconds = time.monotonic() - start
    rc = proc.returncode
    if outcome is None:
        if rc < 0:
            outcome = "crash"
        elif rc == 0 and out.strip():
            outcome = "ok"
        else:
            outcome = "error"
    record = {"outcome": outcome, "returncode": rc, "seconds": round(seconds, 1)}
    if rc is not None and rc < 0:
        record["signal"] = signal.Signals(-rc).name
    if outcome != "ok":
        record["stderr_tail"] = err[-3000:]
    return record


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=100, help="tune subprocesses (default 100)")
    p.add_argument("--timeout", type=float, default=300.0, help="time limit per run (s, default 300)")
    p.add_argument("--hogs", type=int, default=1, help="busy-loop processes running meanwhile (default 1)")
    p.add_argument("--model", default="lstm", help="bundled model to tune (default lstm)")
    p.add_argument("--size", default="small", help="model size (default small)")
    p.add_argument("--mode", default="graph", help="graph or function (default graph)")
    p.add_argument("--rounds", type=int, default=2, help="tune --rounds (default 2, the fewest)")
    p.add_argument("--steps", type=int, default=1, help="tune --steps (default 1)")
    p.add_argument("--warmup", type=int, default=0, help="tune --warmup (default 0)")
    p.add_argument("--core-dir", default=None,
                   help="run each tune here with an unlimited core size, so a crash leaves a core file")
    args = p.parse_args(argv)
    if args.runs < 1 or args.hogs < 0 or args.timeout <= 0:
        p.error("--runs must be >= 1, --hogs >= 0, --timeout > 0")
    cmd = tune_command(args)
    counts = {"ok": 0, "crash": 0, "hang": 0, "error": 0}
    problems = []
    seconds = []
    # `timeout` and other supervisors stop this with SIGTERM: stop the hogs on the way out.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    hogs = start_hogs(args.hogs)
    try:
        for i in range(args.runs):
            record = run_once(cmd, args.timeout, args.core_dir)
            counts[record["outcome"]] += 1
            seconds.append(record["seconds"])
            line = f"run {i + 1}/{args.runs}: {record['outcome']} (status {record['returncode']}, {record['seconds']} s)"
            if "signal" in record:
                line += f" signal {record['signal']}"
            print(line, flush=True)
            if record["outcome"] != "ok":
                print("  stderr tail:\n" + "\n".join("    " + l for l in record["stderr_tail"].splitlines()[-40:]),
                      flush=True)
                problems.append(dict(record, run=i + 1))
    finally:
        stop_hogs(hogs)
    seconds.sort()
    result = {"runs": args.runs, "hogs": args.hogs, "command": " ".join(cmd[1:]), **counts,
              "median_s": seconds[len(seconds) // 2], "max_s": seconds[-1],
              "problems": [{k: v for k, v in pr.items() if k != "stderr_tail"} for pr in problems]}
    print("RESULT " + json.dumps(result), flush=True)
    return 0 if counts["ok"] == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
