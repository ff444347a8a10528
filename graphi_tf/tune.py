"""Tuning that noise cannot fool: find a team layout that beats the default, apply it, cache it.

``graphi_tf.tune(step_fn)`` runs ``step_fn`` (one training or inference step: a
``session.run``, a ``tf.function`` call, a Keras ``train_on_batch``) under every symmetric
setting E executor teams x T threads that fits this process's cores on whole tiles,
re-partitioning the teams between settings in the same process. The settings are timed in
interleaved rounds (the order rotated each round), each setting's time is taken relative
to the default setting's in the same round, and a setting is adopted only if it beats the
default by more than the spread of those ratios: if it was faster in enough of the rounds
that chance could hardly explain it (a sign test, ``graphi_tf.decision``). Otherwise the
default is kept. Either way the outcome is applied at once, handed with the measured node
costs to the executor (``adopt_setting``) and stored with its evidence in the cache
(``graphi_tf.cache``), so later processes that run the same graph start tuned.

The stages, each a function here: validate the arguments (``_plan``), time the settings
(``_sweep``), decide (``graphi_tf.decision.decide``: the native rule, the one the online
autotuner uses), apply the decision (``_apply``), and write the cache (``_write_cache``).
"""
from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

from graphi_tf import cache as _cache
from graphi_tf import decision as _decision
from graphi_tf import stepstats
from graphi_tf.decision import Decision, Setting, setting_label

DEFAULT_WARMUP = 10
"""Untimed steps per setting on its first visit (new teams start, caches warm)."""

DEFAULT_ROUNDS = 6
"""Rounds: every live setting is timed once per round, in an order rotated each round."""

DEFAULT_STEPS = 10
"""Timed steps per visit; their median is the setting's median for that round."""

DISCARD_STEPS_PER_VISIT = 1
"""Untimed steps at the start of every visit, after re-partitioning (fresh teams)."""


class TuneArgumentError(ValueError):
    """An argument of ``tune`` is invalid (raised before any step runs)."""


@dataclasses.dataclass(frozen=True)
class TuneRow:
    """One setting of the sweep.

    Fields:
      executors, threads_per_executor: the setting.
      median_ms: median of its per-round medians.
      min_ms, max_ms: fastest and slowest timed step over all its rounds.
      round_medians_ms: its median in each round (None after it was eliminated).
      ratio_median, ratio_spread: its per-round ratios to the default, as median and how
        far above it the median's confidence bound lies (``graphi_tf.decision``; 1.0 and
        0.0 for the default itself).
      rounds: rounds in which it was compared with the default.
      eliminated_after_round: 0-based round after which it was dropped (over
        ``decision.ELIMINATE_RATIO`` x the default in every round so far), else None.
      step_times_ms: every timed step, in order (round after round).
    """

    executors: int
    threads_per_executor: int
    median_ms: float
    min_ms: float
    max_ms: float
    round_medians_ms: Tuple[Optional[float], ...] = ()
    ratio_median: Optional[float] = None
    ratio_spread: Optional[float] = None
    rounds: int = 0
    eliminated_after_round: Optional[int] = None
    step_times_ms: Tuple[float, ...] = ()

    @property
    def setting(self) -> Setting:
        return (self.executors, self.threads_per_executor)

    @property
    def label(self) -> str:
        return setting_label(self.setting)

    def to_dict(self, *, step_times: bool = True) -> dict:
        row = {
            "executors": self.executors,
            "threads_per_executor": self.threads_per_executor,
            "median_ms": self.median_ms,
            "min_ms": self.min_ms,
            "max_ms": self.max_ms,
            "round_medians_ms": list(self.round_medians_ms),
            "ratio_median": self.ratio_median,
            "ratio_spread": self.ratio_spread,
            "rounds": self.rounds,
            "eliminated_after_round": self.eliminated_after_round,
        }
        if step_times:
            row["step_times_ms"] = list(self.step_times_ms)
        return row


@dataclasses.dataclass
class TuneResult:
    """What ``tune`` measured, decided and did.

    Fields:
      settings: one ``TuneRow`` per setting, in sweep order.
      best: the chosen (executors, threads_per_executor): the setting adopted, or the
        default if none beat it (``decision.chosen``).
      best_median_ms: its median of round medians.
      signature: the main graph's signature (the graph with most nodes that the step ran).
      cache_paths: the cache entries written (one per graph the step ran; empty if
        ``write_cache=False`` or writing failed).
      decision: the ``graphi_tf.decision.Decision`` with the evidence and its reason.
      policy: the ready-op policy used for every setting.
      warmup, rounds, steps: untimed steps on a setting's first visit, rounds, and timed
        steps per visit (each visit also discards ``DISCARD_STEPS_PER_VISIT``).
      graphs: signatures of all graphs the step ran, main first.
      applied: whether the chosen setting is in force after tuning (False when the
        environment, GRAPHI_EXECUTORS / GRAPHI_THREADS_PER_EXECUTOR, pins another layout).
      default_added: the caller's ``settings`` did not include the default setting, so
        ``tune`` added it (last in the sweep order): every ratio needs it.
    """

    settings: List[TuneRow]
    best: Setting
    best_median_ms: float
    signature: Optional[str]
    cache_paths: List[str]
    decision: Decision
    policy: str = ""
    warmup: int = 0
    steps: int = 0
    rounds: int = 0
    graphs: List[str] = dataclasses.field(default_factory=list)
    applied: bool = True
    default_added: bool = False

    @property
    def default(self) -> Setting:
        return self.decision.default

    @property
    def adopted(self) -> bool:
        """True if a setting other than the default was adopted."""
        return self.decision.adopted

    def to_dict(self) -> dict:
        return {
            "settings": [row.to_dict() for row in self.settings],
            "best": list(self.best),
            "best_median_ms": self.best_median_ms,
            "default": list(self.default),
            "default_added": self.default_added,
            "adopted": self.adopted,
            "reason": self.decision.reason,
            "decision": self.decision.to_dict(),
            "signature": self.signature,
            "cache_paths": list(self.cache_paths),
            "policy": self.policy,
            "warmup": self.warmup,
            "rounds": self.rounds,
            "steps": self.steps,
            "discard_steps_per_visit": DISCARD_STEPS_PER_VISIT,
            "graphs": list(self.graphs),
            "applied": self.applied,
        }

    def __str__(self) -> str:
        return format_table(self)


def format_table(result: TuneResult) -> str:
    """The sweep as a table, one row per setting: setting, median of its round medians (ms),
    the median of its per-round ratios to the default, the rounds it was faster in of those
    compared,
    and marks for the chosen, default and eliminated settings; then the cache files and,
    last, the decision sentence (and whether it is in force)."""
    graph = f"graph {result.signature}" if result.signature else "no GRAPHI graph"
    default = setting_label(result.default)
    added = " (added: not in the given settings)" if result.default_added else ""
    lines = [
        f"graphi_tf.tune: {graph}, policy {result.policy or 'default'}, default {default}{added}",
        f"{result.warmup} warmup steps per setting, then {result.rounds} rounds of "
        f"{DISCARD_STEPS_PER_VISIT} discarded + {result.steps} timed steps per setting (order rotated each round)",
    ]
    lines += _decision.format_evidence(result.decision)
    for path in result.cache_paths:
        lines.append(f"cached: {path}")
    last = result.decision.reason
    if not result.applied:
        last += "; not applied: the environment pins another layout"
    lines.append(last)
    return "\n".join(lines)


class _Progress:
    """A one-line progress bar redrawn with carriage returns on ``stream`` (stderr)."""

    WIDTH = 24
    MIN_INTERVAL_S = 0.1

    def __init__(self, total_steps: int, stream: Optional[TextIO], enabled: bool):
        self.total = max(total_steps, 1)
        self.stream = stream
        self.enabled = enabled
        self.done = 0
        self.last_len = 0
        self.last_draw = 0.0
        self.where = ""

    def visit(self, round_index: int, rounds: int, label: str, index: int, n_settings: int) -> None:
        self.where = f"round {round_index + 1}/{rounds}  setting {label} ({index + 1}/{n_settings})"

    def skip(self, steps: int) -> None:
        """Steps that will not run (an eliminated setting's remaining visits)."""
        self.total = max(self.total - steps, max(self.done, 1))

    def advance(self, phase: str, i: int, n: int) -> None:
        """One more step done (``stepstats.time_steps``'s ``on_step``)."""
        self.done += 1
        self.step(phase, i, n)

    def step(self, phase: str, i: int, n: int, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last_draw < self.MIN_INTERVAL_S:
            return
        self.last_draw = now
        filled = int(self.WIDTH * self.done / self.total)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        text = f"graphi_tf.tune [{bar}] {100 * self.done // self.total:3d}%  {self.where}  {phase} {i}/{n}"
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
    """The settings ``tune`` sweeps by default: the native tuning candidates, the same
    layouts GRAPHI's online autotuner compares (``TuningCandidates`` in
    cc/teams/team_layout.h: for each team size 1, tile, 2 x tile, ... as many teams as
    fit, and 1x1)."""
    return [(int(e), int(t)) for e, t in _native(native).tuning_candidates()]


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


def _restore(native: Any, previous: dict) -> None:
    """Puts back the layout that was in force before the sweep."""
    if previous.get("setting_source") == "configure":
        native.configure(
            int(previous["executors"]), int(previous["threads_per_executor"]), str(previous.get("policy", ""))
        )
    else:
        native.configure(0, 0, "")


# --------------------------------------------------------------------------- stage 1: validate


@dataclasses.dataclass(frozen=True)
class _Plan:
    """What the sweep will do, fixed before any step runs."""

    sweep: Tuple[Setting, ...]
    default: Setting
    default_added: bool
    policy: str
    previous: dict  # runtime_info() before tuning: the layout to restore on failure


def _check_count(name: str, value: Any, low: int, why: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise TuneArgumentError(f"{name}={value!r} is invalid; allowed: a whole number >= {low}{why}")


def _plan(
    step_fn: Any, warmup: Any, steps: Any, rounds: Any, settings: Optional[Sequence[Any]],
    policy: Optional[str], clock: Any, native: Any,
) -> _Plan:
    """Checks every argument (nothing runs yet) and fixes the sweep: the caller's settings
    (or ``default_settings()``), deduplicated, plus the default setting if missing."""
    if not callable(step_fn):
        raise TypeError(f"step_fn must be a zero-argument callable, got {type(step_fn).__name__}")
    if not callable(clock):
        raise TypeError(f"clock must be a zero-argument callable returning seconds, got {type(clock).__name__}")
    _check_count("warmup", warmup, 0)
    _check_count("steps", steps, 1)
    _check_count("rounds", rounds, _decision.MIN_ROUNDS_TO_ADOPT,
                 f" (a setting is adopted only after beating the default in "
                 f"{_decision.MIN_ROUNDS_TO_ADOPT} rounds)")
    from graphi_tf.config import POLICIES

    previous = dict(native.runtime_info())
    if policy is None:
        policy = str(previous.get("policy") or "")
    elif policy not in POLICIES:
        raise TuneArgumentError(f"policy={policy!r} is invalid; allowed: {', '.join(POLICIES)}")
    allowed = [(int(e), int(t)) for e, t in native.symmetric_settings()]
    sweep = _validate_settings(default_settings(native) if settings is None else settings, allowed)
    e, t = native.default_setting()
    default = (int(e), int(t))
    added = default not in sweep
    if added:
        sweep.append(default)
    return _Plan(sweep=tuple(sweep), default=default, default_added=added, policy=policy, previous=previous)


# --------------------------------------------------------------------------- stage 2: sweep


@dataclasses.dataclass
class _Timings:
    """What the sweep measured."""

    round_medians: List[Dict[Setting, float]]  # [round][setting] -> median ms
    step_times: Dict[Setting, List[float]]  # every timed step per setting, in order
    ran: List[dict]  # graphs the step ran, main first


def _visit(
    step_fn: Callable[[], Any], native: Any, setting: Setting, policy: str, untimed: int, steps: int,
    clock: Callable[[], float], bar: _Progress,
) -> List[float]:
    """One visit: re-partition to ``setting``, run ``untimed`` steps, time ``steps`` (ms)."""
    native.configure(setting[0], setting[1], policy)
    bar.step("untimed", 0, untimed, force=True)
    return stepstats.time_steps(step_fn, steps, untimed=untimed, clock=clock, on_step=bar.advance)


def _sweep(
    step_fn: Callable[[], Any], native: Any, plan: _Plan, *, warmup: int, steps: int, rounds: int,
    clock: Callable[[], float], bar: _Progress,
) -> _Timings:
    """Times the live settings round after round.

    Round r visits the live settings (sweep order, eliminated ones left out) rotated left
    by r. A setting's first visit starts with ``warmup`` untimed steps; every visit then
    discards ``DISCARD_STEPS_PER_VISIT`` and times ``steps``. After each round a setting
    that the native rule eliminates (``settings_to_eliminate``) is no longer visited.
    """
    before = stepstats.steps_run(native.graphs())
    live = list(plan.sweep)
    visited: set = set()
    timings = _Timings(round_medians=[], step_times={s: [] for s in plan.sweep}, ran=[])
    for r in range(rounds):
        shift = r % len(live)
        order = live[shift:] + live[:shift]
        medians: Dict[Setting, float] = {}
        for index, setting in enumerate(order):
            bar.visit(r, rounds, setting_label(setting), index, len(order))
            untimed = DISCARD_STEPS_PER_VISIT + (warmup if setting not in visited else 0)
            samples = _visit(step_fn, native, setting, plan.policy, untimed, steps, clock, bar)
            visited.add(setting)
            timings.step_times[setting].extend(samples)
            medians[setting] = stepstats.median(samples)
            if not timings.ran:
                timings.ran = stepstats.ran_since(before, native.graphs())
                if not timings.ran:
                    raise RuntimeError(
                        "graphi_tf.tune: step_fn ran no graph on the GRAPHI executor, so the "
                        "team layout cannot affect it. Run the step in a session made with "
                        "graphi_tf.session_config(), or call it under graphi_tf.executor_scope()."
                    )
        timings.round_medians.append(medians)
        for setting in _decision.settings_to_eliminate(native, timings.round_medians, live,
                                                       plan.default):
            live.remove(setting)
            bar.skip((rounds - r - 1) * (DISCARD_STEPS_PER_VISIT + steps))
    timings.ran = stepstats.ran_since(before, native.graphs())
    return timings


def _rows(plan: _Plan, timings: _Timings, decision: Decision) -> List[TuneRow]:
    rows = []
    for setting in plan.sweep:
        ev = decision.evidence_for(setting)
        medians = [m for m in ev.round_medians_ms if m is not None]
        times = timings.step_times[setting]
        rows.append(TuneRow(
            executors=setting[0],
            threads_per_executor=setting[1],
            median_ms=stepstats.median(medians),
            min_ms=min(times),
            max_ms=max(times),
            round_medians_ms=ev.round_medians_ms,
            ratio_median=ev.ratio_median,
            ratio_spread=ev.ratio_spread,
            rounds=ev.rounds,
            eliminated_after_round=ev.eliminated_after_round,
            step_times_ms=tuple(times),
        ))
    return rows


# --------------------------------------------------------------------------- stage 4: apply


def _apply(native: Any, chosen: Setting, policy: str, ran: Sequence[dict]) -> Tuple[str, Dict[str, dict], bool]:
    """Configures ``chosen`` and adopts it, with the measured costs, for every graph that
    ran (source "tuned"; this also replaces the sweep's configure pin). Returns (policy in
    force, node profile per signature, whether ``chosen`` is in force)."""
    native.configure(chosen[0], chosen[1], policy)
    applied_policy = str(native.runtime_info().get("policy") or policy)
    profiles: Dict[str, dict] = {}
    for g in ran:
        sig = str(g["signature"])
        try:
            profiles[sig] = native.graph_profile(sig)
        except KeyError:
            profiles[sig] = {"node_count": int(g.get("node_count", 0)), "node_costs_ns": [], "node_names": []}
        native.adopt_setting(
            sig, chosen[0], chosen[1], applied_policy, "tuned",
            list(profiles[sig].get("node_costs_ns", [])), list(profiles[sig].get("node_names", [])),
        )
    now = native.runtime_info()
    applied = (int(now.get("executors", 0)), int(now.get("threads_per_executor", 0))) == chosen
    if not applied:
        warnings.warn(
            f"graphi_tf.tune: the chosen setting {setting_label(chosen)} is not in force: "
            f"{now.get('executors')}x{now.get('threads_per_executor')} from "
            f"{now.get('setting_source')} takes precedence (unset GRAPHI_EXECUTORS / "
            "GRAPHI_THREADS_PER_EXECUTOR to use tuned settings)",
            RuntimeWarning,
            stacklevel=3,
        )
    return applied_policy, profiles, applied


# --------------------------------------------------------------------------- stage 5: cache


def _write_cache(
    plan: _Plan, timings: _Timings, decision: Decision, rows: Sequence[TuneRow], policy: str,
    profiles: Dict[str, dict], median_ms: float, *, warmup: int, steps: int, rounds: int,
) -> List[str]:
    """One entry per graph that ran, all with the chosen setting and the decision's
    evidence; a kept default is cached too (so later processes do not re-tune)."""
    machine = _cache.machine_fingerprint(plan.previous)
    table = [row.to_dict(step_times=False) for row in rows]
    evidence = decision.to_dict()
    main = str(timings.ran[0]["signature"])
    paths: List[str] = []
    for g in timings.ran:
        sig = str(g["signature"])
        profile = profiles[sig]
        note = (
            f"graphi_tf.tune: {decision.reason}; {len(plan.sweep)} settings, {warmup} warmup steps, "
            f"{rounds} rounds of {DISCARD_STEPS_PER_VISIT} discarded + {steps} timed steps"
        )
        if sig != main:
            note += f"; ran in the same step as graph {main}"
        entry = _cache.CacheEntry.build(
            signature=sig,
            machine=machine,
            executors=decision.chosen[0],
            threads_per_executor=decision.chosen[1],
            policy=policy,
            median_step_ms=median_ms,
            table=table,
            node_count=int(profile.get("node_count", g.get("node_count", 0))),
            node_costs_ns=profile.get("node_costs_ns", []),
            node_names=profile.get("node_names", []),
            note=note,
            tf_version=plan.previous.get("tf_version"),
            graphi_tf_version=plan.previous.get("version"),
            evidence=evidence,
        )
        try:
            paths.append(str(_cache.write_entry(entry)))
        except OSError as e:
            warnings.warn(
                _cache.GraphiCacheWarning(f"graphi_tf.tune: could not write the cache entry for graph {sig}: {e}"),
                stacklevel=3,
            )
    return paths


# --------------------------------------------------------------------------- tune


def tune(
    step_fn: Callable[[], Any],
    *,
    warmup: int = DEFAULT_WARMUP,
    rounds: int = DEFAULT_ROUNDS,
    steps: int = DEFAULT_STEPS,
    settings: Optional[Sequence[Setting]] = None,
    policy: Optional[str] = None,
    write_cache: bool = True,
    progress: bool = True,
    native: Any = None,
    progress_stream: Optional[TextIO] = None,
    clock: Callable[[], float] = time.perf_counter,
) -> TuneResult:
    """Times ``step_fn`` under each team layout; adopts one only if it beats the default by
    more than its noise; applies and caches the outcome.

    Procedure:

    1. The sweep is ``settings`` (or every setting ``default_settings()`` lists) plus the
       default setting (``native.default_setting()``, what GRAPHI uses when nothing is
       set) if it is missing; ``result.default_added`` then says so.
    2. Each setting's first visit runs ``warmup`` untimed steps. Then ``rounds`` rounds:
       round r visits the live settings in sweep order rotated by r; a visit re-partitions
       the teams (``configure``), discards ``DISCARD_STEPS_PER_VISIT`` step (fresh teams)
       and times ``steps`` steps with ``clock``; their median is that round's median. After
       each round, a setting over ``decision.ELIMINATE_RATIO`` x the default in each of
       >= 2 rounds is eliminated (no longer timed).
    3. The native rule (``cc/tuning/tuning_decision.h``, through
       ``graphi_tf.decision.decide``): a setting is adopted iff, over >= 3 rounds, it was
       faster than the default in so many of them that a setting no faster would be so
       with probability <= 1/5 (a sign test: 3 of 3, 4 of 5, 5 of 6, 6 of 8 rounds); the lowest
       median ratio among those wins. Otherwise the default is kept.
    4. The chosen setting (adopted, or the kept default) is configured and adopted for
       every graph the step ran, with the measured node costs, and cached with the
       evidence (so later processes start with it and do not re-tune).

    Cost: ``warmup + rounds x (DISCARD_STEPS_PER_VISIT + steps)`` steps per setting that is
    not eliminated. With the defaults (``DEFAULT_WARMUP`` = 10 warmup, ``DEFAULT_ROUNDS`` = 6
    rounds of 1 + ``DEFAULT_STEPS`` = 10 steps) that is
    10 + 6 x 11 = 76 steps per setting: for a ~25 ms step on 3 settings, one of them 2x
    slower, (76 + 76 + 2 x 76) x 25 ms = 7.6 s plus the re-partitionings (one per visit),
    well under a minute; eliminating the slow setting after round 2 saves 2.2 s of it.

    Args:
      step_fn: zero-argument callable that runs one step on GRAPHI (a ``session.run`` in a
        session made with ``graphi_tf.session_config()``, a ``tf.function`` called under
        ``graphi_tf.executor_scope()``, ...). Its return value is ignored.
      warmup: untimed steps on each setting's first visit (default ``DEFAULT_WARMUP``).
      rounds: rounds of visits (default ``DEFAULT_ROUNDS``; at least
        ``decision.MIN_ROUNDS_TO_ADOPT`` = 3).
      steps: timed steps per visit (default ``DEFAULT_STEPS``); their median is the round's median.
      settings: (executors, threads_per_executor) pairs to try. None: ``default_settings()``,
        every symmetric setting on whole tiles including 1x1 (sequential). Each must be one
        the layout rules accept here (``symmetric_settings()``), else TuneArgumentError
        before any step runs. The default setting is added if missing.
      policy: ready-op policy for every setting (``graphi_tf.POLICIES``). None: the policy
        in force now.
      write_cache: store the outcome in the cache (one entry per graph the step ran).
      progress: draw a progress bar on stderr.
      native: the native module (tests inject a fake); None for the real one.
      progress_stream: where the bar goes (default ``sys.stderr``).
      clock: seconds as a float, read before and after each timed step (default
        ``time.perf_counter``; tests inject a fake).

    Returns:
      A ``TuneResult``; ``print(result)`` shows the table and the decision.

    Raises:
      TuneArgumentError (a ValueError): bad ``warmup``/``rounds``/``steps``/``policy``, or a
        setting that does not fit this machine (the message names it and the allowed
        ones); raised before any step runs.
      RuntimeError: ``step_fn`` ran no graph on the GRAPHI executor (nothing to tune).
      Whatever ``step_fn`` raises, KeyboardInterrupt included: the layout in force before
        the call is restored, nothing is adopted or cached, and the exception propagates.
    """
    native = _native(native)
    plan = _plan(step_fn, warmup, steps, rounds, settings, policy, clock, native)
    n = len(plan.sweep)
    bar = _Progress(n * warmup + rounds * n * (DISCARD_STEPS_PER_VISIT + steps), progress_stream, progress)
    try:
        timings = _sweep(step_fn, native, plan, warmup=warmup, steps=steps, rounds=rounds, clock=clock, bar=bar)
    except BaseException:
        bar.finish("graphi_tf.tune: interrupted")
        _restore(native, plan.previous)
        raise

    decision = _decision.decide(native, timings.round_medians, plan.default, plan.sweep)
    rows = _rows(plan, timings, decision)
    chosen = decision.chosen
    median = next(row.median_ms for row in rows if row.setting == chosen)
    applied_policy, profiles, applied = _apply(native, chosen, plan.policy, timings.ran)
    cache_paths: List[str] = []
    if write_cache:
        cache_paths = _write_cache(plan, timings, decision, rows, applied_policy, profiles, median,
                                   warmup=warmup, steps=steps, rounds=rounds)
    bar.finish(f"graphi_tf.tune: {n} settings, {rounds} rounds done; {decision.reason}")
    return TuneResult(
        settings=rows,
        best=chosen,
        best_median_ms=median,
        signature=str(timings.ran[0]["signature"]),
        cache_paths=cache_paths,
        decision=decision,
        policy=applied_policy,
        warmup=warmup,
        steps=steps,
        rounds=rounds,
        graphs=[str(g["signature"]) for g in timings.ran],
        applied=applied,
        default_added=plan.default_added,
    )
