"""Bundled benchmark models: training steps for ``graphi-tf tune/ab/trace --model NAME`` and for
trying GRAPHI out.

    from graphi_tf.lab import models
    models.MODELS   # ("lstm", "phased_lstm", "pathnet", "googlenet")
    models.SIZES    # ("small", "medium", "large")
    models.MODES    # ("graph", "function")
    step = models.build_step("pathnet", size="small", mode="graph", executor="GRAPHI")
    step()                 # one training step: forward, loss, gradients, SGD update
    step.loss_value()      # runs a step, returns its loss
    step.close()

Every model is written op by op (no Keras layers; NHWC, float32), has one forward definition
shared by the TF1 graph variant (``tf.Graph`` + ``tf.compat.v1.Session``, ``tf.gradients``) and
the ``tf.function`` variant (``tf.Variable`` + ``tf.GradientTape``), and is seeded: inputs are
seeded constants and variables start from stateless seeded random values, so two processes
build the same graph and compute the same numbers. See docs/models.md for the sizes and their
measured step times.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from graphi_tf.lab.models import _step, googlenet, lstm, pathnet, phased_lstm
from graphi_tf.lab.models._step import MODES, SIZES, HParam, ModelSpec, TrainingStep
from graphi_tf.lab.step_base import EXECUTORS

_SPECS: Dict[str, ModelSpec] = {m.SPEC.name: m.SPEC for m in (lstm, phased_lstm, pathnet, googlenet)}
MODELS: Tuple[str, ...] = tuple(_SPECS)

__all__ = ["MODELS", "SIZES", "MODES", "EXECUTORS", "ModelSpec", "HParam", "TrainingStep", "get", "build_step"]


def get(name: str) -> ModelSpec:
    """The ``ModelSpec`` of model ``name``. Raises ValueError naming the allowed names."""
    _step.check_choice("model", name, MODELS)
    return _SPECS[name]


def build_step(name: str, size: str = "small", mode: str = "graph", executor: str = "GRAPHI",
               inter_op: Optional[int] = None, intra_op: Optional[int] = None, seed: int = 0,
               **hparam_overrides: Any) -> TrainingStep:
    """Builds the training step of a bundled model and initializes its variables.

    Args:
      name: one of ``MODELS``.
      size: one of ``SIZES``; its hparams are ``get(name).sizes[size]``.
      mode: "graph" (TF1 graph run by a Session) or "function" (a ``tf.function``).
      executor: "GRAPHI", "DEFAULT" (TensorFlow's stock executor; nothing set) or
        "SINGLE_THREADED_EXECUTOR". Graph mode: ``ConfigProto.experimental.executor_type``;
        function mode: each call runs in ``tf.experimental.function_executor_type(executor)``.
      inter_op, intra_op: TensorFlow's stock thread pools (None: TensorFlow's default). Graph
        mode: set in the ConfigProto. Function mode: ``tf.config.threading``, which must happen
        before TensorFlow's eager context starts (RuntimeError if it started with other values).
      seed: seeds the inputs, the initial values and seeded structure (PathNet's path).
      **hparam_overrides: hparams to change from the size's (``get(name).hparams`` lists them).

    Returns:
      A ``TrainingStep``: ``step()`` runs one step; also ``loss_value()``, ``examples_per_step``,
      ``graph_nodes``, ``session`` (graph mode), ``run_traced()`` (graph mode), ``close()``.

    Raises:
      ValueError: a bad model, size, mode, executor, thread count, seed or hparam; the message
        names the setting and the allowed values.
    """
    return _step.build(get(name), size=size, mode=mode, executor=executor, inter_op=inter_op,
                       intra_op=intra_op, seed=seed, **hparam_overrides)
