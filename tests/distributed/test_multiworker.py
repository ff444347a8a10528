"""GRAPHI in TensorFlow's multi-worker runtime (tf.distribute.MultiWorkerMirroredStrategy).

Each test starts a 2-worker cluster on 127.0.0.1 (free ports, one process per worker
running ``worker.py``), with a hard deadline: a worker still running at the deadline is
killed and the test fails, so nothing here can hang.

* Training a few steps with the step functions on GRAPHI gives the same losses and
  weights as on TensorFlow's DEFAULT executor, and GRAPHI really ran them.
* A worker that dies mid-run (either one: task 0 also leads the coordination service)
  makes the other fail at once with UnavailableError.
* A worker that freezes (SIGSTOP) is caught by the coordination service's heartbeats,
  even when the collective timeout is long.
* A worker that stays alive but stops taking part is caught by the collective timeout
  (CommunicationOptions.timeout_seconds).
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.timeout(300, method="thread")]

WORKER = Path(__file__).resolve().with_name("worker.py")
NUM_WORKERS = 2
STEPS = 5
CLUSTER_DEADLINE_S = 120  # a whole cluster run, start to last exit
FAILURE_BOUND_S = 60  # from the peer's failure to the survivor's exit
WORKER_ERROR_STATUS = 3  # worker.py: exits 3 after printing WORKER_ERROR
DIE_STATUS = 17  # worker.py --die-after


def _free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (held together while picking)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _worker_env(ports, index, cache_dir):
    env = {
        k: v
        for k, v in os.environ.items()
        # gRPC honours proxy variables; the cluster is on loopback only.
        if k.lower() not in ("http_proxy", "https_proxy", "grpc_proxy", "all_proxy")
    }
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["TF_CONFIG"] = json.dumps(
        {
            "cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
            "task": {"type": "worker", "index": index},
        }
    )
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["GRAPHI_CACHE_DIR"] = str(cache_dir)  # never read or write the user's cache
    return env


class Worker:
    def __init__(self, index, proc, out, err_path):
        self.index = index
        self.proc = proc
        self.out = out
        self.err_path = err_path
        self.exited_at = None

    @property
    def returncode(self):
        return self.proc.returncode

    def stderr(self):
        return self.err_path.read_text(errors="replace")

    def result(self):
        return json.loads(self.out.read_text()) if self.out.exists() else None

    def describe(self):
        tail = "\n".join(
            line for line in self.stderr().splitlines() if "oneDNN" not in line and "absl::Initialize" not in line
        )[-3000:]
        return f"worker {self.index}: rc={self.returncode}\n--- stderr (tail) ---\n{tail}"


class Cluster:
    """NUM_WORKERS worker.py processes on 127.0.0.1; always reaped by ``close``."""

    def __init__(self, tmp_path, name, executor, steps, extra_args=None, collective_timeout=None):
        self.dir = tmp_path / name
        self.dir.mkdir()
        self.start_time = time.monotonic()
        ports = _free_ports(NUM_WORKERS)
        self.workers = []
        for index in range(NUM_WORKERS):
            out = self.dir / f"worker{index}.json"
            err_path = self.dir / f"worker{index}.stderr"
            args = [sys.executable, str(WORKER), "--executor", executor, "--steps", str(steps), "--out", str(out)]
            if collective_timeout is not None:
                args += ["--collective-timeout", str(collective_timeout)]
            args += list((extra_args or {}).get(index, ()))
            with open(err_path, "wb") as err:
                proc = subprocess.Popen(
                    args,
                    env=_worker_env(ports, index, tmp_path / "graphi_cache"),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    cwd=str(self.dir),
                )
            self.workers.append(Worker(index, proc, out, err_path))

    def poll(self):
        now = time.monotonic()
        for w in self.workers:
            if w.exited_at is None and w.proc.poll() is not None:
                w.exited_at = now

    def wait_for(self, predicate, deadline_s, what):
        """Polls until predicate() is true; fails the test (after killing) at the deadline."""
        end = self.start_time + deadline_s
        while True:
            self.poll()
            if predicate():
                return
            if time.monotonic() > end:
                self.kill()
                pytest.fail(f"{what}: not done after {deadline_s} s\n" + self.describe())
            time.sleep(0.2)

    def wait_all(self, deadline_s=CLUSTER_DEADLINE_S):
        self.wait_for(lambda: all(w.exited_at is not None for w in self.workers), deadline_s, "cluster run")

    def kill(self):
        for w in self.workers:
            if w.proc.poll() is None:
                w.proc.kill()  # SIGKILL: also ends a SIGSTOPped worker
        for w in self.workers:
            try:
                w.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.poll()

    def describe(self):
        return "\n".join(w.describe() for w in self.workers)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()


def _run_training(tmp_path, executor):
    with Cluster(tmp_path, executor, executor, STEPS) as cluster:
        cluster.wait_all()
        for w in cluster.workers:
            assert w.returncode == 0, cluster.describe()
        return [w.result() for w in cluster.workers]


def _assert_close(got, want, what):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6, err_msg=what)


def test_graphi_training_matches_default_across_two_workers(tmp_path):
    default = _run_training(tmp_path, "DEFAULT")
    graphi = _run_training(tmp_path, "GRAPHI")

    for results in (default, graphi):
        for r in results:
            assert r["num_replicas_in_sync"] == NUM_WORKERS
            assert len(r["losses"]) == STEPS
            assert all(np.isfinite(r["losses"]))
        assert results[0]["losses"][-1] < results[0]["losses"][0], "the model did not train"
        # Mirrored training: all workers hold the same loss and weights.
        for r in results[1:]:
            _assert_close(r["losses"], results[0]["losses"], f"{r['executor']} worker {r['task_index']} losses")
            for name, value in results[0]["weights"].items():
                _assert_close(r["weights"][name], value, f"{r['executor']} worker {r['task_index']} {name}")

    # GRAPHI equals DEFAULT.
    for d, g in zip(default, graphi):
        _assert_close(g["losses"], d["losses"], f"worker {g['task_index']} losses GRAPHI vs DEFAULT")
        assert sorted(g["weights"]) == sorted(d["weights"])
        for name in d["weights"]:
            _assert_close(g["weights"][name], d["weights"][name], f"worker {g['task_index']} {name} GRAPHI vs DEFAULT")

    # The GRAPHI arm's step functions ran on GRAPHI on every worker; the DEFAULT arm's did not.
    for r in graphi:
        assert r["graphi_graphs"] >= 1 and r["graphi_steps_run"] >= STEPS, r
    for r in default:
        assert r["graphi_steps_run"] == 0, r


PEER_FAILURE = re.compile(r"unavailable|peer|collective|heartbeat|deadline", re.IGNORECASE)


def _assert_survivor_failed(cluster, survivor, failed_at, *expect):
    """The survivor exited with WORKER_ERROR, within FAILURE_BOUND_S of the failure, with
    a message about the peer/collective that matches every regex in ``expect``."""
    s = cluster.workers[survivor]
    assert s.returncode == WORKER_ERROR_STATUS, cluster.describe()
    assert s.exited_at - failed_at < FAILURE_BOUND_S, cluster.describe()
    err = s.stderr()
    assert "WORKER_ERROR" in err, cluster.describe()
    message = err[err.index("WORKER_ERROR"):]
    assert PEER_FAILURE.search(message), cluster.describe()
    for pattern in expect:
        assert re.search(pattern, message), f"{pattern!r} not in the error\n" + cluster.describe()
    assert s.result() is None  # it did not finish training


@pytest.mark.parametrize("victim", [1, 0], ids=["worker1_dies", "worker0_dies"])
def test_a_killed_worker_fails_the_other_in_bounded_time(tmp_path, victim):
    survivor = 1 - victim
    with Cluster(tmp_path, "kill", "GRAPHI", steps=8, extra_args={victim: ["--die-after", "2"]}) as cluster:
        cluster.wait_all()
        v = cluster.workers[victim]
        assert v.returncode == DIE_STATUS, cluster.describe()
        _assert_survivor_failed(cluster, survivor, v.exited_at, r"UnavailableError|DeadlineExceededError")


def _wait_until_hanging(cluster, index):
    w = cluster.workers[index]
    cluster.wait_for(
        lambda: "hanging after" in w.stderr() or w.exited_at is not None, CLUSTER_DEADLINE_S, f"worker {index} to hang"
    )
    assert w.exited_at is None, cluster.describe()
    return time.monotonic()


def test_a_frozen_worker_is_caught_by_the_heartbeat(tmp_path):
    # The collective timeout (100 s) is longer than the bound: only the coordination
    # service's heartbeats can catch the frozen peer in time.
    victim, survivor = 1, 0
    with Cluster(
        tmp_path, "freeze", "GRAPHI", steps=8, collective_timeout=100, extra_args={victim: ["--hang-after", "2"]}
    ) as cluster:
        _wait_until_hanging(cluster, victim)
        cluster.workers[victim].proc.send_signal(signal.SIGSTOP)
        frozen_at = time.monotonic()
        s = cluster.workers[survivor]
        cluster.wait_for(lambda: s.exited_at is not None, CLUSTER_DEADLINE_S, "survivor to fail")
        _assert_survivor_failed(cluster, survivor, frozen_at, r"(?i)heartbeat")


def test_a_stalled_worker_is_caught_by_the_collective_timeout(tmp_path):
    # The stalled peer keeps its process (and heartbeats) alive; only the collective
    # timeout can end the survivor's all-reduce.
    victim, survivor = 1, 0
    with Cluster(
        tmp_path, "stall", "GRAPHI", steps=8, collective_timeout=15, extra_args={victim: ["--hang-after", "2"]}
    ) as cluster:
        stalled_at = _wait_until_hanging(cluster, victim)
        s = cluster.workers[survivor]
        cluster.wait_for(lambda: s.exited_at is not None, CLUSTER_DEADLINE_S, "survivor to fail")
        _assert_survivor_failed(cluster, survivor, stalled_at, r"^WORKER_ERROR DeadlineExceededError", r"(?i)timed out")
