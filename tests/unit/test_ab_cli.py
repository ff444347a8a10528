"""graphi-tf ab: argument errors, arm selection, and short end-to-end runs on tiny user
scripts (each arm in its own process, as in real use)."""
import argparse
import json
import os
import subprocess
import sys
import textwrap

import pytest

from graphi_tf import _cli_logging

from graphi_tf.lab import _ab_worker, ab, arms, cli, report

pytestmark = pytest.mark.timeout(120)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A TF1 step that names no executor: the ab worker gives its session the arm's executor.
# run_traced lets the reference process measure the physical limit.
TF1_SCRIPT = textwrap.dedent("""
    import numpy as np
    import tensorflow as tf

    def build_step():
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.get_variable(
                "x", initializer=np.random.RandomState(0).rand(16, 16).astype(np.float32) / 16,
                use_resource=True)
            init = tf.compat.v1.global_variables_initializer()
            outs = []
            for branch in range(3):
                y = x
                for _ in range(2):
                    y = tf.tanh(tf.matmul(y, x))
                outs.append(y)
            total = tf.add_n(outs)
        sess = tf.compat.v1.Session(graph=graph)
        sess.run(init)
        step = lambda: sess.run(total)

        def run_traced():
            md = tf.compat.v1.RunMetadata()
            opts = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE,
                                           output_partition_graphs=True)
            sess.run(total, options=opts, run_metadata=md)
            return md

        step.run_traced = run_traced
        step.examples_per_step = 16
        return step
""")

# Builds only where inter_op is not 1: the stock_i1_a1 arm fails, stock_default runs.
FAILING_SCRIPT = textwrap.dedent("""
    import tensorflow as tf

    def build_step():
        if tf.config.threading.get_inter_op_parallelism_threads() == 1:
            raise RuntimeError("boom: this step refuses inter_op=1")
        x = tf.Variable(tf.ones([4, 4]))
        return tf.function(lambda: tf.matmul(x, x))
""")

FUNCTION_SCRIPT = textwrap.dedent("""
    import tensorflow as tf

    def build_step():
        x = tf.Variable(tf.ones([8, 8]) / 8)

        @tf.function
        def step():
            return tf.add_n([tf.tanh(tf.matmul(x, x)) for _ in range(3)])

        return step
""")


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _parse_error(capsys, argv):
    with pytest.raises(SystemExit) as e:
        cli._build_parser().parse_args(argv)
    assert e.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("argv, allowed", [
    (["ab", "--model", "nope"], ["lstm", "phased_lstm", "pathnet", "googlenet"]),
    (["ab", "--model", "lstm", "--size", "huge"], ["small", "medium", "large"]),
    (["ab", "--model", "lstm", "--mode", "eager"], ["graph", "function"]),
    (["ab", "--model", "lstm", "--arms", "stock_default,bogus"],
     ["stock_default", "stock_best", "single_threaded", "graphi_auto", "graphi_untuned", "graphi_tuned",
      "stock_i2_a1"]),
    (["ab", "--model", "lstm", "--warmup", "-1"], [">= 0"]),
    (["ab", "--model", "lstm", "--sweep", "0,2"], ["whole numbers >= 1"]),
])
def test_argument_errors_name_the_allowed_values(capsys, argv, allowed):
    err = _parse_error(capsys, argv)
    for value in allowed:
        assert value in err


def test_ab_needs_a_model_or_a_script(capsys):
    err = _parse_error(capsys, ["ab"])
    assert "--model" in err and "--script" in err


def test_stock_best_expands_to_every_point_of_the_sweep():
    names = [a.name for a in ab.resolve_arms(["stock_default", "stock_best"], ab.sweep_values(2))]
    assert names == ["stock_default", "stock_i1_a1", "stock_i1_a2", "stock_i2_a1", "stock_i2_a2"]
    assert ab.sweep_values(4) == [1, 2, 4] and ab.sweep_values(3) == [1, 2]


def test_the_table_arms_run_with_their_cache_and_environment():
    by_name = {a.name: a for a in ab.resolve_arms(list(arms.ARM_NAMES), [1, 2])}
    assert (by_name["graphi_auto"].executor, by_name["graphi_auto"].cache, by_name["graphi_auto"].env) == (
        "GRAPHI", "empty", ())
    assert (by_name["graphi_untuned"].cache, by_name["graphi_untuned"].env) == ("empty", (("GRAPHI_AUTOTUNE", "0"),))
    assert by_name["graphi_tuned"].cache == "tuned"
    for name, arm in by_name.items():
        assert arm.description == arms.describe(name)


def test_the_arms_table_is_the_default_selection_and_the_help():
    parser = cli._build_parser()
    assert parser.parse_args(["ab", "--model", "lstm"]).arms is None  # ab.default_arms then
    assert ab.default_arms() == list(arms.ARM_NAMES)
    help_text = " ".join(ab._epilog().split())
    for spec in arms.ARMS:
        assert f"{spec.name} {spec.description}" in help_text


def test_graphi_env_arm_runs_like_graphi_untuned_with_its_variables_after_the_selected_arms():
    arm = ab.parse_env_arm("no_wc:GRAPHI_STEAL_THRESHOLD_NS=off,GRAPHI_POLICY=fifo")
    assert (arm.executor, arm.cache) == ("GRAPHI", "empty")
    assert arm.env == (("GRAPHI_AUTOTUNE", "0"), ("GRAPHI_STEAL_THRESHOLD_NS", "off"), ("GRAPHI_POLICY", "fifo"))
    assert ab.parse_env_arm("auto_fifo:GRAPHI_AUTOTUNE=1,GRAPHI_POLICY=fifo").env == (
        ("GRAPHI_AUTOTUNE", "1"), ("GRAPHI_POLICY", "fifo"))
    names = [a.name for a in ab.resolve_arms(["graphi_untuned"], [1, 2], [arm])]
    assert names == ["graphi_untuned", "no_wc"]


@pytest.mark.parametrize("value, says", [
    ("no_wc", "NAME:VAR=VALUE"),
    ("No-Merge:GRAPHI_POLICY=fifo", "NAME:VAR=VALUE"),
    ("graphi_tuned:GRAPHI_POLICY=fifo", "built-in arm"),
    ("graphi_auto:GRAPHI_POLICY=fifo", "built-in arm"),
    ("fifo:GRAPHI_POLICY", "VAR=VALUE"),
    ("fifo:", "no VAR=VALUE"),
])
def test_a_bad_graphi_env_arm_says_what_is_allowed(capsys, value, says):
    err = _parse_error(capsys, ["ab", "--model", "lstm", "--graphi-env", value])
    assert "--graphi-env" in err and says in err


def test_the_main_graph_is_the_largest_that_ran_after_the_step_was_built():
    graphs = [{"signature": "init", "node_count": 700, "steps_run": 1},
              {"signature": "train", "node_count": 600, "steps_run": 11}]
    assert _ab_worker._main_graph(graphs, {"init": 1, "train": 0})["signature"] == "train"
    assert _ab_worker._main_graph(graphs)["signature"] == "init"  # no snapshot: every graph counts
    assert _ab_worker._main_graph(graphs, {"init": 1, "train": 11}) is None


def test_the_worker_records_the_main_graphs_autotune_state_when_graphi_reports_one():
    autotune = {"state": "adopted", "progress": "8/8", "chosen": [2, 1], "cost_ms": 0.7, "reason": "faster"}
    info = {"executors": 1, "threads_per_executor": 2, "graphs": [
        {"signature": "init", "node_count": 9, "steps_run": 1},
        {"signature": "train", "node_count": 50, "steps_run": 5, "executors": 2, "threads_per_executor": 1,
         "source": "autotune", "autotune": autotune}]}
    setting = _ab_worker.setting_from_info(info, {"init": 1})
    assert setting["signature"] == "train" and setting["autotune"] == autotune
    del info["graphs"][1]["autotune"]  # a GRAPHI without online autotuning
    assert "autotune" not in _ab_worker.setting_from_info(info, {"init": 1})


def test_settling_under_a_load_records_what_the_autotuner_decided_under_it(monkeypatch):
    statuses = iter([{"state": "exploring", "progress": "3/8"},
                     {"state": "adopted", "chosen": [0, 0, 2, 1], "reason": "faster", "load_class": "under_load_4",
                      "progress": "8/8", "cost_ms": 0.0}])
    monkeypatch.setattr(_ab_worker._clients, "serve", lambda step, clients, seconds: {})
    monkeypatch.setattr(_ab_worker, "_graphi_setting", lambda built: {"autotune": next(statuses)})
    args = argparse.Namespace(executor="GRAPHI", settle_autotune=100)
    settled = _ab_worker._settle_under_load(lambda: None, 4, args, {})
    assert settled["phases"] == 2 and settled["autotune_state"] == "adopted"
    assert settled["autotune"] == {"state": "adopted", "chosen": [0, 0, 2, 1], "reason": "faster",
                                   "load_class": "under_load_4"}
    stock = argparse.Namespace(executor="DEFAULT", settle_autotune=0)
    assert _ab_worker._settle_under_load(lambda: None, 4, stock, {})["autotune"] is None


@pytest.mark.parametrize("argv0, orig_argv, cli_process", [
    ("/usr/bin/graphi-tf", ["python3", "/usr/bin/graphi-tf", "ab"], True),
    ("-m", ["python3", "-m", "graphi_tf.lab.cli", "ab"], True),
    ("-m", ["python3", "-u", "-m", "graphi_tf.lab._ab_worker", "--role", "arm"], True),
    ("my_training.py", ["python3", "my_training.py"], False),
    ("-m", ["python3", "-m", "pytest", "-m", "slow"], False),
])
def test_only_command_line_processes_turn_tensorflows_info_lines_off(argv0, orig_argv, cli_process):
    assert _cli_logging.started_as_cli(argv0, orig_argv) is cli_process


def test_tensorflows_import_info_records_are_dropped_and_everything_else_is_kept():
    captured = (
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        "I0000 00:00:1796235592.037294    5043 port.cc:153] oneDNN custom operations are on.\n"
        "I0000 00:00:1796235592.078678    5043 cpu_feature_guard.cc:227] This TensorFlow binary is optimized.\n"
        "To enable the following instructions: AVX2 AVX512F, in other operations, rebuild TensorFlow.\n"
        "W0000 00:00:1796235592.078678    5043 loader.cc:1] a warning\n"
        "/x/y.py:3: DeprecationWarning: old\n"
        "  old()\n"
        "Traceback (most recent call last):\n")
    assert _cli_logging.without_tensorflow_info_lines(captured) == (
        "W0000 00:00:1796235592.078678    5043 loader.cc:1] a warning\n"
        "/x/y.py:3: DeprecationWarning: old\n"
        "  old()\n"
        "Traceback (most recent call last):\n")


def test_a_missing_script_is_an_error_naming_it(tmp_path, capsys):
    missing = str(tmp_path / "nope.py")
    assert cli.main(["ab", "--script", missing, "--out-dir", str(tmp_path / "out")]) == 2
    assert f"script {missing!r} does not exist" in capsys.readouterr().err


@pytest.mark.timeout(300)  # 5 processes: tuning, 2 arms, the two references (W and CP)
def test_end_to_end_on_a_user_script_with_stock_and_tuned_arms(tmp_path):
    script = tmp_path / "tiny_step.py"
    script.write_text(TF1_SCRIPT)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "graphi_tf.lab.cli", "ab", "--script", str(script), "--warmup", "1",
         "--steps", "2", "--repeats", "1", "--arms", "stock_default,graphi_tuned",
         "--tune-warmup", "1", "--tune-steps", "1", "--trace-steps", "1", "--out-dir", str(out)],
        env=_env(), capture_output=True, text=True, timeout=290)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "ab.json").read_text())
    report.check_schema(doc)
    assert set(doc["arms"]) == {"stock_default", "graphi_tuned"}
    assert all(a["status"] == "ok" for a in doc["arms"].values()), doc["arms"]
    assert len(doc["arms"]["stock_default"]["rounds"][0]["step_times_ms"]) == 2

    proof = doc["arms"]["stock_default"]["proof"]
    assert proof["graphi_did_nothing"] is True
    assert proof["graphi_threads"] == [] and proof["graphi_graphs_run"] == 0

    setting = doc["arms"]["graphi_tuned"]["setting"]
    assert setting["source"] == "cache" and setting["first_step"]["source"] == "cache"
    assert doc["tune"]["ok"] and doc["tune"]["cache_dir"] == str(out / "graphi_cache")
    assert [setting["executors"], setting["threads_per_executor"]] == doc["tune"]["result"]["best"]

    assert doc["bound"]["status"] == "ok" and doc["bound"]["lower_bound_ms"] > 0
    # W from one-core op times, CP from ops run alone on every usable core (one run on one core)
    assert doc["bound"]["critical_path_intra"] == doc["machine"]["usable_cores"]
    assert doc["machine"]["cpu_model"]
    assert doc["examples_per_step"] == 16
    assert (out / "ab.md").read_text().count("| graphi_tuned |") == 1
    assert (out / "ab.png").stat().st_size > 1000
    assert "stock_default" in proc.stdout
    # no graphi_auto arm: GRAPHI tuned leads the output
    assert proc.stdout.startswith("GRAPHI tuned ran ") and "times as fast as stock default" in proc.stdout


def test_a_failing_arm_is_reported_failed_and_the_others_still_run(tmp_path):
    script = tmp_path / "picky_step.py"
    script.write_text(FAILING_SCRIPT)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "graphi_tf.lab.cli", "ab", "--script", str(script), "--warmup", "1",
         "--steps", "2", "--repeats", "1", "--arms", "stock_i1_a1,stock_default", "--trace-steps", "0",
         "--no-png", "--out-dir", str(out)],
        env=_env(), capture_output=True, text=True, timeout=110)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "ab.json").read_text())
    failed = doc["arms"]["stock_i1_a1"]
    assert failed["status"] == "failed"
    assert "boom: this step refuses inter_op=1" in failed["error"]
    assert "boom" in failed["stderr_tail"]
    assert doc["arms"]["stock_default"]["status"] == "ok"
    assert "arm stock_i1_a1 failed" in proc.stdout


@pytest.mark.timeout(300)
def test_graphi_auto_gets_a_new_empty_cache_in_every_process_and_the_parent_prints_no_tf_banner(tmp_path):
    script = tmp_path / "fn_step.py"
    script.write_text(FUNCTION_SCRIPT)
    out = tmp_path / "out"
    env = _env()
    del env["TF_CPP_MIN_LOG_LEVEL"]  # as a user runs it: TensorFlow would print its INFO banners
    proc = subprocess.run(
        [sys.executable, "-m", "graphi_tf.lab.cli", "ab", "--script", str(script), "--warmup", "1",
         "--steps", "1", "--repeats", "2", "--arms", "graphi_auto,graphi_untuned", "--trace-steps", "0",
         "--no-png", "--out-dir", str(out)],
        env=env, capture_output=True, text=True, timeout=290)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for banner in ("I tensorflow", "cpu_feature_guard", "This TensorFlow binary is optimized",
                   "oneDNN custom operations", "absl::InitializeLog"):
        assert banner not in proc.stdout + proc.stderr

    doc = json.loads((out / "ab.json").read_text())
    auto, untuned = doc["arms"]["graphi_auto"]["rounds"], doc["arms"]["graphi_untuned"]["rounds"]
    assert all(r["ok"] for r in auto + untuned), doc["arms"]
    dirs = [r["cache_dir"] for r in auto + untuned]
    assert len(set(dirs)) == 4 and all(d and not os.path.exists(d) for d in dirs)  # removed after each
    assert [r["cache_entries_at_start"] for r in auto + untuned] == [[]] * 4
    assert [r["env"] for r in auto] == [{"GRAPHI_CACHE_DIR": d} for d in dirs[:2]]
    assert [r["env"] for r in untuned] == [{"GRAPHI_AUTOTUNE": "0", "GRAPHI_CACHE_DIR": d} for d in dirs[2:]]


def test_worker_runs_a_tf_function_script_on_the_arms_executor(tmp_path):
    script = tmp_path / "fn_step.py"
    script.write_text(FUNCTION_SCRIPT)
    env = dict(_env(), GRAPHI_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, "-m", "graphi_tf.lab._ab_worker", "--role", "arm", "--executor", "GRAPHI",
         "--script", str(script), "--warmup", "1", "--steps", "1"],
        env=env, capture_output=True, text=True, timeout=110)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["ok"] and result["setting"]["source"] == "default"
    assert result["setting"]["node_count"] > 0 and len(result["step_times_ms"]) == 1


def test_worker_times_graphi_auto_only_after_online_autotuning_has_settled(tmp_path):
    script = tmp_path / "step.py"
    script.write_text(TF1_SCRIPT)
    env = dict(_env(), GRAPHI_CACHE_DIR=str(tmp_path / "cache"), GRAPHI_AUTOTUNE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "graphi_tf.lab._ab_worker", "--role", "arm", "--executor", "GRAPHI",
         "--script", str(script), "--warmup", "1", "--steps", "2", "--settle-autotune", "20000"],
        env=env, capture_output=True, text=True, timeout=110)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    settle = result["autotune_settle"]
    assert 0 < settle["steps"] < 20000 and settle["seconds"] > 0
    assert settle["state"] in ("adopted", "kept_default")
    assert result["setting"]["autotune_at_timing_start"]["state"] == settle["state"]


def test_workers_import_the_running_graphi_tf_even_from_a_directory_that_shadows_it(tmp_path, monkeypatch):
    # A user in a source checkout after `pip install .`: ./graphi_tf/ has no built library.
    shadow = tmp_path / "checkout"
    (shadow / "graphi_tf").mkdir(parents=True)
    (shadow / "graphi_tf" / "__init__.py").write_text("raise ImportError('the shadowing source tree')\n")
    script = tmp_path / "step.py"
    script.write_text(TF1_SCRIPT)
    monkeypatch.chdir(shadow)
    rec = ab.run_process(sys.executable, ["--role", "arm", "--executor", "DEFAULT", "--script", str(script),
                                          "--warmup", "0", "--steps", "1"], ab.worker_env(), 110)
    assert rec["ok"], rec["stderr_tail"]


def _load_ab_all():
    import importlib.util

    spec = importlib.util.spec_from_file_location("ab_all", os.path.join(ROOT, "tools", "ab_all.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ab_all_help_shows_the_per_size_step_defaults(capsys):
    ab_all = _load_ab_all()
    with pytest.raises(SystemExit):
        ab_all.parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for size, n in ab_all.SIZE_DEFAULTS.items():
        assert f"{size}: {n['warmup']} warm-up + {n['steps']} timed" in out


def test_ab_all_runs_five_rounds_of_small_three_of_medium_and_two_of_large_cases():
    ab_all = _load_ab_all()
    chosen = ab_all.parse_args([]).size_defaults
    assert {size: n["repeats"] for size, n in chosen.items()} == {"small": 5, "medium": 3, "large": 2}
    assert ab_all.parse_args(["--repeats", "1"]).size_defaults["small"]["repeats"] == 1
    assert "graphi_auto" in ab_all.parse_args([]).arms


def test_ab_all_summary_rewrites_only_the_readme_results_section(tmp_path):
    ab_all = _load_ab_all()
    results = tmp_path / "results"
    results.mkdir()
    raw = {"case": {"name": "lstm_small_graph", "kind": "model", "model": "lstm", "size": "small",
                    "mode": "graph"},
           "settings": {"repeats": 1},
           "arms": {"stock_default": {"executor": "DEFAULT", "rounds": [{"round": 0, "ok": True,
                                                                        "step_times_ms": [4.0]}]},
                    "graphi_auto": {"executor": "GRAPHI", "rounds": [{"round": 0, "ok": True,
                                                                      "step_times_ms": [1.6]}]},
                    "graphi_tuned": {"executor": "GRAPHI", "rounds": [{"round": 0, "ok": True,
                                                                       "step_times_ms": [2.0]}]}}}
    (results / "lstm_small_graph.json").write_text(report.render_json(report.build_report(raw)))
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{ab_all.BEGIN}\nold results\n{ab_all.END}\noutro\n")
    ab_all.main(["--summary-only", "--results-dir", str(results), "--readme", str(readme)])
    text = readme.read_text()
    assert text.startswith(f"intro\n{ab_all.BEGIN}\n") and text.endswith(f"{ab_all.END}\noutro\n")
    assert "old results" not in text and "| lstm_small_graph |" in text and "2.00 ± 0.00" in text
    assert "| GRAPHI auto ms |" in text and "| auto vs default | auto vs best |" in text
    row = next(x for x in text.splitlines() if x.startswith("| lstm_small_graph |"))
    assert "| 1.60 |" in row and "| 2.50 ± 0.00 |" in row  # GRAPHI auto ms, auto vs default
    assert (results / "results.md").exists() and (results / "results.png").stat().st_size > 0
