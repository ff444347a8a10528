"""The A/B report of ``graphi-tf ab``: statistics, the physical limit, and its renderings.

Pure Python (no TensorFlow import): ``build_report(raw)`` turns the raw measurements of an
A/B run into the report document, and ``render_terminal``, ``render_markdown``,
``render_json`` and ``render_png`` render it. ``render_summary_markdown`` and
``render_summary_png`` render several reports (models × sizes) as one table and one chart.

Statistics
----------
* Per arm, over all timed steps of all rounds that succeeded: median, p25 and p75 (the
  interquartile range, IQR; linear interpolation between the two nearest steps), min and
  max step time (ms); and the median of each round on its own (``round_medians_ms``).
  Tables and ab.png show the IQR: on a loaded machine a few very slow steps make min–max
  say nothing about the typical step.
* examples/s = examples_per_step / (median step time in seconds).
* Speedup of arm X over arm Y with its spread: for each round r in which both ran,
  ratio_r = median_Y_r / median_X_r (> 1: X is faster). Reported as the **median of the
  per-round ratios ± half their range** ((max − min) / 2), with the number of rounds, e.g.
  "GRAPHI auto ran 1.42 ± 0.03 times as fast as stock default (5 rounds)". Rounds are
  the unit because the arms of one round run back to back on the same machine state.
* The lead lines (``lead``), printed first: the best-ranked GRAPHI arm that ran
  (``graphi_tf.lab.arms``: graphi_auto, else graphi_tuned, else graphi_untuned) against stock
  default and stock best.
* ``stock_best`` is the stock (inter, intra) sweep arm with the lowest median step time
  over all its steps; its per-round medians are that arm's.
* Physical limit, from traced steps of reference processes (DEFAULT executor, one op at
  a time: inter=1): W = total op time with intra=1 (each op's single-core work), CP =
  critical path (``graphi_tf.lab.bound``) with intra=cores (each op as fast as the machine runs
  it alone; with ``critical_path_intra`` 1, as in older reports, CP comes from intra=1 and
  overstates the limit of ops that parallelise internally), each the minimum over the
  traced steps and capped by its reference's untraced median step time (tracing inflates
  op times); LB = max(CP, W / cores); efficiency of an arm = LB / its median step time
  (1.0 would be a perfect schedule).

JSON schema (``schema_version`` 1)
----------------------------------
::

  {
    "schema_version": 1,
    "tool": "graphi-tf ab",
    "created_unix": float,
    "case": {"name": str, "kind": "model"|"script"|"saved_model"|"keras", "model": str|null,
             "size": str|null, "mode": str|null, "script": str|null,
             # saved_model/keras also (graphi_tf.lab.external_models.ExternalModel.to_dict):
             "path", "signature", "tag", "loader": str|null, "batch": int|null, "inputs": [str],
             "train": bool, "seed": int},
    "settings": {"warmup": int, "steps": int, "repeats": int, ...},   # how it was run
    "machine": {"usable_cores": int|null, ...},
    "spread": "median of per-round ratios ± half their range",
    "whiskers": "IQR: p25–p75 of all timed steps",     # added; absent in older reports
    "examples_per_step": int|null, "graph_nodes": int|null,
    "order": [[arm, ...], ...],                       # arm order of each round
    "arms": {NAME: {
        "label": str, "description": str, "executor": str,
        "inter_op": int|null, "intra_op": int|null, "sweep": bool,
        "status": "ok"|"partial"|"failed", "error": str|null, "stderr_tail": str|null,
        "median_ms", "min_ms", "max_ms": float|null, "round_medians_ms": [float|null],
        "p25_ms", "p75_ms": float|null,                # added; absent in older reports
        "n_steps": int, "ok_rounds": int, "failed_rounds": int,
        "examples_per_s": float|null, "efficiency": float|null,
        "speedup_vs_stock_default": SPEEDUP|null,
        "env": {VAR: VALUE},       # the arm's own variables (graphi_tf.lab.arms)
        "setting": {...}|null,     # what was in force (GRAPHI: executors, threads, source,
                                   # and "autotune": GRAPHI's online tuning state, if any)
        "autotune": [{...}|null],  # per round, the main graph's autotune state at the end
        "autotune_settle": [{...}|null],  # per round (graphi_auto): the untimed steps run after
                                   # the warm-up while autotuning explored (steps, seconds, state)
        "proof": {...}|null,       # stock arms: evidence that GRAPHI did nothing
        "rounds": [{"round": int, "ok": bool, "step_times_ms": [float], "median_ms": float|null,
                    "wall_s": float|null, "error": str|null, "stderr_tail": str|null,
                    "env": {...}, "cache_dir": str|null, "cache_entries_at_start": [str]|null, ...}]}},
    "stock_best": {"arm": str, "median_ms": float, "inter_op": int, "intra_op": int}|null,
    "speedups": [SPEEDUP, ...],
    "headlines": [str, ...],   # every headline comparison, the lead arm's first
    "lead_arm": str|null, "lead": [str, ...],   # added: the lead lines (see Statistics)
    "bound": {"status": "ok"|"failed"|"skipped", "error": str|null,   # skipped: "note" says why
              "work_ms", "traced_work_ms", "untraced_step_ms", "critical_path_ms",
              "lower_bound_ms": float|null, "cores": int|null, "nodes": int|null,
              "traced_steps": int|null, "note": str|null,
              "critical_path_intra": int|null},  # added: intra_op of CP's reference
    "tune": {...}|null         # the tuning process's result (graphi_tuned)
  }
  SPEEDUP = {"arm": X, "baseline": Y, "ratio": float|null, "spread": float|null,
             "round_ratios": [float], "rounds": int, "text": str}
"""
from __future__ import annotations

import copy
import json
import math
import time
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from graphi_tf.lab import arms as _arms
from graphi_tf import decision as _decision
from graphi_tf.lab.arms import STOCK_BEST, STOCK_DEFAULT
from graphi_tf.stepstats import lower_bound as lower_bound_ms  # LB in ms here
from graphi_tf.stepstats import median

SCHEMA_VERSION = 1
SPREAD_TEXT = "median of per-round ratios ± half their range"
WHISKERS_TEXT = "IQR: p25–p75 of all timed steps"


class ReportError(RuntimeError):
    """A report cannot be rendered (e.g. matplotlib is missing for a PNG)."""


def arm_label(name: str) -> str:
    """Human name of an arm: "stock default", "stock inter=2 intra=1", "GRAPHI auto", ...
    (``graphi_tf.lab.arms.label``)."""
    return _arms.label(name)


# ------------------------------------------------------------------------ statistics


def percentile(values: Sequence[float], q: float) -> Optional[float]:
    """The ``q``-quantile (0 <= q <= 1) of ``values`` by linear interpolation between the two
    nearest order statistics (position q·(n − 1) in the sorted values; numpy's default);
    None for no values."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q={q!r} is invalid; allowed: 0 <= q <= 1")
    data = sorted(float(v) for v in values)
    if not data:
        return None
    pos = q * (len(data) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (pos - low)


def summarize_times(rounds: Sequence[Optional[Sequence[float]]]) -> Dict[str, Any]:
    """Step-time statistics of one arm.

    Args:
      rounds: per round, the timed step times in ms, or None for a failed round.

    Returns:
      {"median_ms", "p25_ms", "p75_ms", "min_ms", "max_ms"} over all steps of all
      successful rounds (None if none), "round_medians_ms" (None for failed rounds),
      "n_steps", "ok_rounds", "failed_rounds".
    """
    all_steps: List[float] = []
    round_medians: List[Optional[float]] = []
    for times in rounds:
        if times is None or len(times) == 0:
            round_medians.append(None)
            continue
        all_steps.extend(float(t) for t in times)
        round_medians.append(median(times))
    ok = sum(1 for m in round_medians if m is not None)
    return {
        "median_ms": median(all_steps) if all_steps else None,
        "p25_ms": percentile(all_steps, 0.25),
        "p75_ms": percentile(all_steps, 0.75),
        "min_ms": min(all_steps) if all_steps else None,
        "max_ms": max(all_steps) if all_steps else None,
        "round_medians_ms": round_medians,
        "n_steps": len(all_steps),
        "ok_rounds": ok,
        "failed_rounds": len(round_medians) - ok,
    }


def examples_per_second(examples_per_step: Optional[float], median_ms: Optional[float]) -> Optional[float]:
    """examples_per_step / median step time (s); None if either is unknown or not positive."""
    if not examples_per_step or not median_ms or median_ms <= 0:
        return None
    return float(examples_per_step) / (median_ms / 1e3)


def speedup(x_round_medians: Sequence[Optional[float]],
            y_round_medians: Sequence[Optional[float]]) -> Dict[str, Any]:
    """Speedup of arm X over arm Y from their per-round medians (aligned by round).

    ratio_r = y_r / x_r for each round where both are known and positive; the result is
    {"ratio": median of the ratio_r, "spread": (max − min) / 2 of the ratio_r,
    "round_ratios": [...], "rounds": count}; ratio and spread are None with no rounds.
    """
    ratios = [y / x for x, y in zip(x_round_medians, y_round_medians)
              if x is not None and y is not None and x > 0 and y > 0]
    if not ratios:
        return {"ratio": None, "spread": None, "round_ratios": [], "rounds": 0}
    return {
        "ratio": median(ratios),
        "spread": (max(ratios) - min(ratios)) / 2.0,
        "round_ratios": ratios,
        "rounds": len(ratios),
    }


def speedup_text(x_label: str, y_label: str, sp: Dict[str, Any], *, phases: bool = False) -> str:
    """"X ran 1.42 ± 0.03 times as fast as Y (5 rounds)" (below 1: X was slower); with
    ``phases`` (a lockstep run, whose rounds are phases) "X ran 0.99 [IQR 0.96-1.02] times as
    fast as Y (120 phases)": half the range of many phases says little."""
    if sp.get("ratio") is None:
        return f"{x_label} vs {y_label}: no round where both ran"
    n = sp["rounds"]
    if phases:
        ratios = sp["round_ratios"]
        return (f"{x_label} ran {sp['ratio']:.3f} [IQR {percentile(ratios, 0.25):.3f}-"
                f"{percentile(ratios, 0.75):.3f}] times as fast as {y_label} ({n} phase{'s' if n != 1 else ''})")
    rounds = f"{n} round{'s' if n != 1 else ''}"
    return f"{x_label} ran {sp['ratio']:.2f} ± {sp['spread']:.2f} times as fast as {y_label} ({rounds})"


def physical_limit(traced_work_ms: Sequence[float], critical_path_ms: Sequence[float], cores: int,
                   untraced_step_ms: Optional[float] = None) -> Dict[str, Any]:
    """The physical limit from the traced steps of the reference process.

    W = min(min over traced steps of the op-time sum, untraced median step time);
    CP = min over traced steps of the critical path; LB = max(CP, W / cores).
    """
    if not traced_work_ms or not critical_path_ms:
        raise ValueError("physical_limit needs at least one traced step")
    traced_w = min(traced_work_ms)
    work = traced_w if untraced_step_ms is None else min(traced_w, float(untraced_step_ms))
    cp = min(critical_path_ms)
    return {
        "work_ms": work,
        "traced_work_ms": traced_w,
        "untraced_step_ms": untraced_step_ms,
        "critical_path_ms": cp,
        "cores": int(cores),
        "lower_bound_ms": lower_bound_ms(work, cp, cores),
    }


def efficiency(lb_ms: Optional[float], median_ms: Optional[float]) -> Optional[float]:
    """LB / median step time; None if either is unknown."""
    if lb_ms is None or not median_ms or median_ms <= 0:
        return None
    return float(lb_ms) / median_ms


# ------------------------------------------------------------------------ the report


def _first_ok(rounds: Iterable[dict], key: str) -> Any:
    for r in rounds:
        if r.get("ok") and r.get(key) is not None:
            return r[key]
    return None


def build_report(raw: Dict[str, Any]) -> Dict[str, Any]:
    """The report document (schema above) from an A/B run's raw measurements.

    ``raw`` holds "case", "settings", "machine", "order", "tune", "arms" (per arm its
    "description", "executor", "inter_op", "intra_op", "sweep" and "rounds": per round
    {"round", "ok", "step_times_ms", "examples_per_step", "graph_nodes", "setting",
    "proof", "error", "stderr_tail", "wall_s"}) and "bound": None (not measured), or
    {"error": ...}, or {"traced_work_ms": [...], "critical_path_ms": [...], "cores",
    "untraced_step_ms", "nodes"}.

    The stages: the physical limit (``_bound_entry``), each arm's statistics
    (``_arm_entry``), stock best (``_stock_best``), the speedups and headlines
    (``_comparisons``) and the lead lines (``_lead_lines``).
    """
    doc: Dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": "graphi-tf ab",
        "created_unix": raw.get("created_unix"),
        "case": copy.deepcopy(raw.get("case", {})),
        "settings": copy.deepcopy(raw.get("settings", {})),
        "machine": copy.deepcopy(raw.get("machine", {})),
        "spread": SPREAD_TEXT,
        "whiskers": WHISKERS_TEXT,
        "order": copy.deepcopy(raw.get("order", [])),
        "tune": copy.deepcopy(raw.get("tune")),
        "bound": _bound_entry(raw.get("bound")),
    }
    raw_arms = raw.get("arms", {})
    for key in ("examples_per_step", "graph_nodes"):  # the first arm's that has it
        doc[key] = next((v for v in (_first_ok(a.get("rounds", []), key) for a in raw_arms.values())
                         if v is not None), None)
    arms = {name: _arm_entry(name, arm, doc["bound"]["lower_bound_ms"]) for name, arm in raw_arms.items()}
    doc["arms"] = arms
    doc["stock_best"] = _stock_best(arms)
    doc["speedups"], doc["headlines"] = _comparisons(arms, doc["stock_best"],
                                                     phases=bool(doc["settings"].get("lockstep_cycles")))
    doc["lead_arm"], doc["lead"] = _lead_lines(arms, doc["stock_best"], doc["speedups"])
    return doc


def _bound_entry(bound_raw: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The report's "bound": the physical limit of the reference process, or why there is none."""
    if bound_raw is None:
        bound = {"status": "skipped", "error": None}
    elif bound_raw.get("skipped"):  # the case has no traceable reference (``Case.reference_case``)
        bound = {"status": "skipped", "error": None, "note": bound_raw["skipped"]}
    elif bound_raw.get("error") or not bound_raw.get("traced_work_ms"):
        bound = {"status": "failed", "error": bound_raw.get("error") or "no traced step",
                 "stderr_tail": bound_raw.get("stderr_tail")}
    else:
        bound = physical_limit(bound_raw["traced_work_ms"], bound_raw["critical_path_ms"],
                               int(bound_raw["cores"]), bound_raw.get("untraced_step_ms"))
        bound.update(status="ok", error=None, nodes=bound_raw.get("nodes"),
                     traced_steps=len(bound_raw["traced_work_ms"]), note=bound_raw.get("note"),
                     critical_path_intra=bound_raw.get("critical_path_intra"))
    for key in ("work_ms", "traced_work_ms", "untraced_step_ms", "critical_path_ms",
                "lower_bound_ms", "cores", "nodes", "traced_steps", "note", "critical_path_intra"):
        bound.setdefault(key, None)
    return bound


def _arm_entry(name: str, arm: Dict[str, Any], lb: Optional[float]) -> Dict[str, Any]:
    """One arm of the report from its raw rounds (``lb``: the physical limit, ms, or None)."""
    rounds = copy.deepcopy(arm.get("rounds", []))
    for r in rounds:
        times = r.get("step_times_ms") if r.get("ok") else None
        r["median_ms"] = median(times) if times else None
        r.setdefault("error", None)
        r.setdefault("stderr_tail", None)
    stats = summarize_times([r.get("step_times_ms") if r.get("ok") else None for r in rounds])
    failed = [r for r in rounds if not r.get("ok")]
    env = dict(arm.get("env") or {})
    custom = _arms.spec(name) is None and not arm.get("sweep") and arm.get("executor") == "GRAPHI"
    if _arms.spec(name) is not None or _arms.parse_sweep_arm(name) is not None or custom:
        description = _arms.describe(name, env)
    else:  # an arm this graphi_tf does not know (an older or newer report)
        description = arm.get("description", "")
    eps = _first_ok(rounds, "examples_per_step")
    return {
        "label": arm_label(name),
        "description": description,
        "executor": arm.get("executor"),
        "inter_op": arm.get("inter_op"),
        "intra_op": arm.get("intra_op"),
        "sweep": bool(arm.get("sweep", False)),
        "env": env,
        "custom": custom,
        "status": "ok" if not failed else ("failed" if stats["ok_rounds"] == 0 else "partial"),
        "error": failed[-1].get("error") if failed else None,
        "stderr_tail": failed[-1].get("stderr_tail") if failed else None,
        **stats,
        "examples_per_s": examples_per_second(eps, stats["median_ms"]),
        "efficiency": efficiency(lb, stats["median_ms"]),
        "speedup_vs_stock_default": None,
        "setting": _first_ok(rounds, "setting"),
        "autotune": [r.get("autotune") if r.get("ok") else None for r in rounds],
        "autotune_settle": [r.get("autotune_settle") if r.get("ok") else None for r in rounds],
        "proof": _first_ok(rounds, "proof"),
        "rounds": rounds,
    }


def _stock_best(arms: Dict[str, Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The sweep arm with the lowest median (ties: the first), or None."""
    sweep = [n for n, a in arms.items() if a["sweep"] and a["median_ms"] is not None]
    if not sweep:
        return None
    best = min(sweep, key=lambda n: arms[n]["median_ms"])
    return {"arm": best, "median_ms": arms[best]["median_ms"],
            "inter_op": arms[best]["inter_op"], "intra_op": arms[best]["intra_op"],
            "label": f"{arm_label(STOCK_BEST)} ({arm_label(best)[len('stock '):]})"}


def _comparisons(arms: Dict[str, Dict[str, Any]], stock_best: Optional[Dict[str, Any]], *,
                 phases: bool = False) -> Tuple[List[Dict[str, Any]], List[str]]:
    """(speedups, headlines): every arm against stock default (setting its
    ``speedup_vs_stock_default``), the GRAPHI table arms against stock best, the custom arms
    against graphi_untuned; the headlines in the GRAPHI arms' rank order."""
    speedups: List[Dict[str, Any]] = []
    headlines: List[str] = []

    def compare(x: str, y: str, y_label: str, headline: bool) -> Dict[str, Any]:
        sp = {"arm": x, "baseline": y, **speedup(arms[x]["round_medians_ms"], arms[y]["round_medians_ms"])}
        sp["text"] = speedup_text(arms[x]["label"], y_label, sp, phases=phases)
        speedups.append(sp)
        if headline and sp["ratio"] is not None:
            headlines.append(sp["text"])
        return sp

    ranked = _arms.graphi_ranked()
    base = arms.get(STOCK_DEFAULT)
    if base is not None and base["median_ms"] is not None:
        for name, entry in arms.items():
            if name == STOCK_DEFAULT or entry["median_ms"] is None:
                continue
            headline = name in ranked or (stock_best is not None and name == stock_best["arm"])
            entry["speedup_vs_stock_default"] = compare(name, STOCK_DEFAULT, arm_label(STOCK_DEFAULT), headline)
    if stock_best is not None:
        for name in ranked:
            if name in arms and arms[name]["median_ms"] is not None:
                compare(name, stock_best["arm"], stock_best["label"], True)
    # Arms that change one of GRAPHI's knobs (--graphi-env) against GRAPHI's fixed default.
    untuned = arms.get(_arms.GRAPHI_UNTUNED)
    if untuned is not None and untuned["median_ms"] is not None:
        for name, entry in arms.items():
            if entry["custom"] and entry["median_ms"] is not None:
                compare(name, _arms.GRAPHI_UNTUNED, arm_label(_arms.GRAPHI_UNTUNED), True)
    # The table's GRAPHI arms in rank order (graphi_auto first), then the rest.
    rank = {arm_label(n): i for i, n in enumerate(ranked)}
    headlines.sort(key=lambda t: min((v for k, v in rank.items() if t.startswith(k + " ran")),
                                     default=len(rank)))
    return speedups, headlines


def _lead_lines(arms: Dict[str, Dict[str, Any]], stock_best: Optional[Dict[str, Any]],
                speedups: Sequence[Dict[str, Any]]) -> Tuple[Optional[str], List[str]]:
    """(lead arm, lead lines): the best-ranked GRAPHI arm that ran against stock default and
    stock best, after a line for each better-ranked arm that was run but never succeeded."""
    ranked = _arms.graphi_ranked()
    lead_arm = next((n for n in ranked if n in arms and arms[n]["median_ms"] is not None), None)
    lead = [f"{arm_label(n)}: no successful round ({arms[n]['error']})" for n in ranked
            if n in arms and arms[n]["median_ms"] is None and (lead_arm is None or
                                                               ranked.index(n) < ranked.index(lead_arm))]
    if lead_arm is not None:
        for sp in speedups:
            if sp["arm"] == lead_arm and sp["ratio"] is not None and (
                    sp["baseline"] == STOCK_DEFAULT or sp["baseline"] == (stock_best or {}).get("arm")):
                lead.append(sp["text"])
    return lead_arm, lead


def check_schema(doc: Dict[str, Any]) -> None:
    """Raises ValueError naming the first missing or mistyped field of a report document."""
    def need(obj: Dict[str, Any], key: str, types: tuple, where: str) -> Any:
        if key not in obj:
            raise ValueError(f"{where}: missing {key!r}")
        if not isinstance(obj[key], types):
            raise ValueError(f"{where}.{key}: {type(obj[key]).__name__} is not {types}")
        return obj[key]

    num = (int, float, type(None))
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"schema_version {doc.get('schema_version')!r} != {SCHEMA_VERSION}")
    for key, types in (("case", dict), ("settings", dict), ("machine", dict), ("arms", dict),
                       ("speedups", list), ("headlines", list), ("bound", dict), ("order", list),
                       ("spread", str)):
        need(doc, key, (types,), "report")
    need(doc, "stock_best", (dict, type(None)), "report")
    need(doc["case"], "name", (str,), "case")
    for name, arm in doc["arms"].items():
        where = f"arms.{name}"
        need(arm, "status", (str,), where)
        if arm["status"] not in ("ok", "partial", "failed"):
            raise ValueError(f"{where}.status: {arm['status']!r}")
        for key in ("median_ms", "min_ms", "max_ms", "examples_per_s", "efficiency"):
            need(arm, key, num, where)
        for key in ("p25_ms", "p75_ms"):  # added to schema 1: absent in older reports
            if key in arm:
                need(arm, key, num, where)
        need(arm, "round_medians_ms", (list,), where)
        need(arm, "rounds", (list,), where)
        for r in arm["rounds"]:
            need(r, "ok", (bool,), f"{where}.rounds")
            need(r, "round", (int,), f"{where}.rounds")
    for sp in doc["speedups"]:
        for key in ("arm", "baseline", "text"):
            need(sp, key, (str,), "speedups")
        for key in ("ratio", "spread"):
            need(sp, key, num, "speedups")
    need(doc["bound"], "status", (str,), "bound")
    need(doc["bound"], "lower_bound_ms", num, "bound")


# ------------------------------------------------------------------------ renderers


def _f(value: Optional[float], fmt: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, fmt)


def _setting_text(arm: Dict[str, Any]) -> str:
    s = arm.get("setting") or {}
    executor = arm.get("executor") or s.get("executor") or "?"
    env = "".join(f" {k}={v}" for k, v in (arm.get("env") or {}).items())
    if executor == "GRAPHI" and s.get("executors"):
        return f"GRAPHI {s['executors']}x{s['threads_per_executor']} ({s.get('source', '?')}){env}"
    if executor == "GRAPHI":
        return "GRAPHI" + env
    if executor == "SINGLE_THREADED_EXECUTOR":
        return "SINGLE_THREADED"
    inter, intra = arm.get("inter_op"), arm.get("intra_op")
    if inter is None and intra is None:
        return "DEFAULT, default pools"
    return f"DEFAULT inter={inter} intra={intra}"


def _speedup_cell(arm: Dict[str, Any]) -> str:
    sp = arm.get("speedup_vs_stock_default")
    if not sp or sp.get("ratio") is None:
        return "-"
    return f"{sp['ratio']:.2f} ± {sp['spread']:.2f}"


_COLUMNS = ("arm", "setting", "median ms", "p25 ms", "p75 ms", "examples/s", "vs default",
            "LB/time", "rounds", "status")


def _rows(doc: Dict[str, Any]) -> List[List[str]]:
    best = (doc.get("stock_best") or {}).get("arm")
    rows = []
    for name, arm in doc["arms"].items():
        rows.append([
            name + (" *" if name == best else ""),
            _setting_text(arm),
            _f(arm["median_ms"], ".3f"),
            _f(arm.get("p25_ms"), ".3f"),
            _f(arm.get("p75_ms"), ".3f"),
            _f(arm["examples_per_s"], ".1f"),
            _speedup_cell(arm),
            _f(arm["efficiency"], ".2f"),
            f"{arm['ok_rounds']}/{arm['ok_rounds'] + arm['failed_rounds']}",
            arm["status"],
        ])
    return rows


def _case_title(doc: Dict[str, Any]) -> str:
    case = doc.get("case", {})
    s = doc.get("settings", {})
    what = case.get("name", "?")
    if case.get("kind") == "model":
        what = f"model {case.get('model')}, size {case.get('size')}, mode {case.get('mode')}"
    elif case.get("kind") == "script":
        what = f"script {case.get('script')}"
    elif case.get("kind") in ("saved_model", "keras"):
        what = _external_case_text(case)
    n = s.get("repeats", "?")
    if s.get("lockstep_cycles"):
        serving = (f", each followed by {s.get('duration_s', '?')} s of serving per client count "
                   f"({', '.join(map(str, s['clients']))})" if s.get("clients") else "")
        return (f"graphi-tf ab: {what}; {n} round{'' if n == 1 else 's'} of processes in lockstep, "
                f"{s.get('warmup', '?')} warm-up steps per arm, then {s['lockstep_cycles']} phases of "
                f"{s.get('steps', '?')} timed steps each{serving}, each arm in its own process")
    return (f"graphi-tf ab: {what}; {n} round{'' if n == 1 else 's'}, {s.get('warmup', '?')} warm-up + "
            f"{s.get('steps', '?')} timed steps per arm, each arm in its own process")


def _external_case_text(case: Dict[str, Any]) -> str:
    """A SavedModel's or .keras file's case as the title names it: path, what runs, shapes."""
    shapes = ", ".join(list(case.get("inputs") or []) + ([f"batch {case['batch']}"] if case.get("batch") else []))
    if case.get("kind") == "saved_model":
        what = (f"SavedModel {case.get('path')} (signature {case.get('signature') or 'serving_default'}, "
                f"tag {case.get('tag') or 'serve'}, loader {case.get('loader') or 'tf2'}")
    else:
        what = f"Keras model {case.get('path')} ({'train_on_batch' if case.get('train') else 'inference'}"
    return what + (f", {shapes})" if shapes else ")")


def _lead(doc: Dict[str, Any]) -> List[str]:
    return list(doc.get("lead") or [])


def _other_headlines(doc: Dict[str, Any]) -> List[str]:
    lead = set(_lead(doc))
    return [t for t in doc["headlines"] if t not in lead]


def _autotune_text(name: str, arm: Dict[str, Any]) -> Optional[str]:
    """What GRAPHI's online autotuning did in an arm's rounds, if its GRAPHI reported it."""
    states = [a for a in arm.get("autotune") or [] if isinstance(a, dict)]
    if not states:
        return None
    counts: Dict[str, int] = {}
    for a in states:
        what = _decision_label(a)
        counts[what] = counts.get(what, 0) + 1
    parts = [f"{what} in {n} round{'s' if n != 1 else ''}" for what, n in counts.items()]
    exploring = sum(1 for r in arm.get("rounds", []) if r.get("ok") and
                    ((r.get("setting") or {}).get("autotune_at_timing_start") or {}).get("state") == "exploring")
    text = f"{name}: GRAPHI's online autotuning at the end: " + ", ".join(parts)
    explored = [a for a in states if isinstance(a.get("exploration_s"), (int, float)) and a["exploration_s"] > 0
                and isinstance(a.get("cost_ms"), (int, float))]
    costs = sorted(float(a["cost_ms"]) for a in explored)
    walls = sorted(float(a["exploration_s"]) for a in explored)
    if costs and walls:
        text += (f"; exploring took a median {walls[len(walls) // 2]:.1f} s, of which "
                 f"{costs[len(costs) // 2] / 1e3:.1f} s beyond the default layout's time (once per graph "
                 "and machine: the setting is cached)")
    settles = [a for a in arm.get("autotune_settle") or [] if isinstance(a, dict) and a.get("steps")]
    if settles:
        steps = sorted(int(a["steps"]) for a in settles)
        text += (f"; timing began once it had settled ({steps[len(steps) // 2]} more warm-up steps, median, "
                 f"in {len(settles)} round{'s' if len(settles) != 1 else ''})")
    if exploring:
        text += (f"; still exploring when the timed steps began in {exploring} round"
                 f"{'s' if exploring != 1 else ''} (more --warmup steps would time only the adopted setting)")
    return text


def _load_autotune_texts(name: str, arm: Dict[str, Any]) -> List[str]:
    """Per client count, what GRAPHI's autotuning had decided once the arm's processes
    settled under that load (each load class has its own decision)."""
    by_clients: Dict[int, Dict[str, int]] = {}
    for r in arm.get("rounds", []):
        for phase in r.get("clients") or []:
            decided = (phase.get("warmup") or {}).get("autotune")
            if not isinstance(decided, dict) or not isinstance(phase.get("clients"), int):
                continue
            counts = by_clients.setdefault(phase["clients"], {})
            what = _decision_label(decided)
            counts[what] = counts.get(what, 0) + 1
    return [f"{name}: GRAPHI's online autotuning once settled under {n} client{'s' if n != 1 else ''}: "
            + ", ".join(f"{what} in {k} process{'es' if k != 1 else ''}" for what, k in counts.items())
            for n, counts in sorted(by_clients.items())]


def _decision_label(status: Dict[str, Any]) -> str:
    """An autotune status's state and, when it names one, its chosen setting; a graph
    still waiting says why when GRAPHI said (e.g. autotuning is off)."""
    what = str(status.get("state", "?"))
    if what == "waiting" and status.get("reason"):
        return f"{what} ({status['reason']})"
    chosen = status.get("chosen")
    if isinstance(chosen, list) and len(chosen) in (2, 4):
        # "stock": TensorFlow's pools; "stock:2x1": its executor on GRAPHI's pools
        what += " " + _decision.setting_label(tuple(chosen))
    return what


def _bound_text(doc: Dict[str, Any]) -> str:
    b = doc["bound"]
    if b["status"] == "ok":
        return (f"physical limit LB = max(CP, W / cores) = max({b['critical_path_ms']:.3f}, "
                f"{b['work_ms']:.3f} / {b['cores']}) = {b['lower_bound_ms']:.3f} ms "
                f"(reference: DEFAULT inter=1, W at intra=1, CP at intra={b.get('critical_path_intra') or 1}, "
                f"{b['traced_steps']} traced steps; "
                f"LB/time = efficiency)" + (f"; {b['note']}" if b.get("note") else ""))
    if b["status"] == "skipped":
        return "physical limit: not measured" + (f" ({b['note']})" if b.get("note") else "")
    return f"physical limit: not measured ({b['error']})"


def _lockstep_text(doc: Dict[str, Any], cycles: int) -> str:
    """What a lockstep run's "rounds" are and, for the headline ratios, the range of the
    median ratio of each round of processes (what differs between processes stays in it)."""
    s = doc.get("settings", {})
    text = (f"lockstep (graphi_tf.lab.lockstep): {s.get('repeats')} round(s) of one process per arm, each "
            f"timed in {cycles} alternating phases of {s.get('steps')} steps; a ratio's rounds are phases")
    parts = []
    for sp in doc.get("speedups", []):
        if sp.get("text") not in doc.get("headlines", []) or not sp.get("round_ratios"):
            continue
        by_process: Dict[int, List[float]] = {}
        x_rounds, y_rounds = doc["arms"][sp["arm"]]["rounds"], doc["arms"][sp["baseline"]]["rounds"]
        for xr, yr in zip(x_rounds, y_rounds):
            if xr.get("median_ms") and yr.get("median_ms"):
                by_process.setdefault(int(xr.get("process_round", 0)), []).append(yr["median_ms"] / xr["median_ms"])
        processes = sorted(median(v) for v in by_process.values())
        parts.append(f"{sp['arm']} vs {sp['baseline']} {processes[0]:.3f}-{processes[-1]:.3f}")
    return text + ("; the median ratio of each round of processes ranged: " + ", ".join(parts) if parts else "")


def _notes(doc: Dict[str, Any]) -> List[str]:
    notes = ["p25, p75: the interquartile range (IQR) of all timed steps of an arm (ab.png's whiskers)"]
    best = doc.get("stock_best")
    if best:
        notes.append(f"stock best of the inter/intra sweep (by median): {best['arm']} "
                     f"({best['median_ms']:.3f} ms), marked *")
    cycles = doc.get("settings", {}).get("lockstep_cycles")
    if cycles:
        notes.append(_lockstep_text(doc, int(cycles)))
    for name, arm in doc["arms"].items():
        autotune = _autotune_text(name, arm)
        if autotune:
            notes.append(autotune)
        notes.extend(_load_autotune_texts(name, arm))
    for name, arm in doc["arms"].items():
        proof = arm.get("proof")
        if proof is not None:
            ok = proof.get("graphi_did_nothing")
            notes.append(f"{name}: GRAPHI did nothing: {'yes' if ok else 'NO'} "
                         f"(graphi threads: {len(proof.get('graphi_threads', []))}, "
                         f"GRAPHI graphs run: {proof.get('graphi_graphs_run', '?')})")
    return notes


def render_terminal(doc: Dict[str, Any]) -> str:
    """The report as plain text: the lead lines, the table, the other headlines, the limit
    and any failures."""
    rows = _rows(doc)
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(_COLUMNS)]

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, (c, w) in enumerate(zip(cells, widths)):
            out.append(c.ljust(w) if i in (0, 1, 9) else c.rjust(w))
        return "  ".join(out).rstrip()

    lines = _lead(doc) + ([""] if _lead(doc) else [])
    lines += [_case_title(doc), f"speedups: {SPREAD_TEXT}", line(_COLUMNS),
              "  ".join("-" * w for w in widths)]
    lines += [line(r) for r in rows]
    lines.append("")
    lines += _other_headlines(doc)
    lines += _notes(doc)
    lines.append(_bound_text(doc))
    for name, arm in doc["arms"].items():
        if arm["status"] != "ok":
            lines.append("")
            lines.append(f"arm {name} {arm['status']}: {arm['error']}")
            lines += ["    " + x for x in (arm.get("stderr_tail") or "").splitlines()]
    if doc["bound"]["status"] == "failed" and doc["bound"].get("stderr_tail"):
        lines.append("reference process stderr:")
        lines += ["    " + x for x in doc["bound"]["stderr_tail"].splitlines()]
    return "\n".join(lines)


def render_markdown(doc: Dict[str, Any]) -> str:
    """The report as markdown: the lead lines, a title line, the table, the other
    headlines and notes."""
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    out = [f"- **{esc(t)}**" for t in _lead(doc)] + ([""] if _lead(doc) else [])
    out += [f"**{esc(_case_title(doc))}**", "", f"Speedups: {SPREAD_TEXT}.", ""]
    out.append("| " + " | ".join(_COLUMNS) + " |")
    out.append("|" + "|".join("---" if i in (0, 1, 9) else "---:" for i in range(len(_COLUMNS))) + "|")
    for r in _rows(doc):
        out.append("| " + " | ".join(esc(c) for c in r) + " |")
    out.append("")
    for text in _other_headlines(doc) + _notes(doc) + [_bound_text(doc)]:
        out.append(f"- {esc(text)}")
    for name, arm in doc["arms"].items():
        if arm["status"] != "ok":
            out.append(f"- arm {name} {arm['status']}: {esc(str(arm['error']))}")
    return "\n".join(out) + "\n"


def render_json(doc: Dict[str, Any]) -> str:
    """The report document as indented JSON."""
    return json.dumps(doc, indent=2) + "\n"


def figure(width: float, height: float) -> Any:
    """A matplotlib Figure of ``width`` x ``height`` inches on the Agg canvas (pyplot's global
    state untouched). Raises ReportError if matplotlib is missing."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ReportError(
            f"PNG charts need matplotlib, which is not importable ({e}); "
            "install it (pip install matplotlib) or skip the chart") from None
    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)  # the Agg backend, without touching pyplot's global state
    return fig


def iqr_whiskers(arm: Dict[str, Any]) -> Optional[tuple]:
    """(median − p25, p75 − median) of an arm: the lengths of its IQR whiskers below and
    above its median bar; None without a median or percentiles (older reports)."""
    median, p25, p75 = arm.get("median_ms"), arm.get("p25_ms"), arm.get("p75_ms")
    if median is None or p25 is None or p75 is None:
        return None
    return max(0.0, median - p25), max(0.0, p75 - median)


def ab_chart(doc: Dict[str, Any]) -> Any:
    """The ab.png figure (a matplotlib Figure on the Agg canvas): median step time per arm
    as bars, whiskers over the interquartile range (p25–p75 of its steps), the LB line.
    Raises ReportError if matplotlib is missing."""
    names = [n for n, a in doc["arms"].items() if a["median_ms"] is not None]
    fig = figure(max(6.0, 1.1 * len(names) + 2), 4.5)
    ax = fig.add_subplot(1, 1, 1)
    medians = [doc["arms"][n]["median_ms"] for n in names]
    whiskers = [iqr_whiskers(doc["arms"][n]) or (0.0, 0.0) for n in names]
    ax.bar(range(len(names)), medians, yerr=[[w[0] for w in whiskers], [w[1] for w in whiskers]],
           capsize=4, color=[_arms.color(n) for n in names], label="median; whiskers: IQR (p25–p75)")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([doc["arms"][n]["label"] for n in names], rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("step time, ms (median; whiskers: IQR p25–p75)")
    lb = doc["bound"].get("lower_bound_ms")
    if lb is not None:
        ax.axhline(lb, color="tab:red", linestyle="--", label=f"physical limit LB = {lb:.2f} ms")
    ax.legend(fontsize=8)
    ax.set_title(doc.get("case", {}).get("name", ""), fontsize=10)
    fig.tight_layout()
    return fig


def render_png(doc: Dict[str, Any], path: str) -> str:
    """Writes ``ab_chart(doc)`` to ``path`` (PNG) and returns ``path``. Raises ReportError
    if matplotlib is missing."""
    ab_chart(doc).savefig(path)
    return path


# ------------------------------------------------------------------------ multi-case summary

_SUMMARY_ARMS = (STOCK_BEST, _arms.SINGLE_THREADED, _arms.GRAPHI_AUTO, _arms.GRAPHI_UNTUNED, _arms.GRAPHI_TUNED)


def _summary_speedup(doc: Dict[str, Any], arm: str) -> Optional[Dict[str, Any]]:
    if arm == STOCK_BEST:
        arm = (doc.get("stock_best") or {}).get("arm")
        if arm is None:
            return None
    for sp in doc.get("speedups", []):
        if sp["arm"] == arm and sp["baseline"] == STOCK_DEFAULT and sp["ratio"] is not None:
            return sp
    return None


def _speedup_cells(doc: Dict[str, Any], arm: str) -> tuple:
    """(vs stock default, vs stock best) cells of ``arm`` in a summary row."""
    best = (doc.get("stock_best") or {}).get("arm")
    vs_default = vs_best = "-"
    for sp in doc.get("speedups", []):
        if sp["arm"] == arm and sp["ratio"] is not None:
            cell = f"{sp['ratio']:.2f} ± {sp['spread']:.2f}"
            if sp["baseline"] == STOCK_DEFAULT:
                vs_default = cell
            elif sp["baseline"] == best:
                vs_best = cell
    return vs_default, vs_best


def _machine_cell(doc: Dict[str, Any]) -> str:
    """Where and when a report was made: its processor (older reports did not record it) and date."""
    when = doc.get("created_unix")
    date = time.strftime("%Y-%m-%d", time.gmtime(when)) if isinstance(when, (int, float)) else "?"
    cpu = (doc.get("machine") or {}).get("cpu_model") or "CPU not recorded"
    cores = (doc.get("machine") or {}).get("usable_cores")
    return f"{cpu}, {cores} cores, {date}" if cores else f"{cpu}, {date}"


def render_summary_markdown(docs: Sequence[Dict[str, Any]]) -> str:
    """One markdown table over several reports (e.g. models × sizes): per case the step
    times of the main arms, the speedups of GRAPHI auto and GRAPHI tuned over stock default
    and over stock best (± half the range of the per-round ratios) and GRAPHI tuned's
    efficiency. A report without an arm (e.g. older, without graphi_auto) shows "-"."""
    cols = ("case", "nodes", "stock default ms", "stock best ms", "GRAPHI auto ms", "GRAPHI untuned ms",
            "GRAPHI tuned ms", "auto vs default", "auto vs best", "tuned vs default", "tuned vs best",
            "tuned LB/time", "rounds", "machine")
    out = [f"Speedups: {SPREAD_TEXT}; LB/time: physical limit over the median step time.", "",
           "| " + " | ".join(cols) + " |", "|---|" + "---:|" * (len(cols) - 2) + "---|"]
    for doc in docs:
        arms = doc["arms"]

        def ms(name: Optional[str]) -> str:
            return _f(arms[name]["median_ms"], ".2f") if name in arms else "-"

        best = (doc.get("stock_best") or {}).get("arm")
        tuned = arms.get(_arms.GRAPHI_TUNED, {})
        best_cell = f"{ms(best)} ({best})" if best else "-"
        out.append("| " + " | ".join([
            doc["case"]["name"], str(doc.get("graph_nodes") or "-"), ms(STOCK_DEFAULT), best_cell,
            ms(_arms.GRAPHI_AUTO), ms(_arms.GRAPHI_UNTUNED), ms(_arms.GRAPHI_TUNED),
            *_speedup_cells(doc, _arms.GRAPHI_AUTO), *_speedup_cells(doc, _arms.GRAPHI_TUNED),
            _f(tuned.get("efficiency"), ".2f"), str(doc.get("settings", {}).get("repeats", "-")),
            _machine_cell(doc),
        ]) + " |")
    old_cp = [doc["case"]["name"] for doc in docs
              if (doc.get("bound") or {}).get("status") == "ok" and not doc["bound"].get("critical_path_intra")
              and (doc["bound"].get("cores") or 1) > 1]
    if old_cp:
        which = "every report here" if len(old_cp) == len(docs) else ", ".join(old_cp)
        out += ["", f"LB/time of {which}: the critical path came from "
                "single-core op times, which overstates the limit of ops that run in parallel internally "
                "(LB/time can exceed 1); later reports take it from each op alone on every core."]
    return "\n".join(out) + "\n"


def render_summary_png(docs: Sequence[Dict[str, Any]], path: str) -> str:
    """Writes grouped bars: per case, the speedup over stock default of stock best,
    single-threaded, GRAPHI auto, GRAPHI untuned and GRAPHI tuned (error bars: half the
    range of the per-round ratios), with a line at 1.0. Raises ReportError without matplotlib."""
    fig = figure(max(7.0, 0.9 * len(docs) + 3), 4.8)
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / len(_SUMMARY_ARMS)
    for k, arm in enumerate(_SUMMARY_ARMS):
        xs, ys, errs = [], [], []
        for i, doc in enumerate(docs):
            sp = _summary_speedup(doc, arm)
            if sp is not None:
                xs.append(i + (k - (len(_SUMMARY_ARMS) - 1) / 2) * width)
                ys.append(sp["ratio"])
                errs.append(sp["spread"])
        if xs:
            ax.bar(xs, ys, width=width, yerr=errs, capsize=2, label=arm_label(arm), color=_arms.color(arm))
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(docs)))
    ax.set_xticklabels([d["case"]["name"] for d in docs], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("speedup over stock default (×)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    return path
