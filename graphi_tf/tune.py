"""Profiling sweep: find the fastest team layout for a step, apply it and cache it.

``graphi_tf.tune(step_fn)`` runs ``step_fn`` (one training or inference step: a
``session.run``, a ``tf.function`` call, a Keras ``train_on_batch``) under every symmetric
setting E executor teams × T threads that fits this process's cores on whole tiles,
re-partitioning the teams between settings in the same process. It picks the setting with
the lowest median step time, applies it at once, hands it and the measured node costs to
the executor (``adopt_setting``), and stores both in the cache (``graphi_tf.cache``) so
later processes that run the same graph start tuned.
"""
from __future__ import annotations

import dataclasses
import statistics
import sys
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

from graphi_tf import cache as _cache

Setting = Tuple[int, int]


class TuneArgumentError(ValueError):
    """An argument of ``tune`` is invalid (raised before any step runs)."""


@dataclasses.dataclass(frozen=True)
class TuneRow:
    """One setting of the sweep.

    ``vs_best`` is this setting's median over the best median (1.0 for the best).
    ``step_times_ms`` are the timed steps, in order.
    """

    executors: int
    threads_per_executor: int
    median_ms: float
    min_ms: float
    max_ms: float
    vs_best: float
    step_times_ms: Tuple[float, ...] = ()

    @property
    def setting(self) -> Setting:
        return (self.executors, self.threads_per_executor)

    @property
    def label(self) -> str:
        return f"{self.executors}x{self.threads_per_executor}"

    def to_dict(self, *, step_times: bool = True) -> dict:
        row = {
            "executors": self.executors,
            "threads_per_executor": self.threads_per_executor,
            "median_ms": self.median_ms,
            "min_ms": self.min_ms,
            "max_ms": self.max_ms,
            "vs_best": self.vs_best,
        }
        if step_times:
            row["step_times_ms"] = list(self.step_times_ms)
        return row


@dataclasses.dataclass
class TuneResult:
    """What ``tune`` measured and did.

    Fields:
      settings: one ``TuneRow`` per setting, in sweep order.
      best: the (executors, threads_per_executor) with the lowest median.
      best_median_ms: its median step time.
      signature: the main graph's signature (the graph with most nodes that the step ran).
      cache_paths: the cache entries written (one per graph the step ran; empty if
        ``write_cache=False`` or writing failed).
      policy: the ready-op policy used for every setting.
      warmup, steps: untimed and timed steps per setting.
      graphs: signatures of all graphs the step ran, main first.
      applied: whether the best setting is in force after tuning (False when the
        environment, GRAPHI_EXECUTORS / GRAPHI_THREADS_PER_EXECUTOR, pins another layout).
    """

    settings: List[TuneRow]
    best: Setting
    best_median_ms: float
    signature: Optional[str]
    cache_paths: List[str]
    policy: str = ""
    warmup: int = 0
    steps: int = 0
    graphs: List[str] = dataclasses.field(default_factory=list)
    applied: bool = True

    def to_dict(self) -> dict:
        return {
            "settings": [row.to_dict() for row in self.settings],
            "best": list(self.best),
            "best_median_ms": self.best_median_ms,
            "signature": self.signature,
            "cache_paths": list(self.cache_paths),
            "policy": self.policy,
            "warmup": self.warmup,
            "steps": self.steps,
            "graphs": list(self.graphs),
            "applied": self.applied,
        }

    def __str__(self) -> str:
        return format_table(self)


def format_table(result: TuneResult) -> str:
    """A benchmark-style table: setting, median, min, max (ms), vs best; best marked."""
    header = ("setting", "median ms", "min ms", "max ms", "vs best")
    body = []
    for row in result.settings:
        body.append(
            (
                row.label,
                f"{row.median_ms:.3f}",
                f"{row.min_ms:.3f}",
                f"{row.max_ms:.3f}",
                f"{row.vs_best:.2f}x",
            )
        )
    widths = [max(len(header[i]), *(len(r[i]) for r in body)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return "  ".join([first] + rest)

    graph = f"graph {result.signature}" if result.signature else "no GRAPHI graph"
    lines = [
        f"graphi_tf.tune: {graph}, policy {result.policy or 'default'}, "
        f"{result.warmup} warmup + {result.steps} timed steps per setting",
        line(header),
    ]
    for row, cells in zip(result.settings, body):
        text = line(cells)
        if row.setting == tuple(result.best):
            text += "  <- best"
        lines.append(text)
    e, t = result.best
    lines.append(
        f"best: {e} executor{'s' if e != 1 else ''} x {t} thread{'s' if t != 1 else ''} "
        f"(median {result.best_median_ms:.3f} ms), "
        + ("applied" if result.applied else "not applied: the environment pins another layout")
    )
    for path in result.cache_paths:
        lines.append(f"cached: {path}")
    return "\n".join(lines)


class _Progress:
    """A one-line progress bar redrawn with carriage returns on ``stream`` (stderr)."""

    WIDTH = 24
    MIN_INTERVAL_S = 0.1

    def __init__(self, total_steps: int, n_settings: int, stream: Optional[TextIO], enabled: bool):
        self.total = max(total_steps, 1)
        self.n_settings = n_settings
        self.stream = stream
        self.enabled = enabled
        self.done = 0
        self.last_len = 0
        self.last_draw = 0.0

    def update(self, index: int, label: str, phase: str, i: int, n: int, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last_draw < self.MIN_INTERVAL_S:
            return
        self.last_draw = now
        filled = int(self.WIDTH * self.done / self.total)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        text = (
            f"graphi_tf.tune [{bar}] {100 * self.done // self.total:3d}%  "
            f"setting {label} ({index + 1}/{self.n_settings})  {phase} {i}/{n}"
        )
        pad = " " * max(0, self.last_len - len(text))
        self._write("\r" + text + pad)
        self.last_len = len(text)

    def finish(self, message: str) -> None:
        if not self.enabled:
            return
        pad = " " * max(0, self.last_len - len(message))
        self._write("\r" + message + pad + "\n")

    def _write(self, text: str) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        stream.write(text)
        stream.flush()


def _native(native: Any) -> Any:
    if native is not None:
        return native
    from graphi_tf import _loader

    return _loader.native()


def default_settings(native: Any = None) -> List[Setting]:
    """The settings ``tune`` sweeps by default: every symmetric setting the native layout
    rules accept on this machine (E×T ≤ usable cores, whole tiles) whose T is 1 or a
    multiple of the tile size; E=1, T=1 (sequential) is among them."""
    native = _native(native)
    info = native.runtime_info()
    tiles = info.get("tiles") or [[0]]
    tile_size = max(1, len(tiles[0]))
    out = []
    for e, t in native.symmetric_settings():
        setting = (int(e), int(t))
        if (setting[1] == 1 or setting[1] % tile_size == 0) and setting not in out:
            out.append(setting)
    return out


def _validate_settings(settings: Sequence[Any], allowed: Sequence[Setting]) -> List[Setting]:
    allowed_text = ", ".join(f"{e}x{t}" for e, t in allowed)
    out: List[Setting] = []
    for s in settings:
        try:
            e, t = s
        except (TypeError, ValueError):
            raise TuneArgumentError(
                f"setting {s!r} is invalid: expected (executors, threads_per_executor); "
                f"allowed on this machine: {allowed_text}"
            ) from None
        if any(isinstance(v, bool) or not isinstance(v, int) for v in (e, t)):
            raise TuneArgumentError(
                f"setting {s!r} is invalid: executors and threads_per_executor must be whole "
                f"numbers; allowed on this machine: {allowed_text}"
            )
        if (e, t) not in allowed:
            raise TuneArgumentError(
                f"setting {e}x{t} (executors={e}, threads_per_executor={t}) does not fit this "
                f"machine (teams on whole L2 tiles, executors x threads <= usable cores); "
                f"allowed: {allowed_text}"
            )
        if (e, t) not in out:
            out.append((e, t))
    if not out:
        raise TuneArgumentError(f"no settings to tune; allowed on this machine: {allowed_text}")
    return out


def _graph_steps(native: Any) -> Dict[str, dict]:
    return {str(g["signature"]): dict(g) for g in native.graphs()}


def _ran_graphs(before: Dict[str, dict], after: Dict[str, dict]) -> List[dict]:
    """Graphs whose step count grew, the main one (most nodes) first."""
    ran = [
        g
        for sig, g in after.items()
        if int(g.get("steps_run", 0)) > int(before.get(sig, {}).get("steps_run", 0))
    ]
    ran.sort(key=lambda g: (-int(g.get("node_count", 0)), str(g["signature"])))
    return ran


def _restore(native: Any, previous: dict) -> None:
    """Puts back the layout that was in force before the sweep."""
    if previous.get("setting_source") == "configure":
        native.configure(
            int(previous["executors"]), int(previous["threads_per_executor"]), str(previous.get("policy", ""))
        )
    else:
        native.configure(0, 0, "")


def tune(
    step_fn: Callable[[], Any],
    *,
    warmup: int = 20,
    steps: int = 30,
    settings: Optional[Sequence[Setting]] = None,
    policy: Optional[str] = None,
    write_cache: bool = True,
    progress: bool = True,
    native: Any = None,
    progress_stream: Optional[TextIO] = None,
) -> TuneResult:
    """Times ``step_fn`` under each team layout, applies the fastest and caches it.

    Args:
      step_fn: zero-argument callable that runs one step on GRAPHI (a ``session.run`` in a
        session made with ``graphi_tf.session_config()``, a ``tf.function`` called under
        ``graphi_tf.executor_scope()``, ...). Its return value is ignored.
      warmup: untimed steps per setting before timing (the new teams start, caches warm).
      steps: timed steps per setting; the median decides.
      settings: (executors, threads_per_executor) pairs to try. None: ``default_settings()``,
        every symmetric setting on whole tiles including 1x1 (sequential). Each must be one
        the layout rules accept here (``symmetric_settings()``), else ValueError before any
        step runs.
      policy: ready-op policy for every setting (``graphi_tf.POLICIES``). None: the policy
        in force now.
      write_cache: store the result in the cache (one entry per graph the step ran).
      progress: draw a progress bar on stderr.
      native: the native module (tests inject a fake); None for the real one.
      progress_stream: where the bar goes (default ``sys.stderr``).

    Returns:
      A ``TuneResult``; ``print(result)`` shows the table.

    Raises:
      TuneArgumentError (a ValueError): bad ``warmup``/``steps``/``policy``, or a setting
        that does not fit this machine (the message names it and the allowed ones); raised
        before any step runs.
      RuntimeError: ``step_fn`` ran no graph on the GRAPHI executor (nothing to tune).
      Whatever ``step_fn`` raises; the layout in force before the call is restored.
    """
    if not callable(step_fn):
        raise TypeError(f"step_fn must be a zero-argument callable, got {type(step_fn).__name__}")
    for name, value, low in (("warmup", warmup, 0), ("steps", steps, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise TuneArgumentError(f"{name}={value!r} is invalid; allowed: a whole number >= {low}")
    native = _native(native)
    from graphi_tf.config import POLICIES

    previous = dict(native.runtime_info())
    if policy is None:
        policy = str(previous.get("policy") or "")
    elif policy not in POLICIES:
        raise TuneArgumentError(f"policy={policy!r} is invalid; allowed: {', '.join(POLICIES)}")
    allowed = [(int(e), int(t)) for e, t in native.symmetric_settings()]
    sweep = _validate_settings(default_settings(native) if settings is None else settings, allowed)

    bar = _Progress(len(sweep) * (warmup + steps), len(sweep), progress_stream, progress)
    before = _graph_steps(native)
    times: Dict[Setting, List[float]] = {}
    ran: List[dict] = []
    try:
        for index, (e, t) in enumerate(sweep):
            label = f"{e}x{t}"
            native.configure(e, t, policy)
            bar.update(index, label, "warmup", 0, warmup, force=True)
            for i in range(warmup):
                step_fn()
                bar.done += 1
                bar.update(index, label, "warmup", i + 1, warmup)
            samples: List[float] = []
            for i in range(steps):
                t0 = time.perf_counter()
                step_fn()
                samples.append((time.perf_counter() - t0) * 1e3)
                bar.done += 1
                bar.update(index, label, "timed", i + 1, steps)
            bar.update(index, label, "timed", steps, steps, force=True)
            times[(e, t)] = samples
            if index == 0:
                ran = _ran_graphs(before, _graph_steps(native))
                if not ran:
                    raise RuntimeError(
                        "graphi_tf.tune: step_fn ran no graph on the GRAPHI executor, so the "
                        "team layout cannot affect it. Run the step in a session made with "
                        "graphi_tf.session_config(), or call it under graphi_tf.executor_scope()."
                    )
        ran = _ran_graphs(before, _graph_steps(native))
    except BaseException:
        if progress:
            bar.finish("graphi_tf.tune: interrupted")
        _restore(native, previous)
        raise

    medians = {s: statistics.median(v) for s, v in times.items()}
    best = min(sweep, key=lambda s: medians[s])  # ties: the first in sweep order
    best_median = medians[best]
    rows = [
        TuneRow(
            executors=e,
            threads_per_executor=t,
            median_ms=medians[(e, t)],
            min_ms=min(times[(e, t)]),
            max_ms=max(times[(e, t)]),
            vs_best=medians[(e, t)] / best_median if best_median > 0 else 1.0,
            step_times_ms=tuple(times[(e, t)]),
        )
        for e, t in sweep
    ]

    native.configure(best[0], best[1], policy)
    applied_policy = str(native.runtime_info().get("policy") or policy)
    profiles = {}
    for g in ran:
        sig = str(g["signature"])
        try:
            profiles[sig] = native.graph_profile(sig)
        except KeyError:
            profiles[sig] = {"node_count": int(g.get("node_count", 0)), "node_costs_ns": [], "node_names": []}
        native.adopt_setting(
            sig,
            best[0],
            best[1],
            applied_policy,
            "tuned",
            list(profiles[sig].get("node_costs_ns", [])),
            list(profiles[sig].get("node_names", [])),
        )

    now = native.runtime_info()
    applied = (int(now.get("executors", 0)), int(now.get("threads_per_executor", 0))) == best
    if not applied:
        warnings.warn(
            f"graphi_tf.tune: the best setting {best[0]}x{best[1]} is not in force: "
            f"{now.get('executors')}x{now.get('threads_per_executor')} from "
            f"{now.get('setting_source')} takes precedence (unset GRAPHI_EXECUTORS / "
            "GRAPHI_THREADS_PER_EXECUTOR to use tuned settings)",
            RuntimeWarning,
            stacklevel=2,
        )

    main = str(ran[0]["signature"])
    cache_paths: List[str] = []
    if write_cache:
        machine = _cache.machine_fingerprint(previous)
        table = [row.to_dict(step_times=False) for row in rows]
        for g in ran:
            sig = str(g["signature"])
            profile = profiles[sig]
            note = f"graphi_tf.tune: {len(sweep)} settings, {warmup} warmup + {steps} timed steps each"
            if sig != main:
                note += f"; ran in the same step as graph {main}"
            entry = _cache.CacheEntry.build(
                signature=sig,
                machine=machine,
                executors=best[0],
                threads_per_executor=best[1],
                policy=applied_policy,
                median_step_ms=best_median,
                table=table,
                node_count=int(profile.get("node_count", g.get("node_count", 0))),
                node_costs_ns=profile.get("node_costs_ns", []),
                node_names=profile.get("node_names", []),
                note=note,
                tf_version=previous.get("tf_version"),
                graphi_tf_version=previous.get("version"),
            )
            try:
                cache_paths.append(str(_cache.write_entry(entry)))
            except OSError as e:
                warnings.warn(
                    _cache.GraphiCacheWarning(f"graphi_tf.tune: could not write the cache entry for graph {sig}: {e}"),
                    stacklevel=2,
                )

    bar.finish(
        f"graphi_tf.tune: {len(sweep)} settings done; best {best[0]}x{best[1]} "
        f"(median {best_median:.3f} ms)"
    )
    return TuneResult(
        settings=rows,
        best=best,
        best_median_ms=best_median,
        signature=main,
        cache_paths=cache_paths,
        policy=applied_policy,
        warmup=warmup,
        steps=steps,
        graphs=[str(g["signature"]) for g in ran],
        applied=applied,
    )
