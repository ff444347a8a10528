"""Steps for models users already have: a SavedModel directory or a ``.keras`` file.

    from graphi_tf.lab import external_models as em

    step = em.saved_model_step("/models/resnet", executor="GRAPHI", batch=8)
    step()                  # one request: runs the signature on seeded inputs
    step.outputs()          # runs it once more and returns {output name: numpy array}
    step.close()

    step = em.keras_model_step("model.keras", executor="GRAPHI", train=True, batch=32)
    step.loss_value()       # one train_on_batch step on seeded inputs and labels; its loss

Each step is built for one executor ("DEFAULT", "GRAPHI" or "SINGLE_THREADED_EXECUTOR"),
the way the bundled models' steps are (``graphi_tf.lab.models``): a TF1 ``Session`` gets it in its
``ConfigProto`` (``experimental.executor_type``), a ``tf.function`` call runs inside
``tf.experimental.function_executor_type``. Steps carry ``examples_per_step`` and
``graph_nodes`` for ``graphi-tf ab``'s report.

Everything a user can get wrong raises ``UsageError`` (a ``ValueError``) before anything is
loaded or run where it can be checked that early: ``check_saved_model`` checks a SavedModel
request from its ``saved_model.pb`` alone, so a command line can call it before it writes
anything. docs/external_models.md describes the loading paths and the generated data.
"""
from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from graphi_tf.lab.step_base import (EXECUTORS, ClosableStep, apply_function_threads, check_executor, check_seed,
                                 check_threads)

LOADERS: Tuple[str, ...] = ("tf2", "tf1", "tf2-session")
DEFAULT_SIGNATURE = "serving_default"
DEFAULT_TAG = "serve"
# Generated integer inputs are drawn from [0, INT_INPUT_HIGH): valid token or class ids for
# any vocabulary of at least this many entries.
INT_INPUT_HIGH = 10

# The signature TF adds to every TF2 SavedModel to run its initializers; not a user signature.
_INIT_OP_SIGNATURE = "__saved_model_init_op"

Shape = Tuple[int, ...]
InputShapes = Union[Sequence[str], Mapping[str, Sequence[int]], None]


class UsageError(ValueError):
    """A model, signature, tag, input shape or option that cannot be used; the message says
    what was asked, what exists and what to pass instead."""


# ------------------------------------------------------------------------ input shapes

_NAME_SHAPE = re.compile(r"^(?P<name>[^=\s]+)=(?P<shape>[^=]*)$")


def parse_input_shape(text: str) -> Tuple[str, Shape]:
    """Parses ``NAME=SHAPE``: the shape's dimensions are whole numbers >= 1 separated by commas
    or by ``x`` (``x=8,224,224,3`` or ``x=8x224x224x3``; not both in one shape).

    Raises:
      UsageError: the text is not of that form.
    """
    usage = "expected NAME=SHAPE with SHAPE's dimensions separated by ',' or 'x', e.g. x=8,224,224,3 or x=8x224x224x3"
    match = _NAME_SHAPE.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise UsageError(f"input shape {text!r} is malformed: {usage}")
    name, shape = match.group("name"), match.group("shape").strip()
    separators = {sep for sep in ",x" if sep in shape}
    if len(separators) > 1:
        raise UsageError(f"input shape {text!r} mixes ',' and 'x': {usage}")
    parts = shape.split(separators.pop()) if separators else [shape]
    dims = []
    for part in parts:
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise UsageError(f"input shape {text!r} has dimension {part!r}, not a whole number >= 1: {usage}")
        dims.append(int(part))
    return name, tuple(dims)


def parse_input_shapes(texts: Iterable[str]) -> Dict[str, Shape]:
    """Parses several ``NAME=SHAPE`` (see ``parse_input_shape``) into ``{name: shape}``.

    Raises:
      UsageError: a malformed one, or one name given twice.
    """
    shapes: Dict[str, Shape] = {}
    for text in texts:
        name, shape = parse_input_shape(text)
        if name in shapes:
            raise UsageError(f"input {name!r} is given twice ({_format_shape(shapes[name])} and "
                             f"{_format_shape(shape)}); give each input's shape once")
        shapes[name] = shape
    return shapes


def _explicit_shapes(inputs: InputShapes) -> Dict[str, Shape]:
    if inputs is None:
        return {}
    if isinstance(inputs, Mapping):
        shapes = {}
        for name, dims in inputs.items():
            dims = tuple(dims)
            if any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dims):
                raise UsageError(f"input {name!r} shape {dims!r} is invalid; allowed: whole numbers >= 1")
            shapes[str(name)] = dims
        return shapes
    if isinstance(inputs, str):
        inputs = [inputs]
    return parse_input_shapes(inputs)


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """One input a model declares: its name, dtype name (e.g. "float32") and shape, with None
    for an unknown dimension; ``shape`` is None when even the rank is unknown."""

    name: str
    dtype: str
    shape: Optional[Tuple[Optional[int], ...]]


def _format_shape(shape: Optional[Sequence[Optional[int]]]) -> str:
    if shape is None:
        return "<unknown rank>"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def resolve_input_shapes(specs: Sequence[InputSpec], batch: Optional[int] = None,
                         inputs: InputShapes = None) -> Dict[str, Shape]:
    """The concrete shape of every input: an explicit shape from ``inputs`` where one is given
    (it must agree with the declared dimensions), else the declared shape with an unknown
    leading (batch) dimension set to ``batch``.

    Raises:
      UsageError: an unknown dimension nothing sets, an explicit shape for an input the model
        does not have or one that contradicts the declared shape, or a bad ``batch``.
    """
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise UsageError(f"batch={batch!r} is invalid; allowed: a whole number >= 1")
    explicit = _explicit_shapes(inputs)
    names = [spec.name for spec in specs]
    unknown = sorted(set(explicit) - set(names))
    if unknown:
        raise UsageError(f"input {unknown[0]!r} is not an input of the model; its inputs: "
                         + ", ".join(f"{s.name} {_format_shape(s.shape)}" for s in specs))
    shapes: Dict[str, Shape] = {}
    for spec in specs:
        if spec.name in explicit:
            shape = explicit[spec.name]
            if spec.shape is not None and (len(shape) != len(spec.shape) or any(
                    want is not None and want != got for want, got in zip(spec.shape, shape))):
                raise UsageError(f"input {spec.name}={_format_shape(shape)} does not fit the model's "
                                 f"declared shape {_format_shape(spec.shape)}")
            shapes[spec.name] = shape
            continue
        if spec.shape is None:
            raise UsageError(f"input {spec.name!r} has an unknown rank; give its shape, e.g. "
                             f"inputs=['{spec.name}=8,16'] (--input {spec.name}=8,16)")
        dims = list(spec.shape)
        if dims and dims[0] is None and batch is not None:
            dims[0] = batch
        missing = [i for i, d in enumerate(dims) if d is None]
        if missing:
            if missing == [0]:
                hint = " or batch=N (--batch N)"
            elif missing[0] == 0:
                hint = " (batch=N, --batch N, sets dimension 0 only)"
            else:
                hint = ""
            example = ",".join(str(d) if d is not None else ("8" if i == 0 else "16") for i, d in enumerate(dims))
            which = (f"dimension {missing[0]} is" if len(missing) == 1
                     else f"dimensions {', '.join(map(str, missing))} are")
            raise UsageError(f"input {spec.name!r} has shape {_format_shape(spec.shape)}: {which} unknown; give "
                             f"its shape, e.g. inputs=['{spec.name}={example}'] (--input {spec.name}={example}){hint}")
        shapes[spec.name] = tuple(int(d) for d in dims)
    return shapes


def make_inputs(specs: Sequence[InputSpec], shapes: Mapping[str, Shape], seed: int = 0) -> Dict[str, Any]:
    """Seeded numpy arrays, one per input, of its dtype and ``shapes[name]``: floats uniform in
    [-1, 1), integers uniform in [0, INT_INPUT_HIGH), bools fair coin flips. Input ``i`` (in
    ``specs`` order) is drawn from ``RandomState(seed + i)``.

    Raises:
      UsageError: an input of a dtype that cannot be generated (strings, resources, variants).
    """
    import numpy as np
    import tensorflow as tf

    arrays = {}
    for index, spec in enumerate(specs):
        _check_generatable(spec)
        rng = np.random.RandomState(seed + index)
        shape = shapes[spec.name]
        dtype = tf.dtypes.as_dtype(spec.dtype)
        if dtype.is_floating:
            value = rng.uniform(-1.0, 1.0, size=shape).astype(dtype.as_numpy_dtype)
        elif dtype.is_complex:
            value = (rng.uniform(-1.0, 1.0, size=shape) + 1j * rng.uniform(-1.0, 1.0, size=shape)).astype(
                dtype.as_numpy_dtype)
        elif dtype.is_integer:
            value = rng.randint(0, INT_INPUT_HIGH, size=shape).astype(dtype.as_numpy_dtype)
        else:
            value = rng.randint(0, 2, size=shape).astype(bool)
        arrays[spec.name] = value
    return arrays


def _check_generatable(spec: InputSpec) -> None:
    import tensorflow as tf

    dtype = tf.dtypes.as_dtype(spec.dtype)
    if not (dtype.is_floating or dtype.is_complex or dtype.is_integer or dtype.is_bool) or dtype.is_quantized:
        raise UsageError(f"input {spec.name!r} has dtype {spec.dtype}; only numeric and bool inputs can be "
                         "generated (a model that takes strings or tf.Example protos needs a --script step)")


# ------------------------------------------------------------------------ checks shared by both kinds


def _executor_scope(executor: str) -> Any:
    import contextlib

    import tensorflow as tf

    if executor == "DEFAULT":
        return contextlib.nullcontext()
    if executor == "GRAPHI":
        import graphi_tf

        return graphi_tf.executor_scope()
    return tf.experimental.function_executor_type(executor)


class _PerThreadExecutorScope:
    """Selects the step's executor once per calling thread and keeps it selected for that
    thread's life, as a serving thread would. The executor type is thread-local; entering
    ``function_executor_type`` on every request instead cost GRAPHI's arms Python time under
    the GIL that the stock arms (no scope) did not pay: about 3% of the LSTM's requests/s at
    8 clients."""

    def __init__(self, executor: str) -> None:
        import threading

        self._executor = executor
        self._local = threading.local()

    def ensure_entered(self) -> None:
        if getattr(self._local, "scope", None) is None:
            scope = _executor_scope(self._executor)
            scope.__enter__()  # never exited: the thread keeps the executor (see above)
            self._local.scope = scope


def _session_config(executor: str, inter_op: Optional[int], intra_op: Optional[int]) -> Any:
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto()
    if inter_op is not None:
        config.inter_op_parallelism_threads = inter_op
    if intra_op is not None:
        config.intra_op_parallelism_threads = intra_op
    if executor == "GRAPHI":
        import graphi_tf

        return graphi_tf.session_config(config)
    if executor != "DEFAULT":
        config.experimental.executor_type = executor
    return config


def count_graph_nodes(graph_def: Any, outputs: Sequence[str]) -> int:
    """Nodes a step runs before inlining: the nodes of ``graph_def`` that ``outputs`` (tensor or
    node names) depend on, plus the nodes of every library function they call, recursively."""
    nodes = {node.name: node for node in graph_def.node}
    library = {f.signature.name: f for f in graph_def.library.function}

    def called(node_defs: Iterable[Any]) -> List[str]:
        names = []
        for node in node_defs:
            if node.op in library:
                names.append(node.op)
            for attr in node.attr.values():
                if attr.HasField("func"):
                    names.append(attr.func.name)
                if attr.HasField("list"):
                    names.extend(f.name for f in attr.list.func)
        return names

    reached, stack = set(), [name.lstrip("^").split(":")[0] for name in outputs]
    while stack:
        name = stack.pop()
        if name in reached or name not in nodes:
            continue
        reached.add(name)
        stack.extend(i.lstrip("^").split(":")[0] for i in nodes[name].input)
    total = len(reached)
    seen, pending = set(), called(nodes[n] for n in reached)
    while pending:
        name = pending.pop()
        if name in seen or name not in library:
            continue
        seen.add(name)
        total += len(library[name].node_def)
        pending.extend(called(library[name].node_def))
    return total


# ------------------------------------------------------------------------ steps


class ExternalModelStep(ClosableStep):
    """One step of a user's model on one executor: call it to run one step.

    Attributes:
      kind: "saved_model" or "keras".
      loader: SavedModel: "tf2", "tf1" or "tf2-session"; Keras: "keras".
      train: Keras ``train_on_batch`` steps (True) or inference (False).
      executor: what the step runs on.
      inputs: the seeded input arrays, ``{input name: numpy array}``.
      examples_per_step: the batch (the leading dimension of the first input), None if every
        input is a scalar.
      graph_nodes: nodes the step's graph runs before inlining (``count_graph_nodes``), None
        where it cannot be seen (Keras training: ``train_on_batch`` traces its own function).
      session: the ``tf.compat.v1.Session`` of the "tf1" and "tf2-session" loaders, else None.
    """

    kind: str
    loader: str
    train: bool = False
    executor: str
    inputs: Dict[str, Any]
    examples_per_step: Optional[int]
    graph_nodes: Optional[int]
    session: Any = None

    def __call__(self) -> None:
        self._run()

    def _run(self) -> Any:
        raise NotImplementedError

    def outputs(self) -> Dict[str, Any]:
        """Runs one step and returns its outputs as numpy arrays, ``{output name: array}``
        (Keras training: ``{"loss": ...}`` and the compiled metrics)."""
        return {name: _to_numpy(value) for name, value in self._run().items()}

    def loss_value(self) -> float:
        """Keras training only: runs one ``train_on_batch`` step and returns its loss."""
        raise UsageError(f"loss_value() needs a Keras step with train=True; this is a {self.kind} "
                         f"{'training' if self.train else 'inference'} step: use outputs()")

    def run_traced(self) -> Any:
        """The "tf1" and "tf2-session" loaders: runs one step with ``RunOptions.FULL_TRACE``
        and ``output_partition_graphs=True`` and returns its ``RunMetadata``."""
        raise UsageError(f"run_traced() needs a SavedModel step run by a Session (loader 'tf1' or "
                         f"'tf2-session'); this step's loader is {self.loader!r}")

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.kind}/{self.loader}{'/train' if self.train else ''} "
                f"executor={self.executor} batch={self.examples_per_step} nodes={self.graph_nodes}>")


def _to_numpy(value: Any) -> Any:
    import numpy as np

    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _examples(shapes: Mapping[str, Shape], order: Sequence[str]) -> Optional[int]:
    for name in order:
        if shapes[name]:
            return int(shapes[name][0])
    return None


# ------------------------------------------------------------------------ SavedModel


@dataclasses.dataclass(frozen=True)
class SavedModelSignature:
    """What ``check_saved_model`` found: the MetaGraph's tags, the signature, its inputs (in
    name order), its output names and the concrete input shapes the step will feed."""

    path: str
    tags: Tuple[str, ...]
    signature: str
    inputs: Tuple[InputSpec, ...]
    outputs: Tuple[str, ...]
    shapes: Dict[str, Shape]


def _parse_tags(tag: Any) -> Tuple[str, ...]:
    if isinstance(tag, str):
        tags = tuple(t.strip() for t in tag.split(","))
    elif isinstance(tag, (list, tuple)) and all(isinstance(t, str) for t in tag):
        tags = tuple(t.strip() for t in tag)
    else:
        tags = ()
    if not tags or not all(tags):
        raise UsageError(f"tag={tag!r} is invalid; allowed: a tag such as 'serve', or a tag set as "
                         "'serve,gpu' or a list of tags")
    return tags


def _read_saved_model_proto(path: str) -> Any:
    from google.protobuf import message, text_format
    from tensorflow.core.protobuf import saved_model_pb2

    if not isinstance(path, (str, os.PathLike)) or not os.path.exists(path):
        raise UsageError(f"SavedModel directory {str(path)!r} does not exist")
    if not os.path.isdir(path):
        raise UsageError(f"{str(path)!r} is a file, not a SavedModel directory (a .keras file goes to "
                         "keras_model_step / --keras-model)")
    proto = saved_model_pb2.SavedModel()
    binary, text = os.path.join(path, "saved_model.pb"), os.path.join(path, "saved_model.pbtxt")
    try:
        if os.path.isfile(binary):
            with open(binary, "rb") as f:
                proto.ParseFromString(f.read())
        elif os.path.isfile(text):
            with open(text) as f:
                text_format.Parse(f.read(), proto)
        else:
            raise UsageError(f"{str(path)!r} holds no SavedModel: it has no saved_model.pb or saved_model.pbtxt "
                             "(export one with tf.saved_model.save or Keras model.export)")
    except (message.DecodeError, text_format.ParseError, UnicodeDecodeError) as e:
        raise UsageError(f"{str(path)!r}: its SavedModel file cannot be read ({e}); is it a SavedModel?") from None
    return proto


def check_saved_model(path: str, signature: str = DEFAULT_SIGNATURE, tag: Any = DEFAULT_TAG,
                      batch: Optional[int] = None, inputs: InputShapes = None) -> SavedModelSignature:
    """Checks a SavedModel request from the SavedModel's protocol buffer alone (no variables
    are restored, no graph is built or run) and returns what the step will use.

    Args:
      path: the SavedModel directory.
      signature: the signature to run.
      tag: the MetaGraph's tag, or a tag set ("serve,gpu" or a list): it must equal a
        MetaGraph's tag set, as both TensorFlow loaders require.
      batch: sets an unknown leading dimension of every input.
      inputs: explicit input shapes: ``["NAME=SHAPE", ...]`` (``parse_input_shape``) or
        ``{name: shape}``.

    Raises:
      UsageError: a missing directory, one with no SavedModel, an unknown tag or signature
        (the message lists those that exist), an unknown dimension nothing sets, a malformed
        or contradicting input shape, an input dtype that cannot be generated.
    """
    import tensorflow as tf

    proto = _read_saved_model_proto(path)
    tags = _parse_tags(tag)
    existing = [tuple(mg.meta_info_def.tags) for mg in proto.meta_graphs]
    matches = [mg for mg in proto.meta_graphs if set(mg.meta_info_def.tags) == set(tags)]
    if not matches:
        raise UsageError(f"tag {','.join(tags)!r} matches no MetaGraph in {str(path)!r}; its tag sets: "
                         + ("; ".join(",".join(t) or "<none>" for t in existing) or "<none>"))
    meta_graph = matches[0]
    names = sorted(k for k in meta_graph.signature_def if k != _INIT_OP_SIGNATURE)
    if not isinstance(signature, str) or signature not in names:
        raise UsageError(f"signature {signature!r} is not in {str(path)!r} (tag {','.join(tags)}); its signatures: "
                         + (", ".join(names) or "<none>"))
    sig = meta_graph.signature_def[signature]
    specs = []
    for name in sorted(sig.inputs):
        info = sig.inputs[name]
        if info.WhichOneof("encoding") != "name":
            raise UsageError(f"input {name!r} of signature {signature!r} is a sparse or composite tensor; only "
                             "dense inputs can be generated")
        shape = None if info.tensor_shape.unknown_rank else tuple(
            None if d.size < 0 else int(d.size) for d in info.tensor_shape.dim)
        specs.append(InputSpec(name=name, dtype=tf.dtypes.as_dtype(info.dtype).name, shape=shape))
    shapes = resolve_input_shapes(specs, batch, inputs)
    for spec in specs:  # a dtype that cannot be generated fails here, before anything loads
        _check_generatable(spec)
    return SavedModelSignature(path=os.fspath(path), tags=tags, signature=signature, inputs=tuple(specs),
                               outputs=tuple(sorted(sig.outputs)), shapes=shapes)


class _TF2SavedModelStep(ExternalModelStep):
    """``tf.saved_model.load`` and the signature's ConcreteFunction, called (and loaded) inside
    the executor's ``function_executor_type`` scope."""

    def __init__(self, checked: SavedModelSignature, executor: str, seed: int):
        import tensorflow as tf

        self.kind, self.loader, self.executor = "saved_model", "tf2", executor
        self.inputs = make_inputs(checked.inputs, checked.shapes, seed)
        self.examples_per_step = _examples(checked.shapes, [s.name for s in checked.inputs])
        with _executor_scope(executor):
            self._loaded = tf.saved_model.load(checked.path, tags=list(checked.tags))
        self._function = self._loaded.signatures[checked.signature]
        self._tensors = {name: tf.constant(value) for name, value in self.inputs.items()}
        graph = self._function.graph
        self.graph_nodes = count_graph_nodes(graph.as_graph_def(), [t.name for t in graph.outputs])
        self._scope = _PerThreadExecutorScope(executor)

    def _run(self) -> Dict[str, Any]:
        self._scope.ensure_entered()
        return dict(self._function(**self._tensors))


class _SessionSavedModelStep(ExternalModelStep):
    """A SavedModel signature in a ``tf.Graph`` run by a Session made with the executor's
    ConfigProto; a step is one ``Session`` callable that feeds the inputs and fetches the
    signature's outputs (what TensorFlow Serving does per request). Subclasses load the
    model into ``self.graph`` / ``self.session`` and call ``_bind``."""

    def _start(self, loader: str, checked: SavedModelSignature, executor: str, seed: int,
               inter_op: Optional[int], intra_op: Optional[int]) -> None:
        import tensorflow as tf

        self.kind, self.loader, self.executor = "saved_model", loader, executor
        self.inputs = make_inputs(checked.inputs, checked.shapes, seed)
        self.examples_per_step = _examples(checked.shapes, [s.name for s in checked.inputs])
        self.config = _session_config(executor, inter_op, intra_op)
        self.graph = tf.Graph()
        self.session = tf.compat.v1.Session(graph=self.graph, config=self.config)

    def _bind(self, checked: SavedModelSignature, feeds: Sequence[Any], fetches: Sequence[Any],
              graph_def: Any) -> None:
        """Feeds ``feeds`` (one per input of ``checked``, in its order) and fetches ``fetches``
        (one per output name of ``checked``, in its order)."""
        self._output_names = list(checked.outputs)
        self._fetches = list(fetches)
        self._feed_dict = dict(zip(feeds, (self.inputs[s.name] for s in checked.inputs)))
        self._callable = self.session.make_callable(self._fetches, list(feeds))
        self._feed_values = [self.inputs[s.name] for s in checked.inputs]
        self.graph_nodes = count_graph_nodes(graph_def, [t.name for t in self._fetches])

    def _run(self) -> Dict[str, Any]:
        return dict(zip(self._output_names, self._callable(*self._feed_values)))

    def run_traced(self) -> Any:
        import tensorflow as tf

        options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE,
                                          output_partition_graphs=True)
        metadata = tf.compat.v1.RunMetadata()
        self.session.run(self._fetches, feed_dict=self._feed_dict, options=options, run_metadata=metadata)
        return metadata

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None


class _TF1SavedModelStep(_SessionSavedModelStep):
    """``tf.compat.v1.saved_model.loader.load`` into the Session (TensorFlow Serving's way)."""

    def __init__(self, checked: SavedModelSignature, executor: str, seed: int,
                 inter_op: Optional[int], intra_op: Optional[int]):
        import tensorflow as tf

        self._start("tf1", checked, executor, seed, inter_op, intra_op)
        try:
            meta_graph = tf.compat.v1.saved_model.loader.load(self.session, list(checked.tags), checked.path)
            sig = meta_graph.signature_def[checked.signature]
            feeds = [self.graph.get_tensor_by_name(sig.inputs[spec.name].name) for spec in checked.inputs]
            fetches = [self.graph.get_tensor_by_name(sig.outputs[name].name) for name in checked.outputs]
            self._bind(checked, feeds, fetches, meta_graph.graph_def)
        except Exception:
            self.close()
            raise


class _TF2SessionSavedModelStep(_SessionSavedModelStep):
    """``tf.saved_model.load`` into the Session's graph (graph mode): the signature's function
    called on placeholders, its variables restored by their initializers (which TensorFlow's
    loader makes the checkpoint's restore ops in graph mode). Keras 3 models saved by
    ``tf.saved_model.save``, whose variables the TF1 loader leaves unrestored ("Could not find
    variable dense/bias"), run this way."""

    def __init__(self, checked: SavedModelSignature, executor: str, seed: int,
                 inter_op: Optional[int], intra_op: Optional[int]):
        import tensorflow as tf

        self._start("tf2-session", checked, executor, seed, inter_op, intra_op)
        try:
            with self.graph.as_default():
                loaded = tf.saved_model.load(checked.path, tags=list(checked.tags))
                function = loaded.signatures[checked.signature]
                feeds = [tf.compat.v1.placeholder(tf.dtypes.as_dtype(spec.dtype), shape=self.inputs[spec.name].shape,
                                                  name=spec.name)
                         for spec in checked.inputs]
                outputs = function(**{spec.name: feed for spec, feed in zip(checked.inputs, feeds)})
                fetches = [outputs[name] for name in checked.outputs]
                initialize = [tf.compat.v1.global_variables_initializer(), tf.compat.v1.tables_initializer()]
            self._loaded = loaded  # what the graph's functions and resources belong to
            self.session.run(initialize)
            self._bind(checked, feeds, fetches, self.graph.as_graph_def())
        except Exception:
            self.close()
            raise


def saved_model_step(path: str, executor: str = "GRAPHI", *, signature: str = DEFAULT_SIGNATURE,
                     tag: Any = DEFAULT_TAG, batch: Optional[int] = None, inputs: InputShapes = None,
                     loader: str = "tf2", seed: int = 0, inter_op: Optional[int] = None,
                     intra_op: Optional[int] = None) -> ExternalModelStep:
    """A step that runs one signature of a SavedModel on seeded inputs, on ``executor``.

    Args:
      path, signature, tag, batch, inputs: what to run and its input shapes (see
        ``check_saved_model``, which runs first).
      executor: "GRAPHI", "DEFAULT" (TensorFlow's stock executor; nothing is set) or
        "SINGLE_THREADED_EXECUTOR".
      loader: "tf2": ``tf.saved_model.load`` and the signature's ConcreteFunction, loaded and
        called inside ``tf.experimental.function_executor_type(executor)``; "tf1": the TF1
        loader into a ``tf.compat.v1.Session`` whose ConfigProto names the executor (what
        TensorFlow Serving does); "tf2-session": ``tf.saved_model.load`` in graph mode into
        such a Session (for SavedModels the TF1 loader cannot restore, e.g. Keras 3 models
        saved by ``tf.saved_model.save``). docs/external_models.md compares them.
      seed: seeds the inputs (``make_inputs``).
      inter_op, intra_op: TensorFlow's stock thread pools (None: its default); "tf1" and
        "tf2-session": in the ConfigProto; "tf2": ``tf.config.threading``, before TensorFlow's
        eager context starts.

    Returns:
      An ``ExternalModelStep``: ``step()``, ``step.outputs()``, ``examples_per_step``,
      ``graph_nodes``, ``close()``; "tf1" and "tf2-session" also ``session`` and
      ``run_traced()``.

    Raises:
      UsageError: see ``check_saved_model``; also a bad executor, loader, seed or thread count.
      RuntimeError: inter_op/intra_op for "tf2" after TensorFlow's eager context started.
    """
    executor = check_executor(executor, UsageError)
    if not isinstance(loader, str) or loader not in LOADERS:
        raise UsageError(f"loader={loader!r} is invalid; allowed: {', '.join(LOADERS)}")
    seed = check_seed(seed, UsageError)
    inter_op = check_threads("inter_op", inter_op, UsageError)
    intra_op = check_threads("intra_op", intra_op, UsageError)
    checked = check_saved_model(path, signature=signature, tag=tag, batch=batch, inputs=inputs)
    if loader == "tf1":
        return _TF1SavedModelStep(checked, executor, seed, inter_op, intra_op)
    if loader == "tf2-session":
        return _TF2SessionSavedModelStep(checked, executor, seed, inter_op, intra_op)
    apply_function_threads(inter_op, intra_op)
    return _TF2SavedModelStep(checked, executor, seed)


# ------------------------------------------------------------------------ Keras

# Keras' own words when a saved class or function cannot be found, or may not be loaded.
_CUSTOM_OBJECT_ERRORS = ("could not locate", "unknown layer", "unknown object", "custom_objects",
                         "register_keras_serializable", "could not be deserialized", "could not deserialize")


def _load_keras(path: str, custom_objects: Optional[Mapping[str, Any]], safe_mode: bool) -> Any:
    import keras

    if not isinstance(path, (str, os.PathLike)) or not os.path.exists(path):
        raise UsageError(f"Keras model file {str(path)!r} does not exist")
    if os.path.isdir(path):
        raise UsageError(f"{str(path)!r} is a directory, not a .keras file (a SavedModel directory goes to "
                         "saved_model_step / --saved-model)")
    if not os.fspath(path).endswith(".keras"):
        raise UsageError(f"{str(path)!r} is not a .keras file (Keras 3's format, written by model.save('m.keras'))")
    try:
        return keras.saving.load_model(path, custom_objects=dict(custom_objects or {}), compile=True,
                                       safe_mode=safe_mode)
    except Exception as e:  # noqa: BLE001  (Keras raises TypeError, ValueError, zipfile errors...)
        text = str(e)
        if any(marker in text.lower() for marker in _CUSTOM_OBJECT_ERRORS):
            # Keras' message repeats the whole model config; the names are what the user needs.
            names = sorted(set(re.findall(r"Could not locate (?:class|function) '([^']+)'", text)))
            what = ", ".join(names) if names else text.strip().splitlines()[0][:300]
            raise UsageError(
                f"{str(path)!r} needs custom objects (classes or functions) that Keras cannot find: {what}. "
                "Supply them: import the module that defines them, decorated with "
                "@keras.saving.register_keras_serializable(), before building the step (e.g. in a --script "
                "step), or pass custom_objects={'Name': object} to keras_model_step.") from None
        if "safe_mode" in text:
            raise UsageError(f"{str(path)!r} holds a Lambda layer (Python code) that Keras loads only with "
                             f"safe_mode=False; pass it if you trust the file: {text.strip()}") from None
        raise UsageError(f"{str(path)!r} cannot be loaded as a Keras model: {type(e).__name__}: {text}") from None


def _keras_input_specs(model: Any) -> List[InputSpec]:
    try:
        tensors = list(model.inputs)
    except (AttributeError, ValueError):
        tensors = []
    if not tensors:
        raise UsageError(f"the Keras model {model.name!r} declares no inputs (a subclassed model saved before it "
                         "was called?); save a Functional or Sequential model, or export a SavedModel")
    specs = []
    for tensor in tensors:
        specs.append(InputSpec(name=str(tensor.name), dtype=str(tensor.dtype),
                               shape=tuple(None if d is None else int(d) for d in tensor.shape)))
    return specs


def _loss_name(loss: Any) -> str:
    if isinstance(loss, str):
        name = loss
    else:
        name = getattr(loss, "name", None) or getattr(loss, "__name__", None) or type(loss).__name__
    # CamelCase class names to snake_case: SparseCategoricalCrossentropy -> sparse_categorical_crossentropy.
    return re.sub(r"(?<!^)(?=[A-Z])", "_", str(name)).lower()


def labels_for_loss(loss: Any, shape: Shape, dtype: str = "float32", seed: int = 0) -> Any:
    """Seeded labels of one output for the Keras loss ``loss`` (a name, a Loss object or a
    function), given the output's ``shape`` (batch first) and dtype:

    * ``sparse_categorical_*``: int32 class ids in [0, classes), shape ``shape[:-1]``;
    * other ``categorical_*`` and KL divergence: one-hot rows of ``shape``;
    * ``binary_*`` and hinge losses: 0/1 values of ``shape``;
    * anything else (MSE, MAE, Huber, Poisson, cosine, ...): uniform [0, 1) values of ``shape``.

    Raises:
      UsageError: a loss whose labels cannot be generated (CTC), or an output too small for it.
    """
    import numpy as np

    rng = np.random.RandomState(seed)
    name = _loss_name(loss)
    if "ctc" in name:
        raise UsageError(f"loss {name!r}: labels for CTC cannot be generated; measure inference, or write a "
                         "--script step with your own labels")
    if "categorical" in name or "kl_divergence" in name or name in ("kld", "kullback_leibler_divergence"):
        if not shape:
            raise UsageError(f"loss {name!r} needs an output with a class dimension; the output is a scalar")
        classes = int(shape[-1])
        ids = rng.randint(0, classes, size=shape[:-1])
        if "sparse" in name:
            return ids.astype(np.int32)
        return np.eye(classes, dtype=dtype)[ids]
    if "binary" in name or "hinge" in name:
        return rng.randint(0, 2, size=shape).astype(dtype)
    return rng.uniform(0.0, 1.0, size=shape).astype(dtype)


def _structure_items(value: Any) -> List[Tuple[Any, Any]]:
    if isinstance(value, Mapping):
        return list(value.items())
    if isinstance(value, (list, tuple)):
        return list(enumerate(value))
    return [(None, value)]


def _keras_labels(model: Any, outputs: Any, seed: int) -> Any:
    loss = getattr(model, "loss", None)
    items = _structure_items(outputs)
    labels = []
    for index, (key, output) in enumerate(items):
        if isinstance(loss, Mapping):
            this = loss.get(key) if key is not None else None
        elif isinstance(loss, (list, tuple)):
            this = loss[index] if index < len(loss) else None
        else:
            this = loss
        dtype = output.dtype.name if hasattr(output.dtype, "name") else str(output.dtype)
        if not dtype.startswith(("float", "bfloat")):
            dtype = "float32"
        labels.append((key, labels_for_loss("mse" if this is None else this, tuple(int(d) for d in output.shape),
                                            dtype, seed + 1000 + index)))
    if isinstance(outputs, Mapping):
        return dict(labels)
    if isinstance(outputs, (list, tuple)):
        return [value for _, value in labels]
    return labels[0][1]


class _KerasStep(ExternalModelStep):
    """A ``.keras`` model: inference is ``model(x, training=False)`` in a ``tf.function``;
    training is ``model.train_on_batch(x, y)``; either runs in the executor's scope."""

    def __init__(self, model: Any, specs: Sequence[InputSpec], shapes: Mapping[str, Shape], executor: str,
                 train: bool, seed: int):
        import tensorflow as tf

        self.kind, self.loader, self.executor, self.train = "keras", "keras", executor, train
        self.model = model
        self._names = [spec.name for spec in specs]
        self.inputs = make_inputs(specs, shapes, seed)
        self.examples_per_step = _examples(shapes, self._names)
        tensors = [tf.constant(self.inputs[name]) for name in self._names]
        self._x = tensors[0] if len(tensors) == 1 else tensors
        self._scope = _PerThreadExecutorScope(executor)
        if train:
            # XLA would compile the whole step into one cluster, which no executor schedules.
            model.jit_compile = False
            self._y = tf.nest.map_structure(tf.constant, _keras_labels(model, model(self._x, training=False), seed))
            self.graph_nodes = None
            return

        @tf.function(autograph=False)
        def infer(x: Any) -> Any:
            return model(x, training=False)

        self._function = infer
        concrete = infer.get_concrete_function(self._x)
        self.graph_nodes = count_graph_nodes(concrete.graph.as_graph_def(),
                                             [t.name for t in concrete.graph.outputs])

    def _run(self) -> Dict[str, Any]:
        self._scope.ensure_entered()
        if self.train:
            return dict(self.model.train_on_batch(self._x, self._y, return_dict=True))
        out = self._function(self._x)
        return {("output" if key is None else str(key)): value for key, value in _structure_items(out)}

    def loss_value(self) -> float:
        if not self.train:
            return super().loss_value()
        return float(self._run()["loss"])


def keras_model_step(path: str, executor: str = "GRAPHI", *, train: bool = False, batch: Optional[int] = None,
                     inputs: InputShapes = None, seed: int = 0, custom_objects: Optional[Mapping[str, Any]] = None,
                     safe_mode: bool = True, inter_op: Optional[int] = None,
                     intra_op: Optional[int] = None) -> ExternalModelStep:
    """A step of a ``.keras`` model on seeded inputs, on ``executor``.

    Args:
      path: the ``.keras`` file.
      executor: "GRAPHI", "DEFAULT" or "SINGLE_THREADED_EXECUTOR"; the step's ``tf.function``
        calls run inside ``tf.experimental.function_executor_type(executor)``.
      train: False: inference, ``model(x, training=False)`` in a ``tf.function``. True:
        ``model.train_on_batch(x, y)`` with seeded labels that fit each output and its compiled
        loss (``labels_for_loss``); the model must have been compiled when saved. XLA
        (``jit_compile``) is turned off so the executor runs the step's ops.
      batch, inputs: the input shapes, as for SavedModels (``resolve_input_shapes``); input
        names are the Keras inputs' names.
      seed: seeds the inputs, the labels and Keras' global RNG (``keras.utils.set_random_seed``,
        so dropout draws the same numbers on every executor).
      custom_objects, safe_mode: passed to ``keras.saving.load_model``.
      inter_op, intra_op: ``tf.config.threading``, before TensorFlow's eager context starts.

    Raises:
      UsageError: a missing or non-.keras file, a model that needs custom objects Keras cannot
        find (the message says how to supply them), train=True on a model saved uncompiled, a bad
        input shape, executor, seed or thread count.
      RuntimeError: inter_op/intra_op after TensorFlow's eager context started.
    """
    executor = check_executor(executor, UsageError)
    if not isinstance(train, bool):
        raise UsageError(f"train={train!r} is invalid; allowed: True, False")
    seed = check_seed(seed, UsageError)
    inter_op = check_threads("inter_op", inter_op, UsageError)
    intra_op = check_threads("intra_op", intra_op, UsageError)
    explicit = _explicit_shapes(inputs)  # a malformed shape fails before the model loads
    apply_function_threads(inter_op, intra_op)
    import keras

    keras.utils.set_random_seed(seed)
    model = _load_keras(path, custom_objects, safe_mode)
    specs = _keras_input_specs(model)
    shapes = resolve_input_shapes(specs, batch, explicit)
    if train and not getattr(model, "compiled", False):
        raise UsageError(f"{str(path)!r} was saved without compile(): train=True (--train) needs its optimizer "
                         "and loss. Compile the model before saving it, or measure inference")
    return _KerasStep(model, specs, shapes, executor, train, seed)



# ------------------------------------------------------------------------ one request, for a command line


@dataclasses.dataclass(frozen=True)
class ExternalModel:
    """A user's model as a command line asks for it: exactly one of ``saved_model`` (a
    directory) and ``keras_model`` (a ``.keras`` file), with their options. None means the
    option was not given (its default applies); an option of the other kind is an error.

    ``check()`` validates it without building anything, ``build_step(executor, ...)`` makes the
    step; ``argv()`` gives it back as flags (``add_arguments``) for a worker process.
    """

    saved_model: Optional[str] = None
    keras_model: Optional[str] = None
    signature: Optional[str] = None
    tag: Optional[str] = None
    loader: Optional[str] = None
    batch: Optional[int] = None
    inputs: Tuple[str, ...] = ()
    train: bool = False

    @property
    def kind(self) -> str:
        return "saved_model" if self.saved_model is not None else "keras"

    @property
    def path(self) -> str:
        return os.path.abspath(self.saved_model if self.saved_model is not None else self.keras_model)

    @property
    def name(self) -> str:
        """A case name for reports: the directory's or file's stem, with the loader or "train"."""
        stem = os.path.splitext(os.path.basename(os.path.normpath(self.path)))[0]
        if self.kind == "saved_model":
            return f"{stem}_{self.loader or 'tf2'}"
        return f"{stem}_{'train' if self.train else 'infer'}"

    def _check_options(self) -> None:
        if (self.saved_model is None) == (self.keras_model is None):
            raise UsageError("give exactly one of saved_model (--saved-model DIR) and keras_model "
                             "(--keras-model FILE.keras)")
        if self.kind == "saved_model":
            if self.train:
                raise UsageError("train (--train) is for --keras-model only; a SavedModel signature is run as exported")
            if self.loader is not None and self.loader not in LOADERS:
                raise UsageError(f"loader={self.loader!r} (--loader) is invalid; allowed: {', '.join(LOADERS)}")
        else:
            given = [flag for flag, value in (("--signature", self.signature), ("--tag", self.tag),
                                              ("--loader", self.loader)) if value is not None]
            if given:
                raise UsageError(f"{', '.join(given)}: for --saved-model only, not --keras-model")
        _explicit_shapes(list(self.inputs))

    def check(self) -> Optional[SavedModelSignature]:
        """Everything that can be checked before a model loads: the options, and for a
        SavedModel the whole request (``check_saved_model``, from ``saved_model.pb``); for a
        Keras file that it exists and is a ``.keras`` file. Returns the SavedModel's checked
        signature, or None for Keras. Raises UsageError."""
        self._check_options()
        if self.kind == "saved_model":
            return check_saved_model(self.saved_model, signature=self.signature or DEFAULT_SIGNATURE,
                                     tag=self.tag or DEFAULT_TAG, batch=self.batch, inputs=list(self.inputs))
        if self.batch is not None:
            resolve_input_shapes([], self.batch)
        path = self.keras_model
        if not os.path.exists(path):
            raise UsageError(f"Keras model file {path!r} does not exist")
        if os.path.isdir(path) or not path.endswith(".keras"):
            raise UsageError(f"{path!r} is not a .keras file (Keras 3's format, written by model.save('m.keras'))")
        return None

    def build_step(self, executor: str = "GRAPHI", *, seed: int = 0, inter_op: Optional[int] = None,
                   intra_op: Optional[int] = None) -> ExternalModelStep:
        """The step on ``executor`` (``saved_model_step`` or ``keras_model_step``)."""
        self._check_options()
        if self.kind == "saved_model":
            return saved_model_step(self.saved_model, executor, signature=self.signature or DEFAULT_SIGNATURE,
                                    tag=self.tag or DEFAULT_TAG, batch=self.batch, inputs=list(self.inputs),
                                    loader=self.loader or "tf2", seed=seed, inter_op=inter_op, intra_op=intra_op)
        return keras_model_step(self.keras_model, executor, train=self.train, batch=self.batch,
                                inputs=list(self.inputs), seed=seed, inter_op=inter_op, intra_op=intra_op)

    def argv(self) -> List[str]:
        """These options as ``add_arguments`` flags, with absolute paths."""
        args = ["--saved-model" if self.kind == "saved_model" else "--keras-model", self.path]
        for flag, value in (("--signature", self.signature), ("--tag", self.tag), ("--loader", self.loader),
                            ("--batch", self.batch)):
            if value is not None:
                args += [flag, str(value)]
        for text in self.inputs:
            args += ["--input", text]
        if self.train:
            args.append("--train")
        return args

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "path": self.path, "signature": self.signature,
                "tag": self.tag, "loader": self.loader, "batch": self.batch, "inputs": list(self.inputs),
                "train": self.train}


def add_arguments(parser: Any, what: Any = None, *, batch_help: Optional[str] = None) -> None:
    """Adds ``--saved-model DIR`` and ``--keras-model FILE.keras`` (to ``what``, e.g. the
    parser's mutually exclusive group of --model/--script, else to ``parser``) and their
    options ``--signature --tag --loader --batch --input NAME=SHAPE (repeatable) --train`` to an
    ``argparse`` parser. ``from_args`` reads them back. ``batch_help`` replaces --batch's help
    where the parser gives --batch another meaning too (``--model lstm``'s batch hparam)."""
    what = parser if what is None else what
    what.add_argument("--saved-model", metavar="DIR", default=None,
                      help="a SavedModel directory: runs one signature on seeded inputs (docs/external_models.md)")
    what.add_argument("--keras-model", metavar="FILE.keras", default=None,
                      help="a .keras file: model(x) in a tf.function, or train_on_batch with --train")
    parser.add_argument("--signature", default=None,
                        help=f"--saved-model: the signature to run (default {DEFAULT_SIGNATURE})")
    parser.add_argument("--tag", default=None,
                        help=f"--saved-model: the MetaGraph's tag set, e.g. serve or serve,gpu (default {DEFAULT_TAG})")
    parser.add_argument("--loader", choices=LOADERS, default=None,
                        help="--saved-model: tf2 (tf.saved_model.load, default), tf1 (the TF1 loader into a "
                             "Session, as TensorFlow Serving) or tf2-session (tf.saved_model.load into a "
                             "Session, for SavedModels the TF1 loader cannot restore)")
    parser.add_argument("--batch", type=int, default=None,
                        help=batch_help or "--saved-model/--keras-model: sets every input's unknown leading dimension")
    parser.add_argument("--input", dest="inputs", action="append", default=[], metavar="NAME=SHAPE",
                        help="--saved-model/--keras-model: an input's shape, dimensions separated by ',' or 'x', "
                             "e.g. x=8,224,224,3 (repeatable)")
    parser.add_argument("--train", action="store_true",
                        help="--keras-model: measure train_on_batch with generated labels instead of inference")


def from_args(args: Any) -> Optional[ExternalModel]:
    """The ``ExternalModel`` that ``add_arguments``' flags in ``args`` ask for, None if neither
    --saved-model nor --keras-model was given. Raises UsageError for options without either,
    or of the other kind (``ExternalModel.check`` checks the rest)."""
    saved, keras_file = getattr(args, "saved_model", None), getattr(args, "keras_model", None)
    request = ExternalModel(saved_model=saved, keras_model=keras_file, signature=args.signature, tag=args.tag,
                            loader=args.loader, batch=args.batch, inputs=tuple(args.inputs or ()),
                            train=bool(args.train))
    if saved is None and keras_file is None:
        given = [flag for flag, value in (("--signature", args.signature), ("--tag", args.tag),
                                          ("--loader", args.loader), ("--batch", args.batch),
                                          ("--input", args.inputs), ("--train", args.train)) if value]
        if given:
            raise UsageError(f"{', '.join(given)}: for --saved-model or --keras-model only")
        return None
    request._check_options()
    return request

__all__ = [
    "EXECUTORS",
    "LOADERS",
    "INT_INPUT_HIGH",
    "UsageError",
    "InputSpec",
    "SavedModelSignature",
    "ExternalModelStep",
    "parse_input_shape",
    "parse_input_shapes",
    "resolve_input_shapes",
    "make_inputs",
    "labels_for_loss",
    "count_graph_nodes",
    "check_saved_model",
    "saved_model_step",
    "keras_model_step",
    "ExternalModel",
    "add_arguments",
    "from_args",
]
