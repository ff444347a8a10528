"""GRAPHI raises glibc's malloc arena limit when it loads (cc/platform/malloc_arenas.h), so
its threads do not share an arena with the caller's, and leaves a user's own limit alone.

Each case runs in its own process: the limit is set once, as the runtime starts.
"""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)

SCRIPT = "import json, graphi_tf; print(json.dumps(graphi_tf.info()['malloc_arena_max']))"


def arena_max(**env_extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GRAPHI_") and k not in ("MALLOC_ARENA_MAX", "GLIBC_TUNABLES")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", **env_extra)
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=100)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_graphi_raises_the_arena_limit_to_sixteen_per_cpu_and_at_least_64():
    cpus = len(os.sched_getaffinity(0))
    assert arena_max() == max(64, 16 * cpus)


def test_a_users_malloc_arena_max_is_left_alone():
    assert arena_max(MALLOC_ARENA_MAX="4") is None


def test_an_arena_max_in_glibc_tunables_is_left_alone():
    assert arena_max(GLIBC_TUNABLES="glibc.malloc.arena_max=4") is None
