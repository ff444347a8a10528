"""graphi-tf ab --lockstep: the arms' processes live side by side and are timed in alternating
phases. The protocol runs against fake workers (no TensorFlow); one short end-to-end run goes
through the real worker."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from graphi_tf.lab import ab, lockstep, report

pytestmark = pytest.mark.timeout(120)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A worker that speaks the protocol: ready, one answer per phase (its steps' "times" are its
# name's length, its serving phases' throughput that length times the clients, so each arm's
# figures are known), then its result. It appends "<name> <phase>" (a serving phase:
# "<name> <phase> serve <clients>") to LOG at every phase, and misbehaves as FAIL_AT says: "exit:<phase>"
# exits at that phase, "hang:<phase>" sleeps there, "error:<phase>" (or "error:warmup") sends
# a failed result, as the real worker does when its step raises.
FAKE_WORKER = textwrap.dedent("""
    import json, os, sys, time
    name, log, fail_at = sys.argv[1], sys.argv[2], os.environ.get("FAIL_AT", "")
    if fail_at == "error:warmup":
        print(json.dumps({"ok": False, "error": "boom in the warm-up"}), flush=True)
        sys.exit(1)
    print(json.dumps({"lockstep": "ready"}), flush=True)
    phase = 0
    for line in sys.stdin:
        words = line.split()
        if words == ["end"]:
            print(json.dumps({"ok": True, "name": name, "phases": phase}), flush=True)
            sys.exit(0)
        if fail_at == f"exit:{phase}":
            sys.exit(3)
        if fail_at == f"hang:{phase}":
            time.sleep(60)
        if fail_at == f"error:{phase}":
            print(json.dumps({"ok": False, "error": f"boom in phase {phase}"}), flush=True)
            sys.exit(1)
        if words[0] == "serve":
            with open(log, "a") as f:
                f.write(f"{name} {phase} serve {words[1]}\\n")
            print(json.dumps({"clients_phase": {"clients": int(words[1]), "discard_s": float(words[2]),
                                                "duration_s": float(words[3]),
                                                "throughput_rps": float(len(name) * int(words[1]))}}), flush=True)
            phase += 1
            continue
        with open(log, "a") as f:
            f.write(f"{name} {phase}\\n")
        print(json.dumps({"step_times_ms": [float(len(name))] * int(words[1])}), flush=True)
        phase += 1
""")


def _specs(tmp_path, names, fail=None):
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER)
    log = tmp_path / "phases.log"
    specs = []
    for name in names:
        env = dict(os.environ)
        if fail and name in fail:
            env["FAIL_AT"] = fail[name]
        specs.append(lockstep.ProcessSpec(name, [sys.executable, str(script), name, str(log)], env))
    return specs, log


def test_every_arm_times_one_phase_per_cycle_in_an_order_rotated_every_cycle(tmp_path):
    specs, log = _specs(tmp_path, ["a", "bb", "ccc"])
    out = lockstep.run_round(specs, cycles=3, steps=4, timeout=30)
    assert [line.split()[0] for line in log.read_text().splitlines()] == [
        "a", "bb", "ccc", "bb", "ccc", "a", "ccc", "a", "bb"]
    for name in ("a", "bb", "ccc"):
        assert out[name]["phases"] == [[float(len(name))] * 4] * 3
        assert out[name]["result"] == {"ok": True, "name": name, "phases": 3}
        assert out[name]["error"] is None and out[name]["ready_s"] > 0


def test_a_worker_that_exits_fails_its_remaining_phases_and_the_others_go_on(tmp_path):
    specs, _ = _specs(tmp_path, ["a", "bb"], fail={"a": "exit:1"})
    out = lockstep.run_round(specs, cycles=3, steps=2, timeout=30)
    assert out["a"]["phases"] == [[1.0, 1.0], None, None]
    assert out["a"]["result"] is None and "exit status 3" in out["a"]["error"]
    assert out["bb"]["phases"] == [[2.0, 2.0]] * 3 and out["bb"]["result"]["ok"] is True


def test_a_worker_that_hangs_is_killed_after_the_timeout_and_the_others_go_on(tmp_path):
    specs, _ = _specs(tmp_path, ["a", "bb"], fail={"bb": "hang:0"})
    out = lockstep.run_round(specs, cycles=2, steps=1, timeout=2)
    assert out["bb"]["phases"] == [None, None] and "timed out after 2 s" in out["bb"]["error"]
    assert out["a"]["phases"] == [[1.0], [1.0]] and out["a"]["result"]["ok"] is True


@pytest.mark.parametrize("fail_at, error", [("error:warmup", "boom in the warm-up"),
                                             ("error:1", "boom in phase 1")])
def test_a_worker_that_fails_is_reported_with_its_own_error(tmp_path, fail_at, error):
    specs, _ = _specs(tmp_path, ["a", "bb"], fail={"a": fail_at})
    out = lockstep.run_round(specs, cycles=2, steps=1, timeout=30)
    assert out["a"]["error"] == error and out["a"]["result"] is None
    assert out["bb"]["phases"] == [[2.0], [2.0]] and out["bb"]["result"]["ok"] is True


def test_with_clients_each_cycle_goes_on_with_one_serving_phase_per_client_count(tmp_path):
    specs, log = _specs(tmp_path, ["a", "bb"])
    out = lockstep.run_round(specs, cycles=2, steps=1, timeout=30, clients=[1, 4], duration_s=0.5, discard_s=0.1)
    assert log.read_text().splitlines() == [
        "a 0", "bb 0", "a 1 serve 1", "bb 1 serve 1", "a 2 serve 4", "bb 2 serve 4",
        "bb 3", "a 3", "bb 4 serve 1", "a 4 serve 1", "bb 5 serve 4", "a 5 serve 4"]
    for name in ("a", "bb"):
        assert out[name]["phases"] == [[float(len(name))]] * 2
        for served in out[name]["client_phases"]:
            assert [(p["clients"], p["throughput_rps"], p["discard_s"], p["duration_s"]) for p in served] == [
                (1, float(len(name)), 0.1, 0.5), (4, float(4 * len(name)), 0.1, 0.5)]


def test_a_worker_that_fails_while_serving_loses_that_cycle_and_the_others_go_on(tmp_path):
    specs, _ = _specs(tmp_path, ["a", "bb"], fail={"a": "exit:2"})
    out = lockstep.run_round(specs, cycles=2, steps=1, timeout=30, clients=[1, 4], duration_s=0.5)
    assert out["a"]["phases"] == [[1.0], None] and out["a"]["client_phases"] == [None, None]
    assert "exit status 3" in out["a"]["error"]
    assert [len(served) for served in out["bb"]["client_phases"]] == [2, 2]


def test_serving_in_lockstep_needs_a_positive_duration(tmp_path):
    specs, _ = _specs(tmp_path, ["a"])
    with pytest.raises(ValueError, match="duration_s=0.0 is invalid with clients; allowed: a number > 0"):
        lockstep.run_round(specs, cycles=1, steps=1, timeout=30, clients=[1])


TF1_SCRIPT = textwrap.dedent("""
    import tensorflow as tf

    def build_step():
        graph = tf.Graph()
        with graph.as_default():
            x = tf.constant([[0.5, 0.25], [0.125, 0.5]])
            y = tf.add_n([tf.tanh(tf.matmul(x, x)) for _ in range(3)])
        sess = tf.compat.v1.Session(graph=graph)
        return lambda: sess.run(y)
""")


def _run_ab_on_tiny_step(tmp_path, *options):
    """`graphi-tf ab --script` on TF1_SCRIPT with 2 warm-up and 3 timed steps, stock default
    against graphi_untuned, no trace or png; returns (the process, its ab.json)."""
    script = tmp_path / "tiny_step.py"
    script.write_text(TF1_SCRIPT)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run(
        [sys.executable, "-m", "graphi_tf.lab.cli", "ab", "--script", str(script), "--warmup", "2", "--steps", "3",
         "--arms", "stock_default,graphi_untuned", "--trace-steps", "0", "--no-png", "--out-dir", str(out),
         *options],
        env=env, capture_output=True, text=True, timeout=290)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "ab.json").read_text())
    report.check_schema(doc)
    return proc, doc


@pytest.mark.timeout(300)
def test_each_phase_is_a_round_of_the_report_and_each_process_counts_once(tmp_path):
    proc, doc = _run_ab_on_tiny_step(tmp_path, "--repeats", "2", "--lockstep", "3")
    for name in ("stock_default", "graphi_untuned"):
        rounds = doc["arms"][name]["rounds"]
        assert [(r["round"], r["process_round"], r["cycle"]) for r in rounds] == [
            (0, 0, 0), (1, 0, 1), (2, 0, 2), (3, 1, 0), (4, 1, 1), (5, 1, 2)]
        assert all(r["ok"] and len(r["step_times_ms"]) == 3 for r in rounds)
        # one process per round of processes, whatever the phases; its autotuning counted once
        assert len({r["wall_s"] for r in rounds}) == 2 and rounds[0]["argv"][-1] == "--lockstep"
        assert [r["autotune"] for r in rounds if r["cycle"] > 0] == [None] * 4
    assert doc["arms"]["stock_default"]["proof"]["graphi_did_nothing"] is True
    assert doc["arms"]["graphi_untuned"]["setting"]["signature"]
    assert len(doc["order"]) == 6
    ratio = next(sp for sp in doc["speedups"] if sp["arm"] == "graphi_untuned")
    assert ratio["rounds"] == 6
    assert "lockstep (graphi_tf.lab.lockstep): 2 round(s)" in proc.stdout
    assert "2 rounds of processes in lockstep, 2 warm-up steps per arm, then 3 phases of 3 timed steps" in proc.stdout
    # the headline gives the IQR of the phases' ratios, not half their range
    assert "[IQR " in ratio["text"] and ratio["text"].endswith("times as fast as stock default (6 phases)")


@pytest.mark.timeout(300)
def test_with_clients_each_cycle_is_a_round_of_the_serving_report(tmp_path):
    proc, doc = _run_ab_on_tiny_step(tmp_path, "--repeats", "1", "--lockstep", "2", "--clients", "1,2",
                                     "--duration", "0.3")
    for name in ("stock_default", "graphi_untuned"):
        rounds = doc["arms"][name]["rounds"]
        assert [[p["clients"] for p in r["clients"]] for r in rounds] == [[1, 2], [1, 2]]
        # the untimed settling under each load is reported once per process, on its first cycle
        assert [p["warmup"]["phases"] >= 1 for p in rounds[0]["clients"]] == [True, True]
        assert all("warmup" not in p for p in rounds[1]["clients"])
        for n in ("1", "2"):
            assert doc["clients"]["arms"][name][n]["throughput_rps"]["rounds"] == 2
    texts = [c["text"] for c in doc["clients"]["comparisons"] if c["arm"] == "graphi_untuned"]
    assert texts and all(t.endswith("(2 phases)") for t in texts)
    assert "then 2 phases of 3 timed steps each, each followed by 0.3 s of serving per client count (1, 2)" in proc.stdout
