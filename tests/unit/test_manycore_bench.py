"""tools/manycore_bench.py: its plan fits the budget, and a short run writes every output.

The smoke run checks what the folder holds, never the speeds (those belong to the machine it
runs on: docs/manycore.md).
"""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "manycore_bench.py")


def _bench():
    spec = importlib.util.spec_from_file_location("manycore_bench", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


PROBE = {"ok": True, "step_ms": 20.0, "overhead_s": 5.0}


def test_the_plan_takes_the_most_steps_that_fit():
    bench = _bench()
    plan = bench.plan_model("lstm", "small", PROBE, 1000.0, arms=8, rounds=2, layouts=6)
    assert (plan.warmup, plan.steps) == (bench.MAX_WARMUP, bench.MAX_STEPS)
    assert plan.predicted_s <= 1000.0


def test_a_tighter_budget_gets_fewer_steps_within_it():
    bench = _bench()
    roomy = bench.plan_model("lstm", "small", PROBE, 1000.0, arms=8, rounds=2, layouts=6)
    tight = bench.plan_model("lstm", "small", PROBE, 120.0, arms=8, rounds=2, layouts=6)
    assert tight is not None and tight.predicted_s <= 120.0
    assert tight.warmup + tight.steps + tight.settle_autotune < roomy.warmup + roomy.steps + roomy.settle_autotune


def test_a_model_that_cannot_fit_is_not_planned():
    bench = _bench()
    assert bench.plan_model("lstm", "small", PROBE, 30.0, arms=8, rounds=2, layouts=6) is None


def test_stock_points_multiply_to_the_cores():
    bench = _bench()
    assert bench.stock_points(16) == ["stock_i1_a16", "stock_i2_a8", "stock_i4_a4", "stock_i8_a2", "stock_i16_a1"]
    assert bench.stock_points(12) == ["stock_i1_a12", "stock_i2_a6", "stock_i4_a3", "stock_i12_a1"]


def test_an_unknown_model_is_refused_with_the_allowed_ones(tmp_path):
    proc = subprocess.run([sys.executable, TOOL, "--models", "resnet", "--out-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "allowed: a comma-separated subset of lstm, googlenet, pathnet" in proc.stderr


@pytest.mark.timeout(600)
def test_a_short_run_writes_the_machine_microbenchmarks_and_an_ab_case(tmp_path):
    out = tmp_path / "bench"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, TOOL, "--out-dir", str(out), "--budget-s", "120", "--models", "lstm",
                           "--arms", "stock_default,graphi_auto", "--trace-steps", "0"],
                          capture_output=True, text=True, timeout=560, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "bench.json").read_text())
    assert report["machine"]["affinity_cpus"] == len(os.sched_getaffinity(0))
    micro = report["micro"]
    assert "error" not in micro, micro.get("error")
    assert micro["pinning"]["graphi_threads"] >= 1
    assert [row["threads"] for row in micro["scaling"]["gemm"]][0] == 1
    assert all(row["gflops"] > 0 for row in micro["scaling"]["gemm"])
    (case,) = report["ab"]
    assert case["model"] == "lstm"
    assert case.get("skipped") is None and case.get("error") is None, case
    assert case["arms"]["stock_default"]["status"] == "ok"
    assert case["arms"]["graphi_auto"]["status"] == "ok"
    assert (out / "ab_lstm" / "ab.json").is_file()
    markdown = (out / "bench.md").read_text()
    assert "| lstm_small |" in markdown and "## Op scaling on one pinned team" in markdown
    pytest.importorskip("matplotlib")
    assert (out / "bench.png").stat().st_size > 0
