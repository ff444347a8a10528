"""Builds and runs the googletest C++ unit tests under tests/cc.

Each tests/cc/*_test.cc is compiled together with the pure C++ executor
sources (scheduling policy, scheduler, topology, team layout, cost model), which need neither TensorFlow nor Bazel, and
the resulting binary must exit 0. Skips only when the toolchain (g++) or the
googletest headers are missing on this machine.
"""

import subprocess

import pytest

from cc_toolchain import CC_TEST_DIR, REPO_ROOT, gtest_skip_reason

# The TensorFlow-free part of the native library: platform (topology,
# affinity, the environment reader), teams (layout, ready queue, scheduler and
# its steal list), tuning (autotuner, decision, adoption, load class) and the
# cost model, with the setting resolver (TensorFlow-free, though the executor
# layer owns it).
LIBRARY_SOURCES = [
    REPO_ROOT / "cc" / path
    for path in ("platform/topology.cc", "platform/env_settings.cc", "platform/thread_affinity.cc",
                 "platform/float_environment.cc", "teams/team_layout.cc", "teams/ready_queue.cc", "teams/step_order.cc", "teams/scheduler.cc",
                 "teams/steal_list.cc", "tuning/autotuner.cc", "tuning/adoption.cc", "tuning/load_class.cc",
                 "tuning/tuning_decision.cc", "profiler/cost_model.cc", "teams/setting.cc",
                 "executor/setting_resolver.cc", "tuning/graph_load.cc")
]
TEST_SOURCES = sorted(p for p in CC_TEST_DIR.glob("*_test.cc") if p.name != "executor_conformance_test.cc")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("test_source", TEST_SOURCES, ids=lambda p: p.stem)
def test_cc_unit_test_passes(test_source, tmp_path):
    reason = gtest_skip_reason()
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
