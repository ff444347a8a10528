"""Phased LSTM training step (``graphi_tf.lab.models`` name: "phased_lstm"); Neil, Pfeiffer and
Liu, "Phased LSTM: Accelerating Recurrent Network Training for Long or Event-based Sequences",
NIPS 2016.

An unrolled multi-layer LSTM (as in ``lstm``) whose units each have a time gate. Unit j has a
period ``tau_j`` (learnable, stored as ``log_tau``; initial ``tau = exp(U(log tau_min,
log tau_max))``), a phase shift ``s_j`` (learnable, initial ``U(0, tau_j)``), an open ratio
``r_on`` and a leak ``alpha`` (fixed hparams). At timestamp ``t``:

    phi = ((t - s) mod tau) / tau
    k   = 2 phi / r_on        if phi < r_on / 2
          2 - 2 phi / r_on    if phi < r_on
          alpha * phi         otherwise
    c_t = k * c~_t + (1 - k) * c_{t-1}        (c~_t: the LSTM cell's proposal)
    h_t = k * h~_t + (1 - k) * h_{t-1}

Timestamps are a seeded per-step input: for each example, the running sum of increments drawn
from ``U(0.5, 1.5) * dt``, so examples are sampled at different, irregular times. A dense
head on the last layer's last output, softmax cross-entropy against seeded labels; plain SGD.

Sizes (hparams in ``SIZES``). Measured step time, stock executor (DEFAULT), median of 5 steps
after 3 warm-up steps, 2-core AMD EPYC (shared), TF 2.21, 2026-11-30, with
``python -m graphi_tf.lab.models.calibrate`` (see docs/models.md):

    size     graph inter=2,intra=1   graph default ConfigProto   function inter=2,intra=1   nodes graph/function
    small                     21 ms                       21 ms                      24 ms          14092 / 11762
    medium                   181 ms                      226 ms                     158 ms          24890 / 20854
    large                   1221 ms                     1587 ms                    1223 ms          24890 / 20854
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Mapping

from graphi_tf.lab.models import _step, lstm
from graphi_tf.lab.models._step import HParam

_GATES = dict(tau_min=1.0, tau_max=100.0, r_on=0.05, alpha=1e-3, dt=1.0)

SIZES: Dict[str, Dict[str, Any]] = {
    "small": dict(batch=32, hidden=128, layers=3, time_steps=24, input_size=128, classes=10,
                  learning_rate=0.1, **_GATES),
    "medium": dict(batch=48, hidden=256, layers=4, time_steps=32, input_size=256, classes=10,
                   learning_rate=0.1, **_GATES),
    "large": dict(batch=128, hidden=512, layers=4, time_steps=32, input_size=512, classes=10,
                  learning_rate=0.1, **_GATES),
}

HPARAMS: Dict[str, HParam] = {
    **lstm.HPARAMS,
    "tau_min": HParam("float", 0.0, "smallest initial period"),
    "tau_max": HParam("float", 0.0, "largest initial period (>= tau_min)"),
    "r_on": HParam("float", 0.0, "open ratio of the time gate (< 1)"),
    "alpha": HParam("float", 0.0, "leak of the closed time gate"),
    "dt": HParam("float", 0.0, "mean time between samples"),
}


def validate(hp: Mapping[str, Any]) -> None:
    if hp["tau_max"] < hp["tau_min"]:
        raise ValueError(f"phased_lstm hparam tau_max={hp['tau_max']} is invalid; allowed: a number "
                         f">= tau_min ({hp['tau_min']})")
    if hp["r_on"] >= 1.0:
        raise ValueError(f"phased_lstm hparam r_on={hp['r_on']} is invalid; allowed: 0 < r_on < 1")


def make_inputs(hp: Mapping[str, Any], seed: int) -> Dict[str, Any]:
    """Seeded inputs: ``x`` [time_steps, batch, input_size], ``times`` [time_steps, batch]
    (increasing per example) and int ``labels`` [batch]."""
    import numpy as np

    arrays = lstm.make_inputs(hp, seed)
    rng = np.random.RandomState(seed + 1)
    steps = rng.uniform(0.5, 1.5, size=(hp["time_steps"], hp["batch"])) * hp["dt"]
    arrays["times"] = np.cumsum(steps, axis=0).astype(np.float32)
    return arrays


def _time_gate_params(prefix: str, hp: Mapping[str, Any], seed: int, index: int) -> Dict[str, Callable[[], Any]]:
    hidden = hp["hidden"]
    log_tau = _step.stateless_uniform([hidden], seed, index, math.log(hp["tau_min"]), math.log(hp["tau_max"]))
    unit = _step.stateless_uniform([hidden], seed, index + 1, 0.0, 1.0)

    def shift() -> Any:
        import tensorflow as tf

        return unit() * tf.exp(log_tau())  # U(0, tau), with the same tau as log_tau's

    return {f"{prefix}/log_tau": log_tau, f"{prefix}/shift": shift}


def init_params(hp: Mapping[str, Any], seed: int) -> Dict[str, Callable[[], Any]]:
    params: Dict[str, Callable[[], Any]] = {}
    for layer in range(hp["layers"]):
        in_size = hp["input_size"] if layer == 0 else hp["hidden"]
        prefix = f"plstm_{layer}"
        params.update(lstm.lstm_params(prefix, in_size, hp["hidden"], seed, 4 * layer))
        params.update(_time_gate_params(prefix, hp, seed, 4 * layer + 2))
    params.update(lstm.head_params(hp["hidden"], hp["classes"], seed, 4 * hp["layers"]))
    return params


def time_gate(tf: Any, t: Any, tau: Any, shift: Any, r_on: float, alpha: float) -> Any:
    """The openness k [batch, hidden] of the time gate at timestamps ``t`` [batch, 1]."""
    phi = tf.math.floormod(t - shift, tau) / tau
    rising = 2.0 * phi / r_on
    falling = 2.0 - 2.0 * phi / r_on
    closed = alpha * phi
    return tf.where(phi < 0.5 * r_on, rising, tf.where(phi < r_on, falling, closed))


def forward(params: Mapping[str, Any], inputs: Mapping[str, Any], hp: Mapping[str, Any], seed: int) -> Any:
    import tensorflow as tf

    del seed  # no seeded structure
    batch, hidden = hp["batch"], hp["hidden"]
    sequence = tf.unstack(inputs["x"])
    times = [tf.expand_dims(t, 1) for t in tf.unstack(inputs["times"])]
    for layer in range(hp["layers"]):
        p = f"plstm_{layer}"
        w_input, w_hidden, bias = params[f"{p}/w_input"], params[f"{p}/w_hidden"], params[f"{p}/bias"]
        with tf.name_scope(p):
            tau = tf.exp(params[f"{p}/log_tau"])
            shift = params[f"{p}/shift"]
            h = tf.zeros([batch, hidden])
            c = tf.zeros([batch, hidden])
            outputs = []
            for step, (x, t) in enumerate(zip(sequence, times)):
                with tf.name_scope(f"t{step}"):
                    h_new, c_new = lstm.lstm_cell(tf, x, h, c, w_input, w_hidden, bias)
                    k = time_gate(tf, t, tau, shift, hp["r_on"], hp["alpha"])
                    c = k * c_new + (1.0 - k) * c
                    h = k * h_new + (1.0 - k) * h
                outputs.append(h)
        sequence = outputs
    return _step.classifier_loss(tf, sequence[-1], params, inputs["labels"])


SPEC = _step.ModelSpec(
    name="phased_lstm",
    description="Phased LSTM (Neil et al. 2016): unrolled LSTM with a per-unit learnable time gate, "
                "seeded timestamps, softmax head, SGD",
    sizes=SIZES,
    hparams=HPARAMS,
    make_inputs=make_inputs,
    init_params=init_params,
    forward=forward,
    validate=validate,
)
