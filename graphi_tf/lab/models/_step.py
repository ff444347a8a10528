"""The training step shared by the bundled models: argument checks, graph and function variants.

A model module supplies four pieces (see ``ModelSpec``):

* ``make_inputs(hp, seed)``: the seeded input arrays (numpy), turned into constants in the graph;
* ``init_params(hp, seed)``: an ordered ``{name: () -> tf.Tensor}`` of initial values, made with
  stateless random ops seeded from ``seed``, so the graph and the function variant start from
  the same numbers;
* ``forward(params, inputs, hp, seed)``: the loss (a scalar), written op by op (``seed`` for
  seeded structure, e.g. PathNet's path);
* ``validate(hp)``: checks that go beyond one hparam (e.g. ``active <= modules``).

This module builds the rest once for every model: the SGD update (one
``ResourceApplyGradientDescent`` per variable that has a gradient), the TF1 graph + Session
variant (``tf.gradients``) and the ``tf.function`` variant (``tf.GradientTape``).
"""
from __future__ import annotations

import abc
import dataclasses
import os
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from graphi_tf.lab.step_base import ClosableStep, apply_function_threads, check_executor, check_seed, check_threads

SIZES: Tuple[str, ...] = ("small", "medium", "large")
MODES: Tuple[str, ...] = ("graph", "function")


@dataclasses.dataclass(frozen=True)
class HParam:
    """The kind of one hyperparameter: ``int`` (whole number >= ``low``) or ``float`` (> ``low``)."""

    kind: str
    low: float
    help: str = ""

    def check(self, model: str, name: str, value: Any) -> Any:
        if self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, int) or value < self.low:
                raise ValueError(f"{model} hparam {name}={value!r} is invalid; allowed: a whole number "
                                 f">= {int(self.low)}")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > self.low:
            raise ValueError(f"{model} hparam {name}={value!r} is invalid; allowed: a number > {self.low:g}")
        return float(value)


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A bundled benchmark model.

    Attributes:
      name: the name ``build_step`` takes.
      description: one line.
      sizes: ``{"small"|"medium"|"large": {hparam: value}}``.
      hparams: ``{hparam: HParam}``: every hparam the model takes (its kind and allowed range).
      make_inputs, init_params, forward, validate: the model (see this module's docstring).
      batch_hparam: the hparam that is the number of examples per step.
    """

    name: str
    description: str
    sizes: Mapping[str, Mapping[str, Any]]
    hparams: Mapping[str, HParam]
    make_inputs: Callable[[Mapping[str, Any], int], Dict[str, Any]] = dataclasses.field(repr=False)
    init_params: Callable[[Mapping[str, Any], int], Dict[str, Callable[[], Any]]] = dataclasses.field(repr=False)
    forward: Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any], int], Any] = dataclasses.field(repr=False)
    validate: Callable[[Mapping[str, Any]], None] = dataclasses.field(repr=False, default=lambda hp: None)
    batch_hparam: str = "batch"

    def resolve(self, size: str, overrides: Mapping[str, Any]) -> Dict[str, Any]:
        """The hparams of ``size`` with ``overrides`` applied, checked. Raises ValueError."""
        check_choice("size", size, SIZES)
        unknown = sorted(set(overrides) - set(self.hparams))
        if unknown:
            raise ValueError(f"{self.name} has no hparam {unknown[0]!r}; allowed: {', '.join(self.hparams)}")
        hp = dict(self.sizes[size])
        hp.update(overrides)
        hp = {name: self.hparams[name].check(self.name, name, value) for name, value in hp.items()}
        self.validate(hp)
        return hp


def check_choice(setting: str, value: Any, allowed: Sequence[str]) -> str:
    """Returns ``value`` if it is one of ``allowed``, else raises ValueError naming both."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{setting}={value!r} is invalid; allowed: {', '.join(allowed)}")
    return value


def _sgd_updates(tf: Any, variables: Sequence[Any], grads: Sequence[Any], learning_rate: float) -> list:
    alpha = tf.constant(learning_rate, tf.float32, name="learning_rate")
    ops = []
    for var, grad in zip(variables, grads):
        if grad is None:  # e.g. a PathNet module off the path
            continue
        if isinstance(grad, tf.IndexedSlices):
            grad = tf.convert_to_tensor(grad)
        ops.append(tf.raw_ops.ResourceApplyGradientDescent(var=var.handle, alpha=alpha, delta=grad))
    return ops


def _make_variables(tf: Any, spec: ModelSpec, hp: Mapping[str, Any], seed: int) -> Dict[str, Any]:
    return {name: tf.Variable(initial, name=name.replace("/", "_"), trainable=True)
            for name, initial in spec.init_params(hp, seed).items()}


def _constants(tf: Any, arrays: Mapping[str, Any]) -> Dict[str, Any]:
    return {name: tf.constant(value, name=f"input_{name}") for name, value in arrays.items()}


class TrainingStep(ClosableStep, abc.ABC):
    """One training step of a bundled model: call it to run a step (forward, loss, gradients,
    SGD update).

    Attributes:
      model, size, mode, executor: what was built.
      hparams: the hparams in force (the size's, with overrides applied).
      examples_per_step: the batch size.
      graph_nodes: nodes in the step's graph (graph mode: the GraphDef; function mode: the
        traced FuncGraph).
      session: the ``tf.compat.v1.Session`` in graph mode, else None.
    """

    model: str
    size: str
    mode: str
    executor: str
    hparams: Dict[str, Any]
    examples_per_step: int
    graph_nodes: int
    session: Any

    @abc.abstractmethod
    def __call__(self) -> None:
        """Runs one training step."""

    @abc.abstractmethod
    def loss_value(self) -> float:
        """Runs one step and returns its loss (computed before that step's update)."""

    def run_traced(self) -> Any:
        """Graph mode: runs one step with ``RunOptions.FULL_TRACE`` and
        ``output_partition_graphs=True`` and returns its ``RunMetadata``."""
        raise ValueError(f"run_traced() needs mode='graph'; this step has mode={self.mode!r}")

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.model}/{self.size} mode={self.mode} executor={self.executor} "
                f"nodes={self.graph_nodes}>")


def build_graph_parts(spec: ModelSpec, hp: Mapping[str, Any], seed: int) -> Tuple[Any, Any, Any, Any]:
    """Builds the TF1 training step of ``spec``: returns ``(graph, train_op, loss, init_op)``."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(seed)
        with tf.name_scope("params"):
            params = _make_variables(tf, spec, hp, seed)
        inputs = _constants(tf, spec.make_inputs(hp, seed))
        loss = tf.identity(spec.forward(params, inputs, hp, seed), name="loss")
        variables = list(params.values())
        grads = tf.gradients(loss, variables)
        with tf.control_dependencies(_sgd_updates(tf, variables, grads, hp["learning_rate"])):
            train_op = tf.no_op(name="train")
        init_op = v1.variables_initializer(variables, name="init")
    return graph, train_op, loss, init_op


class GraphTrainingStep(TrainingStep):
    """The TF1 variant: a ``tf.Graph`` run by a ``tf.compat.v1.Session``."""

    def __init__(self, spec: ModelSpec, size: str, hp: Dict[str, Any], executor: str, seed: int,
                 inter_op: Optional[int], intra_op: Optional[int]):
        import tensorflow as tf

        self.model, self.size, self.mode, self.executor = spec.name, size, "graph", executor
        self.hparams = hp
        self.examples_per_step = int(hp[spec.batch_hparam])
        self.graph, self.train_op, self.loss, init_op = build_graph_parts(spec, hp, seed)
        self.graph_nodes = len(self.graph.as_graph_def().node)
        config = tf.compat.v1.ConfigProto()
        if inter_op is not None:
            config.inter_op_parallelism_threads = inter_op
        if intra_op is not None:
            config.intra_op_parallelism_threads = intra_op
        if executor == "GRAPHI":
            import graphi_tf

            config = graphi_tf.session_config(config)
        elif executor != "DEFAULT":
            config.experimental.executor_type = executor
        self.config = config
        self.session = tf.compat.v1.Session(graph=self.graph, config=config)
        self.session.run(init_op)

    def __call__(self) -> None:
        self.session.run(self.train_op)

    def loss_value(self) -> float:
        _, loss = self.session.run([self.train_op, self.loss])
        return float(loss)

    def run_traced(self) -> Any:
        import tensorflow as tf

        options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE,
                                          output_partition_graphs=True)
        metadata = tf.compat.v1.RunMetadata()
        self.session.run(self.train_op, options=options, run_metadata=metadata)
        return metadata

    def close(self) -> None:
        if self.session is not None:
            self.session.close()


class FunctionTrainingStep(TrainingStep):
    """The TF2 variant: ``tf.Variable``s and a ``tf.function`` with a ``GradientTape``; each call
    runs inside ``tf.experimental.function_executor_type(executor)`` (none for DEFAULT)."""

    def __init__(self, spec: ModelSpec, size: str, hp: Dict[str, Any], executor: str, seed: int,
                 inter_op: Optional[int], intra_op: Optional[int]):
        apply_function_threads(inter_op, intra_op)
        import tensorflow as tf

        if executor == "GRAPHI":
            import graphi_tf  # noqa: F401  (registers the GRAPHI executor)
        self.model, self.size, self.mode, self.executor = spec.name, size, "function", executor
        self.hparams = hp
        self.examples_per_step = int(hp[spec.batch_hparam])
        self.session = None
        with tf.name_scope(f"{spec.name}_params"):
            self.params = _make_variables(tf, spec, hp, seed)
        arrays = spec.make_inputs(hp, seed)
        variables = list(self.params.values())
        params = self.params
        learning_rate = hp["learning_rate"]

        @tf.function(autograph=False)
        def train_step():
            inputs = _constants(tf, arrays)  # constants of the FuncGraph, as in graph mode
            with tf.GradientTape() as tape:
                loss = spec.forward(params, inputs, hp, seed)
            grads = tape.gradient(loss, variables)
            with tf.control_dependencies(_sgd_updates(tf, variables, grads, learning_rate)):
                return tf.identity(loss, name="loss")

        self._function = train_step
        self._concrete = train_step.get_concrete_function()
        self.graph_nodes = len(self._concrete.graph.as_graph_def().node)

    def _run(self) -> Any:
        import tensorflow as tf

        if self.executor == "DEFAULT":
            return self._concrete()
        with tf.experimental.function_executor_type(self.executor):
            return self._concrete()

    def __call__(self) -> None:
        self._run()

    def loss_value(self) -> float:
        return float(self._run().numpy())


def build(spec: ModelSpec, size: str = "small", mode: str = "graph", executor: str = "GRAPHI",
          inter_op: Optional[int] = None, intra_op: Optional[int] = None, seed: int = 0,
          **hparam_overrides: Any) -> TrainingStep:
    """Checks every argument, then builds the step (see ``graphi_tf.lab.models.build_step``)."""
    hp = spec.resolve(size, hparam_overrides)
    check_choice("mode", mode, MODES)
    check_executor(executor)
    inter_op = check_threads("inter_op", inter_op)
    intra_op = check_threads("intra_op", intra_op)
    seed = check_seed(seed)
    cls = GraphTrainingStep if mode == "graph" else FunctionTrainingStep
    return cls(spec, size, hp, executor, seed, inter_op, intra_op)


# Helpers the model modules share.

def stateless_uniform(shape: Sequence[int], seed: int, index: int, low: float, high: float) -> Callable[[], Any]:
    """A zero-argument initial value: ``U(low, high)`` from a stateless RNG keyed by (seed, index)."""

    def initial() -> Any:
        import tensorflow as tf

        return tf.random.stateless_uniform(list(shape), seed=[seed, index], minval=low, maxval=high,
                                           dtype=tf.float32)

    return initial


def glorot_uniform(shape: Sequence[int], seed: int, index: int, fan_in: int, fan_out: int) -> Callable[[], Any]:
    limit = (6.0 / (fan_in + fan_out)) ** 0.5
    return stateless_uniform(shape, seed, index, -limit, limit)


def he_uniform(shape: Sequence[int], seed: int, index: int, fan_in: int) -> Callable[[], Any]:
    limit = (6.0 / fan_in) ** 0.5
    return stateless_uniform(shape, seed, index, -limit, limit)


def zeros(shape: Sequence[int]) -> Callable[[], Any]:
    def initial() -> Any:
        import tensorflow as tf

        return tf.zeros(list(shape), tf.float32)

    return initial


def classifier_loss(tf: Any, features: Any, params: Dict[str, Any], labels: Any) -> Any:
    """The models' head: logits = features @ head/w + head/b, then their softmax cross-entropy."""
    with tf.name_scope("head"):
        logits = tf.matmul(features, params["head/w"]) + params["head/b"]
        return softmax_cross_entropy(tf, logits, labels)


def softmax_cross_entropy(tf: Any, logits: Any, labels: Any) -> Any:
    """Mean sparse softmax cross-entropy of ``logits`` [B, C] against int labels [B]."""
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
