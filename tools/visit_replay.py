#!/usr/bin/env python3
"""How long must a visit be? Records two settings' visits in one process, then replays shorter designs.

    # one process: 40 rounds of two visits (1 discarded + 16 timed steps each)
    python3 tools/visit_replay.py record --model lstm --size small --rounds 40 --out rec1.json
    # the native rule on every design (rounds x timed steps per visit) cut from the records
    python3 tools/visit_replay.py replay rec*.json
    # 3 rounds, then a runoff of 4 where they leave the layout close: how often each adopts
    python3 tools/visit_replay.py runoff rec*.json

``record`` runs a bundled model's step in a process started with ``GRAPHI_EXECUTORS=stock``
(TensorFlow's executor on the process's pools: the online autotuner's default) and
``GRAPHI_AUTOTUNE=0``, and alternates it with a team layout (``--layout``, 2x1) as the
autotuner's runoff does: one visit of each per round, the order rotated every round
(``configure()`` goes back to stock, ``configure(E, T)`` switches to the layout, between
steps). Each visit discards its first step and times the next ``--timed``; a step's figure
is the time from the end of the step before it to its own end, as the autotuner times.

``replay`` cuts designs out of those records: R rounds of visits of T timed steps are the
first T timed steps of each visit in R consecutive rounds (what a visit of T steps would
have timed: the switch and the discarded step are the same), in non-overlapping blocks
after ``--skip`` rounds. Each block is decided by the native rule
(``graphi_tf.decision.decide``: adopted iff the layout was faster in enough rounds, the
sign test of ``cc/tuning/tuning_decision.h``; until 2026-12-07 the median of the per-round
ratios plus half their range had to be below 1). ``--scale F`` multiplies the other setting's times by F: on an
A/A record, a setting F times slower than the default with the default's own noise. Per
design it prints how many blocks adopted the layout, the median ratio, and the cost in
steps, beside each record's ratio over all its rounds.

``runoff`` replays the autotuner's whole decision on windows of R + N rounds starting at
every round: R rounds (``--rounds``), and where they adopt nothing but leave the layout
below the runoff ratio, the next N (``--runoff-rounds``), decided from those alone as the
runoff is (both stages here run all their rounds: the autotuner may end them sooner once
their outcome is settled, which changes no decision).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List, Sequence, Tuple

STOCK = (0, 0)


def record(args: argparse.Namespace) -> int:
    for key in [k for k in os.environ if k.startswith("GRAPHI_")]:
        del os.environ[key]
    os.environ["GRAPHI_EXECUTORS"] = "stock"
    os.environ["GRAPHI_AUTOTUNE"] = "0"
    os.environ["GRAPHI_CACHE_DIR"] = tempfile.mkdtemp(prefix="visit_replay_")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import graphi_tf
    from graphi_tf.lab import cli_common

    # "stock": an A/A record, stock against itself (what the rule adopts when nothing differs).
    layout = STOCK if args.layout == "stock" else tuple(int(x) for x in args.layout.split("x"))
    step = cli_common.build_step(cli_common.Case(model=args.model, size=args.size), executor="GRAPHI")

    settings = {"0x0": STOCK, args.layout: layout}

    def visit(key: str, untimed: int) -> List[float]:
        if settings[key] == STOCK:
            graphi_tf.configure()
        else:
            graphi_tf.configure(*settings[key])
        for _ in range(untimed):
            step()
        times = []
        last = time.perf_counter()
        for _ in range(args.timed):
            step()
            now = time.perf_counter()
            times.append((now - last) * 1e3)
            last = now
        return times

    keys = list(settings)
    for key in keys:  # warm-up visits, as the autotuner's settling and screening
        visit(key, args.warmup)
    rounds = []
    for r in range(args.rounds):
        order = keys[r % 2:] + keys[:r % 2]
        rounds.append({"order": order, "ms": {key: visit(key, 1) for key in order}})
    with open(args.out, "w") as f:
        json.dump({"model": args.model, "size": args.size, "layout": args.layout, "timed": args.timed,
                   "warmup": args.warmup, "graphi_tf": graphi_tf.__file__, "rounds": rounds}, f)
    return 0


def block_decision(native: Any, rounds: Sequence[Dict[str, List[float]]], key: str,
                   timed: int, scale: float = 1.0) -> Tuple[bool, float]:
    """The native rule on rounds cut to ``timed`` steps a visit, the other setting's times
    multiplied by ``scale``: (adopted, median ratio)."""
    from graphi_tf import decision

    other = (1, 1)  # the rule needs only a setting other than the default's
    medians = [{STOCK: statistics.median(r["0x0"][:timed]),
                other: scale * statistics.median(r[key][:timed])} for r in rounds]
    made = decision.decide(native, medians, STOCK, [STOCK, other])
    evidence = made.evidence_for(other)
    return made.adopted, evidence.ratio_median


def load_records(paths: Sequence[str], skip: int) -> List[Tuple[str, List[Dict[str, List[float]]], int]]:
    """(the other setting's key, rounds after the first ``skip``, timed steps per visit) of
    each record."""
    records = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        records.append((data["layout"], [r["ms"] for r in data["rounds"]][skip:], data["timed"]))
    return records


def replay(args: argparse.Namespace) -> int:
    from graphi_tf import _loader

    native = _loader.native()
    records = load_records(args.records, args.skip)
    for path, (key, rounds, timed) in zip(args.records, records):
        full = [statistics.median(r[key]) / statistics.median(r["0x0"]) for r in rounds]
        quartiles = statistics.quantiles(full, n=4)
        print(f"{path}: {len(rounds)} rounds of {timed} timed steps; {key} "
              f"over stock, median of per-round ratios {statistics.median(full):.3f} "
              f"(quartiles {quartiles[0]:.3f}-{quartiles[2]:.3f})")
    print()
    print("design (rounds x timed)  steps  blocks  adopted  per record (adopted/blocks, median ratio of blocks)")
    for rounds_per_block in args.design_rounds:
        for timed in args.design_timed:
            total = adopted_total = 0
            cells = []
            for key, rounds, recorded_timed in records:
                if timed > recorded_timed:
                    continue
                blocks = [rounds[i:i + rounds_per_block]
                          for i in range(0, len(rounds) - rounds_per_block + 1, rounds_per_block)]
                made = [block_decision(native, b, key, timed, args.scale) for b in blocks]
                n_adopted = sum(1 for a, _ in made if a)
                total += len(made)
                adopted_total += n_adopted
                cells.append(f"{n_adopted}/{len(made)} {statistics.median(r for _, r in made):.3f}")
            steps = rounds_per_block * 2 * (1 + timed)
            print(f"{rounds_per_block} x {timed:<2}                  {steps:5d}  {total:6d}  "
                  f"{adopted_total / max(total, 1):7.0%}  " + "; ".join(cells))
    return 0


def runoff(args: argparse.Namespace) -> int:
    """The rounds and then the runoff, as the autotuner decides."""
    from graphi_tf import _loader, decision

    native = _loader.native()
    rounds_n, runoff_n, timed = args.rounds, args.runoff_rounds, args.timed
    total = 0
    adopted = {"the rounds alone": 0, "the rounds, then the runoff": 0}
    for key, rounds, recorded_timed in load_records(args.records, args.skip):
        if timed > recorded_timed:
            sys.exit(f"--timed {timed}: a record has only {recorded_timed} timed steps a visit")
        # Windows start at every round: more of them than disjoint blocks, not independent.
        for i in range(0, len(rounds) - rounds_n - runoff_n + 1):
            total += 1
            made, ratio = block_decision(native, rounds[i:i + rounds_n], key, timed, args.scale)
            if made:
                for k in adopted:
                    adopted[k] += 1
                continue
            if ratio >= decision.RUNOFF_BELOW_RATIO:
                continue
            more = rounds[i + rounds_n:i + rounds_n + runoff_n]
            adopted["the rounds, then the runoff"] += block_decision(native, more, key, timed, args.scale)[0]
    print(f"{rounds_n} rounds, then a runoff of {runoff_n}, {timed} timed steps a visit, scale "
          f"{args.scale}: {total} windows")
    for k, n in adopted.items():
        print(f"  adopted by {k}: {n / max(total, 1):.0%} ({n})")
    return 0


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="time alternating visits in this process")
    rec.add_argument("--model", default="lstm")
    rec.add_argument("--size", default="small")
    rec.add_argument("--layout", default="2x1",
                     help="ExT, visited against stock; 'stock': stock against itself (A/A)")
    rec.add_argument("--rounds", type=int, default=40)
    rec.add_argument("--timed", type=int, default=16, help="timed steps per visit")
    rec.add_argument("--warmup", type=int, default=30, help="untimed steps of each setting's first visit")
    rec.add_argument("--out", required=True)
    rep = sub.add_parser("replay", help="decide designs cut from records")
    rep.add_argument("records", nargs="+")
    rep.add_argument("--skip", type=int, default=2, help="rounds left out at the start")
    rep.add_argument("--design-rounds", type=int, nargs="+", default=[2, 3, 4, 6])
    rep.add_argument("--design-timed", type=int, nargs="+", default=[4, 6, 8, 12, 16])
    rep.add_argument("--scale", type=float, default=1.0,
                     help="multiply the other setting's times (on A/A records, 1.03: a setting 3%% slower)")
    run = sub.add_parser("runoff", help="the rounds, then a runoff, both ways it can count")
    run.add_argument("records", nargs="+")
    run.add_argument("--skip", type=int, default=2, help="rounds left out at the start")
    run.add_argument("--rounds", type=int, default=3)
    run.add_argument("--runoff-rounds", type=int, default=8)
    run.add_argument("--timed", type=int, default=5, help="timed steps a visit")
    run.add_argument("--scale", type=float, default=1.0,
                     help="multiply the other setting's times (as for replay)")
    args = parser.parse_args(argv)
    return {"record": record, "replay": replay, "runoff": runoff}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
