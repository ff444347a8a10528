"""``graphi-tf trace``: record one step's timeline of a case (a bundled model, a script, a
SavedModel or a .keras file) with ``graphi_tf.trace.record_step`` and write it as Chrome trace
JSON (and a Gantt PNG), with a summary on stdout. See docs/tracing.md."""
from __future__ import annotations

import argparse
from typing import Any

from graphi_tf.lab import cli_common
from graphi_tf._argtypes import int_at_least as _int_at_least
from graphi_tf.trace import DEFAULT_WARMUP, record_step


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``trace`` subcommand to a ``graphi-tf`` subparsers object."""
    p = cli_common.add_subcommand(
        subparsers, "trace", run,
        help="record one step's timeline: Chrome trace JSON (+ Gantt PNG) and a summary",
        description="Run warm-up steps, record one step of every GRAPHI graph, write a Chrome "
                    "trace-event JSON (open in https://ui.perfetto.dev or chrome://tracing) and "
                    "print step time, W, CP, LB and per-team busy time. See docs/tracing.md.")
    cli_common.add_case_arguments(p)
    p.add_argument("-o", "--output", required=True, metavar="trace.json", help="Chrome trace JSON to write")
    p.add_argument("--png", metavar="gantt.png", default=None, help="also write a Gantt chart (matplotlib)")
    p.add_argument("--warmup", type=_int_at_least(1), default=DEFAULT_WARMUP,
                   help=f"untraced steps first (default {DEFAULT_WARMUP})")
    return p


def run(args: argparse.Namespace) -> int:
    """Runs ``graphi-tf trace``; returns the exit status."""
    import graphi_tf  # noqa: F401  (loads the native library, registers GRAPHI)

    try:
        step = cli_common.build_step(cli_common.Case.from_args(args))
    except cli_common.UsageError as e:
        return cli_common.error(str(e))
    try:
        trace = record_step(step, warmup=args.warmup)
    except RuntimeError as e:
        return cli_common.error(str(e), 1)
    finally:
        cli_common.close_step(step)
    trace.write(args.output)
    print(trace.summary())
    print(f"trace: {args.output} (open in https://ui.perfetto.dev or chrome://tracing)")
    if args.png:
        try:
            trace.write_gantt(args.png)
        except RuntimeError as e:
            return cli_common.error(str(e), 1)
        print(f"gantt: {args.png}")
    return 0
