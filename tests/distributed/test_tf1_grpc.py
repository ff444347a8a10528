"""Does a TF1 distributed (gRPC) session honour executor_type "GRAPHI"? At 2.21: no.

A TF1 gRPC worker builds each registered graph partition's executor in
``GraphMgr::InitItem`` with ``NewLocalExecutor`` directly; ``executor_type`` in the
session's ConfigProto (or in the server's default session config) never reaches it.
This file records what TensorFlow 2.21 actually does, measured by GRAPHI's own step
counter (``graphi_tf.info()["graphs"][i]["steps_run"]``) in the process that hosts the
worker:

* the partition graphs of a ``tf.compat.v1.Session(server.target, config=
  graphi_tf.session_config())`` run on the stock executor (0 GRAPHI steps) and give the
  right results, while the same graph in a local session runs on GRAPHI;
* a ``tf.function`` called under ``graphi_tf.executor_scope()`` while the graph is
  built carries ``executor_type="GRAPHI"`` on its call op. TensorFlow normally inlines
  the call (then nothing runs on GRAPHI); kept as a call (``experimental_attributes=
  {"_noinline": True}``), its body runs on GRAPHI on the gRPC worker, whatever the
  session's config says.

If a future TensorFlow routes executor_type to gRPC workers, the first test fails and
says so: then GRAPHI can support TF1 distributed sessions and the README should change.

The probe runs in a subprocess (a gRPC server cannot be stopped and would stay in the
pytest process), with the server on 127.0.0.1 and a hard timeout.
"""
import json
import os
import socket
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.timeout(300, method="thread")]

PROBE_TIMEOUT_S = 150
RUNS = 3


def _probe():
    """Runs in the subprocess: prints one JSON line with the measurements."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    import graphi_tf

    def graphi_steps():
        return sum(g["steps_run"] for g in graphi_tf.info()["graphs"])

    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    cluster = tf.train.ClusterSpec({"worker": [f"127.0.0.1:{port}"]})
    # The most favourable set-up: GRAPHI also in the server's default session config.
    server = tf.distribute.Server(
        cluster, job_name="worker", task_index=0, config=graphi_tf.session_config(), start=True
    )

    x_value = np.linspace(-1.0, 1.0, 16, dtype=np.float32).reshape(4, 4)
    want_y = np.tanh(x_value @ x_value) + 1.0
    want_z = float(np.sum(np.tanh(want_y) * 2.0))

    def build(function_kind):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [4, 4])
            y = tf.tanh(tf.matmul(x, x)) + 1.0
            if function_kind is None:
                z = tf.reduce_sum(tf.tanh(y) * 2.0)
            else:
                kwargs = {"experimental_attributes": {"_noinline": True}} if function_kind == "noinline" else {}

                @tf.function(**kwargs)
                def f(a):
                    return tf.reduce_sum(tf.tanh(a) * 2.0)

                with graphi_tf.executor_scope():  # the call op gets executor_type="GRAPHI"
                    z = f(y)
        return g, x, y, z

    def measure(function_kind, target, config):
        g, x, y, z = build(function_kind)
        before = graphi_steps()
        with tf.compat.v1.Session(target, graph=g, config=config) as sess:
            for _ in range(RUNS):
                got_y, got_z = sess.run([y, z], {x: x_value})
        return {
            "graphi_steps": graphi_steps() - before,
            "correct": bool(np.allclose(got_y, want_y, rtol=1e-5, atol=1e-6)
                            and np.isclose(got_z, want_z, rtol=1e-5, atol=1e-5)),
        }

    graphi = graphi_tf.session_config
    plain = tf.compat.v1.ConfigProto
    result = {
        "target": server.target,
        "local_graphi": measure(None, "", graphi()),
        "grpc_graphi": measure(None, server.target, graphi()),
        "grpc_plain": measure(None, server.target, plain()),
        "grpc_graphi_inlined_function": measure("inlined", server.target, graphi()),
        "grpc_plain_noinline_function": measure("noinline", server.target, plain()),
        "grpc_graphi_noinline_function": measure("noinline", server.target, graphi()),
    }
    sys.stdout.write("PROBE " + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)  # the gRPC server cannot be shut down cleanly


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in ("http_proxy", "https_proxy", "grpc_proxy", "all_proxy")
    }
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["GRAPHI_CACHE_DIR"] = str(tmp_path_factory.mktemp("graphi_cache"))
    env.pop("TF_CONFIG", None)
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"TF1 gRPC probe did not finish in {PROBE_TIMEOUT_S} s\n{err[-3000:]}")
    lines = [line for line in out.splitlines() if line.startswith("PROBE ")]
    assert proc.returncode == 0 and lines, f"probe failed (rc={proc.returncode})\n{err[-3000:]}"
    return json.loads(lines[-1][len("PROBE "):])


def test_grpc_session_is_correct_but_does_not_run_on_graphi(probe):
    # Control: the same graph in a local (DirectSession) session runs on GRAPHI.
    assert probe["local_graphi"] == {"graphi_steps": RUNS, "correct": True}, probe
    # Through the gRPC worker: right results, stock executor, whatever the config says.
    for case in ("grpc_graphi", "grpc_plain"):
        assert probe[case]["correct"], (case, probe)
        assert probe[case]["graphi_steps"] == 0, (
            f"{case}: a TF1 gRPC session ran {probe[case]['graphi_steps']} GRAPHI steps; TensorFlow "
            f"now honours executor_type on gRPC workers: support and document TF1 distributed sessions"
        )


def test_grpc_session_inlines_function_calls_off_graphi(probe):
    case = probe["grpc_graphi_inlined_function"]
    assert case == {"graphi_steps": 0, "correct": True}, probe


def test_grpc_worker_runs_noinline_function_bodies_called_under_executor_scope_on_graphi(probe):
    # The call op's executor_type attribute is honoured by the worker's function
    # runtime: one GRAPHI step per session.run, with or without GRAPHI in the session config.
    for case in ("grpc_plain_noinline_function", "grpc_graphi_noinline_function"):
        assert probe[case] == {"graphi_steps": RUNS, "correct": True}, (case, probe)


if __name__ == "__main__":
    _probe()
