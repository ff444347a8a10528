"""Soak: many training steps of a bundled model on GRAPHI, watching memory, threads and substitutes.

    PYTHONPATH=. python3 tools/soak.py --model lstm --size small --steps 10000 --mode both

Runs ``--steps`` training steps in a TF1 session (graph mode) and/or ``--steps`` in a
tf.function (function mode) of a bundled model (graphi_tf.lab.models) on GRAPHI, one mode after
the other in this process, and every ``--report-every`` steps prints: the process's RSS
(/proc/self/status VmRSS), its thread count (Threads), the scheduler's substitute workers
alive now and started so far (``scheduler_stats()``), and the median step time of the last
block of steps.

Checks, per mode, after ``--warmup`` steps (the first report at or after it is the baseline):

* RSS growth: the largest RSS reported after the baseline minus the baseline's, under
  ``--max-growth-mib`` (default 50);
* threads constant: every report's thread count, not counting substitutes alive at that
  moment, equals the baseline's, and the count at the end equals it too;
* substitutes given back: none alive once the mode's last step has finished (waiting up to
  2 s for the last to retire).

Prints ``RESULT {json}``. Exit status: 0 when every check passed, 1 otherwise, 2 on a usage
error.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Dict, List, Optional

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# A soak measures steady state: autotuning's exploration would re-partition the teams.
os.environ.setdefault("GRAPHI_AUTOTUNE", "0")

import graphi_tf  # noqa: E402
from graphi_tf import _loader
from graphi_tf.lab import models  # noqa: E402

MIB = 1024 * 1024


def proc_status() -> Dict[str, int]:
    """VmRSS (bytes) and Threads from /proc/self/status."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key == "VmRSS":
                out["rss"] = int(value.split()[0]) * 1024
            elif key == "Threads":
                out["threads"] = int(value.split()[0])
    return out


def substitutes() -> Dict[str, int]:
    stats = _loader.native().scheduler_stats()
    return {"alive": int(stats["substitutes_alive"]), "started": int(stats["substitutes_started"])}


def parse_hparams(items: List[str]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--set {item!r} is invalid; allowed: NAME=VALUE, e.g. hidden=64")
        try:
            out[name] = int(value)
        except ValueError:
            out[name] = float(value)
    return out


def soak_mode(mode: str, args: argparse.Namespace, hparams: Dict[str, Any]) -> dict:
    step = models.build_step(args.model, size=args.size, mode=mode, executor="GRAPHI", **hparams)
    reports: List[dict] = []
    times: List[float] = []
    t_start = time.monotonic()
    try:
        for i in range(1, args.steps + 1):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
            if i % args.report_every == 0 or i == args.steps:
                status, subs = proc_status(), substitutes()
                report = {"step": i, "rss_mib": round(status["rss"] / MIB, 1), "threads": status["threads"],
                          "substitutes_alive": subs["alive"], "substitutes_started": subs["started"],
                          "median_ms": round(1000 * statistics.median(times), 2)}
                times.clear()
                reports.append(report)
                print(f"[{mode}] step {i:6d}  rss {report['rss_mib']:8.1f} MiB  threads {report['threads']:4d}  "
                      f"substitutes alive {report['substitutes_alive']} (started {report['substitutes_started']})  "
                      f"median {report['median_ms']:.2f} ms", flush=True)
    finally:
        step.close()
    wall_s = time.monotonic() - t_start
    deadline = time.monotonic() + 2
    end_subs = substitutes()
    while end_subs["alive"] and time.monotonic() < deadline:
        time.sleep(0.01)
        end_subs = substitutes()
    end_threads = proc_status()["threads"] - end_subs["alive"]
    after = [r for r in reports if r["step"] >= args.warmup] or reports[-1:]
    base = after[0]
    growth = max(r["rss_mib"] for r in after) - base["rss_mib"]
    thread_counts = sorted({r["threads"] - r["substitutes_alive"] for r in after})
    checks = {
        "rss_growth_ok": growth < args.max_growth_mib,
        "threads_constant": thread_counts == [base["threads"] - base["substitutes_alive"]]
                            and end_threads == base["threads"] - base["substitutes_alive"],
        "substitutes_given_back": end_subs["alive"] == 0,
    }
    return {"mode": mode, "steps": args.steps, "wall_s": round(wall_s, 1), "baseline_step": base["step"],
            "rss_growth_mib": round(growth, 1), "threads": thread_counts, "end_threads": end_threads,
            "substitutes_started": end_subs["started"], "substitutes_alive_at_end": end_subs["alive"],
            "checks": checks, "reports": reports}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="lstm", choices=models.MODELS, help="bundled model (default lstm)")
    p.add_argument("--size", default="small", choices=models.SIZES, help="model size (default small)")
    p.add_argument("--mode", default="both", choices=list(models.MODES) + ["both"],
                   help="graph (TF1 session), function (tf.function) or both (default)")
    p.add_argument("--steps", type=int, default=10000, help="training steps per mode (default 10000)")
    p.add_argument("--report-every", type=int, default=1000, help="steps between reports (default 1000)")
    p.add_argument("--warmup", type=int, default=1000,
                   help="steps before the baseline report (default 1000)")
    p.add_argument("--max-growth-mib", type=float, default=50.0,
                   help="largest RSS growth after warm-up allowed (MiB, default 50)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="override a model hparam, e.g. --set hidden=64 (repeatable)")
    args = p.parse_args(argv)
    if args.steps < 1 or args.report_every < 1 or args.warmup < 0:
        p.error("--steps and --report-every must be >= 1, --warmup >= 0")
    try:
        hparams = parse_hparams(args.set)
    except ValueError as e:
        p.error(str(e))
    modes = list(models.MODES) if args.mode == "both" else [args.mode]
    setting = graphi_tf.info()
    results = [soak_mode(m, args, hparams) for m in modes]
    ok = all(all(r["checks"].values()) for r in results)
    summary = {"model": args.model, "size": args.size, "hparams": hparams,
               "layout": f"{setting['executors']}x{setting['threads_per_executor']}", "ok": ok,
               "modes": [{k: v for k, v in r.items() if k != "reports"} for r in results],
               "reports": {r["mode"]: r["reports"] for r in results}}
    print("RESULT " + json.dumps(summary), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
