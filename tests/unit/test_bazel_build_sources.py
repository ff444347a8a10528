"""The Bazel build (BUILD, tests/cc/BUILD) and the pip build (setup.py) must not drift.

Both files are parsed as text (Python's ast; BUILD files are Starlark, which
the parser accepts), nothing is executed and Bazel is not needed:

* BUILD's NATIVE_SOURCES is setup.py's NATIVE_SOURCES, in the same order, and
  the library targets compile exactly that list with NATIVE_COPTS;
* the compile flags after TensorFlow's, and the link flags, are setup.py's
  (including -DGRAPHI_BUILT_AGAINST_TF="<version>" once Bazel has tokenized it);
* the TensorFlow-free sources the Bazel C++ tests link are the ones
  tests/unit/test_cc_unit_tests.py compiles, and every tests/cc/*_test.cc has
  a Bazel test.
"""

import ast
import pathlib
import shlex

import test_cc_unit_tests
from cc_toolchain import CC_TEST_DIR, REPO_ROOT

SETUP_PY = REPO_ROOT / "setup.py"
ROOT_BUILD = REPO_ROOT / "BUILD"
TESTS_BUILD = CC_TEST_DIR / "BUILD"

# Stands for "TensorFlow's own flags (tf.sysconfig)" in both files.
TF_FLAGS = "<tensorflow flags>"
# Stands for a value computed at build time (TF version, TF lib dir).
VALUE = "{}"


def _parse(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _assignments(tree: ast.Module) -> dict:
    """Top-level NAME = <expr> assignments."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
    return out


def _string_list(node: ast.AST) -> list:
    assert isinstance(node, ast.List), ast.dump(node)
    values = []
    for element in node.elts:
        assert isinstance(element, ast.Constant) and isinstance(element.value, str), ast.dump(element)
        values.append(element.value)
    return values


def _flag(node: ast.AST) -> str:
    """One flag, with any build-time value replaced by VALUE."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace("$$", "$")  # Bazel's escape of "$" (setup.py has none)
    if isinstance(node, ast.Name):
        return VALUE
    if isinstance(node, ast.JoinedStr):  # f"-Wl,-rpath,{tf_lib}"
        return "".join(_flag(v) if isinstance(v, ast.Constant) else VALUE for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return VALUE
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # "-Wl,-rpath," + TF_LIB_DIR
        return _flag(node.left) + _flag(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):  # "...%s..." % TF_VERSION
        return _flag(node.left).replace("%s", VALUE)
    raise AssertionError(f"unexpected flag expression: {ast.dump(node)}")


def _flags(node: ast.AST, names: dict, tf_names: set) -> list:
    """Flattens `a + b + [..]` into flags; names in tf_names become TF_FLAGS."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and not _is_string_expr(node):
        return _flags(node.left, names, tf_names) + _flags(node.right, names, tf_names)
    if isinstance(node, ast.Name):
        if node.id in tf_names:
            return [TF_FLAGS]
        assert node.id in names, f"{node.id} is not a top-level list"
        return _flags(names[node.id], names, tf_names)
    if isinstance(node, ast.List):
        return [_flag(e) for e in node.elts]
    raise AssertionError(f"unexpected flags expression: {ast.dump(node)}")


def _is_string_expr(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.BinOp):
        return _is_string_expr(node.left)
    return isinstance(node, ast.JoinedStr)


def _setup_py():
    tree = _parse(SETUP_PY)
    sources = _string_list(_assignments(tree)["NATIVE_SOURCES"])
    compile_flags = link_flags = None
    for node in ast.walk(tree):
        if (isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute)
                and isinstance(node.op, ast.Add)):
            if node.target.attr == "extra_compile_args":
                compile_flags = _flags(node.value, {}, {"cflags"})
            elif node.target.attr == "extra_link_args":
                link_flags = _flags(node.value, {}, {"lflags"})
    assert compile_flags is not None and link_flags is not None, "setup.py's flags not found"
    return sources, compile_flags, link_flags


def _calls(tree: ast.Module, rule: str) -> list:
    return [n for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == rule]


def _keyword(call: ast.Call, name: str):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _names_in(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node is not None else set()


def _bazel_copt_tokens(flags: list) -> list:
    """Bazel splits each copt like a shell does."""
    out = []
    for flag in flags:
        out.extend([flag] if flag == TF_FLAGS else shlex.split(flag))
    return out


def test_native_sources_match_setup_py():
    setup_sources, _, _ = _setup_py()
    build_sources = _string_list(_assignments(_parse(ROOT_BUILD))["NATIVE_SOURCES"])
    assert build_sources == setup_sources, (
        "BUILD's NATIVE_SOURCES differs from setup.py's:\n"
        f"  only in setup.py: {sorted(set(setup_sources) - set(build_sources))}\n"
        f"  only in BUILD:    {sorted(set(build_sources) - set(setup_sources))}\n"
        "  (or the order differs)")
    assert len(set(build_sources)) == len(build_sources), "a source is listed twice"
    for source in build_sources:
        assert (REPO_ROOT / source).is_file(), f"{source} is listed but missing"


def test_library_targets_use_native_sources_and_flags():
    tree = _parse(ROOT_BUILD)
    library = [c for c in _calls(tree, "cc_library") if ast.literal_eval(_keyword(c, "name")) == "graphi_native"]
    binaries = _calls(tree, "cc_binary")
    assert len(library) == 1 and len(binaries) == 1, "expected cc_library graphi_native and one cc_binary"
    for target in (library[0], binaries[0]):
        assert "NATIVE_SOURCES" in _names_in(_keyword(target, "srcs"))
        assert _names_in(_keyword(target, "copts")) == {"NATIVE_COPTS"}
    assert _names_in(_keyword(binaries[0], "linkopts")) == {"GRAPHI_LINKOPTS"}
    assert _keyword(binaries[0], "linkshared") is not None
    # The two targets split NATIVE_SOURCES with complementary filters.
    lib_src = ast.unparse(_keyword(library[0], "srcs"))
    bin_src = ast.unparse(_keyword(binaries[0], "srcs"))
    assert lib_src == "[s for s in NATIVE_SOURCES if s.startswith('cc/')]", lib_src
    assert bin_src == "[s for s in NATIVE_SOURCES if not s.startswith('cc/')]", bin_src


def test_compile_flags_match_setup_py():
    _, setup_flags, _ = _setup_py()
    names = _assignments(_parse(ROOT_BUILD))
    build_flags = _bazel_copt_tokens(_flags(names["NATIVE_COPTS"], names, {"TF_COMPILE_FLAGS"}))
    assert build_flags == setup_flags
    assert f'-DGRAPHI_BUILT_AGAINST_TF="{VALUE}"' in build_flags


def test_link_flags_match_setup_py():
    _, _, setup_flags = _setup_py()
    names = _assignments(_parse(ROOT_BUILD))
    build_flags = _flags(names["GRAPHI_LINKOPTS"], names, set())
    # TensorFlow's link flags come from the @local_config_tf//:tf dependency.
    assert setup_flags[0] == TF_FLAGS
    assert build_flags == setup_flags[1:]


def test_tf_free_sources_match_the_cc_unit_tests():
    names = _assignments(_parse(ROOT_BUILD))
    tf_free = _string_list(names["TF_FREE_SOURCES"])
    native = set(_string_list(names["NATIVE_SOURCES"]))
    assert set(tf_free) <= native
    unit_test_sources = {p.relative_to(REPO_ROOT).as_posix() for p in test_cc_unit_tests.LIBRARY_SOURCES}
    assert set(tf_free) == unit_test_sources


def test_every_cc_test_source_has_a_bazel_test():
    tree = _parse(TESTS_BUILD)
    in_build = {n.value for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.endswith("_test.cc")}
    on_disk = {p.name for p in CC_TEST_DIR.glob("*_test.cc")}
    assert in_build == on_disk
    names = {ast.literal_eval(_keyword(c, "name")) for c in _calls(tree, "cc_test")
             if isinstance(_keyword(c, "name"), ast.Constant)}
    for source in on_disk - {"executor_conformance_test.cc"}:
        assert source[:-len(".cc")] in names, f"no cc_test for {source}"
