"""graphi_tf.lab.external_models: NAME=SHAPE parsing, input shapes and data, and the clear errors
for every bad SavedModel or Keras request (GRAPHI-vs-DEFAULT equality is in
tests/conformance/test_external_models_conformance.py)."""
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from graphi_tf.lab import external_models as em

pytestmark = pytest.mark.timeout(120, method="thread")


# ------------------------------------------------------------------------ NAME=SHAPE


@pytest.mark.parametrize("text", ["x=8,224,224,3", "x=8x224x224x3", "x=8, 224 ,224,3"])
def test_input_shape_takes_commas_or_x_between_dimensions(text):
    assert em.parse_input_shape(text) == ("x", (8, 224, 224, 3))


def test_input_shape_of_one_dimension():
    assert em.parse_input_shape("ids=16") == ("ids", (16,))


@pytest.mark.parametrize("text", ["x", "=8,4", "x=", "x=8,,4", "x=8,0", "x=-1,4", "x=8,?", "x=8x4,2", "x=8=4",
                                  "x=8.5", "a b=8"])
def test_malformed_input_shape_is_a_usage_error_that_shows_the_form(text):
    with pytest.raises(em.UsageError, match="NAME=SHAPE"):
        em.parse_input_shape(text)


def test_an_input_given_twice_is_a_usage_error():
    with pytest.raises(em.UsageError, match="'x' is given twice"):
        em.parse_input_shapes(["x=8,4", "x=2,4"])


def test_usage_error_is_a_value_error():
    assert issubclass(em.UsageError, ValueError)


# ------------------------------------------------------------------------ shapes and data

SPECS = [em.InputSpec("image", "float32", (None, 4, 4, 3)), em.InputSpec("ids", "int32", (None, None))]


def test_batch_sets_the_unknown_leading_dimension_and_explicit_shapes_the_rest():
    shapes = em.resolve_input_shapes(SPECS, batch=8, inputs=["ids=8,20"])
    assert shapes == {"image": (8, 4, 4, 3), "ids": (8, 20)}


def test_an_unknown_leading_dimension_without_batch_is_a_usage_error_naming_batch():
    with pytest.raises(em.UsageError, match=r"'image' has shape \[\?, 4, 4, 3\]: dimension 0 is unknown.*--batch"):
        em.resolve_input_shapes(SPECS[:1])


def test_an_unknown_inner_dimension_needs_an_explicit_shape_not_batch():
    with pytest.raises(em.UsageError, match=r"'ids'.*dimension 1 is unknown.*\(--input ids=8,16\)$"):
        em.resolve_input_shapes(SPECS, batch=8)


def test_several_unknown_dimensions_are_named_together():
    with pytest.raises(em.UsageError, match=r"'ids' has shape \[\?, \?\]: dimensions 0, 1 are unknown.*--batch"):
        em.resolve_input_shapes(SPECS[1:])


def test_an_explicit_shape_must_fit_the_declared_one():
    with pytest.raises(em.UsageError, match=r"image=\[8, 5, 4, 3\] does not fit .*\[\?, 4, 4, 3\]"):
        em.resolve_input_shapes(SPECS, batch=8, inputs={"image": (8, 5, 4, 3), "ids": (8, 2)})


def test_an_explicit_shape_for_an_input_the_model_lacks_lists_its_inputs():
    with pytest.raises(em.UsageError, match=r"'pixels' is not an input.*image \[\?, 4, 4, 3\], ids \[\?, \?\]"):
        em.resolve_input_shapes(SPECS, batch=8, inputs=["pixels=8,4,4,3"])


@pytest.mark.parametrize("batch", [0, -2, 1.5, True, "8"])
def test_a_bad_batch_is_a_usage_error(batch):
    with pytest.raises(em.UsageError, match="batch="):
        em.resolve_input_shapes(SPECS[:1], batch=batch)


def test_inputs_are_seeded_and_of_the_declared_dtype_and_shape():
    shapes = {"image": (2, 4, 4, 3), "ids": (2, 5)}
    first, again, other = (em.make_inputs(SPECS, shapes, seed) for seed in (3, 3, 4))
    assert first["image"].dtype == np.float32 and first["image"].shape == (2, 4, 4, 3)
    assert first["ids"].dtype == np.int32 and 0 <= first["ids"].min() and first["ids"].max() < em.INT_INPUT_HIGH
    np.testing.assert_array_equal(first["image"], again["image"])
    assert not np.array_equal(first["image"], other["image"])


def test_a_string_input_cannot_be_generated():
    with pytest.raises(em.UsageError, match="'text' has dtype string"):
        em.make_inputs([em.InputSpec("text", "string", (2,))], {"text": (2,)})


def test_labels_fit_the_loss():
    sparse = em.labels_for_loss("sparse_categorical_crossentropy", (6, 4), seed=1)
    assert sparse.shape == (6,) and sparse.dtype == np.int32 and sparse.max() < 4
    onehot = em.labels_for_loss(keras.losses.CategoricalCrossentropy(), (6, 4), seed=1)
    assert onehot.shape == (6, 4) and set(onehot.sum(axis=1)) == {1.0}
    binary = em.labels_for_loss("binary_crossentropy", (6, 1))
    assert set(np.unique(binary)) <= {0.0, 1.0}
    regression = em.labels_for_loss(keras.losses.mean_squared_error, (6, 2))
    assert regression.shape == (6, 2) and regression.dtype == np.float32


def test_labels_for_ctc_are_a_usage_error():
    with pytest.raises(em.UsageError, match="CTC"):
        em.labels_for_loss("ctc", (2, 10, 5))


# ------------------------------------------------------------------------ SavedModel errors


class _Doubler(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def double(self, x):
        return {"y": 2.0 * x}

    @tf.function(input_signature=[tf.TensorSpec([None, None, 3], tf.float32, name="seq")])
    def total(self, seq):
        return {"sum": tf.reduce_sum(seq, axis=[1, 2])}


@pytest.fixture(scope="module")
def tiny_saved_model(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("saved") / "doubler")
    module = _Doubler()
    tf.saved_model.save(module, path, signatures={"serving_default": module.double, "total": module.total})
    return path


def test_a_missing_directory_is_a_usage_error(tmp_path):
    with pytest.raises(em.UsageError, match="does not exist"):
        em.saved_model_step(str(tmp_path / "nowhere"), "DEFAULT", batch=2)


def test_a_directory_without_a_saved_model_is_a_usage_error(tmp_path):
    (tmp_path / "variables").mkdir()
    with pytest.raises(em.UsageError, match="holds no SavedModel: it has no saved_model.pb"):
        em.saved_model_step(str(tmp_path), "DEFAULT", batch=2)


def test_a_corrupt_saved_model_file_is_a_usage_error(tmp_path):
    (tmp_path / "saved_model.pb").write_bytes(b"\xff\xfenot a protocol buffer")
    with pytest.raises(em.UsageError, match="cannot be read"):
        em.check_saved_model(str(tmp_path), batch=2)


def test_an_unknown_signature_lists_the_signatures_that_exist(tiny_saved_model):
    with pytest.raises(em.UsageError, match=r"signature 'predict' is not in .*its signatures: serving_default, total$"):
        em.saved_model_step(tiny_saved_model, "DEFAULT", signature="predict", batch=2)


def test_an_unknown_tag_lists_the_tag_sets_that_exist(tiny_saved_model):
    with pytest.raises(em.UsageError, match=r"tag 'gpu' matches no MetaGraph .*its tag sets: serve$"):
        em.saved_model_step(tiny_saved_model, "DEFAULT", tag="gpu", batch=2)


def test_an_unknown_dimension_with_no_batch_is_a_usage_error(tiny_saved_model):
    with pytest.raises(em.UsageError, match=r"'x' has shape \[\?, 4\]: dimension 0 is unknown"):
        em.saved_model_step(tiny_saved_model, "DEFAULT")


def test_a_malformed_input_is_a_usage_error(tiny_saved_model):
    with pytest.raises(em.UsageError, match="malformed"):
        em.saved_model_step(tiny_saved_model, "DEFAULT", inputs=["x:2,4"])


@pytest.mark.parametrize("setting, value", [("executor", "FAST"), ("loader", "tf3"), ("seed", -1), ("inter_op", 0)])
def test_a_bad_option_names_the_setting_and_allowed_values(tiny_saved_model, setting, value):
    with pytest.raises(em.UsageError, match=f"{setting}={value!r} is invalid; allowed: "):
        em.saved_model_step(tiny_saved_model, **{"executor": "DEFAULT", "batch": 2, setting: value})


def test_check_saved_model_reports_the_signature_and_concrete_shapes(tiny_saved_model):
    checked = em.check_saved_model(tiny_saved_model, signature="total", inputs=["seq=2x5x3"])
    assert checked.tags == ("serve",) and checked.outputs == ("sum",)
    assert checked.inputs == (em.InputSpec("seq", "float32", (None, None, 3)),)
    assert checked.shapes == {"seq": (2, 5, 3)}


def test_a_bad_request_fails_before_anything_is_loaded(tiny_saved_model, monkeypatch):
    def must_not_load(*args, **kwargs):
        raise AssertionError("the SavedModel was loaded before the request was checked")

    monkeypatch.setattr(tf.saved_model, "load", must_not_load)
    monkeypatch.setattr(tf.compat.v1.saved_model.loader, "load", must_not_load)
    for loader in em.LOADERS:
        with pytest.raises(em.UsageError, match="dimension 1 is unknown"):
            em.saved_model_step(tiny_saved_model, "DEFAULT", signature="total", batch=2, loader=loader)


@pytest.mark.parametrize("loader", em.LOADERS)
def test_a_saved_model_step_runs_the_signature_on_its_inputs(tiny_saved_model, loader):
    with em.saved_model_step(tiny_saved_model, "DEFAULT", batch=3, loader=loader, seed=5) as step:
        out = step.outputs()
        assert step.examples_per_step == 3 and step.graph_nodes > 0
        np.testing.assert_allclose(out["y"], 2.0 * step.inputs["x"])


@pytest.fixture(scope="module")
def keras_saved_model(tmp_path_factory):
    """A Keras 3 model with variables saved by tf.saved_model.save, whose variables the TF1
    loader leaves unrestored (tensorflow/tensorflow#72963)."""
    path = str(tmp_path_factory.mktemp("keras_saved") / "dense")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,), name="features"), keras.layers.Dense(3, name="dense")])
    tf.saved_model.save(model, path)
    return path


def test_the_tf2_session_loader_restores_a_keras_saved_model_the_tf1_loader_cannot(keras_saved_model):
    with em.saved_model_step(keras_saved_model, "DEFAULT", batch=2, loader="tf2", seed=1) as eager:
        expected = eager.outputs()
    with em.saved_model_step(keras_saved_model, "DEFAULT", batch=2, loader="tf2-session", seed=1) as session:
        got = session.outputs()
    assert got.keys() == expected.keys()
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-6)
    with pytest.raises(tf.errors.FailedPreconditionError, match="Could not find variable"):
        with em.saved_model_step(keras_saved_model, "DEFAULT", batch=2, loader="tf1", seed=1) as tf1:
            tf1.outputs()


def test_a_tf2_session_step_traces_the_models_ops(keras_saved_model):
    with em.saved_model_step(keras_saved_model, "DEFAULT", batch=2, loader="tf2-session") as step:
        metadata = step.run_traced()
    names = {node.node_name for dev in metadata.step_stats.dev_stats for node in dev.node_stats}
    # The dense layer's matmul + bias (oneDNN fuses them into one node named after BiasAdd).
    assert any(name.endswith("BiasAdd") for name in names), sorted(names)


def test_a_tf2_step_has_no_run_traced_and_says_which_loaders_do(tiny_saved_model):
    with em.saved_model_step(tiny_saved_model, "DEFAULT", batch=2, loader="tf2") as step:
        with pytest.raises(em.UsageError, match="loader 'tf1' or 'tf2-session'"):
            step.run_traced()


# ------------------------------------------------------------------------ Keras errors


def _dense_model():
    return keras.Sequential([keras.Input((4,), name="features"), keras.layers.Dense(2)])


def test_a_missing_keras_file_is_a_usage_error(tmp_path):
    with pytest.raises(em.UsageError, match="does not exist"):
        em.keras_model_step(str(tmp_path / "model.keras"), "DEFAULT", batch=2)


def test_a_file_that_is_not_a_keras_file_is_a_usage_error(tmp_path):
    path = tmp_path / "model.h5"
    path.write_bytes(b"")
    with pytest.raises(em.UsageError, match=r"is not a \.keras file"):
        em.keras_model_step(str(path), "DEFAULT", batch=2)


def test_a_corrupt_keras_file_is_a_usage_error(tmp_path):
    path = tmp_path / "model.keras"
    path.write_bytes(b"not a zip archive")
    with pytest.raises(em.UsageError, match="cannot be loaded as a Keras model"):
        em.keras_model_step(str(path), "DEFAULT", batch=2)


class Tripler(keras.layers.Layer):
    def call(self, x):
        return 3.0 * x


def _save_with_unfindable_layer(path):
    # Saved from a module a loading process cannot import: Keras cannot find the class alone.
    layer = type("Tripler", (Tripler,), {"__module__": "graphi_tf_test_not_a_module"})
    model = keras.Sequential([keras.Input((4,), name="features"), layer()])
    model.save(path)
    return layer


def test_a_keras_file_that_needs_custom_objects_says_how_to_supply_them(tmp_path):
    path = str(tmp_path / "custom.keras")
    _save_with_unfindable_layer(path)
    with pytest.raises(em.UsageError, match=r"needs custom objects .* cannot find: Tripler\. Supply them: .*"
                                            r"register_keras_serializable.*custom_objects="):
        em.keras_model_step(path, "DEFAULT", batch=2)


def test_custom_objects_supplied_load_the_model(tmp_path):
    path = str(tmp_path / "custom.keras")
    layer = _save_with_unfindable_layer(path)
    with em.keras_model_step(path, "DEFAULT", batch=2, custom_objects={"Tripler": layer}) as step:
        np.testing.assert_allclose(step.outputs()["output"], 3.0 * step.inputs["features"], rtol=1e-6)


def test_training_a_model_saved_uncompiled_is_a_usage_error(tmp_path):
    path = str(tmp_path / "plain.keras")
    _dense_model().save(path)
    with pytest.raises(em.UsageError, match=r"saved without compile\(\)"):
        em.keras_model_step(path, "DEFAULT", batch=2, train=True)


def test_a_keras_input_shape_is_checked_before_the_model_loads(tmp_path):
    with pytest.raises(em.UsageError, match="malformed"):
        em.keras_model_step(str(tmp_path / "absent.keras"), "DEFAULT", inputs=["features"])


def test_loss_value_needs_a_training_step(tmp_path):
    path = str(tmp_path / "plain.keras")
    _dense_model().save(path)
    with em.keras_model_step(path, "DEFAULT", batch=2) as step:
        assert step.examples_per_step == 2 and step.graph_nodes > 0
        with pytest.raises(em.UsageError, match="train=True"):
            step.loss_value()


# ------------------------------------------------------------------------ the request a command line makes


def _parse(argv):
    import argparse

    parser = argparse.ArgumentParser()
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--model")
    em.add_arguments(parser, what)
    return em.from_args(parser.parse_args(argv))


def test_flags_give_a_request_that_round_trips_through_argv(tiny_saved_model):
    request = _parse(["--saved-model", tiny_saved_model, "--signature", "total", "--loader", "tf1",
                      "--batch", "2", "--input", "seq=2x5x3"])
    assert request == em.ExternalModel(saved_model=tiny_saved_model, signature="total", loader="tf1", batch=2,
                                       inputs=("seq=2x5x3",))
    assert _parse(request.argv()) == request
    assert request.name == "doubler_tf1"
    assert request.check().shapes == {"seq": (2, 5, 3)}


def test_no_model_flags_give_no_request():
    assert _parse(["--model", "lstm"]) is None


@pytest.mark.parametrize("argv, message", [
    (["--model", "lstm", "--batch", "4"], "--batch: for --saved-model or --keras-model only"),
    (["--keras-model", "m.keras", "--signature", "s", "--tag", "serve"], "--signature, --tag: for --saved-model only"),
    (["--saved-model", "d", "--train"], r"train \(--train\) is for --keras-model only"),
])
def test_options_of_the_other_kind_are_usage_errors(argv, message):
    with pytest.raises(em.UsageError, match=message):
        _parse(argv)


def test_a_request_is_checked_without_loading(tiny_saved_model, monkeypatch, tmp_path):
    monkeypatch.setattr(tf.saved_model, "load", lambda *a, **k: pytest.fail("loaded"))
    with pytest.raises(em.UsageError, match="dimension 0 is unknown"):
        em.ExternalModel(saved_model=tiny_saved_model).check()
    with pytest.raises(em.UsageError, match="does not exist"):
        em.ExternalModel(keras_model=str(tmp_path / "absent.keras"), train=True).check()


def test_a_keras_request_builds_its_step(tmp_path):
    path = str(tmp_path / "plain.keras")
    _dense_model().save(path)
    request = em.ExternalModel(keras_model=path, batch=3)
    assert request.check() is None and request.name == "plain_infer"
    with request.build_step("DEFAULT", seed=1) as step:
        assert step.outputs()["output"].shape == (3, 2)
