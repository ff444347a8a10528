"""Shared helpers for pytest files that build and run C++ tests from tests/cc."""

import pathlib
import shutil
import subprocess
from typing import Optional

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
CC_TEST_DIR = REPO_ROOT / "tests" / "cc"


def gtest_skip_reason() -> Optional[str]:
    """Returns why googletest C++ tests cannot be built here, or None if they can."""
    if shutil.which("g++") is None:
        return "g++ not found on PATH; install g++ to run the C++ tests"
    # Ask the compiler itself so that non-default include paths count too.
    probe = subprocess.run(
        ["g++", "-std=c++17", "-x", "c++", "-E", "-", "-o", "/dev/null"],
        input="#include <gtest/gtest.h>\n",
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return ("googletest headers (gtest/gtest.h) not found; install them "
                "with `apt-get install -y libgtest-dev`")
    return None
