"""``GRAPHI_*`` variables are read in one C++ file and one Python module, and the library
never writes the environment.

Read from the source (nothing is imported or run).
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]

# A C++ read of a GRAPHI_* variable: getenv("GRAPHI_...") or one of env_settings.h's readers.
CC_READ = re.compile(r'\b(?:std::)?(?:getenv|ReadEnv\w*)\s*\(\s*"GRAPHI_')
# Any getenv at all (the one reader, and malloc_arenas.cc for glibc's own variables).
CC_GETENV = re.compile(r'\b(?:std::)?getenv\s*\(')
# A Python read of a GRAPHI_* variable: environ.get("GRAPHI_..."), environ["GRAPHI_..."], getenv.
PY_READ = re.compile(r'''(?:environ(?:\.get)?\s*[\[(]|getenv\s*\()\s*["']GRAPHI_''')
# A Python write to the process environment.
PY_WRITE = re.compile(r'os\.environ(?:\[[^\]]+\]\s*=(?!=)|\.(?:setdefault|update|pop|clear)\s*\()|os\.putenv\s*\(')

# Entry points of processes, which may set TensorFlow's log level before it loads: the command
# line's (when graphi_tf is imported by it), the A/B worker's and the calibration script's.
ENTRY_POINTS = {"graphi_tf/_cli_logging.py", "graphi_tf/lab/_ab_worker.py", "graphi_tf/lab/models/calibrate.py"}


def _sources(*patterns):
    for pattern in patterns:
        for path in sorted(ROOT.glob(pattern)):
            yield path.relative_to(ROOT).as_posix(), path.read_text()


def test_graphi_variables_are_read_in_one_cc_file():
    readers = {name for name, text in _sources("cc/**/*.cc", "cc/**/*.h", "python/*.cc") if CC_READ.search(text)}
    assert readers == {"cc/platform/env_settings.cc"}


def test_only_the_reader_and_glibcs_arena_setting_call_getenv():
    callers = {name for name, text in _sources("cc/**/*.cc", "cc/**/*.h", "python/*.cc") if CC_GETENV.search(text)}
    assert callers == {"cc/platform/env_settings.cc", "cc/platform/malloc_arenas.cc"}


def test_graphi_variables_are_read_in_one_python_module():
    readers = {name for name, text in _sources("graphi_tf/**/*.py") if PY_READ.search(text)}
    assert readers - {"graphi_tf/environment.py"} == set()


def test_the_python_reader_names_the_variables_the_docs_list():
    text = (ROOT / "graphi_tf" / "environment.py").read_text()
    for name in ("GRAPHI_CACHE_DIR", "GRAPHI_TUNE", "GRAPHI_TRACE", "GRAPHI_TRACE_STEP", "GRAPHI_TRACE_PNG"):
        assert f'"{name}"' in text, name


def test_no_module_but_process_entry_points_writes_the_environment():
    writers = {name for name, text in _sources("graphi_tf/**/*.py") if PY_WRITE.search(text)}
    assert writers <= ENTRY_POINTS, writers - ENTRY_POINTS


def test_the_patterns_see_what_they_look_for():
    assert CC_READ.search('const char* p = std::getenv("GRAPHI_POLICY");')
    assert CC_READ.search('ReadEnvSwitch("GRAPHI_TUNE", true)')
    assert PY_READ.search('os.environ.get("GRAPHI_CACHE_DIR")')
    assert PY_READ.search("environ['GRAPHI_TRACE']")
    assert PY_WRITE.search('os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")')
    assert PY_WRITE.search('os.environ["X"] = "1"')
    assert not PY_WRITE.search('if os.environ["X"] == "1":')
