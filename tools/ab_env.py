#!/usr/bin/env python3
"""A/B arms that differ only in environment variables, each run in its own process.

Runs tools/lstm_bench.py (any of its models and options) once per arm per round,
interleaved with the starting arm rotated, and reports the median over rounds of each
run's median step time and its ratio to the first arm. Used for GRAPHI's own knobs, e.g.
the ready-op policy or the profiler:

  tools/ab_env.py --bench-args "--executor GRAPHI" \\
      --arm fifo:GRAPHI_POLICY=fifo --arm cp:GRAPHI_POLICY=critical_path_first
  tools/ab_env.py --bench-args "--executor GRAPHI --model pathnet" \\
      --arm profile_off:GRAPHI_PROFILE=0 --arm profile_on:GRAPHI_PROFILE=1
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lstm_bench.py")


def parse_arm(text):
    name, _, assignments = text.partition(":")
    env = {}
    for item in filter(None, assignments.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"arm {text!r}: expected NAME:VAR=VALUE[,VAR=VALUE]")
        env[key] = value
    if not name:
        raise argparse.ArgumentTypeError(f"arm {text!r}: missing name")
    return name, env


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arm", type=parse_arm, action="append", required=True,
                        help="NAME:VAR=VALUE[,VAR=VALUE]; the first arm is the baseline")
    parser.add_argument("--bench-args", default="--executor GRAPHI")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--out", default=None, help="write results as JSON here")
    args = parser.parse_args(argv)

    medians = {name: [] for name, _ in args.arm}
    for r in range(args.repeats):
        order = args.arm[r % len(args.arm):] + args.arm[:r % len(args.arm)]
        for name, env in order:
            cmd = [sys.executable, BENCH, *shlex.split(args.bench_args), "--warmup",
                   str(args.warmup), "--steps", str(args.steps), "--json"]
            proc = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"[round {r + 1}] {name}: FAILED\n{proc.stderr[-2000:]}", file=sys.stderr)
                continue
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            medians[name].append(result["median_ms"])
            print(f"[round {r + 1}/{args.repeats}] {name}: median {result['median_ms']:.2f} ms",
                  file=sys.stderr, flush=True)

    base_name = args.arm[0][0]
    base = statistics.median(medians[base_name]) if medians[base_name] else None
    print(f"{'arm':<16}{'env':<44}{'median ms':>11}{'vs ' + base_name:>14}")
    summary = {}
    for name, env in args.arm:
        med = statistics.median(medians[name]) if medians[name] else None
        ratio = med / base if med and base else None
        summary[name] = {"env": env, "round_medians_ms": medians[name], "median_ms": med,
                         "ratio_vs_first": ratio}
        env_text = ",".join(f"{k}={v}" for k, v in env.items())
        print(f"{name:<16}{env_text:<44}{med if med else float('nan'):>11.2f}"
              f"{ratio if ratio else float('nan'):>14.3f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"bench_args": args.bench_args, "summary": summary}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
