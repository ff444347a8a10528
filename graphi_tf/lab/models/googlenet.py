"""GoogLeNet (Inception v1) training step (``graphi_tf.lab.models`` name: "googlenet"); Szegedy et
al., "Going Deeper with Convolutions", CVPR 2015.

Written op by op (``conv2d`` + bias + relu, ``max_pool``; NHWC, float32, SAME padding):

* stem: conv 7x7/2 (64), maxpool 3x3/2, conv 1x1 (64), conv 3x3 (192), maxpool 3x3/2;
* the first ``modules`` of the nine inception modules 3a, 3b, 4a..4e, 5a, 5b, each with four
  branches concatenated on channels: 1x1; 1x1 -> 3x3; 1x1 -> 5x5; maxpool 3x3/1 -> 1x1, with
  the paper's channel counts, and a maxpool 3x3/2 after 3b and after 4e (when more follow);
* global average pool, dense, softmax cross-entropy against seeded labels; plain SGD. (No
  auxiliary classifiers, dropout or local response normalisation.)

The hparams scale it: ``image`` (input resolution), ``width`` (a multiplier on every channel
count, at least 1 channel) and ``modules`` (1..9).

Sizes (hparams in ``SIZES``). Measured step time, stock executor (DEFAULT), median of 5 steps
after 3 warm-up steps, 2-core AMD EPYC (shared), TF 2.21, 2026-11-30, with
``python -m graphi_tf.lab.models.calibrate`` (see docs/models.md):

    size     graph inter=2,intra=1   graph default ConfigProto   function inter=2,intra=1   nodes graph/function
    small                     26 ms                       27 ms                      26 ms              773 / 396
    medium                   227 ms                      208 ms                     214 ms             1987 / 998
    large                   2076 ms                     1607 ms                    1958 ms             1987 / 998
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Tuple

from graphi_tf.lab.models import _step
from graphi_tf.lab.models._step import HParam

# name, 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool projection (Table 1 of the paper).
INCEPTION: Tuple[Tuple[str, int, int, int, int, int, int], ...] = (
    ("3a", 64, 96, 128, 16, 32, 32),
    ("3b", 128, 128, 192, 32, 96, 64),
    ("4a", 192, 96, 208, 16, 48, 64),
    ("4b", 160, 112, 224, 24, 64, 64),
    ("4c", 128, 128, 256, 24, 64, 64),
    ("4d", 112, 144, 288, 32, 64, 64),
    ("4e", 256, 160, 320, 32, 128, 128),
    ("5a", 256, 160, 320, 32, 128, 128),
    ("5b", 384, 192, 384, 48, 128, 128),
)
POOL_AFTER = ("3b", "4e")  # a maxpool 3x3/2 follows these modules

SIZES: Dict[str, Dict[str, Any]] = {
    "small": dict(batch=32, image=96, width=0.25, modules=3, classes=10, learning_rate=0.01),
    "medium": dict(batch=48, image=112, width=0.5, modules=9, classes=10, learning_rate=0.01),
    "large": dict(batch=32, image=224, width=1.0, modules=9, classes=10, learning_rate=0.01),
}

HPARAMS: Dict[str, HParam] = {
    "batch": HParam("int", 1, "images per step"),
    "image": HParam("int", 1, "input resolution (image x image x 3)"),
    "width": HParam("float", 0.0, "multiplier on every channel count"),
    "modules": HParam("int", 1, "inception modules, the first of 3a..5b (at most 9)"),
    "classes": HParam("int", 1, "classes of the softmax head"),
    "learning_rate": HParam("float", 0.0, "SGD learning rate"),
}


def validate(hp: Mapping[str, Any]) -> None:
    if hp["modules"] > len(INCEPTION):
        raise ValueError(f"googlenet hparam modules={hp['modules']} is invalid; allowed: 1..{len(INCEPTION)}")


def _channels(hp: Mapping[str, Any], c: int) -> int:
    return max(1, int(round(c * hp["width"])))


def _convs(hp: Mapping[str, Any]) -> List[Tuple[str, int, int, int]]:
    """Every conv as (name, kernel, in_channels, out_channels), in order."""
    ch = lambda c: _channels(hp, c)  # noqa: E731
    convs = [("stem/conv1", 7, 3, ch(64)), ("stem/conv2", 1, ch(64), ch(64)), ("stem/conv3", 3, ch(64), ch(192))]
    cin = ch(192)
    for name, c1, c3r, c3, c5r, c5, cp in INCEPTION[:hp["modules"]]:
        p = f"inception_{name}"
        convs += [(f"{p}/b1_1x1", 1, cin, ch(c1)),
                  (f"{p}/b2_1x1", 1, cin, ch(c3r)), (f"{p}/b2_3x3", 3, ch(c3r), ch(c3)),
                  (f"{p}/b3_1x1", 1, cin, ch(c5r)), (f"{p}/b3_5x5", 5, ch(c5r), ch(c5)),
                  (f"{p}/b4_1x1", 1, cin, ch(cp))]
        cin = ch(c1) + ch(c3) + ch(c5) + ch(cp)
    return convs


def _features(hp: Mapping[str, Any]) -> int:
    """Channels out of the last inception module (the head's input size)."""
    _, c1, _, c3, _, c5, cp = INCEPTION[hp["modules"] - 1]
    return sum(_channels(hp, c) for c in (c1, c3, c5, cp))


def make_inputs(hp: Mapping[str, Any], seed: int) -> Dict[str, Any]:
    """Seeded inputs: ``images`` [batch, image, image, 3] in U(0, 1) and int ``labels`` [batch]."""
    import numpy as np

    rng = np.random.RandomState(seed)
    images = rng.uniform(0.0, 1.0, size=(hp["batch"], hp["image"], hp["image"], 3)).astype(np.float32)
    labels = rng.randint(0, hp["classes"], size=(hp["batch"],)).astype(np.int32)
    return {"images": images, "labels": labels}


def init_params(hp: Mapping[str, Any], seed: int) -> Dict[str, Callable[[], Any]]:
    params: Dict[str, Callable[[], Any]] = {}
    for index, (name, k, cin, cout) in enumerate(_convs(hp)):
        params[f"{name}/w"] = _step.he_uniform([k, k, cin, cout], seed, index, k * k * cin)
        params[f"{name}/b"] = _step.zeros([cout])
    features = _features(hp)
    params["head/w"] = _step.glorot_uniform([features, hp["classes"]], seed, len(params), features, hp["classes"])
    params["head/b"] = _step.zeros([hp["classes"]])
    return params


def forward(params: Mapping[str, Any], inputs: Mapping[str, Any], hp: Mapping[str, Any], seed: int) -> Any:
    import tensorflow as tf

    del seed  # no seeded structure

    def conv(x: Any, name: str, stride: int = 1) -> Any:
        with tf.name_scope(name.replace("/", "_")):
            y = tf.nn.conv2d(x, params[f"{name}/w"], strides=[1, stride, stride, 1], padding="SAME")
            return tf.nn.relu(tf.nn.bias_add(y, params[f"{name}/b"]))

    def max_pool(x: Any, stride: int) -> Any:
        return tf.nn.max_pool2d(x, ksize=3, strides=stride, padding="SAME")

    x = inputs["images"]
    x = conv(x, "stem/conv1", stride=2)
    x = max_pool(x, 2)
    x = conv(x, "stem/conv2")
    x = conv(x, "stem/conv3")
    x = max_pool(x, 2)
    for index, (name, *_) in enumerate(INCEPTION[:hp["modules"]]):
        p = f"inception_{name}"
        with tf.name_scope(p):
            b1 = conv(x, f"{p}/b1_1x1")
            b2 = conv(conv(x, f"{p}/b2_1x1"), f"{p}/b2_3x3")
            b3 = conv(conv(x, f"{p}/b3_1x1"), f"{p}/b3_5x5")
            b4 = conv(max_pool(x, 1), f"{p}/b4_1x1")
            x = tf.concat([b1, b2, b3, b4], axis=3)
        if name in POOL_AFTER and index + 1 < hp["modules"]:
            x = max_pool(x, 2)
    pooled = tf.reduce_mean(x, axis=[1, 2], name="global_avg_pool")
    return _step.classifier_loss(tf, pooled, params, inputs["labels"])


SPEC = _step.ModelSpec(
    name="googlenet",
    description="GoogLeNet / Inception v1: conv stem, inception modules (1x1, 3x3, 5x5, pool branches), "
                "global average pool, softmax head, SGD",
    sizes=SIZES,
    hparams=HPARAMS,
    make_inputs=make_inputs,
    init_params=init_params,
    forward=forward,
    validate=validate,
)
