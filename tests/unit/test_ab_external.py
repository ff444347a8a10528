"""graphi-tf ab on users' own models: --saved-model DIR and --keras-model FILE.keras end to end
(each arm in its own worker process, which rebuilds the step from the case's flags), and the
clear usage error for every bad request before any arm starts, with nothing written."""
import json
import os
import subprocess
import sys

import keras
import pytest
import tensorflow as tf

from graphi_tf.lab import cli, cli_common, report

pytestmark = pytest.mark.timeout(200)  # worker processes start TensorFlow; slow on a shared machine

FAST = ["--repeats", "1", "--warmup", "1", "--steps", "2", "--no-png"]


class _TwoLayers(tf.Module):
    """y = dense(tanh(x W1)) with x of shape [?, 4]: a tf.Variable and a Keras 3 layer, whose
    variables the TF1 loader does not restore from a tf.saved_model.save'd module
    (tensorflow/tensorflow#72963); a second signature, with an unknown inner dimension, uses
    W1 alone."""

    def __init__(self):
        super().__init__()
        self.w1 = tf.Variable(tf.random.stateless_uniform([4, 8], seed=[1, 2]))
        keras.utils.set_random_seed(3)
        self.dense = keras.layers.Dense(3, name="dense")
        self.dense.build((None, 8))

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def predict(self, x):
        return {"y": self.dense(tf.tanh(tf.matmul(x, self.w1)))}

    @tf.function(input_signature=[tf.TensorSpec([None, None, 4], tf.float32, name="seq")])
    def pooled(self, seq):
        return {"y": tf.matmul(tf.reduce_mean(seq, axis=1), self.w1)}


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("ab_saved") / "two_layers")
    module = _TwoLayers()
    tf.saved_model.save(module, path, signatures={"serving_default": module.predict, "pooled": module.pooled})
    return path


@pytest.fixture(scope="module")
def keras_file(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("ab_keras") / "small.keras")
    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((6,), name="features"), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    model.save(path)
    return path


def _ab(env, argv, out, timeout=190):
    proc = subprocess.run([sys.executable, "-m", "graphi_tf.lab.cli", "ab", *argv, "--out-dir", str(out), *FAST],
                          env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "ab.json").read_text())
    report.check_schema(doc)
    assert all(a["status"] == "ok" for a in doc["arms"].values()), doc["arms"]
    return doc, proc


# ------------------------------------------------------------------------ end to end


@pytest.mark.timeout(300)  # 4 processes: 2 arms, the two references (W and CP)
def test_ab_runs_a_saved_model_and_bounds_it_through_a_session_load(saved_model, tmp_path, cli_env):
    # The model's Keras layer fails on the TF1 loader ("Could not find variable dense/bias"):
    # the bound is measured all the same.
    doc, proc = _ab(cli_env, ["--saved-model", saved_model, "--batch", "2", "--arms", "stock_default,graphi_untuned",
                     "--trace-steps", "1"], tmp_path / "out", timeout=290)
    assert doc["case"]["name"] == "two_layers_tf2" and doc["case"]["kind"] == "saved_model"
    assert doc["case"]["path"] == saved_model and doc["case"]["batch"] == 2
    assert doc["examples_per_step"] == 2 and doc["graph_nodes"] > 0
    assert doc["arms"]["graphi_untuned"]["setting"]["signature"]  # a GRAPHI graph ran
    assert doc["arms"]["stock_default"]["proof"]["graphi_did_nothing"] is True
    assert doc["bound"]["status"] == "ok" and "into a TF1 Session" in doc["bound"]["note"]
    assert f"SavedModel {saved_model} (signature serving_default, tag serve, loader tf2, batch 2)" in proc.stdout


def test_ab_runs_the_tf1_loader_on_a_named_signature_with_an_explicit_input_shape(saved_model, tmp_path, cli_env):
    doc, _ = _ab(cli_env, ["--saved-model", saved_model, "--signature", "pooled", "--loader", "tf1",
                  "--input", "seq=2x5x4", "--arms", "stock_default,graphi_untuned", "--trace-steps", "0"],
                 tmp_path / "out")
    assert doc["case"]["name"] == "two_layers_tf1" and doc["case"]["inputs"] == ["seq=2x5x4"]
    assert doc["bound"]["status"] == "skipped"


@pytest.mark.parametrize("train, name", [(False, "small_infer"), (True, "small_train")])
def test_ab_runs_a_keras_model_and_says_why_it_has_no_bound(keras_file, tmp_path, train, name, cli_env):
    doc, proc = _ab(cli_env, ["--keras-model", keras_file, "--batch", "4", "--arms", "stock_default,graphi_untuned"]
                    + (["--train"] if train else []), tmp_path / "out")
    assert doc["case"]["name"] == name and doc["case"]["train"] is train
    assert doc["examples_per_step"] == 4
    assert doc["arms"]["graphi_untuned"]["setting"]["signature"]
    assert doc["bound"]["status"] == "skipped" and "no TF1 Session" in doc["bound"]["note"]
    assert "physical limit: not measured (a .keras step" in proc.stdout


# ------------------------------------------------------------------------ bad requests


def _usage_error(capsys, tmp_path, argv):
    out = tmp_path / "out"
    assert cli.main(["ab", *argv, "--out-dir", str(out), *FAST]) == 2
    assert not out.exists()  # nothing half-written
    return capsys.readouterr().err


def test_a_missing_saved_model_directory_is_a_usage_error(capsys, tmp_path):
    err = _usage_error(capsys, tmp_path, ["--saved-model", str(tmp_path / "nowhere"), "--batch", "2"])
    assert "SavedModel directory" in err and "does not exist" in err


def test_a_directory_without_a_saved_model_is_a_usage_error(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    err = _usage_error(capsys, tmp_path, ["--saved-model", str(tmp_path / "empty"), "--batch", "2"])
    assert "holds no SavedModel" in err


def test_an_unknown_signature_lists_the_signatures(capsys, tmp_path, saved_model):
    err = _usage_error(capsys, tmp_path, ["--saved-model", saved_model, "--batch", "2", "--signature", "predict"])
    assert "signature 'predict' is not in" in err and "its signatures: pooled, serving_default" in err


def test_an_unknown_tag_lists_the_tag_sets(capsys, tmp_path, saved_model):
    err = _usage_error(capsys, tmp_path, ["--saved-model", saved_model, "--batch", "2", "--tag", "gpu"])
    assert "tag 'gpu' matches no MetaGraph" in err and "its tag sets: serve" in err


def test_an_unknown_dimension_without_batch_names_batch(capsys, tmp_path, saved_model):
    err = _usage_error(capsys, tmp_path, ["--saved-model", saved_model])
    assert "dimension 0 is unknown" in err and "--batch N" in err and "--input x=8,4" in err


@pytest.mark.parametrize("value", ["x:2,4", "x=2,0", "x=2x4,1"])
def test_a_malformed_input_shows_the_form(capsys, tmp_path, saved_model, value):
    err = _usage_error(capsys, tmp_path, ["--saved-model", saved_model, "--input", value])
    assert "NAME=SHAPE" in err and repr(value) in err


def test_an_option_of_another_kind_of_case_is_a_usage_error(capsys, tmp_path, saved_model):
    err = _usage_error(capsys, tmp_path, ["--model", "lstm", "--signature", "pooled"])
    assert "--signature: for --saved-model or --keras-model only" in err
    err = _usage_error(capsys, tmp_path, ["--saved-model", saved_model, "--batch", "2", "--train"])
    assert "--train" in err and "--keras-model only" in err


def test_a_file_that_is_not_a_keras_file_is_a_usage_error(capsys, tmp_path):
    path = tmp_path / "model.h5"
    path.write_bytes(b"")
    err = _usage_error(capsys, tmp_path, ["--keras-model", str(path), "--batch", "2"])
    assert "is not a .keras file" in err


class Tripler(keras.layers.Layer):
    def call(self, x):
        return 3.0 * x


def test_a_keras_file_that_needs_custom_objects_is_a_usage_error_before_any_arm(capsys, tmp_path):
    # Saved from a module no worker can import: Keras cannot find the class when it loads.
    layer = type("Tripler", (Tripler,), {"__module__": "graphi_tf_test_not_a_module"})
    path = str(tmp_path / "custom.keras")
    keras.Sequential([keras.Input((4,), name="features"), layer()]).save(path)
    err = _usage_error(capsys, tmp_path, ["--keras-model", path, "--batch", "2"])
    assert "needs custom objects" in err and "Tripler" in err and "register_keras_serializable" in err


def test_training_a_keras_model_saved_uncompiled_is_a_usage_error(capsys, tmp_path):
    path = str(tmp_path / "plain.keras")
    keras.Sequential([keras.Input((4,), name="features"), keras.layers.Dense(2)]).save(path)
    err = _usage_error(capsys, tmp_path, ["--keras-model", path, "--batch", "2", "--train"])
    assert "saved without compile()" in err


# ------------------------------------------------------------------------ the case


def test_the_reference_of_a_tf2_saved_model_is_its_session_load_and_a_keras_file_has_none(saved_model, keras_file):
    parser = cli._build_parser()
    saved = cli_common.Case.from_args(parser.parse_args(["ab", "--saved-model", saved_model, "--batch", "2"]))
    reference, note = saved.reference_case()
    assert reference.external.loader == "tf2-session" and "TF1 Session" in note
    assert reference.to_argv()[-2:] == ["--seed", "0"] and "--loader" in reference.to_argv()
    keras_case = cli_common.Case.from_args(parser.parse_args(["ab", "--keras-model", keras_file]))
    assert keras_case.reference_case()[0] is None


def test_tunes_batch_flag_is_the_lstms_unless_an_external_model_is_given(saved_model):
    parser = cli._build_parser()
    lstm = cli_common.Case.from_args(parser.parse_args(["tune", "--model", "lstm", "--batch", "4"]))
    assert lstm.hparams == (("batch", 4),) and lstm.external is None
    saved = cli_common.Case.from_args(parser.parse_args(["tune", "--saved-model", saved_model, "--batch", "4"]))
    assert saved.hparams == () and saved.external.batch == 4
