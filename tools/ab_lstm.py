#!/usr/bin/env python3
"""A/B comparison of executor configurations on tools/lstm_bench.py.

Arms (each run in its own fresh Python process, interleaved over --repeats
rounds, with the starting arm rotated every round):
  a  DEFAULT, default ConfigProto
  b  DEFAULT, inter_op=2 intra_op=1
  c  GRAPHI, 2 executors x 1 thread
  d  GRAPHI, 1 executor  x 2 threads

Reports, per arm, the median over rounds of each run's median step time and
its ratio to arm (a); then the physical limit LB = max(critical path, total op
time / cores), measured once from a sequential, uncontended run (CP from its
traced steps, tools/step_bound.py; W the smaller of its traced op-time sum and
its untraced step time, both slight overestimates of the true op time), and
each arm's efficiency LB / step time.  An arm whose run fails (non-zero exit, timeout, no JSON)
is reported as failed with the tail of its stderr; the other arms still run.

Example:
  tools/ab_lstm.py --repeats 5 --out ab_lstm.json
  tools/ab_lstm.py --repeats 1 --warmup 5 --steps 5 --arms a,b
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lstm_bench.py")

ARMS = {
    "a": ("DEFAULT, default ConfigProto", ["--executor", "DEFAULT"]),
    "b": ("DEFAULT, inter=2 intra=1", ["--executor", "DEFAULT", "--inter", "2", "--intra", "1"]),
    "c": ("GRAPHI, 2 executors x 1 thread", ["--executor", "GRAPHI", "--executors", "2", "--threads", "1"]),
    "d": ("GRAPHI, 1 executor x 2 threads", ["--executor", "GRAPHI", "--executors", "1", "--threads", "2"]),
}
BASELINE = "a"
# The physical limit comes from a sequential, uncontended run: its traced op
# times give W (total op time) and CP (critical path); LB = max(CP, W / cores)
# is the same for every arm, since they all run the same graph.
REFERENCE = ("sequential reference for the lower bound",
             ["--executor", "DEFAULT", "--inter", "1", "--intra", "1", "--trace-steps", "10"])
STDERR_TAIL_LINES = 25


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="rounds over all arms (default 3)")
    parser.add_argument("--warmup", type=int, default=100, help="lstm_bench --warmup (default 100)")
    parser.add_argument("--steps", type=int, default=100, help="lstm_bench --steps (default 100)")
    parser.add_argument("--arms", default=",".join(ARMS),
                        help=f"comma-separated subset of {','.join(ARMS)} (default: all)")
    parser.add_argument("--bench-args", default="",
                        help="extra lstm_bench arguments for every arm, e.g. '--hidden 128'")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds before one run is killed and counted as failed")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the runs")
    parser.add_argument("--out", default=None, help="write the full results as JSON here")
    parser.add_argument("--no-bound", action="store_true",
                        help="skip the sequential reference run that measures the lower bound")
    args = parser.parse_args(argv)
    args.arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = [a for a in args.arms if a not in ARMS]
    if unknown or not args.arms:
        parser.error(f"--arms: unknown arm(s) {unknown}; choose from {','.join(ARMS)}")
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args


def tail(text, lines=STDERR_TAIL_LINES):
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run_once(args, label, round_index):
    arm_argv = REFERENCE[1] if label == "reference" else ARMS[label][1]
    argv = ([args.python, BENCH] + arm_argv
            + ["--warmup", str(args.warmup), "--steps", str(args.steps), "--json"]
            + shlex.split(args.bench_args))
    record = {"round": round_index, "argv": argv, "ok": False}
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired as e:
        record["wall_s"] = time.monotonic() - start
        stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        record["error"] = f"timed out after {args.timeout:.0f}s"
        record["stderr_tail"] = tail(stderr)
        return record
    record["wall_s"] = time.monotonic() - start
    record["returncode"] = proc.returncode
    if proc.returncode != 0:
        record["error"] = f"exit status {proc.returncode}"
        record["stderr_tail"] = tail(proc.stderr)
        return record
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError) as e:
        record["error"] = f"no JSON result on stdout ({e})"
        record["stderr_tail"] = tail(proc.stderr)
        return record
    record.update(ok=True, median_ms=result["median_ms"], min_ms=result["min_ms"],
                  max_ms=result["max_ms"], bound=result.get("bound"), result=result)
    return record


def summarize(args, runs, bound):
    summary = {}
    for label in args.arms:
        ok = [r for r in runs[label] if r["ok"]]
        failed = [r for r in runs[label] if not r["ok"]]
        entry = {
            "description": ARMS[label][0],
            "argv": ARMS[label][1],
            "ok_rounds": len(ok),
            "failed_rounds": len(failed),
            "round_medians_ms": [r["median_ms"] for r in ok],
            "median_ms": statistics.median(r["median_ms"] for r in ok) if ok else None,
            "min_ms": min(r["min_ms"] for r in ok) if ok else None,
            "status": "ok" if not failed else ("failed" if not ok else "partial"),
        }
        if failed:
            entry["error"] = failed[-1].get("error")
            entry["stderr_tail"] = failed[-1].get("stderr_tail", "")
        summary[label] = entry
    base = summary.get(BASELINE, {}).get("median_ms")
    for entry in summary.values():
        lb = bound["lower_bound_ms"] if bound else None
        entry["efficiency"] = lb / entry["median_ms"] if lb and entry["median_ms"] else None
        if base and entry["median_ms"]:
            entry["ratio_vs_a"] = entry["median_ms"] / base      # < 1: faster than (a)
            entry["speedup_vs_a"] = base / entry["median_ms"]   # > 1: faster than (a)
        else:
            entry["ratio_vs_a"] = entry["speedup_vs_a"] = None
    return summary


def format_bound(bound):
    if not bound:
        return "lower bound: not measured (the sequential reference run failed)"
    return (f"lower bound LB = max(CP, W / cores) = max({bound['critical_path_ms']:.2f}, "
            f"{bound['work_ms']:.2f} / {bound['cores']}) = {bound['lower_bound_ms']:.2f} ms "
            f"(from {REFERENCE[0]}); LB/time is each arm's efficiency")


def format_table(summary):
    def num(v, fmt):
        return format(v, fmt) if v is not None else "-"

    header = (f"{'arm':<4}{'configuration':<34}{'median ms':>11}{'min ms':>10}"
              f"{'LB/time':>9}{'time/a':>9}{'speedup':>9}{'rounds':>8}  status")
    lines = [header, "-" * len(header)]
    for label, e in summary.items():
        lines.append(f"{label:<4}{e['description']:<34}{num(e['median_ms'], '.2f'):>11}"
                     f"{num(e['min_ms'], '.2f'):>10}"
                     f"{num(e['efficiency'], '.2f'):>9}{num(e['ratio_vs_a'], '.3f'):>9}"
                     f"{num(e['speedup_vs_a'], '.3f'):>9}"
                     f"{e['ok_rounds']:>4}/{e['ok_rounds'] + e['failed_rounds']:<3}  {e['status']}")
    for label, e in summary.items():
        if e["status"] != "ok":
            lines.append("")
            lines.append(f"arm {label} ({e['description']}) {e['status']}: {e['error']}")
            lines.extend("    " + line for line in e["stderr_tail"].splitlines())
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    runs = {label: [] for label in args.arms}
    started = time.time()
    for round_index in range(args.repeats):
        shift = round_index % len(args.arms)
        order = args.arms[shift:] + args.arms[:shift]
        for label in order:
            record = run_once(args, label, round_index)
            runs[label].append(record)
            status = f"median {record['median_ms']:.2f} ms" if record["ok"] else f"FAILED ({record['error']})"
            print(f"[round {round_index + 1}/{args.repeats}] arm {label}: {status} "
                  f"({record['wall_s']:.1f}s)", file=sys.stderr, flush=True)

    bound = None
    if not args.no_bound:
        reference = run_once(args, "reference", 0)
        bound = reference.get("result", {}).get("bound") if reference["ok"] else None
        if bound:
            # Traced op times carry the tracer's own cost, so the traced W is an
            # overestimate; the untraced sequential step (all ops back to back
            # plus executor overhead) is another. Take the tighter one.
            bound = dict(bound, traced_work_ms=bound["work_ms"],
                         sequential_step_ms=reference["median_ms"])
            bound["work_ms"] = min(bound["work_ms"], reference["median_ms"])
            bound["lower_bound_ms"] = max(bound["critical_path_ms"],
                                          bound["work_ms"] / bound["cores"])
        print(f"[reference] {'ok' if bound else 'FAILED: ' + str(reference.get('error'))}",
              file=sys.stderr, flush=True)
    summary = summarize(args, runs, bound)
    print(format_table(summary))
    print(format_bound(bound))
    if args.out:
        report = {
            "tool": "ab_lstm",
            "started_unix": started,
            "repeats": args.repeats,
            "warmup": args.warmup,
            "steps": args.steps,
            "bench_args": args.bench_args,
            "python": args.python,
            "baseline": BASELINE,
            "summary": summary,
            "bound": bound,
            "runs": runs,
        }
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
