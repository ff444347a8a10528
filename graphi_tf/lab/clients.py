"""Client mode of ``graphi-tf ab`` (``--clients N[,N...]``): concurrent requests against one
step, their statistics, and their part of the report (docs/serving.md).

* ``serve(step, clients, duration_s)`` runs in an arm's worker: ``clients`` threads each
  call the step back to back (closed loop: a client sends its next request when its last
  one returned) until ``duration_s`` has passed since they started together; a request
  that started before the deadline is counted when it ends. It returns the
  ``summarize_requests`` statistics of that window (the per-request times themselves stay
  in the worker: at thousands of requests per second they would swamp ab.json).
* ``client_report(doc)`` adds the report's "clients" section from the rounds' records.
  Per arm and N, each statistic (throughput, p50/p90/p99 latency) is one value per round;
  the report gives their median over the rounds and their IQR (p25–p75 over the rounds,
  ``graphi_tf.lab.report.percentile``). Comparisons are per round, as ``graphi_tf.lab.report``
  does for step times: ratio_r = X_r / Y_r of the two arms' values in round r, reported as
  the median over the rounds with half their range (``graphi_tf.lab.report.speedup``) and their
  IQR. A throughput ratio above 1 and a latency ratio below 1 favour X.
* Stock best at N is the sweep arm with the highest median throughput at N.

Pure Python apart from the threads ``serve`` starts; no TensorFlow import.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from graphi_tf.lab import arms as _arms
from graphi_tf.lab import report as _report
from graphi_tf.stepstats import median

DEFAULT_DURATION_S = 3.0
"""Seconds each client phase lasts (``--duration``)."""
LATENCY_QUANTILES: Tuple[Tuple[str, float], ...] = (("p50_ms", 0.50), ("p90_ms", 0.90), ("p99_ms", 0.99))
FEW_REQUESTS = 100
"""Below this many requests in a round, its p99 rests on one or two requests: the report says so."""
METRICS: Tuple[str, ...] = ("throughput_rps",) + tuple(key for key, _ in LATENCY_QUANTILES)
STREAM_COLOR = "tab:green"


# ------------------------------------------------------------------------ in the worker


def summarize_requests(latencies_ms: Sequence[float], elapsed_s: float,
                       per_client: Sequence[int] = ()) -> Dict[str, Any]:
    """Statistics of one client phase from its per-request wall times (ms) and the phase's
    wall time (s): "requests", "throughput_rps" (requests / elapsed), "mean_ms", "max_ms" and
    the latency quantiles of ``LATENCY_QUANTILES`` (``graphi_tf.lab.report.percentile``);
    "per_client_requests" as given. Raises ValueError for an elapsed time that is not positive."""
    if not elapsed_s > 0:
        raise ValueError(f"elapsed_s={elapsed_s!r} is invalid; allowed: a number > 0")
    values = [float(v) for v in latencies_ms]
    stats: Dict[str, Any] = {"requests": len(values), "elapsed_s": float(elapsed_s),
                             "throughput_rps": len(values) / float(elapsed_s),
                             "mean_ms": sum(values) / len(values) if values else None,
                             "max_ms": max(values) if values else None,
                             "per_client_requests": list(per_client)}
    for key, q in LATENCY_QUANTILES:
        stats[key] = _report.percentile(values, q)
    return stats


def serve(step: Callable[[], Any], clients: int, duration_s: float) -> Dict[str, Any]:
    """Runs ``clients`` threads that call ``step`` back to back for ``duration_s`` seconds
    (module docstring) and returns ``summarize_requests`` of it with "clients" and
    "duration_s". Raises RuntimeError (after every thread stopped) if a request raised."""
    if clients < 1 or not duration_s > 0:
        raise ValueError(f"clients={clients!r}, duration_s={duration_s!r}; allowed: clients >= 1, duration_s > 0")
    times: List[List[float]] = [[] for _ in range(clients)]
    errors: List[BaseException] = []
    start = threading.Barrier(clients + 1)
    deadline = [0.0]

    def client(mine: List[float]) -> None:
        start.wait()
        try:
            while True:
                t0 = time.perf_counter()
                if t0 >= deadline[0] or errors:
                    return
                step()
                mine.append((time.perf_counter() - t0) * 1e3)
        except BaseException as e:  # noqa: BLE001  (re-raised below, in the caller's thread)
            errors.append(e)

    threads = [threading.Thread(target=client, args=(mine,), name=f"ab-client-{i}", daemon=True)
               for i, mine in enumerate(times)]
    for t in threads:
        t.start()
    began = time.perf_counter()
    deadline[0] = began + duration_s
    start.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise RuntimeError(f"a request failed with {clients} clients: {type(errors[0]).__name__}: {errors[0]}")
    stats = summarize_requests([v for mine in times for v in mine], elapsed, [len(mine) for mine in times])
    return {"clients": clients, "duration_s": float(duration_s), **stats}


# ------------------------------------------------------------------------ over rounds


def round_spread(values: Sequence[Optional[float]]) -> Dict[str, Any]:
    """{"median", "p25", "p75", "rounds"} of per-round values (None: a failed round, left out)."""
    known = [float(v) for v in values if v is not None]
    return {"median": median(known) if known else None, "p25": _report.percentile(known, 0.25),
            "p75": _report.percentile(known, 0.75), "rounds": len(known)}


def compare_rounds(x: Sequence[Optional[float]], y: Sequence[Optional[float]]) -> Dict[str, Any]:
    """X's value as a multiple of Y's, per round (ratio_r = x_r / y_r where both are known):
    ``graphi_tf.lab.report.speedup``'s median ± half range, with "iqr" [p25, p75] of the ratios."""
    sp = _report.speedup(y, x)  # speedup(a, b) takes b_r / a_r
    ratios = sp["round_ratios"]
    sp["iqr"] = [_report.percentile(ratios, 0.25), _report.percentile(ratios, 0.75)] if ratios else None
    return sp


def _phase(record: Dict[str, Any], n: int) -> Optional[Dict[str, Any]]:
    """Round ``record``'s client phase with ``n`` clients, None if the round failed or lacks it."""
    if not record.get("ok"):
        return None
    return next((p for p in record.get("clients") or [] if p.get("clients") == n), None)


def arm_client_stats(rounds: Sequence[Dict[str, Any]], n: int) -> Dict[str, Any]:
    """One arm at ``n`` clients: per metric (``METRICS``) its per-round values ("per_round",
    None for a failed round) and their ``round_spread``; "requests_per_round" and the fewest requests a client sent."""
    phases = [_phase(r, n) for r in rounds]
    entry: Dict[str, Any] = {}
    for metric in METRICS:
        per_round = [p.get(metric) if p else None for p in phases]
        entry[metric] = {"per_round": per_round, **round_spread(per_round)}
    entry["requests_per_round"] = [p.get("requests") if p else None for p in phases]
    shares = [min(p["per_client_requests"]) for p in phases if p and p.get("per_client_requests")]
    entry["min_client_requests"] = min(shares) if shares else None
    return entry


# ------------------------------------------------------------------------ the report section


def client_values(doc: Dict[str, Any]) -> List[int]:
    """The client counts of a report (``settings.clients``), [] for a single-stream report."""
    return [int(n) for n in (doc.get("settings") or {}).get("clients") or []]


def client_report(doc: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The "clients" section of a report document built by ``graphi_tf.lab.report.build_report``
    from rounds that carry client phases; None when the run had no ``--clients``.

    {"values": [N], "duration_s", "arms": {arm: {str(N): arm_client_stats}},
     "stock_best": {str(N): arm|null}, "comparisons": [COMPARISON], "lead_arm", "lead": [str],
     "notes": [str]}; COMPARISON = compare_rounds + {"arm", "baseline", "clients", "metric", "text"}.
    """
    values = client_values(doc)
    if not values:
        return None
    arms = {name: {str(n): arm_client_stats(arm.get("rounds", []), n) for n in values}
            for name, arm in doc["arms"].items()}
    best = {str(n): _stock_best(arms, doc["arms"], n) for n in values}
    section = {"values": values, "duration_s": (doc.get("settings") or {}).get("duration_s"),
               "arms": arms, "stock_best": best}
    unit = "phase" if (doc.get("settings") or {}).get("lockstep_cycles") else "round"
    section["comparisons"] = _comparisons(arms, doc["arms"], best, values, unit)
    section["lead_arm"], section["lead"] = _lead(arms, section["comparisons"], best, values)
    section["notes"] = _few_requests_notes(arms, values)
    return section


def _stock_best(stats: Dict[str, Dict[str, Any]], arms: Dict[str, Any], n: int) -> Optional[str]:
    """The sweep arm with the highest median throughput at ``n`` clients, None if none ran."""
    sweep = [(s[str(n)]["throughput_rps"]["median"], name) for name, s in stats.items()
             if arms[name].get("sweep") and s[str(n)]["throughput_rps"]["median"] is not None]
    return max(sweep)[1] if sweep else None


def _baselines(best: Optional[str]) -> List[Tuple[str, str]]:
    """(arm, label) of the stock arms a GRAPHI arm is compared with at one client count."""
    out = [(_arms.STOCK_DEFAULT, _arms.label(_arms.STOCK_DEFAULT)),
           (_arms.STREAM, _arms.label(_arms.STREAM) + " (one thread per request)")]
    if best is not None and best not in (_arms.STOCK_DEFAULT, _arms.STREAM):
        out.append((best, f"{_arms.label(_arms.STOCK_BEST)} ({_arms.label(best)[len('stock '):]})"))
    elif best is not None:
        out = [(a, f"{lab} = {_arms.label(_arms.STOCK_BEST)}" if a == best else lab) for a, lab in out]
    return out


def _comparison_text(x: str, base_label: str, n: int, thr: Dict[str, Any], p99: Dict[str, Any],
                     unit: str = "round") -> str:
    def part(what: str, sp: Dict[str, Any]) -> str:
        if sp["ratio"] is None:
            return f"{what}: no round where both ran"
        low, high = sp["iqr"]
        return f"{what} {sp['ratio']:.2f}x (IQR {low:.2f}–{high:.2f})"

    rounds = thr["rounds"]
    return (f"{_arms.label(x)}, {n} client{'s' if n != 1 else ''}, vs {base_label}: "
            f"{part('throughput', thr)}, {part('p99 latency', p99)} ({rounds} {unit}{'s' if rounds != 1 else ''})")


def _comparisons(stats: Dict[str, Dict[str, Any]], arms: Dict[str, Any], best: Dict[str, Optional[str]],
                 values: Sequence[int], unit: str = "round") -> List[Dict[str, Any]]:
    """At every N: every GRAPHI arm against stock default, inter=1 intra=1 and stock best;
    every other stock arm against stock default. ``unit`` names a round in the texts
    ("phase" in a lockstep run)."""
    out = []
    graphi = [name for name, arm in arms.items() if _arms.is_graphi(name, arm.get("executor"))]
    for n in values:
        pairs = [(x, y, label) for x in graphi for y, label in _baselines(best[str(n)])]
        pairs += [(x, _arms.STOCK_DEFAULT, _arms.label(_arms.STOCK_DEFAULT)) for x in arms
                  if x not in graphi and x != _arms.STOCK_DEFAULT]
        for x, y, label in pairs:
            if y not in stats:
                continue
            pair = {m: compare_rounds(stats[x][str(n)][m]["per_round"], stats[y][str(n)][m]["per_round"])
                    for m in ("throughput_rps", "p99_ms")}
            text = _comparison_text(x, label, n, pair["throughput_rps"], pair["p99_ms"], unit)
            for metric, sp in pair.items():
                out.append({"arm": x, "baseline": y, "clients": n, "metric": metric, **sp, "text": text})
    return out


def _lead(stats: Dict[str, Dict[str, Any]], comparisons: Sequence[Dict[str, Any]],
          best: Dict[str, Optional[str]], values: Sequence[int]) -> Tuple[Optional[str], List[str]]:
    """(lead arm, lines): the best-ranked GRAPHI arm with data (graphi_auto first) against
    stock default and stock best at every N."""
    def ran(name: str) -> bool:
        return any(stats[name][str(n)]["throughput_rps"]["median"] is not None for n in values)

    lead = next((n for n in _arms.graphi_ranked() if n in stats and ran(n)), None)
    lines = [c["text"] for c in comparisons if c["arm"] == lead and c["metric"] == "throughput_rps"
             and c["baseline"] in (_arms.STOCK_DEFAULT, best[str(c["clients"])])]
    return lead, lines


def _few_requests_notes(stats: Dict[str, Dict[str, Any]], values: Sequence[int]) -> List[str]:
    notes = []
    for name, by_n in stats.items():
        for n in values:
            counts = [c for c in by_n[str(n)]["requests_per_round"] if c is not None]
            if counts and median(counts) < FEW_REQUESTS:
                notes.append(f"{name} at {n} clients: p99 from a median {median(counts):.0f} requests per round "
                             f"(fewer than {FEW_REQUESTS}): a rough figure; a longer --duration sharpens it")
    return notes


# ------------------------------------------------------------------------ renderings

_COLUMNS = ("clients", "arm", "req/s", "req/s IQR", "p50 ms", "p90 ms", "p99 ms", "p99 IQR",
            "requests/round", "thr vs default", "p99 vs default", "rounds")


def _spread_cell(spread: Dict[str, Any], fmt: str) -> str:
    if spread["p25"] is None:
        return "-"
    return f"{format(spread['p25'], fmt)}–{format(spread['p75'], fmt)}"


def _vs_default(section: Dict[str, Any], name: str, n: int, metric: str) -> str:
    for c in section["comparisons"]:
        if (c["arm"], c["baseline"], c["clients"], c["metric"]) == (name, _arms.STOCK_DEFAULT, n, metric) \
                and c["ratio"] is not None:
            return f"{c['ratio']:.2f}x"
    return "-"


def _row(section: Dict[str, Any], name: str, n: int) -> List[str]:
    s = section["arms"][name][str(n)]
    counts = [c for c in s["requests_per_round"] if c is not None]
    best = section["stock_best"].get(str(n))
    return [str(n), name + (" *" if name == best else ""),
            _fmt(s["throughput_rps"]["median"], ".1f"),
            _spread_cell(s["throughput_rps"], ".1f"), _fmt(s["p50_ms"]["median"], ".3f"),
            _fmt(s["p90_ms"]["median"], ".3f"), _fmt(s["p99_ms"]["median"], ".3f"), _spread_cell(s["p99_ms"], ".3f"),
            _fmt(median(counts) if counts else None, ".0f"), _vs_default(section, name, n, "throughput_rps"),
            _vs_default(section, name, n, "p99_ms"), f"{s['throughput_rps']['rounds']}/{len(s['requests_per_round'])}"]


def _fmt(value: Optional[float], fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _rows(section: Dict[str, Any]) -> List[List[str]]:
    return [_row(section, name, n) for n in section["values"] for name in section["arms"]]


def _title(section: Dict[str, Any]) -> List[str]:
    d = section.get("duration_s")
    return [f"concurrent requests: {', '.join(map(str, section['values']))} clients, each phase "
            f"{d if d is not None else '?'} s of closed-loop requests after the warm-up; per arm and clients the "
            "median over rounds (IQR over rounds); ratios: median of per-round ratios",
            "* stock best at that many clients (the sweep arm with the highest median throughput)"]


def render_terminal(doc: Dict[str, Any]) -> str:
    """The "clients" section as plain text: its lead lines, its title and table, its notes;
    "" for a report without one."""
    section = doc.get("clients")
    if not section:
        return ""
    rows = _rows(section)
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(_COLUMNS)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 1 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = list(section["lead"]) + [""] + _title(section) + [line(_COLUMNS), "  ".join("-" * w for w in widths)]
    lines += [line(r) for r in rows]
    return "\n".join(lines + [""] + list(section["notes"]))


def render_markdown(doc: Dict[str, Any]) -> str:
    """The "clients" section as markdown (appended to ab.md); "" for a report without one."""
    section = doc.get("clients")
    if not section:
        return ""
    out = ["", "## Concurrent requests", ""] + [f"- **{t}**" for t in section["lead"]] + [""]
    out += [f"{t}." for t in _title(section)] + [""]
    out.append("| " + " | ".join(_COLUMNS) + " |")
    out.append("|" + "|".join("---" if i == 1 else "---:" for i in range(len(_COLUMNS))) + "|")
    out += ["| " + " | ".join(r) + " |" for r in _rows(section)]
    out += [""] + [f"- {t}" for t in section["notes"]]
    return "\n".join(out) + "\n"


def _chart_series(doc: Dict[str, Any]) -> List[Tuple[str, str, List[Optional[str]]]]:
    """(label, colour, arm at each N) of every line: each non-sweep arm, inter=1 intra=1,
    and stock best (its arm may differ between client counts)."""
    section = doc["clients"]
    values = section["values"]
    series = [(doc["arms"][name]["label"], _arms.color(name), [name] * len(values))
              for name in section["arms"] if not doc["arms"][name].get("sweep")]
    if _arms.STREAM in section["arms"]:
        series.append((_arms.label(_arms.STREAM), STREAM_COLOR, [_arms.STREAM] * len(values)))
    best = [section["stock_best"].get(str(n)) for n in values]
    if any(best):
        series.append((_arms.label(_arms.STOCK_BEST) + " (dashed)", _arms.color(_arms.STOCK_BEST), best))
    return series


def clients_chart(doc: Dict[str, Any]) -> Any:
    """The ab_clients.png figure: p99 latency (p50 dotted) and throughput against the
    number of clients, per arm, with IQR-over-rounds error bars. Raises ReportError without
    matplotlib."""
    section = doc["clients"]
    fig = _report.figure(11.0, 4.5)
    latency, throughput = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for label, color, names in _chart_series(doc):
        points = [(n, section["arms"][a][str(n)]) for n, a in zip(section["values"], names) if a]
        solid = "--s" if label.endswith("(dashed)") else "-o"
        for ax, metric, style in ((latency, "p99_ms", solid), (latency, "p50_ms", ":"),
                                  (throughput, "throughput_rps", solid)):
            pts = [(n, s[metric]) for n, s in points if s[metric]["median"] is not None]
            if not pts:
                continue
            ys = [p["median"] for _, p in pts]
            err = [[y - p["p25"] for y, (_, p) in zip(ys, pts)], [p["p75"] - y for y, (_, p) in zip(ys, pts)]]
            ax.errorbar([n for n, _ in pts], ys, yerr=err, fmt=style, color=color, capsize=3,
                        label=label if metric != "p50_ms" else None)
    latency.set_ylabel("latency, ms (p99; p50 dotted)")
    throughput.set_ylabel("throughput, requests/s")
    for ax in (latency, throughput):
        ax.set_xlabel("concurrent clients")
        ax.set_xticks(section["values"])
    throughput.legend(fontsize=8)
    fig.suptitle(f"{doc.get('case', {}).get('name', '')}: median over rounds, bars: IQR over rounds", fontsize=10)
    fig.tight_layout()
    return fig


def render_png(doc: Dict[str, Any], path: str) -> str:
    """Writes ``clients_chart(doc)`` to ``path`` and returns it. Raises ReportError without matplotlib."""
    clients_chart(doc).savefig(path)
    return path
