"""graphi_tf.lab.report on synthetic measurements, with hand-computed expectations."""
import json

import pytest

from graphi_tf import stepstats

from graphi_tf.lab import arms, report


def test_summarize_times_pools_all_steps_and_keeps_per_round_medians():
    s = report.summarize_times([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], None])
    assert (s["median_ms"], s["min_ms"], s["max_ms"]) == (4.0, 1.0, 7.0)
    assert s["round_medians_ms"] == [2.0, 5.5, None]
    assert (s["n_steps"], s["ok_rounds"], s["failed_rounds"]) == (7, 2, 1)


def test_summarize_times_gives_the_interquartile_range_of_all_steps():
    # steps 1..7 pooled: p25 at position 1.5 -> 2.5, p75 at position 4.5 -> 5.5
    s = report.summarize_times([[3.0, 1.0, 2.0], [7.0, 4.0, 6.0, 5.0]])
    assert (s["p25_ms"], s["p75_ms"]) == (pytest.approx(2.5), pytest.approx(5.5))
    assert report.summarize_times([None])["p25_ms"] is None


def test_percentile_interpolates_between_the_nearest_steps():
    values = [40.0, 10.0, 30.0, 20.0]
    assert report.percentile(values, 0.25) == pytest.approx(17.5)  # position 0.75
    assert report.percentile(values, 0.75) == pytest.approx(32.5)  # position 2.25
    assert report.percentile(values, 0.0) == 10.0 and report.percentile(values, 1.0) == 40.0
    assert report.percentile([5.0], 0.25) == 5.0 and report.percentile([], 0.5) is None
    with pytest.raises(ValueError, match="allowed: 0 <= q <= 1"):
        report.percentile(values, 25)


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
    assert doc["headlines"][0] == "GRAPHI tuned ran 2.00 ± 0.50 times as fast as stock default (3 rounds)"
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
    # no graphi_auto here: GRAPHI tuned leads, in bold before the title
    assert lines[0] == "- **GRAPHI tuned ran 2.00 ± 0.50 times as fast as stock default (3 rounds)**"
    assert "- GRAPHI untuned ran 2.00 ± 0.00 times as fast as stock default (1 round)" in lines


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


def test_report_and_arms_modules_do_not_import_tensorflow():
    import subprocess
    import sys

    # Both loaded from their files, without the graphi_tf package (its __init__ loads the
    # native library, and TensorFlow with it): a bare package object stands for it.
    code = ("import importlib.util, sys, types\n"
            "pkg = types.ModuleType('graphi_tf'); pkg.__path__ = []; sys.modules['graphi_tf'] = pkg\n"
            "def load(name, path):\n"
            "    spec = importlib.util.spec_from_file_location(name, path)\n"
            "    m = importlib.util.module_from_spec(spec); sys.modules[name] = m\n"
            "    spec.loader.exec_module(m); return m\n"
            f"load('graphi_tf.lab.arms', {arms.__file__!r})\n"
            f"load('graphi_tf.stepstats', {stepstats.__file__!r})\n"
            f"m = load('graphi_tf.lab.report', {report.__file__!r})\n"
            "m.render_terminal(m.build_report({'arms': {}}))\n"
            "print('tensorflow' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def _raw_with_auto(autotune=None, at_timing_start=None):
    """_raw() plus a graphi_auto arm with round medians 10, 10, 9 ms."""
    raw = _raw()
    autotune = autotune or [None] * 3
    at_timing_start = at_timing_start or [None] * 3
    rounds = []
    for r, times in enumerate(([10.0] * 3, [10.0] * 3, [9.0] * 3)):
        setting = {"executors": 2, "threads_per_executor": 1, "source": "default"}
        if at_timing_start[r] is not None:
            setting["autotune_at_timing_start"] = at_timing_start[r]
        rounds.append(_round(r, times, setting=setting, autotune=autotune[r]))
    raw["arms"]["graphi_auto"] = {"executor": "GRAPHI", "rounds": rounds}
    return raw


def test_graphi_auto_leads_against_stock_default_and_stock_best():
    doc = report.build_report(_raw_with_auto())
    # vs default (20, 20, 18): 2.0, 2.0, 2.0; vs best stock_i2_a1 (12, 15, 12): 1.2, 1.5, 1.333
    assert doc["lead_arm"] == "graphi_auto"
    assert doc["lead"] == [
        "GRAPHI auto ran 2.00 ± 0.00 times as fast as stock default (3 rounds)",
        "GRAPHI auto ran 1.33 ± 0.15 times as fast as stock best (inter=2 intra=1) (3 rounds)"]
    assert doc["headlines"][:2] == doc["lead"]
    assert doc["headlines"][2].startswith("GRAPHI tuned ran")


def test_terminal_and_markdown_start_with_the_lead_lines():
    doc = report.build_report(_raw_with_auto())
    text = report.render_terminal(doc).splitlines()
    assert text[:2] == doc["lead"] and text[3].startswith("graphi-tf ab:")
    assert sum(line in doc["lead"] for line in text) == 2  # not repeated under the table
    md = report.render_markdown(doc).splitlines()
    assert md[:2] == [f"- **{t}**" for t in doc["lead"]]


def test_without_graphi_auto_the_best_ranked_graphi_arm_leads():
    assert arms.graphi_ranked()[:2] == ("graphi_auto", "graphi_tuned")
    doc = report.build_report(_raw())
    assert doc["lead_arm"] == "graphi_tuned"
    assert doc["lead"][0] == "GRAPHI tuned ran 2.00 ± 0.50 times as fast as stock default (3 rounds)"


def test_the_table_has_p25_and_p75_columns():
    raw = _raw()
    raw["arms"]["stock_i1_a1"]["rounds"][0]["step_times_ms"] = [4.0, 8.0, 16.0]
    doc = report.build_report(raw)
    arm = doc["arms"]["stock_i1_a1"]  # steps 4, 8, 16, 16 x 6: p25 at position 2 -> 16.0
    assert (arm["p25_ms"], arm["p75_ms"]) == (16.0, 16.0)
    lines = report.render_terminal(doc).splitlines()
    header = next(x for x in lines if x.startswith("arm "))
    assert header.split()[:6] == ["arm", "setting", "median", "ms", "p25", "ms"]
    assert "min ms" not in header and "max ms" not in header


def test_iqr_whiskers_reach_from_p25_to_p75():
    doc = report.build_report(_raw())
    # stock_default's steps 18 x 3, 19, 20 x 4, 21: p25 at position 2 -> 18, p75 at 6 -> 20
    arm = doc["arms"]["stock_default"]
    assert (arm["p25_ms"], arm["median_ms"], arm["p75_ms"]) == (18.0, 20.0, 20.0)
    assert report.iqr_whiskers(arm) == (2.0, 0.0)
    assert report.iqr_whiskers({"median_ms": 2.0}) is None  # an older report: no percentiles


def test_the_chart_whiskers_are_the_iqr_and_say_so():
    doc = report.build_report(_raw())
    fig = report.ab_chart(doc)
    ax = fig.axes[0]
    assert "IQR" in ax.get_ylabel()
    assert any("IQR" in t.get_text() for t in ax.get_legend().get_texts())
    from matplotlib.container import BarContainer

    bars = next(c for c in ax.containers if isinstance(c, BarContainer))
    (whisker_lines,) = bars.errorbar.lines[2]
    spans = [(seg[0][1], seg[1][1]) for seg in whisker_lines.get_segments()]
    expected = [(a["p25_ms"], a["p75_ms"]) for a in doc["arms"].values() if a["median_ms"] is not None]
    assert spans == [pytest.approx(e) for e in expected]


def test_arm_descriptions_and_labels_come_from_the_arms_table():
    raw = _raw()
    raw["arms"]["graphi_untuned"]["description"] = "a stale description from an older graphi_tf"
    doc = report.build_report(raw)
    for name in ("stock_default", "graphi_tuned", "graphi_untuned"):
        assert doc["arms"][name]["description"] == arms.spec(name).description
        assert doc["arms"][name]["label"] == arms.spec(name).label
    assert doc["arms"]["stock_i2_a1"]["description"] == "DEFAULT executor, inter_op=2 intra_op=1"


def test_the_autotune_state_of_each_round_is_reported():
    adopted = {"state": "adopted", "progress": "8/8", "chosen": [2, 1], "cost_ms": 0.5, "reason": "faster"}
    kept = {"state": "kept_default", "progress": "8/8", "chosen": None, "cost_ms": 0.4, "reason": "no gain"}
    exploring = {"state": "exploring", "progress": "3/8", "chosen": None, "cost_ms": 0.1, "reason": ""}
    doc = report.build_report(_raw_with_auto([adopted, kept, adopted], [None, exploring, None]))
    assert doc["arms"]["graphi_auto"]["autotune"] == [adopted, kept, adopted]
    text = report.render_terminal(doc)
    assert ("graphi_auto: GRAPHI's online autotuning at the end: adopted 2x1 in 2 rounds, "
            "kept_default in 1 round; still exploring when the timed steps began in 1 round") in text
    assert "online autotuning" not in report.render_terminal(report.build_report(_raw_with_auto()))


def test_an_arm_whose_autotuning_was_off_says_so_rather_than_waiting():
    off = {"state": "waiting", "chosen": None, "cost_ms": 0.0,
           "reason": "autotuning is off (GRAPHI_AUTOTUNE=0 or configure(autotune=False))"}
    text = report.render_terminal(report.build_report(_raw_with_auto([off, off, off])))
    assert ("graphi_auto: GRAPHI's online autotuning at the end: waiting (autotuning is off "
            "(GRAPHI_AUTOTUNE=0 or configure(autotune=False))) in 3 rounds") in text


def test_the_autotune_decision_under_each_client_count_is_reported_per_process():
    # The arm's final "autotune" is that of the last load only; each serving warm-up
    # records what was decided under its own load (a load class has its own decision).
    kept = {"state": "kept_default", "chosen": [0, 0], "reason": "no gain", "load_class": "under_load_4"}
    stock_2x1 = {"state": "adopted", "chosen": [0, 0, 2, 1], "reason": "faster", "load_class": "under_load_4"}
    alone = {"state": "adopted", "chosen": [1, 2], "reason": "faster", "load_class": "alone"}
    raw = _raw_with_auto()
    for r, under_4 in zip(raw["arms"]["graphi_auto"]["rounds"], (kept, stock_2x1, kept)):
        r["clients"] = [
            {"clients": 1, "throughput_rps": 100.0, "warmup": {"phases": 1, "autotune": alone}},
            {"clients": 4, "throughput_rps": 300.0, "warmup": {"phases": 2, "autotune": under_4}},
            {"clients": 8, "throughput_rps": 300.0}]  # a later lockstep cycle: no warm-up
    text = report.render_terminal(report.build_report(raw))
    assert "graphi_auto: GRAPHI's online autotuning once settled under 1 client: adopted 1x2 in 3 processes" in text
    assert ("graphi_auto: GRAPHI's online autotuning once settled under 4 clients: kept_default stock in "
            "2 processes, adopted stock:2x1 in 1 process") in text
    assert "settled under 8 clients" not in text


def test_summary_table_has_graphi_auto_columns():
    docs = [report.build_report(_raw_with_auto()), report.build_report(_raw())]
    lines = report.render_summary_markdown(docs).splitlines()
    header = [c.strip() for c in lines[2].strip("|").split("|")]
    assert header[4:9] == ["GRAPHI auto ms", "GRAPHI untuned ms", "GRAPHI tuned ms", "auto vs default",
                           "auto vs best"]
    with_auto, without = ([c.strip() for c in x.strip("|").split("|")] for x in lines[4:6])
    assert with_auto[4] == "10.00" and with_auto[7:9] == ["2.00 ± 0.00", "1.33 ± 0.15"]
    assert without[4] == "-" and without[7:9] == ["-", "-"]  # a report without graphi_auto
    assert without[9:11] == ["2.00 ± 0.50", "1.20 ± 0.44"]  # tuned vs default, tuned vs best


def test_a_graphi_auto_arm_that_always_failed_is_named_before_the_next_arms_lead_lines():
    raw = _raw_with_auto()
    for r in raw["arms"]["graphi_auto"]["rounds"]:
        r.update(ok=False, step_times_ms=None, error="exit status 1")
    doc = report.build_report(raw)
    assert doc["lead_arm"] == "graphi_tuned"
    assert doc["lead"][0] == "GRAPHI auto: no successful round (exit status 1)"
    assert doc["lead"][1].startswith("GRAPHI tuned ran 2.00 ± 0.50 times as fast as stock default")
