"""A bundled training step: an unrolled multi-layer LSTM in a TF1 graph, run on GRAPHI.

The cell is written out op by op (matmul / sigmoid / tanh per time step, unrolled in
Python), as in ``tools/lstm_bench.py``, so the executor sees hundreds of small, partly
independent ops per step: the workload GRAPHI's inter-op scheduling is for. Loss: mean of
the last layer's last output; plain gradient descent. Inputs are a seeded constant and
variables use seeded initializers, so two processes build the same graph (and the same
graph signature, which is what the tuning cache is keyed on).

    from graphi_tf.models import lstm
    step = lstm.build_step(layers=2, hidden=64)
    step()            # one training step on GRAPHI
    step.close()
"""
from __future__ import annotations

from typing import Any, Optional


class LstmStep:
    """A zero-argument callable that runs one training step; owns its Session.

    Attributes:
      session: the ``tf.compat.v1.Session`` (configured with ``graphi_tf.session_config()``).
      graph: its ``tf.Graph``.
      train_op, loss: the fetches.
      graph_nodes: number of nodes in the graph.
    """

    def __init__(self, session: Any, graph: Any, train_op: Any, loss: Any):
        self.session = session
        self.graph = graph
        self.train_op = train_op
        self.loss = loss
        self.graph_nodes = len(graph.as_graph_def().node)

    def __call__(self) -> None:
        self.session.run(self.train_op)

    def loss_value(self) -> float:
        return float(self.session.run(self.loss))

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> "LstmStep":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def build_graph(batch: int = 32, hidden: int = 256, layers: int = 4, time_steps: int = 20,
                seed: int = 0, input_size: Optional[int] = None, learning_rate: float = 0.01):
    """Returns (graph, train_op, loss, init_op) of the unrolled LSTM training step."""
    for name, value in (("batch", batch), ("hidden", hidden), ("layers", layers), ("time_steps", time_steps)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r} is invalid; allowed: a whole number >= 1")
    import numpy as np
    import tensorflow as tf

    v1 = tf.compat.v1
    input_size = hidden if input_size is None else input_size
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(seed)
        rng = np.random.RandomState(seed)
        data = rng.uniform(-1.0, 1.0, size=(time_steps, batch, input_size))
        inputs = tf.unstack(tf.constant(data.astype(np.float32), name="inputs"))
        for layer in range(layers):
            in_size = input_size if layer == 0 else hidden
            with v1.variable_scope(f"lstm_{layer}"):
                w_input = v1.get_variable(
                    "w_input", [in_size, 4 * hidden], use_resource=True,
                    initializer=v1.glorot_uniform_initializer(seed=seed + 2 * layer))
                w_hidden = v1.get_variable(
                    "w_hidden", [hidden, 4 * hidden], use_resource=True,
                    initializer=v1.glorot_uniform_initializer(seed=seed + 2 * layer + 1))
                bias = v1.get_variable("bias", [4 * hidden], use_resource=True,
                                       initializer=v1.zeros_initializer())
                h = tf.zeros([batch, hidden])
                c = tf.zeros([batch, hidden])
                outputs = []
                for t, x in enumerate(inputs):
                    with tf.name_scope(f"t{t}"):
                        gates = tf.matmul(x, w_input) + tf.matmul(h, w_hidden) + bias
                        i, j, f, o = tf.split(gates, 4, axis=1)
                        c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(j)
                        h = tf.sigmoid(o) * tf.tanh(c)
                    outputs.append(h)
                inputs = outputs
        loss = tf.reduce_mean(inputs[-1], name="loss")
        train_op = v1.train.GradientDescentOptimizer(learning_rate).minimize(loss)
        init_op = v1.global_variables_initializer()
    return graph, train_op, loss, init_op


def build_step(batch: int = 32, hidden: int = 256, layers: int = 4, time_steps: int = 20,
               seed: int = 0) -> LstmStep:
    """Builds the LSTM training step in a GRAPHI session and initializes its variables.

    Returns:
      An ``LstmStep``: call it to run one training step (``session.run(train_op)``).
    """
    import tensorflow as tf

    import graphi_tf

    graph, train_op, loss, init_op = build_graph(batch, hidden, layers, time_steps, seed)
    session = tf.compat.v1.Session(graph=graph, config=graphi_tf.session_config())
    session.run(init_op)
    return LstmStep(session, graph, train_op, loss)
