"""Builds and runs the googletest C++ unit tests under tests/cc.

Each tests/cc/*_test.cc is compiled together with the pure C++ executor
sources (topology, team layout), which need neither TensorFlow nor Bazel, and
the resulting binary must exit 0. Skips only when the toolchain (g++) or the
googletest headers are missing on this machine.
"""

import pathlib
import shutil
import subprocess

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
CC_TEST_DIR = REPO_ROOT / "tests" / "cc"
LIBRARY_SOURCES = [
    REPO_ROOT / "cc" / "executor" / "topology.cc",
    REPO_ROOT / "cc" / "executor" / "team_layout.cc",
]
TEST_SOURCES = sorted(p for p in CC_TEST_DIR.glob("*_test.cc") if p.name != "executor_conformance_test.cc")


def _skip_reason():
    """Returns why the C++ tests cannot be built here, or None if they can."""
    if shutil.which("g++") is None:
        return "g++ not found on PATH; install g++ to run the C++ unit tests"
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


@pytest.mark.timeout(300)
@pytest.mark.parametrize("test_source", TEST_SOURCES, ids=lambda p: p.stem)
def test_cc_unit_test_passes(test_source, tmp_path):
    reason = _skip_reason()
    if reason is not None:
        pytest.skip(reason)

    binary = tmp_path / test_source.stem
    compile_cmd = [
        "g++", "-std=c++17", "-O1", f"-I{REPO_ROOT}",
        str(test_source), *map(str, LIBRARY_SOURCES),
        "-o", str(binary),
        "-lgtest", "-lgtest_main", "-pthread",
    ]
    built = subprocess.run(compile_cmd, capture_output=True, text=True,
                           check=False)
    assert built.returncode == 0, (
        f"compiling {test_source.name} failed:\n{' '.join(compile_cmd)}\n"
        f"{built.stdout}{built.stderr}")

    # TEST_TMPDIR keeps the fake sysfs trees inside pytest's temp dir.
    test_tmp = tmp_path / "test_tmp"
    test_tmp.mkdir()
    ran = subprocess.run(
        [str(binary)],
        capture_output=True,
        text=True,
        check=False,
        env={"TEST_TMPDIR": str(test_tmp), "PATH": "/usr/bin:/bin"},
    )
    assert ran.returncode == 0, (
        f"{test_source.name} failed with exit code {ran.returncode}:\n"
        f"{ran.stdout}{ran.stderr}")


def test_cc_unit_tests_exist():
    assert TEST_SOURCES, f"no *_test.cc files found in {CC_TEST_DIR}"
