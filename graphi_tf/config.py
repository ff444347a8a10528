"""Selecting GRAPHI and setting its team layout."""
from __future__ import annotations

import contextlib
from typing import Iterator, Optional

import tensorflow as tf

from graphi_tf import _loader

EXECUTOR_TYPE = "GRAPHI"

POLICIES = ("fifo", "critical_path_first")


def _check_count(name: str, value: Optional[int]) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}={value!r} is invalid; allowed: a whole number >= 1, or None for the default")
    return value


def configure(
    executors: Optional[int] = None,
    threads_per_executor: Optional[int] = None,
    policy: Optional[str] = None,
    *,
    autotune: Optional[bool] = None,
) -> dict:
    """Sets the process-wide GRAPHI team layout used by steps started from now on.

    Args:
      executors: number of executor teams (E). None: ``GRAPHI_EXECUTORS`` or the default.
      threads_per_executor: threads (cores) per team (T). None: ``GRAPHI_THREADS_PER_EXECUTOR``
        or the default.
      policy: ready-op order, one of ``POLICIES``. None: ``GRAPHI_POLICY``, else a cached or
        tuned policy, else "critical_path_first" ("fifo" with ``GRAPHI_TUNE=0``).
      autotune: turn zero-config online autotuning on (True) or off (False) for this
        process. None: ``GRAPHI_AUTOTUNE`` (on unless it is 0, or ``GRAPHI_TUNE=0``).
        Setting ``executors`` or ``threads_per_executor`` pins the layout, so autotuning
        then has nothing to do until ``configure()`` is called without them.

    Teams own whole L2 tiles and E×T may not exceed the cores this process may use
    (affinity mask and cgroup quota). Calling ``configure()`` with no arguments goes back
    to the environment/default. Steps already running finish on their old teams.

    Returns:
      The resulting setting, as in ``graphi_tf.info()``.

    Raises:
      ValueError: the setting does not fit this machine; the message names the setting
        and the allowed range.
    """
    e = _check_count("executors", executors)
    t = _check_count("threads_per_executor", threads_per_executor)
    if policy is not None and policy not in POLICIES:
        raise ValueError(f"policy={policy!r} is invalid; allowed: {', '.join(POLICIES)}")
    if autotune is not None and not isinstance(autotune, bool):
        raise ValueError(f"autotune={autotune!r} is invalid; allowed: True, False, or None for GRAPHI_AUTOTUNE")
    native = _loader.native()
    native.configure(e, t, policy or "")
    native.set_autotune(-1 if autotune is None else int(autotune))
    from graphi_tf.info import info

    return info()


def session_config(
    base: Optional[tf.compat.v1.ConfigProto] = None,
    *,
    executors: Optional[int] = None,
    threads_per_executor: Optional[int] = None,
) -> tf.compat.v1.ConfigProto:
    """Returns a ConfigProto that runs TF1 sessions on GRAPHI.

    Args:
      base: a ConfigProto to copy (not modified); None for a default one.
      executors, threads_per_executor: if given, also re-partition the process-wide teams
        (see ``configure``).
    """
    _loader.native()
    config = tf.compat.v1.ConfigProto()
    if base is not None:
        config.CopyFrom(base)
    config.experimental.executor_type = EXECUTOR_TYPE
    if executors is not None or threads_per_executor is not None:
        configure(executors=executors, threads_per_executor=threads_per_executor)
    return config


@contextlib.contextmanager
def executor_scope() -> Iterator[None]:
    """Runs tf.function calls made inside the block on GRAPHI.

    Same as ``tf.experimental.function_executor_type("GRAPHI")``. The option is
    thread-local: threads you start must enter the scope themselves.
    """
    _loader.native()
    with tf.experimental.function_executor_type(EXECUTOR_TYPE):
        yield
