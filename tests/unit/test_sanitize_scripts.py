"""The sanitizer scripts build what the plain builds build.

tools/sanitize_unit_tests.sh lists the TensorFlow-free sources itself (CI runs it
before Python is set up); that list must be the one the plain C++ unit tests compile,
or a source would go unsanitized (or a test fail to link) without anyone noticing.
tools/sanitize.sh reads setup.py's list itself, so it needs no such check.
"""

import re

import test_cc_unit_tests
from cc_toolchain import REPO_ROOT

SANITIZE_UNIT_TESTS = REPO_ROOT / "tools" / "sanitize_unit_tests.sh"


def _shell_array(text: str, name: str) -> list:
    match = re.search(rf"^{name}=\((.*?)^\)", text, re.MULTILINE | re.DOTALL)
    assert match, f"no {name}=( ... ) array in {SANITIZE_UNIT_TESTS}"
    return [line.strip() for line in match.group(1).splitlines()
            if line.strip() and not line.strip().startswith("#")]


def test_sanitized_unit_tests_compile_the_sources_the_plain_unit_tests_compile():
    listed = _shell_array(SANITIZE_UNIT_TESTS.read_text(), "TF_FREE_SOURCES")
    expected = [str(p.relative_to(REPO_ROOT)) for p in test_cc_unit_tests.LIBRARY_SOURCES]
    assert listed == expected


def test_ci_runs_the_sanitized_unit_tests_before_pytest():
    lines = (REPO_ROOT / ".ci" / "run").read_text().splitlines()
    sanitize = [i for i, line in enumerate(lines) if line.startswith("tools/sanitize_unit_tests.sh")]
    pytest_run = [i for i, line in enumerate(lines) if "python -m pytest" in line and not line.startswith("#")]
    assert sanitize, ".ci/run does not run tools/sanitize_unit_tests.sh"
    assert pytest_run and sanitize[0] < pytest_run[-1]
