"""The arms of ``graphi-tf ab``: one table read by the orchestrator (``graphi_tf.lab.ab``), its
help text, and the report (``graphi_tf.lab.report``).

Pure Python, no imports from graphi_tf's other modules and no TensorFlow import, so both
``graphi_tf.lab.ab`` and ``graphi_tf.lab.report`` import it without a cycle.

``ARMS`` lists the built-in arms in their default run order. Besides them an A/B run may
have the points of the stock sweep (``stock_i{inter}_a{intra}``, which the ``stock_best``
entry expands to) and custom GRAPHI arms from ``--graphi-env`` (they run like
``graphi_untuned``, with their own variables on top).
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Mapping, Optional, Tuple

STOCK_DEFAULT = "stock_default"
STOCK_BEST = "stock_best"
SINGLE_THREADED = "single_threaded"
GRAPHI_AUTO = "graphi_auto"
GRAPHI_UNTUNED = "graphi_untuned"
GRAPHI_TUNED = "graphi_tuned"
CACHES = ("empty", "tuned")


@dataclasses.dataclass(frozen=True)
class ArmSpec:
    """One built-in arm.

    Attributes:
      name: the ``--arms`` name and the key in ab.json.
      label: the human name in headlines and charts ("GRAPHI auto").
      description: what its process runs, for tables and ``--help``.
      executor: "DEFAULT", "GRAPHI" or "SINGLE_THREADED_EXECUTOR".
      cache: "empty": every process of the arm gets a new empty GRAPHI_CACHE_DIR, so no
        process starts from anything an earlier one cached; "tuned": the cache that the
        tuning run (``graphi_tf.tune``) wrote before the rounds.
      env: environment variables the arm's processes get (no other GRAPHI_* variable
        reaches a worker).
      sweep: the arm stands for the stock (inter_op, intra_op) sweep, one arm per point.
      rank: GRAPHI arms only: headline order, 0 first. The best-ranked GRAPHI arm that ran
        gives the lead lines of the report (its speedup over stock default and stock best).
      color: its bars' colour in the charts.
    """

    name: str
    label: str
    description: str
    executor: str
    cache: str = "empty"
    env: Tuple[Tuple[str, str], ...] = ()
    sweep: bool = False
    rank: Optional[int] = None
    color: str = "tab:blue"


ARMS: Tuple[ArmSpec, ...] = (
    ArmSpec(STOCK_DEFAULT, "stock default", "DEFAULT executor, default ConfigProto (TensorFlow's own pool sizes)",
            "DEFAULT", color="tab:blue"),
    ArmSpec(STOCK_BEST, "stock best",
            "DEFAULT executor over a sweep of inter_op, intra_op in the powers of two up to the usable cores; "
            "every point is its own arm (stock_i2_a1, ...) and the report names the best by median",
            "DEFAULT", sweep=True, color="tab:cyan"),
    ArmSpec(SINGLE_THREADED, "stock single-threaded", "SINGLE_THREADED_EXECUTOR", "SINGLE_THREADED_EXECUTOR",
            color="tab:gray"),
    ArmSpec(GRAPHI_AUTO, "GRAPHI auto",
            "GRAPHI as an unchanged model gets it on its first run: a new empty cache for every process, no "
            "GRAPHI_* variables, no tune call (GRAPHI tunes the graph online in its first steps)",
            "GRAPHI", rank=0, color="tab:orange"),
    ArmSpec(GRAPHI_UNTUNED, "GRAPHI untuned",
            "GRAPHI's fixed default layout: a new empty cache for every process, GRAPHI_AUTOTUNE=0",
            "GRAPHI", env=(("GRAPHI_AUTOTUNE", "0"),), rank=2, color="tab:olive"),
    ArmSpec(GRAPHI_TUNED, "GRAPHI tuned",
            "GRAPHI started from the setting graphi_tf.tune cached for this step in a tuning run before the "
            "rounds; fails unless GRAPHI reports that the main graph started from the cache",
            "GRAPHI", cache="tuned", rank=1, color="tab:brown"),
)
ARM_NAMES: Tuple[str, ...] = tuple(a.name for a in ARMS)
STREAM = "stock_i1_a1"
"""The sweep point inter=1 intra=1: one thread per request, the "stream" practice of serving."""
CLIENT_ARMS: Tuple[str, ...] = (STOCK_DEFAULT, STREAM, STOCK_BEST, GRAPHI_AUTO, GRAPHI_UNTUNED, GRAPHI_TUNED)
"""The default arms of client mode (``graphi-tf ab --clients``): stock default, inter=1
intra=1, the stock sweep (whose best at each client count is "stock best") and the GRAPHI arms."""
_BY_NAME: Dict[str, ArmSpec] = {a.name: a for a in ARMS}


def spec(name: str) -> Optional[ArmSpec]:
    """The built-in arm ``name``, else None (a sweep point, a custom arm)."""
    return _BY_NAME.get(name)


def sweep_arm_name(inter: int, intra: int) -> str:
    """The name of a stock sweep arm: ``stock_i{inter}_a{intra}``."""
    return f"stock_i{inter}_a{intra}"


def parse_sweep_arm(name: str) -> Optional[Tuple[int, int]]:
    """(inter, intra) of a sweep arm name like ``stock_i2_a1``, else None."""
    if not name.startswith("stock_i") or "_a" not in name[7:]:
        return None
    inter, _, intra = name[7:].partition("_a")
    if not (inter.isdigit() and intra.isdigit()):
        return None
    return int(inter), int(intra)


def label(name: str) -> str:
    """Human name of an arm: "stock default", "stock inter=2 intra=1", "GRAPHI auto", ..."""
    arm = spec(name)
    if arm is not None:
        return arm.label
    sweep = parse_sweep_arm(name)
    if sweep is not None:
        return f"stock inter={sweep[0]} intra={sweep[1]}"
    return name


def custom_env(env: Mapping[str, str]) -> Dict[str, str]:
    """The environment of a custom (``--graphi-env``) arm: graphi_untuned's, then ``env``."""
    return {**dict(_BY_NAME[GRAPHI_UNTUNED].env), **dict(env)}


def describe(name: str, env: Optional[Mapping[str, str]] = None) -> str:
    """What the process of arm ``name`` runs (``env``: a custom arm's own variables)."""
    arm = spec(name)
    if arm is not None:
        return arm.description
    sweep = parse_sweep_arm(name)
    if sweep is not None:
        return f"DEFAULT executor, inter_op={sweep[0]} intra_op={sweep[1]}"
    assignments = " ".join(f"{k}={v}" for k, v in custom_env(env or {}).items())
    return f"GRAPHI like graphi_untuned (a new empty cache for every process), with {assignments}"


def color(name: str) -> str:
    """Chart colour of an arm: the table's, sweep points as stock best, custom arms purple."""
    arm = spec(name)
    if arm is not None:
        return arm.color
    if parse_sweep_arm(name) is not None:
        return _BY_NAME[STOCK_BEST].color
    return "tab:purple"


def is_graphi(name: str, executor: Optional[str] = None) -> bool:
    """Whether arm ``name`` runs GRAPHI (a custom arm: if its ``executor`` is GRAPHI)."""
    arm = spec(name)
    return (arm.executor if arm is not None else executor) == "GRAPHI"


def graphi_ranked() -> Tuple[str, ...]:
    """The GRAPHI arms of the table in headline order (the lead arm first)."""
    ranked = sorted((a for a in ARMS if a.rank is not None), key=lambda a: a.rank)
    return tuple(a.name for a in ranked)


def help_text() -> str:
    """The arms part of ``graphi-tf ab --help``."""
    width = max(len(a.name) for a in ARMS) + 2
    lines = ["Arms (--arms selects a subset; default all):"]
    for arm in ARMS:
        words, line = arm.description.split(), ""
        first = True
        for word in words:
            if len(line) + len(word) + 1 > 88 - width and line:
                lines.append(("  " + arm.name.ljust(width) if first else " " * (width + 2)) + line)
                first, line = False, ""
            line = f"{line} {word}".strip()
        lines.append(("  " + arm.name.ljust(width) if first else " " * (width + 2)) + line)
    return "\n".join(lines)
