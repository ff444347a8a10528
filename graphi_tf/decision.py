"""Tuning decisions as records: what the native rule decided, with its evidence, in a form
the cache stores and users read.

The rule itself lives once, in the native library (``cc/tuning/tuning_decision.h``): the
online autotuner and ``graphi_tf.tune`` both decide there, and this module never decides
again. It checks the inputs, hands them to the native rule (``decide``, given the native
module), and keeps what came back (``from_native``). It is pure Python: it imports neither
TensorFlow nor the native library (callers pass the native module in).

The rule, for per-round medians ``m[r][s]`` (ms) and the default setting ``d``:

1. For each setting s: ``ratios = [m[r][s] / m[r][d] for every round r where both were
   timed]`` (s's step time as a fraction of the default's in the same round, so noise
   that slows the whole machine for a round cancels out); the ratio median, and the
   spread: how far above the median the median's upper confidence bound lies. The bound
   is the k-th smallest ratio, k = ``WinsNeeded(n)`` (native) for n ratios: the least k such
   that a setting no faster than the default (each round a fair coin) is faster in at
   least k of n rounds with probability at most ``SIGN_TEST_ALPHA``.
2. s != d *qualifies* iff it has at least ``MIN_ROUNDS_TO_ADOPT`` ratios and
   median + spread < 1: it beat the default by more than its spread, which is the sign
   test "faster in at least ``WinsNeeded(n)`` of n rounds".
3. ``chosen`` is the qualifying setting with the lowest median (ties: the earlier in
   ``order``); if none qualifies, the default is kept.
4. Elimination (while timing): after each round, a setting more than ``ELIMINATE_RATIO``
   x slower than the default, or than a setting that qualifies on the rounds so far, in
   every one of at least 2 rounds is no longer timed: it cannot win (the native
   ``settings_to_eliminate``).
5. Screening (the online autotuner only): before the rounds, every setting is visited once,
   briefly; one more than ``SCREEN_OUT_RATIO`` x the default there is not timed in the
   rounds (never all of them: the closest stays). Those visits are a setting's first
   (cold), so they are not among the rounds.
6. Runoff (the online autotuner only): when the rounds adopt nothing but a setting's median
   is below ``RUNOFF_BELOW_RATIO``, it and the default are timed again in up to 8 rounds
   of visits as long as the rounds', and the rule decides from those runoff rounds alone.
7. Curtailment (the online autotuner only): a setting that can no longer qualify in the
   rounds left is not timed again unless it is close enough for a runoff, and the rounds
   (and the runoff) end as soon as their outcome is settled.

Round indices are 0-based positions in ``round_medians`` everywhere in this module.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

Setting = Tuple[int, ...]
"""Where steps run, as the native library spells it: ``(E, T)`` for E teams of T threads,
``STOCK`` = ``(0, 0)`` for TensorFlow's executor on its own pools, and ``(0, 0, I, A)`` for a
stock point: TensorFlow's executor on I inter-op and A intra-op threads GRAPHI owns
(``stock_point``)."""

MIN_ROUNDS_TO_ADOPT = 3
"""A setting other than the default is adopted only with at least this many ratios."""

SIGN_TEST_ALPHA = 0.2
"""The most chance a setting no faster than the default has to qualify (step 2 above)."""

ELIMINATE_RATIO = 1.1
"""A setting slower than ELIMINATE_RATIO x the default in each of >= 2 rounds is dropped."""

SCREEN_OUT_RATIO = 1.3
"""A setting slower than SCREEN_OUT_RATIO x the default in the autotuner's screening round
is dropped before the rounds (never all of them: the closest then stays)."""

RUNOFF_BELOW_RATIO = 0.98
"""The closest setting not adopted earns a runoff if its median ratio is below this."""


STOCK: Setting = (0, 0)
"""The setting "stock": no teams; steps run on TensorFlow's own inter-op and intra-op pools,
inside the GRAPHI executor. The online autotuner times it beside the team layouts and uses
it as the default (the reference), so a graph runs on teams only where they beat it."""


def stock_point(inter_op_threads: int, intra_op_threads: int) -> Setting:
    """The stock point with these pool sizes: ``(0, 0, I, A)``."""
    return (0, 0, int(inter_op_threads), int(intra_op_threads))


def is_stock(setting: Setting) -> bool:
    """Whether TensorFlow's executor runs the steps (``STOCK`` or a stock point)."""
    return tuple(setting[:2]) == STOCK


def setting_label(setting: Setting) -> str:
    """``(2, 1)`` -> ``"2x1"``; ``STOCK`` -> ``"stock"``; ``(0, 0, 2, 1)`` -> ``"stock:2x1"``
    (the native library's labels)."""
    if len(setting) == 4 and is_stock(setting):
        return f"stock:{setting[2]}x{setting[3]}"
    if tuple(setting) == STOCK:
        return "stock"
    return f"{setting[0]}x{setting[1]}"


def _pair(text: str, label: str) -> Tuple[int, int]:
    try:
        a, b = text.split("x")
        pair = (int(a), int(b))
    except ValueError:
        raise ValueError(f"setting label {label!r} is invalid; expected 'ExT' (e.g. '2x1'), 'stock' "
                         "or 'stock:IxA'") from None
    if pair[0] < 1 or pair[1] < 1:
        raise ValueError(f"setting label {label!r} is invalid; its numbers must be >= 1")
    return pair


def parse_setting_label(label: str) -> Setting:
    """``"2x1"`` -> ``(2, 1)``; ``"stock"`` -> ``STOCK``; ``"stock:2x1"`` -> ``(0, 0, 2, 1)``.

    Raises:
      ValueError: ``label`` is not ``"stock"``, ``"stock:IxA"`` or ``"ExT"`` with whole
        numbers >= 1.
    """
    text = str(label).lower()
    if text == "stock":
        return STOCK
    if text.startswith("stock:"):
        return stock_point(*_pair(text[len("stock:"):], label))
    return _pair(text, label)


def setting_from_native(value: Sequence[Any]) -> Setting:
    """A setting as the native library returns it (``[E, T]``, ``[0, 0]``, ``[0, 0, I, A]``).

    Raises ValueError for any other shape."""
    setting = tuple(int(v) for v in value)
    if len(setting) == 2 or (len(setting) == 4 and is_stock(setting)):
        return setting
    raise ValueError(f"{list(value)!r} is not a setting; expected [E, T], [0, 0] or [0, 0, I, A]")


def round_ratios(
    round_medians: Sequence[Mapping[Setting, float]], setting: Setting, default: Setting
) -> Tuple[float, ...]:
    """``m[r][setting] / m[r][default]`` for each round r (in order) where both are present."""
    return tuple(
        m[setting] / m[default] for m in round_medians if setting in m and default in m
    )


@dataclasses.dataclass(frozen=True)
class SettingEvidence:
    """What the rule saw for one setting.

    Fields:
      setting: (executors, threads_per_executor).
      round_medians_ms: its median step time in each round, None where it was not timed.
      ratios: its median over the default's, for each round where both were timed.
      ratio_median: median of ``ratios`` (None without ratios; 1.0 for the default).
      ratio_spread: how far the upper confidence bound of the median ratio lies above
        ``ratio_median`` (rule step 2; None without ratios; 0.0 for the default).
      eliminated_after_round: the 0-based round after which it was no longer timed
        (``settings_to_eliminate``), else None.
      screening_ratio: its step time over the default's in the online autotuner's screening
        round (None: not screened, e.g. ``graphi_tf.tune``).
      screened_out: whether that ratio dropped it before the rounds.
    """

    setting: Setting
    round_medians_ms: Tuple[Optional[float], ...]
    ratios: Tuple[float, ...]
    ratio_median: Optional[float]
    ratio_spread: Optional[float]
    eliminated_after_round: Optional[int]
    screening_ratio: Optional[float] = None
    screened_out: bool = False

    @property
    def label(self) -> str:
        return setting_label(self.setting)

    @property
    def rounds(self) -> int:
        """How many rounds compared it with the default (``len(ratios)``)."""
        return len(self.ratios)

    @property
    def wins(self) -> int:
        """How many of those rounds it was faster in (ratio below 1)."""
        return sum(1 for r in self.ratios if r < 1.0)

    def to_dict(self) -> dict:
        return {
            "setting": self.label,
            "round_medians_ms": list(self.round_medians_ms),
            "ratios": list(self.ratios),
            "ratio_median": self.ratio_median,
            "ratio_spread": self.ratio_spread,
            "eliminated_after_round": self.eliminated_after_round,
            "screening_ratio": self.screening_ratio,
            "screened_out": self.screened_out,
        }


@dataclasses.dataclass(frozen=True)
class Decision:
    """The outcome of ``decide``.

    Fields:
      default: the default setting the others were compared with.
      chosen: the setting to use: the best qualifying one, else ``default``.
      adopted: ``chosen != default``.
      reason: one sentence saying why, e.g. "1x2 adopted: 0.83 of the default 2x1, faster
        in 6 of 6 rounds, 5 needed" or "kept the default 2x1: no setting beat it by more than its
        spread (closest: 1x2 at 0.97, faster in 4 of 6 rounds, 5 needed)".
      evidence: one ``SettingEvidence`` per setting, in ``order``.
    """

    default: Setting
    chosen: Setting
    adopted: bool
    reason: str
    evidence: Tuple[SettingEvidence, ...]

    def evidence_for(self, setting: Setting) -> SettingEvidence:
        """The evidence of ``setting``; KeyError if it was not in ``order``."""
        for ev in self.evidence:
            if ev.setting == tuple(setting):
                return ev
        raise KeyError(setting_label(setting))

    def to_dict(self) -> dict:
        """JSON-able form. Settings are "ExT" labels; round indices are 0-based::

            {"default": "2x1", "chosen": "1x2", "adopted": true, "reason": "...",
             "rule": {"min_rounds_to_adopt": 3, "sign_test_alpha": 0.2,
                      "eliminate_ratio": 1.1, "screen_out_ratio": 1.3,
                      "runoff_below_ratio": 0.98},
             "evidence": [{"setting": "1x2",
                           "round_medians_ms": [float | null, ...],   # one per round
                           "ratios": [float, ...],
                           "ratio_median": float | null, "ratio_spread": float | null,
                           "eliminated_after_round": int | null,
                           "screening_ratio": float | null, "screened_out": bool}, ...]}

        ``from_dict`` reads it back (and validates it; entries written before screening
        lack its two fields).
        """
        return {
            "default": setting_label(self.default),
            "chosen": setting_label(self.chosen),
            "adopted": self.adopted,
            "reason": self.reason,
            "rule": {"min_rounds_to_adopt": MIN_ROUNDS_TO_ADOPT, "sign_test_alpha": SIGN_TEST_ALPHA,
                     "eliminate_ratio": ELIMINATE_RATIO,
                     "screen_out_ratio": SCREEN_OUT_RATIO, "runoff_below_ratio": RUNOFF_BELOW_RATIO},
            "evidence": [ev.to_dict() for ev in self.evidence],
        }

    @classmethod
    def from_dict(cls, data: Any) -> "Decision":
        """Reads ``to_dict()``'s shape back (e.g. from a cache entry).

        The ``rule`` object is optional (the rule's constants when it was written are for
        information only). Raises ValueError naming the first field that is missing or
        mistyped.
        """
        if not isinstance(data, dict):
            raise ValueError(f"evidence is {type(data).__name__}, not an object")
        for name, kind in (("default", str), ("chosen", str), ("adopted", bool), ("reason", str),
                           ("evidence", list)):
            if name not in data:
                raise ValueError(f"evidence has no field {name!r}")
            if not isinstance(data[name], kind):
                raise ValueError(f"evidence field {name!r} is {type(data[name]).__name__}, not {kind.__name__}")
        if "rule" in data and not isinstance(data["rule"], dict):
            raise ValueError(f"evidence field 'rule' is {type(data['rule']).__name__}, not an object")
        default = parse_setting_label(data["default"])
        chosen = parse_setting_label(data["chosen"])
        if data["adopted"] != (chosen != default):
            raise ValueError(
                f"evidence says adopted={data['adopted']} but chosen {data['chosen']} and default "
                f"{data['default']} {'differ' if chosen != default else 'are the same'}"
            )
        evidence = tuple(_evidence_from_dict(item, i) for i, item in enumerate(data["evidence"]))
        return cls(default=default, chosen=chosen, adopted=chosen != default, reason=data["reason"],
                   evidence=evidence)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _evidence_from_dict(item: Any, index: int) -> SettingEvidence:
    where = f"evidence[{index}]"
    if not isinstance(item, dict):
        raise ValueError(f"{where} is {type(item).__name__}, not an object")
    for name in ("setting", "round_medians_ms", "ratios", "ratio_median", "ratio_spread",
                 "eliminated_after_round"):
        if name not in item:
            raise ValueError(f"{where} has no field {name!r}")
    if not isinstance(item["setting"], str):
        raise ValueError(f"{where}.setting is {type(item['setting']).__name__}, not str")
    setting = parse_setting_label(item["setting"])
    medians = item["round_medians_ms"]
    if not isinstance(medians, list) or not all(m is None or _is_number(m) for m in medians):
        raise ValueError(f"{where}.round_medians_ms is not a list of numbers or nulls")
    ratios = item["ratios"]
    if not isinstance(ratios, list) or not all(_is_number(r) for r in ratios):
        raise ValueError(f"{where}.ratios is not a list of numbers")
    for name in ("ratio_median", "ratio_spread"):
        if item[name] is not None and not _is_number(item[name]):
            raise ValueError(f"{where}.{name} is {item[name]!r}, not a number or null")
    after = item["eliminated_after_round"]
    if after is not None and (isinstance(after, bool) or not isinstance(after, int) or after < 0):
        raise ValueError(f"{where}.eliminated_after_round is {after!r}, not a round index or null")
    screening_ratio = item.get("screening_ratio")
    if screening_ratio is not None and not (_is_number(screening_ratio) and screening_ratio > 0):
        raise ValueError(f"{where}.screening_ratio is {screening_ratio!r}, not a number > 0 or null")
    screened_out = item.get("screened_out", False)
    if not isinstance(screened_out, bool):
        raise ValueError(f"{where}.screened_out is {screened_out!r}, not true or false")
    return SettingEvidence(
        setting=setting,
        round_medians_ms=tuple(None if m is None else float(m) for m in medians),
        ratios=tuple(float(r) for r in ratios),
        ratio_median=None if item["ratio_median"] is None else float(item["ratio_median"]),
        ratio_spread=None if item["ratio_spread"] is None else float(item["ratio_spread"]),
        eliminated_after_round=after,
        screening_ratio=None if screening_ratio is None else float(screening_ratio),
        screened_out=screened_out,
    )


def _check_inputs(
    round_medians: Sequence[Mapping[Setting, float]], default: Setting, order: Sequence[Setting]
) -> List[Setting]:
    settings = [tuple(s) for s in order]
    if len(set(settings)) != len(settings):
        raise ValueError(f"order {[setting_label(s) for s in settings]} names a setting twice")
    if tuple(default) not in settings:
        raise ValueError(f"default {setting_label(default)} is not in order {[setting_label(s) for s in settings]}")
    for r, medians in enumerate(round_medians):
        for s, value in medians.items():
            if tuple(s) not in settings:
                raise ValueError(f"round {r} has setting {setting_label(s)}, which is not in order")
            if not _is_number(value) or value <= 0:
                raise ValueError(
                    f"round {r}: median {value!r} ms of setting {setting_label(s)} is invalid; "
                    "a median step time must be a finite number > 0"
                )
    return settings  # type: ignore[return-value]


def _labelled_rounds(round_medians: Sequence[Mapping[Setting, float]]) -> List[Dict[str, float]]:
    """The rounds as the native rule takes them: setting labels to medians."""
    return [{setting_label(tuple(s)): float(v) for s, v in m.items()} for m in round_medians]


def settings_to_eliminate(native: Any, round_medians: Sequence[Mapping[Setting, float]],
                          live: Sequence[Setting], default: Setting) -> List[Setting]:
    """The settings of ``live`` that the native rule times no more after these rounds
    (``native.settings_to_eliminate``; never the default), in ``live``'s order."""
    labels = native.settings_to_eliminate(
        _labelled_rounds(round_medians), [setting_label(s) for s in live], setting_label(default))
    return [parse_setting_label(label) for label in labels]


def runoff_candidate(native: Any, round_medians: Sequence[Mapping[Setting, float]],
                     default: Setting, order: Sequence[Setting]) -> Optional[Setting]:
    """The setting the online autotuner would time against the default again in a runoff
    after these rounds (``native.runoff_candidate``): when they adopt nothing, the one
    with the lowest median ratio below ``RUNOFF_BELOW_RATIO`` over at least
    ``MIN_ROUNDS_TO_ADOPT`` rounds; None otherwise.

    Raises:
      ValueError: as ``decide``.
    """
    default = tuple(default)  # type: ignore[assignment]
    settings = _check_inputs(round_medians, default, order)
    label = native.runoff_candidate(_labelled_rounds(round_medians), setting_label(default),
                                    [setting_label(s) for s in settings])
    return None if label is None else parse_setting_label(label)


def eliminated_after_rounds(native: Any, round_medians: Sequence[Mapping[Setting, float]],
                            default: Setting, order: Sequence[Setting]) -> Dict[Setting, int]:
    """For each setting of ``order`` that the native rule eliminated, the 0-based round
    after which it was no longer timed (replayed round by round)."""
    out: Dict[Setting, int] = {}
    live = [tuple(s) for s in order]
    for r in range(len(round_medians)):
        timed = [s for s in live if s in round_medians[r]]
        for setting in settings_to_eliminate(native, round_medians[:r + 1], timed, default):
            out[setting] = r  # type: ignore[index]
            live.remove(setting)
    return out


def decide(native: Any, round_medians: Sequence[Mapping[Setting, float]], default: Setting,
           order: Sequence[Setting]) -> Decision:
    """The native rule's decision (``native.decide_setting``) on per-round median step
    times, as a ``Decision`` (see ``from_native``).

    Args:
      native: the native module (``graphi_tf``'s loader gives it), or a stand-in with
        ``decide_setting`` and ``settings_to_eliminate``.
      round_medians: ``round_medians[r][s]`` = median step time (ms) of setting s in round
        r; a setting not timed in a round (e.g. eliminated) is absent from it.
      default: the baseline of every ratio.
      order: every setting, default included, in sweep order (breaks ties; orders the
        evidence). Settings of ``order`` that no round timed get empty evidence.

    Raises:
      ValueError: ``default`` is not in ``order``, ``order`` repeats a setting, a round
        has a setting not in ``order``, or a median is not a finite number > 0.
    """
    default = tuple(default)  # type: ignore[assignment]
    settings = _check_inputs(round_medians, default, order)
    rounds = [{tuple(s): float(v) for s, v in m.items()} for m in round_medians]
    made = native.decide_setting(_labelled_rounds(rounds), setting_label(default),
                                 [setting_label(s) for s in settings])
    return from_native(made, rounds, settings, eliminated_after_rounds(native, rounds, default, settings))


def from_native(native: Mapping[str, Any], round_medians: Sequence[Mapping[Setting, float]],
                order: Sequence[Setting], eliminated_after_round: Mapping[Setting, int]) -> Decision:
    """The ``Decision`` the native rule made (tuning_decision.h; the ``decision`` of an
    autotuner status, or ``decide_setting``'s result), with the per-round medians it was made
    from and the rounds after which the autotuner stopped timing a setting. Nothing is
    decided again here: chosen, reason, ratios, medians and spreads are the native ones, so
    what is stored is what the autotuner did.

    Raises ValueError (or KeyError) for a malformed native decision."""
    default = setting_from_native(native["default"])
    chosen = setting_from_native(native["chosen"])
    rounds = [{tuple(s): float(v) for s, v in m.items()} for m in round_medians]
    eliminated = {tuple(s): int(r) for s, r in eliminated_after_round.items()}
    by_setting = {setting_from_native(e["setting"]): e for e in native["evidence"]}
    evidence = []
    for setting in (tuple(s) for s in order):
        item = by_setting.get(setting, {"ratios": [], "ratio_median": None, "ratio_spread": None})
        ratios = tuple(float(r) for r in item["ratios"])
        screening_ratio = item.get("screening_ratio")
        evidence.append(SettingEvidence(
            setting=setting,  # type: ignore[arg-type]
            round_medians_ms=tuple(m.get(setting) for m in rounds),
            ratios=ratios,
            ratio_median=float(item["ratio_median"]) if ratios else None,
            ratio_spread=float(item["ratio_spread"]) if ratios else None,
            eliminated_after_round=eliminated.get(setting),
            screening_ratio=None if screening_ratio is None else float(screening_ratio),
            screened_out=bool(item.get("screened_out", False)),
        ))
    if chosen not in [ev.setting for ev in evidence]:
        raise ValueError(f"the native decision chose {setting_label(chosen)}, which is not in order")
    return Decision(default=default, chosen=chosen, adopted=chosen != default,  # type: ignore[arg-type]
                    reason=str(native["reason"]), evidence=tuple(evidence))


def _rounds_text(n: int) -> str:
    return f"{n} round{'s' if n != 1 else ''}"


def format_evidence(decision: Decision) -> List[str]:
    """The evidence as aligned text lines: a header, one row per setting (setting, median of
    its round medians in ms, the median of its ratios to the default, the rounds it was
    faster in of those compared,
    marks for the chosen and default settings and eliminated ones). The reason is not
    among them (callers put it where they want it)."""
    header = ("setting", "median ms", "vs default", "faster in")
    body = []
    for ev in decision.evidence:
        timed = [m for m in ev.round_medians_ms if m is not None]
        median = f"{statistics.median(timed):.3f}" if timed else "-"
        ratio = "-" if ev.ratio_median is None else f"{ev.ratio_median:.2f}"
        marks = []
        if ev.setting == decision.chosen:
            marks.append("chosen")
        if ev.setting == decision.default:
            marks.append("default")
        note = "<- " + ", ".join(marks) if marks else ""
        if ev.eliminated_after_round is not None:
            n = ev.eliminated_after_round + 1
            note = (note + "  " if note else "") + f"eliminated after {_rounds_text(n)}"
        if ev.screened_out and ev.screening_ratio is not None:
            note = (note + "  " if note else "") + f"screened out at {ev.screening_ratio:.2f}x in its first visit"
        faster = "-" if ev.setting == decision.default else f"{ev.wins}/{ev.rounds}"
        body.append(((ev.label, median, ratio, faster), note))
    widths = [max(len(header[i]), *(len(cells[i]) for cells, _ in body)) if body else len(header[i])
              for i in range(len(header))]

    def line(cells: Sequence[str], note: str = "") -> str:
        text = "  ".join([cells[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])])
        return f"{text}  {note}" if note else text

    return [line(header)] + [line(cells, note) for cells, note in body]
