"""Unrolled multi-layer LSTM training step (``graphi_tf.lab.models`` name: "lstm").

The cell is written out op by op (matmul / sigmoid / tanh per time step, unrolled in Python),
so the executor sees hundreds of small, partly independent ops
per step: the workload GRAPHI's inter-op scheduling is for. A dense head on the last layer's
last output gives logits; loss: softmax cross-entropy against seeded labels; plain SGD. Inputs
are seeded constants and variables start from stateless seeded random values, so two
processes build the same graph (and the same graph signature, which is what the tuning cache
is keyed on) and the same numbers.

Sizes (hparams in ``SIZES``). Measured step time, stock executor (DEFAULT), median of 5 steps
after 3 warm-up steps, 2-core AMD EPYC (shared), TF 2.21, 2026-11-30, with
``python -m graphi_tf.lab.models.calibrate`` (see docs/models.md):

    size     graph inter=2,intra=1   graph default ConfigProto   function inter=2,intra=1   nodes graph/function
    small                     26 ms                       27 ms                      23 ms            3618 / 3121
    medium                   164 ms                      234 ms                     172 ms            6349 / 5525
    large                    993 ms                     1334 ms                     935 ms            9405 / 8253

    from graphi_tf.lab import models
    step = models.build_step("lstm", size="small")
    step()            # one training step on GRAPHI
    step.close()

``build_step(batch=, hidden=, layers=, time_steps=)`` and ``build_graph(...)`` below are the
older entry points (kept for ``graphi-tf tune --model lstm`` and scripts).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional

from graphi_tf.lab.models import _step
from graphi_tf.lab.models._step import HParam

SIZES: Dict[str, Dict[str, Any]] = {
    "small": dict(batch=64, hidden=128, layers=3, time_steps=24, input_size=128, classes=10, learning_rate=0.1),
    "medium": dict(batch=64, hidden=256, layers=4, time_steps=32, input_size=256, classes=10, learning_rate=0.1),
    "large": dict(batch=64, hidden=512, layers=4, time_steps=48, input_size=512, classes=10, learning_rate=0.1),
}

HPARAMS: Dict[str, HParam] = {
    "batch": HParam("int", 1, "examples per step"),
    "hidden": HParam("int", 1, "LSTM units per layer"),
    "layers": HParam("int", 1, "stacked LSTM layers"),
    "time_steps": HParam("int", 1, "unrolled time steps"),
    "input_size": HParam("int", 1, "features per time step"),
    "classes": HParam("int", 1, "classes of the softmax head"),
    "learning_rate": HParam("float", 0.0, "SGD learning rate"),
}


def make_inputs(hp: Mapping[str, Any], seed: int) -> Dict[str, Any]:
    """Seeded inputs: ``x`` [time_steps, batch, input_size] in U(-1, 1) and int ``labels`` [batch]."""
    import numpy as np

    rng = np.random.RandomState(seed)
    x = rng.uniform(-1.0, 1.0, size=(hp["time_steps"], hp["batch"], hp["input_size"])).astype(np.float32)
    labels = rng.randint(0, hp["classes"], size=(hp["batch"],)).astype(np.int32)
    return {"x": x, "labels": labels}


def lstm_params(prefix: str, in_size: int, hidden: int, seed: int, index: int) -> Dict[str, Callable[[], Any]]:
    """Initial values of one LSTM layer: fused gate weights (i, j, f, o) and bias."""
    return {
        f"{prefix}/w_input": _step.glorot_uniform([in_size, 4 * hidden], seed, index, in_size, 4 * hidden),
        f"{prefix}/w_hidden": _step.glorot_uniform([hidden, 4 * hidden], seed, index + 1, hidden, 4 * hidden),
        f"{prefix}/bias": _step.zeros([4 * hidden]),
    }


def head_params(in_size: int, classes: int, seed: int, index: int) -> Dict[str, Callable[[], Any]]:
    return {
        "head/w": _step.glorot_uniform([in_size, classes], seed, index, in_size, classes),
        "head/b": _step.zeros([classes]),
    }


def init_params(hp: Mapping[str, Any], seed: int) -> Dict[str, Callable[[], Any]]:
    params: Dict[str, Callable[[], Any]] = {}
    for layer in range(hp["layers"]):
        in_size = hp["input_size"] if layer == 0 else hp["hidden"]
        params.update(lstm_params(f"lstm_{layer}", in_size, hp["hidden"], seed, 2 * layer))
    params.update(head_params(hp["hidden"], hp["classes"], seed, 2 * hp["layers"]))
    return params


def lstm_cell(tf: Any, x: Any, h: Any, c: Any, w_input: Any, w_hidden: Any, bias: Any):
    """One LSTM step, op by op: returns the new (h, c)."""
    gates = tf.matmul(x, w_input) + tf.matmul(h, w_hidden) + bias
    i, j, f, o = tf.split(gates, 4, axis=1)
    c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(j)
    h = tf.sigmoid(o) * tf.tanh(c)
    return h, c


def forward(params: Mapping[str, Any], inputs: Mapping[str, Any], hp: Mapping[str, Any], seed: int) -> Any:
    import tensorflow as tf

    del seed  # no seeded structure
    batch, hidden = hp["batch"], hp["hidden"]
    sequence = tf.unstack(inputs["x"])
    for layer in range(hp["layers"]):
        p = f"lstm_{layer}"
        w_input, w_hidden, bias = params[f"{p}/w_input"], params[f"{p}/w_hidden"], params[f"{p}/bias"]
        with tf.name_scope(p):
            h = tf.zeros([batch, hidden])
            c = tf.zeros([batch, hidden])
            outputs = []
            for t, x in enumerate(sequence):
                with tf.name_scope(f"t{t}"):
                    h, c = lstm_cell(tf, x, h, c, w_input, w_hidden, bias)
                outputs.append(h)
        sequence = outputs
    return _step.classifier_loss(tf, sequence[-1], params, inputs["labels"])


SPEC = _step.ModelSpec(
    name="lstm",
    description="unrolled multi-layer LSTM (op by op), softmax head, SGD",
    sizes=SIZES,
    hparams=HPARAMS,
    make_inputs=make_inputs,
    init_params=init_params,
    forward=forward,
)

# The older entry points.

LstmStep = _step.TrainingStep


def _legacy_hparams(batch: int, hidden: int, layers: int, time_steps: int, input_size: Optional[int],
                    learning_rate: float) -> Dict[str, Any]:
    overrides = dict(batch=batch, hidden=hidden, layers=layers, time_steps=time_steps,
                     input_size=hidden if input_size is None else input_size, learning_rate=learning_rate)
    for name in ("batch", "hidden", "layers", "time_steps"):
        value = overrides[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r} is invalid; allowed: a whole number >= 1")
    return overrides


def build_graph(batch: int = 32, hidden: int = 256, layers: int = 4, time_steps: int = 20,
                seed: int = 0, input_size: Optional[int] = None, learning_rate: float = 0.01):
    """Returns (graph, train_op, loss, init_op) of the unrolled LSTM training step."""
    hp = SPEC.resolve("medium", _legacy_hparams(batch, hidden, layers, time_steps, input_size, learning_rate))
    return _step.build_graph_parts(SPEC, hp, seed)


def build_step(batch: int = 32, hidden: int = 256, layers: int = 4, time_steps: int = 20,
               seed: int = 0) -> _step.TrainingStep:
    """Builds the LSTM training step in a GRAPHI session and initializes its variables.

    Returns:
      A ``TrainingStep`` (graph mode, executor GRAPHI): call it to run one training step.
    """
    overrides = _legacy_hparams(batch, hidden, layers, time_steps, None, 0.01)
    return _step.build(SPEC, size="medium", mode="graph", executor="GRAPHI", seed=seed, **overrides)
