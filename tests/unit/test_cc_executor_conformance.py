"""Builds and runs the C++ executor conformance test (tests/cc/executor_conformance_test.cc).

The test runs the cases of TensorFlow's executor_test.cc (re-implemented on
exported TensorFlow symbols) against both TensorFlow's stock executor
("DEFAULT") and Graphi's ("GRAPHI"); both must pass the same assertions.

The binary is compiled from the test and every cc/**/*.cc source (the
static initializer in registration.cc registers "GRAPHI") with the compile
flags of the TensorFlow this Python imports, linked against its
libtensorflow_framework.so.2 and libtensorflow_cc.so.2 (the latter holds the
kernels). It is built once per pytest session, in a temporary directory, and
then run under a few Graphi team layouts.

Skips only when g++ or the googletest headers are missing on this machine.
"""

import concurrent.futures
import os
import subprocess
import time

import pytest

from cc_toolchain import CC_TEST_DIR, REPO_ROOT, gtest_skip_reason

TEST_SOURCE = REPO_ROOT / "tests" / "cc" / "executor_conformance_test.cc"
EXECUTOR_SOURCES = sorted((REPO_ROOT / "cc").rglob("*.cc"))

COMPILE_TIMEOUT_S = 600
RUN_TIMEOUT_S = 600

# Graphi team layouts the binary runs under, as environment settings. The
# GRAPHI arm must conform whatever the layout; the non-default ones need two
# usable cores.
LAYOUTS = {
    "default_layout": {},
    "one_team_two_threads": {"GRAPHI_EXECUTORS": "1", "GRAPHI_THREADS_PER_EXECUTOR": "2"},
    "two_teams_one_thread": {"GRAPHI_EXECUTORS": "2", "GRAPHI_THREADS_PER_EXECUTOR": "1"},
}


def _usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _tensorflow_flags():
    import tensorflow as tf

    compile_flags = list(tf.sysconfig.get_compile_flags())
    lib_dir = tf.sysconfig.get_lib()
    link_flags = [
        # The test binary references few symbols of libtensorflow_cc, but it
        # needs the kernels (Add, _Send, Switch, ...) it registers at load.
        "-Wl,--no-as-needed",
        *tf.sysconfig.get_link_flags(),
        "-l:libtensorflow_cc.so.2",
        "-Wl,--as-needed",
        f"-Wl,-rpath,{lib_dir}",
    ]
    return compile_flags, link_flags


def _compile(cmd):
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          timeout=COMPILE_TIMEOUT_S)
    return cmd, done, time.monotonic() - started


@pytest.fixture(scope="session")
def conformance_binary(tmp_path_factory):
    """Compiles the conformance test once per pytest session; returns its path."""
    reason = gtest_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    assert TEST_SOURCE.is_file(), f"{TEST_SOURCE} is missing"
    assert EXECUTOR_SOURCES, "no cc/**/*.cc sources found"

    build_dir = tmp_path_factory.mktemp("cc_executor_conformance")
    compile_flags, link_flags = _tensorflow_flags()
    common = [
        "g++", *compile_flags, "-O1", f"-I{REPO_ROOT}", "-pthread",
        "-Wno-deprecated-declarations", "-Wno-interference-size",
    ]
    # One translation unit per g++ process, run in parallel; the test (the
    # largest) first.
    sources = [TEST_SOURCE, *EXECUTOR_SOURCES]
    objects = [build_dir / f"{i:02d}_{src.stem}.o" for i, src in enumerate(sources)]
    commands = [[*common, "-c", str(src), "-o", str(obj)] for src, obj in zip(sources, objects)]

    started = time.monotonic()
    workers = max(1, min(len(commands), _usable_cores(), 8))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(_compile, commands))
    for cmd, done, _ in results:
        assert done.returncode == 0, (
            f"compiling {cmd[cmd.index('-c') + 1]} failed:\n{' '.join(cmd)}\n"
            f"{done.stdout}{done.stderr}")

    binary = build_dir / "executor_conformance_test"
    link_cmd = ["g++", "-o", str(binary), *map(str, objects), *link_flags,
                "-lgtest", "-pthread"]
    linked = subprocess.run(link_cmd, capture_output=True, text=True, check=False,
                            timeout=COMPILE_TIMEOUT_S)
    assert linked.returncode == 0, (
        f"linking the conformance test failed:\n{' '.join(link_cmd)}\n"
        f"{linked.stdout}{linked.stderr}")
    print(f"built {binary} in {time.monotonic() - started:.0f}s "
          f"({len(commands)} translation units, {workers} in parallel)")
    return binary


@pytest.mark.timeout(900)
@pytest.mark.parametrize("layout", sorted(LAYOUTS), ids=str)
def test_cc_executor_conformance(conformance_binary, layout):
    if LAYOUTS[layout] and _usable_cores() < 2:
        pytest.skip(f"layout {layout} needs two usable cores")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(LAYOUTS[layout])
    env["GTEST_COLOR"] = "no"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        ran = subprocess.run([str(conformance_binary)], capture_output=True, text=True,
                             check=False, env=env, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or "")
        err = (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) \
            else (e.stderr or "")
        pytest.fail(f"executor conformance test ({layout}) did not finish within "
                    f"{RUN_TIMEOUT_S}s:\n{out}{err}")
    assert ran.returncode == 0, (
        f"executor conformance test ({layout}) failed with exit code "
        f"{ran.returncode}:\n{ran.stdout}{ran.stderr}")
    assert "[  PASSED  ]" in ran.stdout, f"no gtest summary in the output:\n{ran.stdout}{ran.stderr}"


def test_cc_executor_conformance_source_exists():
    assert TEST_SOURCE.is_file(), f"{TEST_SOURCE} is missing"
