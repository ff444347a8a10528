"""What GRAPHI sees and uses on this machine."""
from __future__ import annotations

import tensorflow as tf

from graphi_tf import _loader
from graphi_tf.version import __version__


def info() -> dict:
    """Returns versions, the machine's usable cores and tiles, and the team layout in force.

    Keys: ``version``, ``tf_version``, ``built_against_tf``, ``cpu_model``, ``usable_cores``,
    ``usable_cpus``, ``quota_cores``, ``tiles``, ``setting`` (the setting in force as a label:
    "2x1" for 2 teams of 1 thread, "stock" for TensorFlow's executor on its own pools,
    "stock:2x1" for TensorFlow's executor on 2 inter-op and 1 intra-op threads of GRAPHI's),
    ``stock_pools`` (whether TensorFlow's executor runs the steps), ``executors``,
    ``threads_per_executor`` (0 under stock), ``teams`` (cpu ids per team), ``policy``, ``setting_source`` ("configure",
    "environment", "cache", "tuned" or "default"), ``setting_error`` (a message if the
    environment holds an invalid setting, else None), ``topology_error`` (why the machine's
    cache topology could not be read, in which case each usable cpu counts as a tile of its
    own; None when it was read) and ``graphs``: one dict per graph
    GRAPHI has run in this process — ``signature``, ``node_count``, ``steps_run``, the
    setting in use (``setting``, ``stock_pools``, ``executors``, ``threads_per_executor``,
    ``policy``), where it came
    from (``source``: "default", "configure", "environment", "autotune" (being explored),
    "autotuned", "cache" or "tuned"), ``costs_known`` and ``autotune`` (None before the
    graph's first step; else a dict: ``state`` "waiting", "exploring", "adopted",
    "kept_default" or "skipped", ``reason`` (why it was decided, skipped or paused, or why it waits:
    e.g. autotuning is off, or an explicit setting is in force), ``progress`` "k/N" visits, ``current`` and
    ``chosen`` settings, ``cost_ms`` (the exploration's estimated cost over the default),
    ``exploration_s``, ``screening_medians_ms`` (each setting's first, short visit, which
    screens out far slower settings and is not among the rounds), ``round_medians_ms`` and
    ``eliminated_after_round`` (0-based round indices)).
    ``autotune_enabled`` says whether online autotuning is on.
    """
    native = _loader.native()
    result = {
        "version": __version__,
        "tf_version": tf.__version__,
        "built_against_tf": native.BUILT_AGAINST_TF,
    }
    result.update(native.runtime_info())
    result["graphs"] = native.graphs()
    try:
        result["autotune_enabled"] = bool(native.autotune_enabled())
    except ValueError:  # an invalid GRAPHI_AUTOTUNE; setting_error says so too
        result["autotune_enabled"] = False
    return result
