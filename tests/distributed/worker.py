"""One worker of a MultiWorkerMirroredStrategy cluster, training a small model.

Run one process per task, each with its TF_CONFIG, e.g. for a 2-worker cluster on
this host:

    TF_CONFIG='{"cluster": {"worker": ["127.0.0.1:P0", "127.0.0.1:P1"]},
                "task": {"type": "worker", "index": 0}}' \
        python tests/distributed/worker.py --executor GRAPHI --steps 5 --out w0.json

(and the same with ``"index": 1`` in a second process). Each worker trains a seeded
two-layer MLP with a custom training loop: ``strategy.run`` inside a ``tf.function``,
gradients summed across workers by collective all-reduce. With ``--executor GRAPHI`` the
step function is called inside ``graphi_tf.executor_scope()`` on this (the main) thread,
so it runs on the GRAPHI executor; the JSON output records how many GRAPHI steps ran.

Output (``--out``, written only after all steps): ``{"executor", "task_type",
"task_index", "num_workers", "num_replicas_in_sync", "losses": [per step],
"weights": {name: nested list}, "graphi_steps_run", "graphi_graphs",
"graphi_graph_nodes", "seconds"}``. ``graphi_steps_run`` sums ``steps_run`` over
``graphi_tf.info()["graphs"]``: it is how the GRAPHI arm proves its step functions ran
on GRAPHI (the plugin is loaded in both arms; the DEFAULT arm must show 0).

Failure handling (what TensorFlow 2.21 offers, and what this worker uses):

* every collective carries a timeout (``--collective-timeout``, passed as
  ``tf.distribute.experimental.CommunicationOptions(timeout_seconds=...)`` to the
  all-reduce): a peer that is alive but stops taking part makes it fail with
  ``DeadlineExceededError``;
* a peer that dies resets its gRPC connections: the pending collective fails at once
  with ``UnavailableError``;
* MultiWorkerMirroredStrategy starts TensorFlow's coordination service (leader: task 0)
  and its heartbeats (TensorFlow's default timeout, 10 s): a frozen or unreachable peer
  aborts the collectives with ``UnavailableError``/``DeadlineExceededError``. (The older
  Python health-check thread of the strategy is switched off whenever the coordination
  service is on, as it is by default.)

The error is printed to stderr as ``WORKER_ERROR <type>: <message>`` and the process
exits with status 3 at once (``os._exit``: an orderly TensorFlow shutdown would wait
for the dead peer at the shutdown barrier). For failure tests, ``--die-after K`` exits
hard (status 17) before step K; ``--hang-after K`` stops taking part before step K
(sleeps with the process alive, then exits 18 after 300 s).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

FEATURES = 8
HIDDEN = 16
BATCH = 16  # per worker
LEARNING_RATE = 0.1


def _parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--executor", choices=("GRAPHI", "DEFAULT"), required=True)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--out", required=True, help="path of the JSON result")
    p.add_argument("--die-after", type=int, default=None, metavar="K",
                   help="exit hard (os._exit(17)) before step K, for failure tests")
    p.add_argument("--hang-after", type=int, default=None, metavar="K",
                   help="stop taking part before step K (sleep, process alive; exit 18 after 300 s)")
    p.add_argument("--collective-timeout", type=float, default=30.0,
                   help="seconds before a collective op fails (CommunicationOptions.timeout_seconds)")
    return p.parse_args(argv)


def _cluster():
    tf_config = json.loads(os.environ["TF_CONFIG"])
    return tf_config["cluster"], tf_config["task"]["type"], int(tf_config["task"]["index"])


def _data(task_index, steps):
    """Per-worker batches: each worker sees different data, so the all-reduce matters."""
    rng = np.random.RandomState(1000 + task_index)
    x = rng.standard_normal((steps, BATCH, FEATURES)).astype(np.float32)
    true_w = np.linspace(-1.0, 1.0, FEATURES, dtype=np.float32).reshape(FEATURES, 1)
    y = np.tanh(x @ true_w) + 0.1 * rng.standard_normal((steps, BATCH, 1)).astype(np.float32)
    return x, y.astype(np.float32)


def _initial_weights():
    rng = np.random.RandomState(0)  # same on every worker
    return {
        "w1": (0.5 * rng.standard_normal((FEATURES, HIDDEN))).astype(np.float32),
        "b1": np.zeros((HIDDEN,), np.float32),
        "w2": (0.5 * rng.standard_normal((HIDDEN, 1))).astype(np.float32),
        "b2": np.zeros((1,), np.float32),
    }


def train(args):
    cluster, task_type, task_index = _cluster()
    # Both arms load the plugin (same process set-up); only the GRAPHI arm selects it.
    import graphi_tf  # registers executor type "GRAPHI"

    scope = graphi_tf.executor_scope if args.executor == "GRAPHI" else contextlib.nullcontext

    communication = tf.distribute.experimental.CommunicationOptions(
        timeout_seconds=args.collective_timeout,
        implementation=tf.distribute.experimental.CommunicationImplementation.RING,
    )
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=communication)
    num_replicas = strategy.num_replicas_in_sync

    with strategy.scope():
        variables = {name: tf.Variable(value, name=name) for name, value in _initial_weights().items()}
    names = sorted(variables)
    var_list = [variables[n] for n in names]

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            hidden = tf.tanh(tf.matmul(x, variables["w1"]) + variables["b1"])
            pred = tf.matmul(hidden, variables["w2"]) + variables["b2"]
            loss = tf.reduce_mean(tf.square(pred - y))
        grads = tape.gradient(loss, var_list)
        ctx = tf.distribute.get_replica_context()
        # One all-reduce for the gradients and the loss, with the timeout.
        summed = ctx.all_reduce(tf.distribute.ReduceOp.SUM, [loss] + grads, options=communication)
        return summed[0] / num_replicas, [g / num_replicas for g in summed[1:]]

    def apply(var, grad):
        return var.assign_sub(LEARNING_RATE * grad)

    @tf.function
    def train_step(x, y):
        loss, grads = strategy.run(replica_step, args=(x, y))
        for var, grad in zip(var_list, grads):
            strategy.extended.update(var, apply, args=(grad,))
        # Already summed across workers: every local replica holds the global mean loss.
        return strategy.experimental_local_results(loss)[0]

    xs, ys = _data(task_index, args.steps)
    losses = []
    start = time.time()
    # The executor type is thread-local: enter the scope on the thread that calls the
    # tf.function. MultiWorkerMirroredStrategy runs the call on this thread (no
    # replica threads for one local device); graphi_steps_run below checks it.
    with scope():
        for step in range(args.steps):
            if args.die_after is not None and step == args.die_after:
                sys.stderr.write(f"worker {task_index}: dying after {step} steps (--die-after)\n")
                sys.stderr.flush()
                os._exit(17)
            if args.hang_after is not None and step == args.hang_after:
                sys.stderr.write(f"worker {task_index}: hanging after {step} steps (--hang-after)\n")
                sys.stderr.flush()
                time.sleep(300)
                os._exit(18)
            losses.append(float(train_step(tf.constant(xs[step]), tf.constant(ys[step])).numpy()))
    seconds = time.time() - start

    graphs = graphi_tf.info()["graphs"]
    result = {
        "executor": args.executor,
        "task_type": task_type,
        "task_index": task_index,
        "num_workers": len(cluster.get("worker", [])) + len(cluster.get("chief", [])),
        "num_replicas_in_sync": num_replicas,
        "losses": losses,
        "weights": {n: variables[n].numpy().tolist() for n in names},
        "graphi_steps_run": int(sum(g["steps_run"] for g in graphs)),
        "graphi_graphs": len(graphs),
        "graphi_graph_nodes": [int(g["node_count"]) for g in graphs],
        "seconds": seconds,
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, args.out)


def main(argv=None):
    args = _parse_args(argv)
    try:
        train(args)
    except Exception as e:  # noqa: BLE001 - report any failure plainly, then exit at once
        sys.stderr.write(f"WORKER_ERROR {type(e).__name__}: {e}\n")
        sys.stderr.flush()
        os._exit(3)
    sys.stdout.flush()
    sys.stderr.flush()


if __name__ == "__main__":
    main()
