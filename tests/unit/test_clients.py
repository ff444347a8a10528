"""graphi-tf ab --clients: the request statistics on synthetic samples, the report section built
from them, the concurrent clients themselves, and one short end-to-end run (no timing is asserted)."""
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from graphi_tf.lab import ab, arms, cli, clients, report

pytestmark = pytest.mark.timeout(120)


# ------------------------------------------------------------------------ one phase


def test_request_statistics_of_synthetic_latencies():
    stats = clients.summarize_requests([float(v) for v in range(1, 101)], elapsed_s=2.0, per_client=[60, 40])
    assert stats["requests"] == 100 and stats["throughput_rps"] == 50.0
    assert stats["p50_ms"] == pytest.approx(50.5) and stats["p90_ms"] == pytest.approx(90.1)
    assert stats["p99_ms"] == pytest.approx(99.01)
    assert stats["mean_ms"] == pytest.approx(50.5) and stats["max_ms"] == 100.0
    assert stats["per_client_requests"] == [60, 40]


def test_a_phase_without_requests_has_no_latencies_and_zero_throughput():
    stats = clients.summarize_requests([], elapsed_s=1.0)
    assert stats["throughput_rps"] == 0.0 and stats["p99_ms"] is None and stats["mean_ms"] is None


def test_a_phase_needs_a_positive_elapsed_time():
    with pytest.raises(ValueError, match="elapsed_s"):
        clients.summarize_requests([1.0], elapsed_s=0.0)


def test_serve_runs_every_client_concurrently_until_the_deadline():
    running, most = [0], [0]
    lock = threading.Lock()

    def step():
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.005)
        with lock:
            running[0] -= 1

    phase = clients.serve(step, clients=3, duration_s=0.2)
    assert phase["clients"] == 3 and len(phase["per_client_requests"]) == 3
    assert all(n >= 1 for n in phase["per_client_requests"])
    assert phase["requests"] == sum(phase["per_client_requests"])
    assert phase["throughput_rps"] == pytest.approx(phase["requests"] / phase["elapsed_s"])
    assert most[0] == 3  # the clients overlapped


def test_a_failing_request_fails_the_phase_after_every_client_stopped():
    def step():
        raise ValueError("bad request")

    with pytest.raises(RuntimeError, match="a request failed with 2 clients: ValueError: bad request"):
        clients.serve(step, clients=2, duration_s=0.1)
    assert not [t for t in threading.enumerate() if t.name.startswith("ab-client-")]


# ------------------------------------------------------------------------ over rounds


def test_round_spread_leaves_failed_rounds_out():
    assert clients.round_spread([4.0, None, 2.0, 3.0]) == {"median": 3.0, "p25": 2.5, "p75": 3.5, "rounds": 3}
    assert clients.round_spread([None])["median"] is None


def test_a_comparison_is_the_median_of_per_round_ratios_with_their_iqr():
    sp = clients.compare_rounds([10.0, 20.0, 30.0, None], [5.0, 10.0, 10.0, 4.0])
    assert sp["round_ratios"] == [2.0, 2.0, 3.0] and sp["rounds"] == 3
    assert sp["ratio"] == 2.0 and sp["spread"] == 0.5 and sp["iqr"] == [2.0, 2.5]


def _phase(n, rps, p99, requests=500):
    return {"clients": n, "throughput_rps": rps, "p50_ms": p99 / 4, "p90_ms": p99 / 2, "p99_ms": p99,
            "requests": requests, "per_client_requests": [requests // n] * n}


def _doc(rounds_by_arm, values=(1, 4)):
    raw = {"case": {"name": "tiny", "kind": "script"}, "settings": {"clients": list(values), "duration_s": 1.0},
           "arms": {}}
    for name, phases in rounds_by_arm.items():
        point = arms.parse_sweep_arm(name)
        raw["arms"][name] = {"executor": "GRAPHI" if name.startswith("graphi") else "DEFAULT",
                             "sweep": point is not None, "inter_op": point and point[0],
                             "intra_op": point and point[1],
                             "rounds": [{"round": r, "ok": p is not None, "step_times_ms": [1.0] if p else None,
                                         "clients": p} for r, p in enumerate(phases)]}
    doc = report.build_report(raw)
    doc["clients"] = clients.client_report(doc)
    return doc


ROUNDS = {
    "stock_default": [[_phase(1, 100, 10), _phase(4, 200, 40)], [_phase(1, 100, 12), _phase(4, 220, 44)]],
    "stock_i1_a1": [[_phase(1, 80, 12), _phase(4, 300, 20)], [_phase(1, 90, 12), _phase(4, 280, 22)]],
    "stock_i2_a1": [[_phase(1, 120, 9), _phase(4, 250, 30)], [_phase(1, 110, 9), _phase(4, 260, 30)]],
    "graphi_auto": [[_phase(1, 150, 8), _phase(4, 330, 20)], None],
}


def test_the_clients_section_gives_each_arm_its_median_over_rounds_and_picks_stock_best_per_client_count():
    section = _doc(ROUNDS)["clients"]
    assert section["values"] == [1, 4] and section["duration_s"] == 1.0
    default = section["arms"]["stock_default"]["4"]
    assert default["throughput_rps"]["per_round"] == [200, 220] and default["throughput_rps"]["median"] == 210
    assert default["p99_ms"]["p25"] == 41.0 and default["requests_per_round"] == [500, 500]
    assert section["arms"]["graphi_auto"]["1"]["throughput_rps"]["per_round"] == [150, None]
    assert section["stock_best"] == {"1": "stock_i2_a1", "4": "stock_i1_a1"}


def test_graphi_is_compared_per_round_with_default_the_stream_arm_and_stock_best():
    section = _doc(ROUNDS)["clients"]
    by = {(c["arm"], c["baseline"], c["clients"], c["metric"]): c for c in section["comparisons"]}
    thr = by[("graphi_auto", "stock_default", 4, "throughput_rps")]
    assert thr["round_ratios"] == [330 / 200] and thr["rounds"] == 1  # its second round failed
    assert by[("graphi_auto", "stock_i1_a1", 4, "p99_ms")]["ratio"] == 1.0
    assert ("graphi_auto", "stock_i2_a1", 1, "throughput_rps") in by  # stock best at 1 client
    assert ("graphi_auto", "stock_i2_a1", 4, "throughput_rps") not in by
    assert by[("stock_i1_a1", "stock_default", 4, "throughput_rps")]["ratio"] == pytest.approx(
        (300 / 200 + 280 / 220) / 2)
    assert section["lead_arm"] == "graphi_auto"
    assert section["lead"][0].startswith("GRAPHI auto, 1 client, vs stock default: throughput 1.50x")
    assert any("4 clients, vs stock inter=1 intra=1 (one thread per request) = stock best" in t
               for t in section["lead"])


def test_a_p99_from_few_requests_is_flagged():
    rounds = {"stock_default": [[_phase(1, 100, 10, requests=40)]], "graphi_auto": [[_phase(1, 120, 8)]]}
    notes = _doc(rounds, values=(1,))["clients"]["notes"]
    assert notes == ["stock_default at 1 clients: p99 from a median 40 requests per round (fewer than 100): a rough "
                     "figure; a longer --duration sharpens it"]


def test_a_single_stream_report_has_no_clients_section():
    doc = report.build_report({"arms": {"stock_default": {"executor": "DEFAULT", "rounds": [
        {"round": 0, "ok": True, "step_times_ms": [1.0]}]}}})
    assert clients.client_report(doc) is None and clients.render_terminal(doc) == ""


def test_the_clients_table_and_chart_render(tmp_path):
    doc = _doc(ROUNDS)
    text = clients.render_terminal(doc)
    assert "req/s" in text and "stock_i1_a1 *" in text and "stock_i2_a1 *" in text
    md = clients.render_markdown(doc)
    assert "## Concurrent requests" in md and md.count("| graphi_auto |") == 2
    path = clients.render_png(doc, str(tmp_path / "clients.png"))
    assert os.path.getsize(path) > 1000


# ------------------------------------------------------------------------ the command line


def test_client_mode_runs_the_serving_arms_by_default():
    assert ab.default_arms([1, 4]) == list(arms.CLIENT_ARMS)
    assert arms.STREAM == arms.sweep_arm_name(1, 1) and arms.SINGLE_THREADED not in arms.CLIENT_ARMS
    args = cli._build_parser().parse_args(["ab", "--model", "lstm", "--clients", "1,4,8", "--duration", "2"])
    assert args.clients == [1, 4, 8] and args.duration == 2.0


@pytest.mark.parametrize("argv, says", [
    (["--clients", "0,2"], "whole numbers >= 1"),
    (["--clients", "2,2"], "given twice"),
    (["--duration", "0"], "> 0"),
])
def test_bad_client_options_name_what_is_allowed(capsys, argv, says):
    with pytest.raises(SystemExit) as e:
        cli._build_parser().parse_args(["ab", "--model", "lstm", *argv])
    assert e.value.code == 2 and says in capsys.readouterr().err


SCRIPT = """
import numpy as np
import tensorflow as tf

def build_step():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(np.random.RandomState(0).rand(16, 16).astype(np.float32) / 16)
        y = tf.add_n([tf.tanh(tf.matmul(x, x)) for _ in range(3)])
    sess = tf.compat.v1.Session(graph=graph)
    return lambda: sess.run(y)
"""


@pytest.mark.timeout(200)
def test_end_to_end_with_one_and_two_clients(tmp_path, cli_env):
    script = tmp_path / "tiny_step.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "graphi_tf.lab.cli", "ab", "--script", str(script), "--clients", "1,2",
         "--duration", "0.3", "--warmup", "1", "--steps", "1", "--repeats", "1", "--trace-steps", "0",
         "--arms", "stock_default,graphi_untuned", "--timeout", "100", "--out-dir", str(out)],
        env=cli_env, capture_output=True, text=True, timeout=190)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "ab.json").read_text())
    report.check_schema(doc)
    section = doc["clients"]
    assert section["values"] == [1, 2] and doc["settings"]["duration_s"] == 0.3
    for name in ("stock_default", "graphi_untuned"):
        for n in ("1", "2"):
            stats = section["arms"][name][n]
            assert stats["throughput_rps"]["median"] > 0 and stats["p99_ms"]["median"] > 0, (name, n)
    phases = doc["arms"]["graphi_untuned"]["rounds"][0]["clients"]
    assert [p["clients"] for p in phases] == [1, 2] and len(phases[1]["per_client_requests"]) == 2
    assert section["lead_arm"] == "graphi_untuned" and section["lead"]
    assert "## Concurrent requests" in (out / "ab.md").read_text()
    assert (out / "ab_clients.png").stat().st_size > 1000
    assert "req/s" in proc.stdout and "ab_clients.png" in proc.stdout
