#!/usr/bin/env python3
"""Replays the online autotuner's recorded rounds with fewer rounds: would it decide the same?

    python3 tools/replay_rounds.py --rounds 3 docs/results

Reads every ab.json under the given paths, takes each graphi_auto process that explored one
step at a time (``autotune.round_medians_ms``, at least one round more than ``--rounds``),
and decides again by the native rule (``graphi_tf.decision.decide``) from its first
``--rounds`` rounds only. Those rounds are what an autotuner with ``rounds_short = --rounds``
would have timed: the visits before them (screening, rounds 0..N-1) are the same. Prints how
many processes decided the same setting, and each one that did not, with whether the
shortened rounds would have gone to a runoff (``graphi_tf.decision.runoff_candidate``: adopted
nothing, a setting below the runoff ratio over at least two rounds). Runoffs already recorded
are replayed from the rounds only.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from typing import Any, Dict, Iterator, List, Tuple


def explored_processes(paths: List[str]) -> Iterator[Tuple[str, Dict[str, Any]]]:
    """(ab.json path, autotune status) of each graphi_auto process that explored alone."""
    for root in paths:
        files = [root] if root.endswith(".json") else sorted(
            glob.glob(os.path.join(root, "**", "ab.json"), recursive=True))
        for path in files:
            try:
                with open(path) as f:
                    data = json.load(f)
            except (OSError, ValueError):
                continue
            arm = data.get("arms", {}).get("graphi_auto") or {}
            for run in arm.get("rounds", []):
                status = run.get("autotune") or {}
                if status.get("load_clients") or "decision" not in status or "order" not in status:
                    continue
                yield path, status


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="ab.json files or folders searched for them")
    parser.add_argument("--rounds", type=int, required=True, help="rounds to decide from (>= 2)")
    args = parser.parse_args(argv)

    from graphi_tf import _loader, decision

    if args.rounds < decision.MIN_ROUNDS_TO_ADOPT:
        parser.error(f"--rounds must be at least {decision.MIN_ROUNDS_TO_ADOPT}")

    native = _loader.native()
    compared = same = 0
    for path, status in explored_processes(args.paths):
        medians = status.get("round_medians_ms") or []
        if len(medians) <= args.rounds:
            continue
        order = [tuple(s) for s in status["order"]]
        default = tuple(status["decision"]["default"])
        rounds = [{decision.parse_setting_label(k): v for k, v in m.items()} for m in medians]
        recorded = decision.decide(native, rounds, default, order)
        shortened = decision.decide(native, rounds[:args.rounds], default, order)
        compared += 1
        if (recorded.adopted, recorded.chosen) == (shortened.adopted, shortened.chosen):
            same += 1
            continue
        runoff = decision.runoff_candidate(native, rounds[:args.rounds], default, order) is not None
        print(f"{path}: {len(medians)} rounds chose {decision.setting_label(recorded.chosen)}"
              f"{'' if recorded.adopted else ' (kept)'}; {args.rounds} rounds chose "
              f"{decision.setting_label(shortened.chosen)}{'' if shortened.adopted else ' (kept)'}"
              f"{', then a runoff' if runoff else ''}")
    print(f"{same} of {compared} processes decided the same from their first {args.rounds} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
