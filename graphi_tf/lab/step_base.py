"""What every runnable step in graphi_tf shares, bundled model or user model: the executors it
can run on, the checks of its common arguments, being a context manager around ``close()``, and
applying TensorFlow's stock thread pools to ``tf.function`` steps.

    with models.build_step("lstm") as step:   # closes the step's session on exit
        step()
"""
from __future__ import annotations

from typing import Any, Optional, Tuple, Type

# What a step can run on: ours, TensorFlow's stock executor (nothing set), and its single-threaded one.
EXECUTORS: Tuple[str, ...] = ("GRAPHI", "DEFAULT", "SINGLE_THREADED_EXECUTOR")


def check_executor(executor: Any, error: Type[Exception] = ValueError) -> str:
    """``executor`` if it is one of ``EXECUTORS``; else raises ``error`` naming the allowed values."""
    if not isinstance(executor, str) or executor not in EXECUTORS:
        raise error(f"executor={executor!r} is invalid; allowed: {', '.join(EXECUTORS)}")
    return executor


def check_seed(seed: Any, error: Type[Exception] = ValueError) -> int:
    """``seed`` if it is a whole number >= 0; else raises ``error`` naming the allowed values."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise error(f"seed={seed!r} is invalid; allowed: a whole number >= 0")
    return seed


def check_threads(name: str, value: Any, error: Type[Exception] = ValueError) -> Optional[int]:
    """A thread-pool size (``inter_op``/``intra_op``): None or a whole number >= 1; else raises
    ``error`` naming the setting and the allowed values."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise error(f"{name}={value!r} is invalid; allowed: a whole number >= 1, or None for TensorFlow's default")
    return value


class ClosableStep:
    """A step that holds resources (a Session, a loaded model): ``close()`` releases them and
    ``with step:`` calls it on exit. Subclasses that hold nothing keep the no-op ``close``."""

    def close(self) -> None:
        """Releases what the step holds; calling it again does nothing."""

    def __enter__(self) -> "ClosableStep":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def apply_function_threads(inter_op: Optional[int], intra_op: Optional[int]) -> None:
    """tf.config.threading for tf.function steps; it only takes before TensorFlow's eager
    context starts, so a different value after that is an error, not silently ignored."""
    import tensorflow as tf

    threading = tf.config.threading
    for name, value, get, set_ in (
            ("inter_op", inter_op, threading.get_inter_op_parallelism_threads,
             threading.set_inter_op_parallelism_threads),
            ("intra_op", intra_op, threading.get_intra_op_parallelism_threads,
             threading.set_intra_op_parallelism_threads)):
        if value is None or get() == value:
            continue
        try:
            set_(value)
        except RuntimeError:
            raise RuntimeError(
                f"{name}={value} cannot be applied: TensorFlow's eager context is already initialised with "
                f"{name}={get() or 'default'} in this process. Pass {name} before running any TensorFlow op "
                f"(in a fresh process), or pass {name}=None.") from None
