"""configure() re-partitions the teams 50 times while 4 threads run steps: no crash, no hang,
every result right (tools/stress_configure.py; the 1,000-iteration run is in
docs/reliability.md)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import FAKE

pytestmark = [pytest.mark.timeout(240),
              pytest.mark.skipif(FAKE, reason="re-partitions GRAPHI's teams")]

TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "tools", "stress_configure.py")


@pytest.fixture(scope="module")
def stress_result():
    proc = subprocess.run([sys.executable, TOOL, "--iterations", "50", "--threads", "4",
                           "--hang-timeout", "60"],
                          capture_output=True, text=True, timeout=200)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    assert proc.returncode >= 0, f"crashed with signal {-proc.returncode}:\n{proc.stderr[-4000:]}"
    assert proc.returncode != 3, f"hang:\n{proc.stdout[-4000:]}"
    assert lines, f"status {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc.returncode, json.loads(lines[0][len("RESULT "):])


def test_steps_during_repartitioning_all_give_the_stock_result(stress_result):
    status, r = stress_result
    assert (r["wrong"], r["errors"]) == (0, 0), r["first_problems"]
    assert status == 0


def test_every_layout_is_configured_and_every_thread_keeps_running(stress_result):
    _, r = stress_result
    assert sum(r["layouts"].values()) == 50
    cores = len(os.sched_getaffinity(0))
    fitting = {f"{e}x{t}" for e, t in ((1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (1, 4)) if e * t <= cores}
    assert set(r["layouts"]) >= fitting  # and the default layout
    assert sorted(r["modes"]) == ["function", "function", "graph", "graph"]
    assert all(n > 0 for n in r["steps_per_worker"])


def test_dropped_teams_leave_no_threads_behind(stress_result):
    _, r = stress_result
    assert r["threads_end"] <= r["threads_after_warmup"]
