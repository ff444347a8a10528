"""The core every ``graphi-tf`` subcommand shares: the case arguments, the one step builder,
the error printer and the subcommand dispatch.

A subcommand module (``graphi_tf.lab.cli`` for info, cache and tune; ``graphi_tf.lab.trace_cli``;
``graphi_tf.lab.ab``) has ``add_parser(subparsers)``, which makes its parser with
``add_subcommand`` (that records its ``run``), and ``run(args) -> int``, the exit status;
``graphi_tf.lab.cli.main`` parses and calls ``dispatch(args)``.

The case is what a subcommand runs: ``--model NAME [--size S] [--mode M]`` (a bundled model,
``graphi_tf.lab.models``), ``--script FILE.py`` (a file whose ``build_step()`` returns a
zero-argument step callable), ``--saved-model DIR`` or ``--keras-model FILE.keras`` (a user's
model as it is, ``graphi_tf.lab.external_models``). ``add_case_arguments`` defines those options,
``Case.from_args`` reads them, ``check_case`` checks what can be checked before anything runs,
and ``build_step(case, ...)`` builds the step. A new kind of case adds its option to the group
``add_case_arguments`` returns, a field to ``Case``, and one branch to ``build_step``.

Imports no subcommand module (each of them imports this one) and no TensorFlow itself.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

from graphi_tf.lab import external_models as _external
from graphi_tf.lab import models as _models
from graphi_tf._argtypes import int_at_least

PROG = "graphi-tf"
DEFAULT_SIZE = "small"
DEFAULT_MODE = "graph"
LSTM_FLAGS: Tuple[Tuple[str, str], ...] = (
    ("batch", "batch"), ("hidden", "hidden"), ("layers", "layers"), ("time-steps", "time_steps"))
"""``--model lstm`` only (``add_case_arguments(..., lstm_flags=True)``): flag -> hparam of
graphi_tf.lab.models.lstm, overriding the --size's."""

Runner = Callable[[argparse.Namespace], int]


UsageError = _external.UsageError
"""A case or argument that parsing could not check is wrong (exit status 2); the message
names it and what is allowed. One class for the whole command line: the external models
raise it too."""


def error(message: str, code: int = 2) -> int:
    """Prints ``graphi-tf: error: MESSAGE`` on stderr; returns ``code`` (2: usage, 1: failure)."""
    sys.stderr.write(f"{PROG}: error: {message}\n")
    return code


# --------------------------------------------------------------------------- dispatch


def add_subcommand(subparsers: Any, name: str, run: Runner, **kwargs: Any) -> argparse.ArgumentParser:
    """Adds subcommand ``name`` (``kwargs`` go to ``add_parser``), run by ``run(args)``."""
    parser = subparsers.add_parser(name, **kwargs)
    parser.set_defaults(run=run)
    return parser


def dispatch(args: argparse.Namespace) -> int:
    """Runs the subcommand ``args`` were parsed for; returns its exit status."""
    return args.run(args)


# --------------------------------------------------------------------------- the case


def add_case_arguments(parser: argparse.ArgumentParser, *, script_note: str = "",
                       lstm_flags: bool = False) -> Any:
    """Adds ``--model`` | ``--script`` | ``--saved-model`` | ``--keras-model`` (one of them
    required), ``--size`` and ``--mode``, the external models' options
    (``graphi_tf.lab.external_models.add_arguments``) and with ``lstm_flags`` the ``--model lstm``
    hparam flags (``LSTM_FLAGS``; ``--batch`` is shared with the external models). Returns the
    mutually exclusive group of the case kinds."""
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", choices=_models.MODELS, help="a bundled model (graphi_tf.lab.models; docs/models.md)")
    what.add_argument("--script", metavar="FILE.py",
                      help="a Python file defining build_step() that returns a zero-argument step callable"
                           + script_note)
    batch_help = ("--model lstm: its batch (default: the --size's); --saved-model/--keras-model: sets every "
                  "input's unknown leading dimension") if lstm_flags else None
    _external.add_arguments(parser, what, batch_help=batch_help)
    parser.add_argument("--size", choices=_models.SIZES, default=DEFAULT_SIZE,
                        help=f"--model: its size (default {DEFAULT_SIZE})")
    parser.add_argument("--mode", choices=_models.MODES, default=DEFAULT_MODE,
                        help=f"--model: a TF1 graph run by a Session, or a tf.function (default {DEFAULT_MODE})")
    if lstm_flags:
        for flag, _ in LSTM_FLAGS:
            if flag != "batch":  # added above, with both meanings
                parser.add_argument(f"--{flag}", type=int_at_least(1), default=None,
                                    help=f"--model lstm only: {flag.replace('-', ' ')} (default: the --size's)")
    parser.set_defaults(case_lstm_flags=lstm_flags)
    return what


def _external_from_args(args: argparse.Namespace, lstm_flags: bool) -> Optional[_external.ExternalModel]:
    """The external model the options ask for (None for --model/--script); with the lstm
    flags, a --batch without an external model is the lstm's, not an external option."""
    given = vars(args)
    external_given = given.get("saved_model") is not None or given.get("keras_model") is not None
    if lstm_flags and not external_given:
        args = argparse.Namespace(**dict(given, batch=None))
    return _external.from_args(args) if "saved_model" in given else None


@dataclasses.dataclass(frozen=True)
class Case:
    """What to run: a bundled model (``model``, ``size``, ``mode``, ``seed``, ``hparams``
    overriding the size's), a script (``script``) or a user's model (``external``: a
    SavedModel or a ``.keras`` file, seeded by ``seed``)."""

    model: Optional[str] = None
    size: str = DEFAULT_SIZE
    mode: str = DEFAULT_MODE
    script: Optional[str] = None
    seed: int = 0
    hparams: Tuple[Tuple[str, int], ...] = ()
    external: Optional[_external.ExternalModel] = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "Case":
        """The case of parsed ``add_case_arguments`` options (``--seed`` and the lstm flags
        where the subcommand has them). Raises UsageError for an option of another kind of
        case (e.g. ``--signature`` with ``--model``)."""
        given = vars(args)
        lstm_flags = bool(given.get("case_lstm_flags"))
        external = _external_from_args(args, lstm_flags)
        hparams = tuple((hparam, given[flag.replace("-", "_")]) for flag, hparam in LSTM_FLAGS
                        if lstm_flags and external is None and given.get(flag.replace("-", "_")) is not None)
        return cls(model=args.model, size=args.size, mode=args.mode, script=args.script,
                   seed=int(given.get("seed") or 0), hparams=hparams, external=external)

    @property
    def kind(self) -> str:
        """"model", "script", "saved_model" or "keras"."""
        if self.external is not None:
            return self.external.kind
        return "script" if self.script else "model"

    @property
    def name(self) -> str:
        """``<script stem>``, ``<model>_<size>_<mode>``, or the external model's name
        (``<dir>_<loader>``, ``<file stem>_infer`` / ``_train``)."""
        if self.external is not None:
            return self.external.name
        if self.script:
            return os.path.splitext(os.path.basename(self.script))[0]
        return f"{self.model}_{self.size}_{self.mode}"

    def to_argv(self) -> List[str]:
        """The options that give this case to another process (the A/B worker)."""
        if self.external is not None:
            return self.external.argv() + ["--seed", str(self.seed)]
        if self.script:
            return ["--script", os.path.abspath(self.script)]
        return ["--model", str(self.model), "--size", self.size, "--mode", self.mode, "--seed", str(self.seed)]

    def to_dict(self) -> Dict[str, Any]:
        """The case as a report records it (``graphi_tf.lab.report``'s "case")."""
        bundled = self.model is not None
        entry = {"name": self.name, "kind": self.kind,
                 "model": self.model, "size": self.size if bundled else None,
                 "mode": self.mode if bundled else None,
                 "script": os.path.abspath(self.script) if self.script else None}
        if self.external is not None:
            entry.update(self.external.to_dict(), name=self.name, kind=self.kind, seed=self.seed)
        return entry

    def reference_case(self) -> Tuple[Optional["Case"], Optional[str]]:
        """(the case whose FULL_TRACE steps bound this one, a note saying how it differs) for
        ``graphi-tf ab``'s physical limit, which needs a TF1 Session; (None, why) where no
        such case exists (a ``.keras`` step)."""
        if self.model is not None and self.mode != "graph":
            return (dataclasses.replace(self, mode="graph"),
                    f"the bound comes from the graph-mode build of the model (asked: {self.mode})")
        if self.external is None or (self.external.kind == "saved_model"
                                     and self.external.loader in ("tf1", "tf2-session")):
            return self, None
        if self.external.kind == "saved_model":
            # Not the TF1 loader: it cannot restore every SavedModel the tf2 loader runs
            # (Keras 3 models saved by tf.saved_model.save: "Could not find variable ...").
            return (dataclasses.replace(self, external=dataclasses.replace(self.external, loader="tf2-session")),
                    "the bound comes from the same SavedModel loaded by tf.saved_model.load into a TF1 "
                    f"Session (asked: {self.external.loader or 'tf2'}, which has no Session to trace)")
        return None, ("a .keras step runs in tf.function / train_on_batch, which have no TF1 Session for "
                      "FULL_TRACE step stats; export a SavedModel (model.export) to measure the physical limit")


def check_case(case: Case) -> None:
    """Checks what can be checked before anything is built or written: that a script exists,
    or the external model's request (``ExternalModel.check``: a SavedModel's tag, signature
    and input shapes from its saved_model.pb; that a Keras file exists and is a .keras file).
    Raises UsageError."""
    if case.script:
        check_script(case.script)
    if case.external is not None:
        case.external.check()


def check_script(path: str) -> None:
    """Raises UsageError unless ``path`` is a file."""
    if not os.path.isfile(path):
        raise UsageError(f"script {path!r} does not exist")


def load_script_step(path: str) -> Callable[[], Any]:
    """Imports ``path`` (its directory first on sys.path meanwhile) and returns what its
    ``build_step()`` returns. Raises UsageError for a missing file, no build_step() or a
    step that is not callable; what the script itself raises propagates."""
    check_script(path)
    spec = importlib.util.spec_from_file_location("graphi_tf_user_step", path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot load {path!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    script_dir = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, script_dir)
    try:
        spec.loader.exec_module(module)
    finally:
        if script_dir in sys.path:
            sys.path.remove(script_dir)
    build = getattr(module, "build_step", None)
    if not callable(build):
        raise UsageError(f"script {path!r} defines no build_step() (a function returning a zero-argument step callable)")
    step = build()
    if not callable(step):
        raise UsageError(f"build_step() in {path!r} returned {type(step).__name__}, not a callable")
    return step


def _model_step(case: Case, executor: str, inter_op: Optional[int], intra_op: Optional[int]) -> Any:
    overrides = dict(case.hparams)
    if overrides and case.model != "lstm":
        flags = ", ".join(f"--{flag}" for flag, hparam in LSTM_FLAGS if hparam in overrides)
        raise UsageError(f"{flags}: for --model lstm only, not --model {case.model}")
    if "hidden" in overrides:
        overrides["input_size"] = overrides["hidden"]
    try:
        return _models.build_step(case.model, size=case.size, mode=case.mode, executor=executor,
                                  inter_op=inter_op, intra_op=intra_op, seed=case.seed, **overrides)
    except ValueError as e:
        raise UsageError(str(e)) from None


def build_step(case: Case, *, executor: str = "GRAPHI", inter_op: Optional[int] = None,
               intra_op: Optional[int] = None) -> Any:
    """The step of ``case``: a zero-argument callable that runs one step.

    A model's or external model's step runs on ``executor`` with TensorFlow's
    ``inter_op``/``intra_op`` pools (None: TensorFlow's); a script's step is the script's,
    as it is (the A/B worker applies its arm around it). Raises UsageError for a bad case
    (the message names the setting and what is allowed).
    """
    if case.script:
        return load_script_step(case.script)
    if case.external is not None:
        return case.external.build_step(executor, seed=case.seed, inter_op=inter_op, intra_op=intra_op)
    return _model_step(case, executor, inter_op, intra_op)


def close_step(step: Any) -> None:
    """Closes a step that has ``close()`` (a bundled model's); a script's plain callable has none."""
    close = getattr(step, "close", None)
    if callable(close):
        close()
