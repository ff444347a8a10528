"""TensorFlow's log level in the processes of the ``graphi-tf`` command line.

Those processes (the ``graphi-tf`` console script, ``python -m graphi_tf.lab.cli``,
``python -m graphi_tf.lab.ab`` and the A/B workers ``python -m graphi_tf.lab._ab_worker``) print
their own results, and TensorFlow's INFO lines at import ("This TensorFlow binary is
optimized to use available CPU instructions ...", "oneDNN custom operations are on ...")
are only noise in them. Every graphi_tf module is imported after the package, whose
``__init__`` loads the native library and with it TensorFlow, so the command line cannot
avoid importing TensorFlow; and TensorFlow reads TF_CPP_MIN_LOG_LEVEL once, when it first
logs, during that import. So the package calls ``quiet_tensorflow_if_cli`` first thing.

That is not enough on every machine: TensorFlow 2.21 writes some INFO lines through Abseil
before Abseil's logging is initialised, and those reach stderr whatever
TF_CPP_MIN_LOG_LEVEL says ("oneDNN custom operations are on", on CPUs where oneDNN's
optimisations are on by default, such as Xeons with AVX-512). So the package also imports
TensorFlow inside ``tensorflow_import_banners_filtered``: in a command-line process whose
level hides INFO lines, stderr (the file descriptor, which TensorFlow's C++ writes to) goes
to a temporary file during the import, and everything in it but those INFO lines is written
back to stderr afterwards.

A level the user set is kept (TF_CPP_MIN_LOG_LEVEL=0 shows every line), and a program that
imports graphi_tf itself keeps TensorFlow's logging as it is. Imports nothing but the
standard library.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from typing import Iterator, List, Optional, Sequence

CLI_MODULES = ("graphi_tf.lab.cli", "graphi_tf.lab.ab", "graphi_tf.lab._ab_worker")
CLI_SCRIPT = "graphi-tf"
CLI_LOG_LEVEL = "1"  # TensorFlow's INFO lines off; warnings and errors still shown
# An Abseil/glog INFO line ("I0000 00:00:1796235426.520224    4461 port.cc:153] ...") and
# the line Abseil writes before the first message that precedes its initialisation.
_INFO_LINE = re.compile(r"^I\d{4} \d\d:\d\d:\d+(\.\d+)? +\d+ [^ \]]+:\d+\] ")
# What starts something other than the continuation of a dropped INFO message: a log record
# of any severity, a Python traceback or a warnings-module line ("file.py:12: UserWarning: ...").
_NEW_RECORD = re.compile(r"^([IWEF]\d{4} |Traceback |.*:\d+: \w*(Warning|Error)\b)")
_PRE_INIT_NOTICE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"


def started_as_cli(argv0: Optional[str] = None, orig_argv: Optional[Sequence[str]] = None) -> bool:
    """Whether this process is the graphi-tf console script or ``python -m`` one of
    CLI_MODULES (defaults: ``sys.argv[0]`` and ``sys.orig_argv``)."""
    if argv0 is None:
        argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == CLI_SCRIPT:
        return True
    args = list(getattr(sys, "orig_argv", []) if orig_argv is None else orig_argv)
    return any(a == "-m" and args[i + 1] in CLI_MODULES for i, a in enumerate(args[:-1]))


def quiet_tensorflow_if_cli() -> None:
    """Sets TF_CPP_MIN_LOG_LEVEL=1 unless it is set, if this process is the command line."""
    if started_as_cli():
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", CLI_LOG_LEVEL)


def without_tensorflow_info_lines(text: str) -> str:
    """``text`` less TensorFlow's INFO records (an INFO line and the lines that continue its
    message, such as cpu_feature_guard's "To enable the following instructions: ...") and
    Abseil's pre-initialisation notice. Any other record, and anything Python wrote (a
    traceback, a warning), is kept."""
    kept: List[str] = []
    dropping = False
    for line in text.splitlines(keepends=True):
        if _INFO_LINE.match(line) or line.rstrip("\r\n") == _PRE_INIT_NOTICE:
            dropping = True
        elif _NEW_RECORD.match(line):
            dropping = False
        if not dropping:
            kept.append(line)
    return "".join(kept)


def _info_lines_hidden() -> bool:
    level = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0").strip()
    return level.isdigit() and int(level) >= 1


@contextlib.contextmanager
def tensorflow_import_banners_filtered() -> Iterator[None]:
    """In a command-line process whose TF_CPP_MIN_LOG_LEVEL hides INFO lines, drops the INFO
    lines written to stderr inside the block and writes every other line back afterwards
    (module docstring). Elsewhere it does nothing."""
    if not (started_as_cli() and _info_lines_hidden()):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = without_tensorflow_info_lines(captured.read().decode("utf-8", "replace"))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()
