"""Zero-config autotuning: what GRAPHI does for a graph nobody tuned.

The native executor tunes the team layout of a process's main graph online, during its
first steps, by the interleaved, do-no-harm rule ``graphi_tf.tune`` decides by too
(``cc/tuning/tuning_decision.h``), then adopts the result. This module writes each decision into the cache (``graphi_tf.cache``), so a
later process that runs the same graph starts from it and does not explore again.

Decisions are written by a daemon thread within half a second of being made and, for a
process that exits right after, at exit.

Switches: ``GRAPHI_AUTOTUNE=0`` or ``graphi_tf.configure(autotune=False)`` turn online
tuning off; ``GRAPHI_TUNE=0`` turns off everything automatic (cache, ranks and
autotuning). An explicit layout (``configure(executors=..., ...)`` or
``GRAPHI_EXECUTORS`` / ``GRAPHI_THREADS_PER_EXECUTOR``) always wins.
"""
from __future__ import annotations

import atexit
import threading
import warnings
from typing import Any, List, Mapping, Optional

from graphi_tf import cache as _cache
from graphi_tf import stepstats

# How often the persister looks for new decisions.
_POLL_S = 0.5

_persister_lock = threading.Lock()
_persister: Optional[threading.Thread] = None
_write_lock = threading.Lock()


def _native(native: Any) -> Any:
    if native is not None:
        return native
    from graphi_tf import _loader

    return _loader.native()


def enabled(native: Any = None) -> bool:
    """Whether online autotuning is on in this process.

    Raises:
      ValueError: ``GRAPHI_AUTOTUNE`` holds an invalid value (the message names it and
        the allowed values).
    """
    return bool(_native(native).autotune_enabled())


def _parse_rounds(rounds_ms: Any) -> list:
    from graphi_tf import decision as _decision

    return [{_decision.parse_setting_label(label): float(ms) for label, ms in round_.items()}
            for round_ in rounds_ms]


def _entry_for(decision: Mapping[str, Any], info: Mapping[str, Any], native: Any) -> _cache.CacheEntry:
    from graphi_tf import decision as _decision

    signature = str(decision["signature"])
    # After a runoff its rounds made the decision (autotuner.h): they are the record's
    # rounds, and the rounds before it (with their eliminations) are kept beside them.
    runoff = decision.get("runoff")
    rounds = _parse_rounds(decision["runoff_medians_ms"] if runoff else decision["round_medians_ms"])
    order = [_decision.setting_from_native(s) for s in decision["order"]]
    eliminated = {} if runoff else {
        _decision.parse_setting_label(label): int(r)
        for label, r in dict(decision.get("eliminated_after_round", {})).items()}
    # The autotuner's own decision is the record: stored as made, never decided again.
    verdict = _decision.from_native(decision["decision"], rounds, order, eliminated)
    chosen = verdict.chosen
    evidence = verdict.to_dict()
    evidence.update(
        method="autotune",
        eliminated_after_round=dict(decision.get("eliminated_after_round", {})),
        discard_per_visit=int(decision["discard_per_visit"]),
        # > 0: explored under that many concurrent steps; figures are ms per request.
        load_clients=int(decision.get("load_clients", 0)),
        timed_per_visit=int(decision["timed_per_visit"]),
        # The first, short visit of every setting: it warms up and screens, and is not
        # among the rounds (ms; per request under load).
        screening_medians_ms=dict(decision.get("screening_medians_ms", {})),
        screening_timed_per_visit=int(decision.get("screening_timed_per_visit", 0)),
        runoff=runoff,
        rounds_before_runoff_ms=list(decision["round_medians_ms"]) if runoff else None,
        runoff_timed_per_visit=int(decision.get("runoff_timed_per_visit", 0)),
        exploration_s=float(decision["exploration_s"]),
        cost_ms=float(decision["cost_ms"]),
    )
    medians = {}
    for setting in order:
        values = [r[setting] for r in rounds if setting in r]
        if values:
            medians[setting] = stepstats.median(values)
    try:
        profile = native.graph_profile(signature)
    except KeyError:
        profile = {"node_count": 0, "node_costs_ns": [], "node_names": []}
    return _cache.CacheEntry.build(
        signature=signature,
        machine=_cache.machine_fingerprint(info),
        executors=chosen[0],
        threads_per_executor=chosen[1],
        inter_op_threads=chosen[2] if len(chosen) == 4 else 0,
        intra_op_threads=chosen[3] if len(chosen) == 4 else 0,
        policy=str(info.get("policy") or ""),
        median_step_ms=float(medians.get(chosen, decision.get("reference_step_ms", 0.0))),
        node_count=int(profile.get("node_count", 0)),
        node_costs_ns=list(profile.get("node_costs_ns", [])),
        node_names=list(profile.get("node_names", [])),
        note=f"autotuned online: {verdict.reason}",
        tf_version=info.get("tf_version"),
        graphi_tf_version=info.get("version"),
        evidence=evidence,
        load_class=str(decision.get("load_class", _cache.LOAD_ALONE)),
    )


def persist_decisions(native: Any = None) -> List[str]:
    """Writes the autotuner's new decisions into the cache; returns the paths written.

    Called by the background persister and at exit; safe to call any time. A cache that
    cannot be written is reported (a ``GraphiCacheWarning``) and loses nothing else.
    """
    native = _native(native)
    with _write_lock:
        decisions = native.take_autotune_decisions()
        if not decisions:
            return []
        from graphi_tf.info import info as _info

        info = _info()
        paths = []
        for decision in decisions:
            try:
                paths.append(str(_cache.write_entry(_entry_for(decision, info, native))))
            except (OSError, ValueError, KeyError, TypeError) as e:
                warnings.warn(
                    _cache.GraphiCacheWarning(
                        f"graphi_tf autotune: could not cache the setting of graph "
                        f"{decision.get('signature')}: {e}"
                    ),
                    stacklevel=2,
                )
        return paths


def _persist_until_stopped(native: Any, stop: threading.Event) -> None:
    # Polls from Python rather than waiting inside native code: a daemon thread that
    # the interpreter stops at exit must not be inside C++ frames then.
    while not stop.wait(_POLL_S):
        try:
            persist_decisions(native)
        except Exception as e:  # never let the persister die silently
            warnings.warn(_cache.GraphiCacheWarning(f"graphi_tf autotune persister: {e}"))


def start_persister(native: Any = None) -> None:
    """Starts the daemon thread that caches decisions as they are made (once per
    process) and the exit hook that stops it and catches the last ones."""
    global _persister
    native = _native(native)
    with _persister_lock:
        if _persister is not None:
            return
        stop = threading.Event()
        _persister = threading.Thread(
            target=_persist_until_stopped, args=(native, stop), name="graphi_tf-autotune-cache", daemon=True
        )
        _persister.start()
    atexit.register(_persist_at_exit, native, stop)


def _persist_at_exit(native: Any, stop: threading.Event) -> None:
    stop.set()
    try:
        persist_decisions(native)
    except Exception:  # at exit there is nobody left to tell
        pass
