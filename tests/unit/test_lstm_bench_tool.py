"""The LSTM benchmark tools run end to end and report what they promise."""

import json
import os
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LSTM_BENCH = os.path.join(REPO_ROOT, "tools", "lstm_bench.py")
AB_LSTM = os.path.join(REPO_ROOT, "tools", "ab_lstm.py")


def _run(argv, timeout):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run([sys.executable] + argv, capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO_ROOT)


@pytest.mark.timeout(180)
def test_lstm_bench_json_reports_step_times_and_configuration():
    proc = _run([LSTM_BENCH, "--executor", "DEFAULT", "--warmup", "2", "--steps", "3", "--json"],
                timeout=170)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)  # --json: stdout holds exactly one JSON object

    config = result["config"]
    assert config["executor"] == "DEFAULT"
    assert config["default_config_proto"] is True
    assert (config["inter"], config["intra"], config["executors"], config["threads"]) == (None,) * 4
    assert (config["warmup"], config["steps"]) == (2, 3)
    assert (config["layers"], config["batch"], config["hidden"], config["time_steps"]) == (4, 32, 256, 20)

    times = result["step_times_ms"]
    assert len(times) == 3 and all(t > 0 for t in times)
    assert result["min_ms"] == min(times) and result["max_ms"] == max(times)
    assert result["min_ms"] <= result["median_ms"] <= result["max_ms"]
    assert result["tf_version"].startswith("2.")
    assert result["graphi_info"] is None
    assert result["graph_nodes"] > 1000  # unrolled: 4 layers x 20 steps of cell ops + gradients
    assert result["loss_after"] != result["loss_before"]  # the train op updated the weights


@pytest.mark.timeout(60)
def test_lstm_bench_rejects_team_options_without_graphi():
    proc = _run([LSTM_BENCH, "--executor", "DEFAULT", "--executors", "2"], timeout=50)
    assert proc.returncode == 2
    assert "--executors/--threads apply only to --executor GRAPHI" in proc.stderr


@pytest.mark.timeout(180)
def test_ab_lstm_summarizes_arms_and_writes_json(tmp_path):
    out = tmp_path / "ab.json"
    proc = _run([AB_LSTM, "--arms", "a,b", "--repeats", "2", "--warmup", "1", "--steps", "2",
                 "--bench-args", "--layers 2 --hidden 32 --time-steps 4", "--out", str(out)],
                timeout=170)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    summary = report["summary"]
    assert set(summary) == {"a", "b"}
    for label in ("a", "b"):
        assert summary[label]["status"] == "ok", summary[label]
        assert len(summary[label]["round_medians_ms"]) == 2
        assert [r["round"] for r in report["runs"][label]] == [0, 1]
    assert summary["a"]["ratio_vs_a"] == 1.0
    assert summary["b"]["ratio_vs_a"] == pytest.approx(summary["b"]["median_ms"] / summary["a"]["median_ms"])
    assert "DEFAULT, inter=2 intra=1" in proc.stdout


@pytest.mark.timeout(120)
def test_ab_lstm_reports_a_failing_arm_instead_of_crashing(tmp_path):
    out = tmp_path / "ab.json"
    proc = _run([AB_LSTM, "--arms", "a", "--repeats", "1", "--bench-args", "--layers 0",
                 "--out", str(out)], timeout=110)
    assert proc.returncode == 0, proc.stderr[-3000:]
    entry = json.loads(out.read_text())["summary"]["a"]
    assert entry["status"] == "failed"
    assert entry["median_ms"] is None
    assert "--layers must be >= 1" in entry["stderr_tail"]
    assert "failed" in proc.stdout and "--layers must be >= 1" in proc.stdout
