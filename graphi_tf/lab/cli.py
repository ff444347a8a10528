"""The graphi-tf command line.

    graphi-tf info                       versions, cores, tiles, teams (JSON)
    graphi-tf cache list [--json]        cached tuned settings
    graphi-tf cache show KEY [--json]    one entry and its tuning evidence; KEY may be a unique prefix
    graphi-tf cache clear                remove every entry
    graphi-tf tune --model NAME [--size S] [--mode M]
                                         tune a bundled model (lstm, phased_lstm, pathnet, googlenet)
    graphi-tf tune --script FILE.py      tune FILE's build_step() step
    graphi-tf trace --model NAME -o t.json   record one step's timeline (Chrome trace JSON)
    graphi-tf ab --model NAME|--script F stock TensorFlow vs GRAPHI, each arm in its own process
    graphi-tf bundle --python-version X.Y --out DIR
                                         an offline wheelhouse for a machine with no package index
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from typing import Any, List, Optional, Sequence

from graphi_tf.lab import ab as _ab
from graphi_tf.lab import bundle as _bundle
from graphi_tf.lab import cli_common
from graphi_tf import decision as _decision
from graphi_tf.lab import trace_cli as _trace_cli
from graphi_tf._argtypes import int_at_least as _int_at_least
from graphi_tf.tune import DEFAULT_ROUNDS, DEFAULT_STEPS, DEFAULT_WARMUP, DISCARD_STEPS_PER_VISIT

SUBCOMMAND_MODULES = (_trace_cli, _ab, _bundle)
"""Subcommands with their own module (``add_parser`` / ``run``); info, cache and tune are here."""


def _parse_settings(text: str) -> List[tuple]:
    settings = []
    for part in text.split(","):
        part = part.strip()
        try:
            e, t = part.lower().split("x")
            settings.append((int(e), int(t)))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"invalid setting {part!r}; expected ExT[,ExT...], e.g. 1x1,2x1"
            ) from None
    return settings


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=cli_common.PROG, description="GRAPHI executor for TensorFlow.")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_info_parser(sub)
    _add_cache_parser(sub)
    _add_tune_parser(sub)
    for module in SUBCOMMAND_MODULES:
        module.add_parser(sub)
    return parser


def _add_info_parser(sub: Any) -> argparse.ArgumentParser:
    return cli_common.add_subcommand(sub, "info", _info_command,
                                     help="versions, usable cores, tiles and the team layout in force")


def _add_cache_parser(sub: Any) -> argparse.ArgumentParser:
    cache = cli_common.add_subcommand(sub, "cache", _cache_command, help="the per-graph tuning cache",
                                      description="The per-graph tuning cache (see docs/tuning.md).")
    cache_sub = cache.add_subparsers(dest="cache_command", required=True)
    listing = cache_sub.add_parser("list", help="list entries: key, signature, setting, median, created")
    listing.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    show = cache_sub.add_parser("show", help="print one entry: setting, decision and its evidence")
    show.add_argument("key", help="entry key (or a unique prefix of one)")
    show.add_argument("--json", action="store_true", help="print the entry file's JSON instead")
    cache_sub.add_parser("clear", help="remove every entry")
    return cache


def _add_tune_parser(sub: Any) -> argparse.ArgumentParser:
    tune = cli_common.add_subcommand(
        sub, "tune", _tune_command,
        help="time a step under every team layout; adopt one only if it beats the default",
        description="Time a training step under every symmetric team layout that fits this "
                    "machine, in interleaved rounds, and adopt a layout only if it beats the "
                    "default by more than its spread (else keep the default); apply and cache "
                    "the outcome with its evidence for the step's graphs (docs/tuning.md).")
    cli_common.add_case_arguments(tune, lstm_flags=True)
    tune.add_argument("--warmup", type=_int_at_least(0), default=DEFAULT_WARMUP,
                      help=f"untimed steps on each setting's first visit (default {DEFAULT_WARMUP})")
    tune.add_argument("--rounds", type=_int_at_least(_decision.MIN_ROUNDS_TO_ADOPT), default=DEFAULT_ROUNDS,
                      help="rounds; each visits every live setting, order rotated per round "
                           f"(default {DEFAULT_ROUNDS}, at least {_decision.MIN_ROUNDS_TO_ADOPT})")
    tune.add_argument("--steps", type=_int_at_least(1), default=DEFAULT_STEPS,
                      help=f"timed steps per setting per round, after {DISCARD_STEPS_PER_VISIT} "
                           f"discarded (default {DEFAULT_STEPS})")
    tune.add_argument("--settings", type=_parse_settings, default=None, metavar="ExT,...",
                      help="settings to try, e.g. 1x1,2x1 (default: all that fit on whole tiles)")
    tune.add_argument("--policy", default=None, help="ready-op policy (default: the one in force)")
    tune.add_argument("--no-cache", action="store_true", help="do not write cache entries")
    tune.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    tune.add_argument("--json", action="store_true", help="print the result as JSON")
    return tune


def _print_json(value: Any, **kwargs: Any) -> None:
    json.dump(value, sys.stdout, indent=2, **kwargs)
    sys.stdout.write("\n")


def _info_command(args: argparse.Namespace) -> int:
    import graphi_tf

    _print_json(graphi_tf.info())
    return 0


def _format_created(unix: float) -> str:
    return datetime.datetime.fromtimestamp(unix).strftime("%Y-%m-%d %H:%M:%S")


def _cache_command(args: argparse.Namespace) -> int:
    from graphi_tf import cache

    run = {"list": _cache_list, "show": _cache_show, "clear": _cache_clear}[args.cache_command]
    return run(cache, cache.cache_dir(), args)


def _cache_list(cache: Any, directory: Any, args: argparse.Namespace) -> int:
    import graphi_tf

    info = graphi_tf.info()
    rows = []
    for entry in cache.list_entries(directory):
        s = entry.setting
        rows.append({
            "key": entry.key,
            "signature": entry.signature,
            "setting": f"{_decision.setting_label(cache.setting_of(s))} {s['policy']}".strip(),
            "executors": s["executors"],
            "threads_per_executor": s["threads_per_executor"],
            "policy": s["policy"],
            "load_class": entry.load_class,
            "median_step_ms": entry.median_step_ms,
            "created_unix": entry.created_unix,
            "created": _format_created(entry.created_unix),
            "status": cache.entry_status(entry, info),
            "path": str(cache.entry_path(entry.key, directory)),
        })
    if args.json:
        _print_json(rows)
        return 0
    print(f"cache: {directory} ({len(rows)} entr{'y' if len(rows) == 1 else 'ies'})")
    if rows:
        cols = ("key", "signature", "load", "setting", "median", "created", "status")
        cells = [(r["key"], r["signature"], r["load_class"], r["setting"], f"{r['median_step_ms']:.3f} ms",
                  r["created"], r["status"]) for r in rows]
        widths = [max(len(c), *(len(x[i]) for x in cells)) for i, c in enumerate(cols)]
        print("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip())
        for x in cells:
            print("  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip())
    return 0


def _cache_show(cache: Any, directory: Any, args: argparse.Namespace) -> int:
    matches = cache.find_entry(args.key, directory)
    if not matches:
        return cli_common.error(f"no cache entry {args.key!r} in {directory}")
    if len(matches) > 1:
        names = ", ".join(p.stem for p in matches)
        return cli_common.error(f"cache key prefix {args.key!r} is ambiguous: {names}")
    entry = cache.read_entry(matches[0])
    if entry is None:
        return cli_common.error(f"cache entry {matches[0]} is not valid (see the warning above)", 1)
    if args.json:
        _print_json(entry.to_dict(), sort_keys=True)
    else:
        print(_format_entry(entry, matches[0]))
    return 0


def _cache_clear(cache: Any, directory: Any, args: argparse.Namespace) -> int:
    removed = cache.clear(directory)
    print(f"removed {removed} cache entr{'y' if removed == 1 else 'ies'} from {directory}")
    return 0


def _load_class_text(load_class: str) -> str:
    """``cache show``'s line for a load class: its name and what it was tuned under."""
    from graphi_tf.cache import LOAD_LEVEL_IN_FLIGHT

    if load_class == "alone":
        return "alone (tuned one step at a time)"
    if load_class in LOAD_LEVEL_IN_FLIGHT:
        in_flight = LOAD_LEVEL_IN_FLIGHT[load_class]
        return f"{load_class} (tuned with {in_flight} steps in flight: concurrent requests)"
    return load_class


def _format_entry(entry: Any, path: Any) -> str:
    """``cache show``: the entry's identity, setting and note, then its decision: the
    reason, the evidence table, and each setting's per-round medians with their ratio to
    the default."""
    from graphi_tf.cache import setting_of

    s = entry.setting
    m = entry.machine
    tiles = m["tiles"]
    known = sum(1 for c in entry.node_costs_ns if c >= 0)
    fields = [
        ("key", entry.key),
        ("path", str(path)),
        ("signature", entry.signature),
        ("setting", f"{_decision.setting_label(setting_of(s))} {s['policy']}".strip()),
        ("load", _load_class_text(entry.load_class)),
        ("median", f"{entry.median_step_ms:.3f} ms per "
                   f"{'step' if entry.load_class == 'alone' else 'request'}"),
        ("created", _format_created(entry.created_unix)),
        ("versions", f"TensorFlow {entry.tf_version}, graphi_tf {entry.graphi_tf_version}"),
        ("machine", f"{m['cpu_model']}, {m['usable_cores']} usable cores, {len(tiles)} tiles of "
                    f"{'/'.join(str(n) for n in sorted(set(tiles)))} cores"),
        ("nodes", f"{entry.node_count} ({known} with a measured cost)"),
        ("note", entry.note or "-"),
    ]
    width = max(len(name) for name, _ in fields)
    lines = [f"{name.ljust(width)}  {value}" for name, value in fields]
    decision = entry.decision()
    if decision is None:
        lines.append(f"{'decision'.ljust(width)}  - (no evidence recorded: written before tune kept it)")
        return "\n".join(lines)
    lines.append(f"{'decision'.ljust(width)}  {decision.reason}")
    lines.append("")
    lines += _decision.format_evidence(decision)
    lines.append("")
    lines += _format_rounds(decision)
    return "\n".join(lines)


def _format_rounds(decision: Any) -> List[str]:
    """Per-round median (ms) of each setting, with its ratio to the default that round."""
    default = decision.evidence_for(decision.default).round_medians_ms
    n = max((len(ev.round_medians_ms) for ev in decision.evidence), default=0)
    rows = []
    for ev in decision.evidence:
        cells = [ev.label]
        for r in range(n):
            mine = ev.round_medians_ms[r] if r < len(ev.round_medians_ms) else None
            base = default[r] if r < len(default) else None
            if mine is None:
                cells.append("-")
            elif base is None:
                cells.append(f"{mine:.3f}")
            else:
                cells.append(f"{mine:.3f} ({mine / base:.2f})")
        rows.append(cells)
    header = ["setting"] + [f"round {r + 1}" for r in range(n)]
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header))]
    out = [f"per round: median ms (ratio to the default {_decision.setting_label(decision.default)})"]
    for cells in [header] + rows:
        out.append("  ".join([cells[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]))
    return out


def _tune_command(args: argparse.Namespace) -> int:
    import graphi_tf  # noqa: F401  (loads the native library, applies cached entries)
    from graphi_tf.tune import TuneArgumentError, tune

    try:
        step = cli_common.build_step(cli_common.Case.from_args(args))
        result = tune(step, warmup=args.warmup, rounds=args.rounds, steps=args.steps, settings=args.settings,
                      policy=args.policy, write_cache=not args.no_cache, progress=not args.no_progress)
    except (cli_common.UsageError, TuneArgumentError) as e:
        return cli_common.error(str(e))
    if args.json:
        _print_json(result.to_dict())
    else:
        print(result)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``graphi-tf``: parses ``argv`` (default ``sys.argv[1:]``) and runs the subcommand."""
    return cli_common.dispatch(_build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
