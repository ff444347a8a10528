"""PathNet training step (``graphi_tf.lab.models`` name: "pathnet"); Fernando et al. 2017.

``layers`` layers of ``modules`` parallel modules. Module m of a layer is a stack of
``1 + m % max_depth`` dense+relu blocks of width ``width`` (written op by op: matmul, add, relu),
so modules differ in length and the critical path runs through the deepest active ones. A
seeded path picks ``active`` of the ``modules`` modules per layer; only those are computed,
and the layer's output is the sum of their outputs divided by ``active`` (which keeps the
activations' scale from growing with depth). A dense head and softmax cross-entropy against
seeded labels give the loss; plain SGD updates the modules on the path (every module has
variables; those off the path get no gradient and stay as they are).

Sizes (hparams in ``SIZES``). Measured step time, stock executor (DEFAULT), median of 5 steps
after 3 warm-up steps, 2-core AMD EPYC (shared), TF 2.21, 2026-11-30, with
``python -m graphi_tf.lab.models.calibrate`` (see docs/models.md):

    size     graph inter=2,intra=1   graph default ConfigProto   function inter=2,intra=1   nodes graph/function
    small                     27 ms                       36 ms                      29 ms             2916 / 774
    medium                   190 ms                      207 ms                     192 ms             2916 / 774
    large                   1348 ms                     1340 ms                    1336 ms             3144 / 774
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping

from graphi_tf.lab.models import _step
from graphi_tf.lab.models._step import HParam

SIZES: Dict[str, Dict[str, Any]] = {
    "small": dict(batch=64, width=512, layers=6, modules=10, active=4, max_depth=3, classes=10,
                  learning_rate=0.05),
    "medium": dict(batch=256, width=768, layers=6, modules=10, active=4, max_depth=3, classes=10,
                   learning_rate=0.05),
    "large": dict(batch=1024, width=1024, layers=6, modules=10, active=4, max_depth=3, classes=10,
                  learning_rate=0.05),
}

HPARAMS: Dict[str, HParam] = {
    "batch": HParam("int", 1, "examples per step"),
    "width": HParam("int", 1, "units of every dense block"),
    "layers": HParam("int", 1, "PathNet layers"),
    "modules": HParam("int", 1, "modules per layer (M)"),
    "active": HParam("int", 1, "modules on the path per layer (K <= M)"),
    "max_depth": HParam("int", 1, "module m has 1 + m % max_depth dense+relu blocks"),
    "classes": HParam("int", 1, "classes of the softmax head"),
    "learning_rate": HParam("float", 0.0, "SGD learning rate"),
}


def validate(hp: Mapping[str, Any]) -> None:
    if hp["active"] > hp["modules"]:
        raise ValueError(f"pathnet hparam active={hp['active']} is invalid; allowed: 1..modules "
                         f"(modules={hp['modules']})")


def path(hp: Mapping[str, Any], seed: int) -> List[List[int]]:
    """The seeded path: for each layer, the sorted indices of its ``active`` modules."""
    import numpy as np

    rng = np.random.RandomState(seed + 1)
    return [sorted(int(m) for m in rng.choice(hp["modules"], hp["active"], replace=False))
            for _ in range(hp["layers"])]


def depth(hp: Mapping[str, Any], module: int) -> int:
    return 1 + module % hp["max_depth"]


def make_inputs(hp: Mapping[str, Any], seed: int) -> Dict[str, Any]:
    """Seeded inputs: ``x`` [batch, width] in U(-1, 1) and int ``labels`` [batch]."""
    import numpy as np

    rng = np.random.RandomState(seed)
    x = rng.uniform(-1.0, 1.0, size=(hp["batch"], hp["width"])).astype(np.float32)
    labels = rng.randint(0, hp["classes"], size=(hp["batch"],)).astype(np.int32)
    return {"x": x, "labels": labels}


def init_params(hp: Mapping[str, Any], seed: int) -> Dict[str, Callable[[], Any]]:
    width = hp["width"]
    params: Dict[str, Callable[[], Any]] = {}
    index = 0
    for layer in range(hp["layers"]):
        for m in range(hp["modules"]):
            for d in range(depth(hp, m)):
                p = f"l{layer}_m{m}_d{d}"
                params[f"{p}/w"] = _step.he_uniform([width, width], seed, index, width)
                params[f"{p}/b"] = _step.zeros([width])
                index += 1
    params["head/w"] = _step.glorot_uniform([width, hp["classes"]], seed, index, width, hp["classes"])
    params["head/b"] = _step.zeros([hp["classes"]])
    return params


def forward(params: Mapping[str, Any], inputs: Mapping[str, Any], hp: Mapping[str, Any], seed: int) -> Any:
    import tensorflow as tf

    h = inputs["x"]
    for layer, active in enumerate(path(hp, seed)):
        outs = []
        for m in active:
            with tf.name_scope(f"l{layer}_m{m}"):
                v = h
                for d in range(depth(hp, m)):
                    p = f"l{layer}_m{m}_d{d}"
                    v = tf.nn.relu(tf.matmul(v, params[f"{p}/w"]) + params[f"{p}/b"])
            outs.append(v)
        with tf.name_scope(f"l{layer}_sum"):
            h = tf.add_n(outs) * (1.0 / len(outs))
    return _step.classifier_loss(tf, h, params, inputs["labels"])


SPEC = _step.ModelSpec(
    name="pathnet",
    description="PathNet: layers of parallel dense+relu modules, a seeded path of K of M per layer, "
                "softmax head, SGD",
    sizes=SIZES,
    hparams=HPARAMS,
    make_inputs=make_inputs,
    init_params=init_params,
    forward=forward,
    validate=validate,
)
