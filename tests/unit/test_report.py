"""graphi_tf.report on synthetic measurements, with hand-computed expectations."""
import json

import pytest

from graphi_tf import report


def test_summarize_times_pools_all_steps_and_keeps_per_round_medians():
    s = report.summarize_times([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], None])
    assert (s["median_ms"], s["min_ms"], s["max_ms"]) == (4.0, 1.0, 7.0)
    assert s["round_medians_ms"] == [2.0, 5.5, None]
    assert (s["n_steps"], s["ok_rounds"], s["failed_rounds"]) == (7, 2, 1)


def test_examples_per_second_is_examples_over_the_median_step():
    assert report.examples_per_second(32, 4.0) == pytest.approx(8000.0)
    assert report.examples_per_second(None, 4.0) is None


def test_speedup_is_the_median_of_per_round_ratios_plus_minus_half_their_range():
    sp = report.speedup([10.0, 8.0, 12.0], [20.0, 20.0, 18.0])  # ratios 2.0, 2.5, 1.5
    assert sp["round_ratios"] == pytest.approx([2.0, 2.5, 1.5])
    assert sp["ratio"] == pytest.approx(2.0)
    assert sp["spread"] == pytest.approx(0.5)
    assert sp["rounds"] == 3


def test_speedup_skips_rounds_where_either_arm_failed():
    sp = report.speedup([10.0, None, 12.0], [20.0, 20.0, 18.0])  # ratios 2.0, 1.5
    assert sp["ratio"] == pytest.approx(1.75)
    assert sp["spread"] == pytest.approx(0.25)
    assert sp["rounds"] == 2
    assert report.speedup([None], [1.0])["ratio"] is None


def test_physical_limit_takes_minima_and_caps_work_by_the_untraced_step():
    b = report.physical_limit([10.0, 8.0], [3.0, 4.0], cores=2, untraced_step_ms=6.0)
    assert b["work_ms"] == 6.0 and b["traced_work_ms"] == 8.0 and b["critical_path_ms"] == 3.0
    assert b["lower_bound_ms"] == pytest.approx(3.0)  # max(3, 6 / 2)


def test_physical_limit_is_the_critical_path_when_it_dominates():
    assert report.physical_limit([4.0], [3.5], cores=2)["lower_bound_ms"] == pytest.approx(3.5)
    assert report.lower_bound_ms(12.0, 1.0, 4) == pytest.approx(3.0)


def test_efficiency_is_lb_over_the_median_step():
    assert report.efficiency(3.0, 6.0) == pytest.approx(0.5)
    assert report.efficiency(None, 6.0) is None


def _round(r, times, ok=True, **extra):
    rec = {"round": r, "ok": ok, "step_times_ms": times if ok else None, "examples_per_step": 32,
           "graph_nodes": 100}
    rec.update(extra)
    return rec


def _raw():
    proof = {"graphi_threads": [], "graphi_graphs_run": 0, "graphi_steps_run": 0, "graphi_did_nothing": True}
    return {
        "created_unix": 1.0,
        "case": {"name": "toy_small_graph", "kind": "model", "model": "toy", "size": "small", "mode": "graph",
                 "script": None},
        "settings": {"warmup": 1, "steps": 3, "repeats": 3},
        "machine": {"usable_cores": 2},
        "order": [["stock_default", "stock_i1_a1", "stock_i2_a1", "graphi_tuned", "graphi_untuned"]] * 3,
        "arms": {
            "stock_default": {"executor": "DEFAULT", "rounds": [
                _round(0, [20.0, 20.0, 20.0], proof=proof), _round(1, [20.0, 21.0, 19.0], proof=proof),
                _round(2, [18.0, 18.0, 18.0], proof=proof)]},
            "stock_i1_a1": {"executor": "DEFAULT", "inter_op": 1, "intra_op": 1, "sweep": True, "rounds": [
                _round(0, [16.0] * 3), _round(1, [16.0] * 3), _round(2, [16.0] * 3)]},
            "stock_i2_a1": {"executor": "DEFAULT", "inter_op": 2, "intra_op": 1, "sweep": True, "rounds": [
                _round(0, [12.0] * 3), _round(1, [15.0] * 3), _round(2, [12.0] * 3)]},
            "graphi_tuned": {"executor": "GRAPHI", "rounds": [
                _round(0, [10.0] * 3, setting={"executors": 2, "threads_per_executor": 1, "source": "cache"}),
                _round(1, [8.0] * 3), _round(2, [12.0] * 3)]},
            "graphi_untuned": {"executor": "GRAPHI", "rounds": [
                _round(0, None, ok=False, error="exit status 1", stderr_tail="Traceback\nboom"),
                _round(1, [10.0] * 3), _round(2, None, ok=False, error="timed out", stderr_tail="")]},
        },
        "bound": {"traced_work_ms": [9.0, 8.0], "critical_path_ms": [3.0, 2.5], "cores": 2,
                  "untraced_step_ms": 10.0, "nodes": 100},
        "tune": None,
    }


def test_build_report_names_the_best_sweep_arm_by_median():
    doc = report.build_report(_raw())
    assert doc["stock_best"]["arm"] == "stock_i2_a1"  # median 12 < 16
    assert doc["stock_best"]["median_ms"] == 12.0


def test_build_report_speedup_of_tuned_over_stock_default_and_headline():
    doc = report.build_report(_raw())
    sp = doc["arms"]["graphi_tuned"]["speedup_vs_stock_default"]
    # default round medians 20, 20, 18; tuned 10, 8, 12 -> ratios 2.0, 2.5, 1.5
    assert sp["ratio"] == pytest.approx(2.0) and sp["spread"] == pytest.approx(0.5)
    assert doc["headlines"][0] == "GRAPHI tuned ran 2.00 ± 0.50 times faster than stock default (3 rounds)"
    vs_best = [s for s in doc["speedups"] if s["arm"] == "graphi_tuned" and s["baseline"] == "stock_i2_a1"]
    # best round medians 12, 15, 12 -> ratios 1.2, 1.875, 1.0
    assert vs_best[0]["ratio"] == pytest.approx(1.2) and vs_best[0]["spread"] == pytest.approx(0.4375)


def test_a_graphi_env_arm_is_compared_with_graphi_untuned():
    raw = _raw()
    raw["arms"]["no_wc"] = {"executor": "GRAPHI", "env": {"GRAPHI_STEAL_THRESHOLD_NS": "off"},
                               "rounds": [_round(r, [12.5] * 3) for r in range(3)]}
    doc = report.build_report(raw)  # graphi_untuned ran round 1 only: 10.0 ms
    sp = next(s for s in doc["speedups"] if s["arm"] == "no_wc" and s["baseline"] == "graphi_untuned")
    assert sp["ratio"] == pytest.approx(0.8)
    assert "GRAPHI_STEAL_THRESHOLD_NS=off" in report.render_terminal(doc)


def test_build_report_efficiency_and_examples_per_second_per_arm():
    doc = report.build_report(_raw())
    # W = min(8, 10) = 8, CP = 2.5, LB = max(2.5, 8 / 2) = 4
    assert doc["bound"]["lower_bound_ms"] == pytest.approx(4.0)
    assert doc["arms"]["graphi_tuned"]["efficiency"] == pytest.approx(0.4)  # 4 / 10
    assert doc["arms"]["stock_default"]["efficiency"] == pytest.approx(0.2)  # 4 / 20
    assert doc["arms"]["graphi_tuned"]["examples_per_s"] == pytest.approx(3200.0)  # 32 / 10 ms


def test_build_report_marks_failed_rounds_partial_with_the_last_error():
    arm = report.build_report(_raw())["arms"]["graphi_untuned"]
    assert arm["status"] == "partial"
    assert (arm["ok_rounds"], arm["failed_rounds"]) == (1, 2)
    assert arm["error"] == "timed out"


def test_build_report_marks_an_arm_without_a_good_round_failed():
    raw = _raw()
    raw["arms"]["graphi_untuned"]["rounds"][1] = _round(1, None, ok=False, error="bad JSON")
    arm = report.build_report(raw)["arms"]["graphi_untuned"]
    assert arm["status"] == "failed" and arm["median_ms"] is None and arm["speedup_vs_stock_default"] is None


def test_json_follows_the_documented_schema():
    doc = json.loads(report.render_json(report.build_report(_raw())))
    report.check_schema(doc)
    assert doc["schema_version"] == report.SCHEMA_VERSION
    assert doc["spread"] == report.SPREAD_TEXT


def test_check_schema_names_a_missing_field():
    doc = report.build_report(_raw())
    del doc["arms"]["stock_default"]["median_ms"]
    with pytest.raises(ValueError, match="arms.stock_default: missing 'median_ms'"):
        report.check_schema(doc)


def test_markdown_has_one_table_row_per_arm_and_the_headline():
    md = report.render_markdown(report.build_report(_raw()))
    lines = md.splitlines()
    header = [i for i, x in enumerate(lines) if x.startswith("| arm |")]
    assert len(header) == 1
    rows = [x for x in lines[header[0] + 2:] if x.startswith("|")]
    assert [r.split("|")[1].strip() for r in rows] == [
        "stock_default", "stock_i1_a1", "stock_i2_a1 *", "graphi_tuned", "graphi_untuned"]
    assert "| 2.00 ± 0.50 |" in rows[3]
    assert "- GRAPHI tuned ran 2.00 ± 0.50 times faster than stock default (3 rounds)" in lines


def test_terminal_table_shows_the_limit_and_failure_tails():
    text = report.render_terminal(report.build_report(_raw()))
    assert "LB = max(CP, W / cores) = max(2.500, 8.000 / 2) = 4.000 ms" in text
    assert "arm graphi_untuned partial: timed out" in text
    assert "GRAPHI 2x1 (cache)" in text


def test_png_is_written_and_non_empty(tmp_path):
    path = report.render_png(report.build_report(_raw()), str(tmp_path / "ab.png"))
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_summary_table_and_chart_over_several_cases(tmp_path):
    a = report.build_report(_raw())
    raw = _raw()
    raw["case"] = dict(raw["case"], name="toy_large_graph", size="large")
    b = report.build_report(raw)
    md = report.render_summary_markdown([a, b])
    rows = [x for x in md.splitlines() if x.startswith("| toy_")]
    assert len(rows) == 2
    assert "| 2.00 ± 0.50 | 1.20 ± 0.44 |" in rows[0]  # tuned vs default, tuned vs best
    png = report.render_summary_png([a, b], str(tmp_path / "results.png"))
    assert open(png, "rb").read()[:4] == b"\x89PNG"


def test_png_without_matplotlib_raises_a_clear_error(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(report.ReportError, match="PNG charts need matplotlib"):
        report.render_png(report.build_report(_raw()), str(tmp_path / "x.png"))


def test_report_module_does_not_import_tensorflow():
    import subprocess
    import sys

    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('r', {report.__file__!r})\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "m.build_report({'arms': {}})\n"
            "print('tensorflow' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
