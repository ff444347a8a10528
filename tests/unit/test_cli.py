"""The graphi-tf command line."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)


def test_info_prints_versions_cores_tiles_and_teams_as_json():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-m", "graphi_tf.lab.cli", "info"], env=env,
                          capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr[-2000:]
    info = json.loads(proc.stdout)
    assert info["tf_version"] == info["built_against_tf"]
    assert info["usable_cores"] >= 1
    assert sorted(c for tile in info["tiles"] for c in tile) == info["usable_cpus"]
    assert len(info["teams"]) == info["executors"]
    assert all(len(team) == info["threads_per_executor"] for team in info["teams"])


def test_unknown_command_exits_with_usage_error():
    proc = subprocess.run([sys.executable, "-m", "graphi_tf.lab.cli", "frobnicate"],
                          capture_output=True, text=True, timeout=100)
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr
