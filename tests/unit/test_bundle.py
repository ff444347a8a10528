"""graphi-tf bundle: an offline wheelhouse, its parts and hashes, and its install.sh.

The fast tests build small synthetic bundles; the last test bundles graphi_tf for this
machine's Python, against this environment's ``pip freeze``, and installs it with no index
into a fresh virtual environment that sees this environment's packages and nothing of this
checkout, where it runs a GRAPHI step.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from graphi_tf.lab import bundle, bundle_check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _fake_wheel(directory, name, version, requires=()):
    """A minimal pure-Python wheel ``name`` ``version`` requiring ``requires``."""
    path = os.path.join(directory, f"{name.replace('-', '_')}-{version}-py3-none-any.whl")
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name.replace('-', '_')}/__init__.py", f"VERSION = {version!r}\n")
        z.writestr(f"{info}/METADATA", metadata)
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return path


def _synthetic_bundle(directory, payload_sizes, part_bytes):
    """A bundle of fake files with the given sizes, split at ``part_bytes``; returns the
    original bytes by name."""
    os.makedirs(directory)
    originals, files = {}, []
    for i, size in enumerate(payload_sizes):
        name = f"pkg{i}-1.0-py3-none-any.whl"
        data = os.urandom(size)
        originals[name] = data
        path = os.path.join(directory, name)
        with open(path, "wb") as f:
            f.write(data)
        record = {"name": name, "size": size, "sha256": hashlib.sha256(data).hexdigest()}
        if size > part_bytes:
            record["parts"] = bundle_check.split_file(path, part_bytes)
        files.append(record)
    with open(os.path.join(directory, bundle_check.MANIFEST), "w") as f:
        json.dump({"format": bundle_check.MANIFEST_FORMAT, "files": files}, f)
    shutil.copy(os.path.join(ROOT, "graphi_tf", "lab", "bundle_check.py"), directory)
    shutil.copy(os.path.join(ROOT, "graphi_tf", "lab", "bundle_install.sh"), os.path.join(directory, "install.sh"))
    return originals


def _install(directory, target):
    return subprocess.run(["bash", os.path.join(directory, "install.sh"), str(target)],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHON=sys.executable))


def test_split_parts_join_back_byte_for_byte(tmp_path):
    originals = _synthetic_bundle(str(tmp_path / "b"), [10_000, 3_000, 4_096], part_bytes=4_096)
    paths = bundle_check.verify_and_join(str(tmp_path / "b"), str(tmp_path / "out"))
    assert sorted(os.listdir(tmp_path / "b")).count("pkg0-1.0-py3-none-any.whl.part002") == 1
    assert "pkg2-1.0-py3-none-any.whl" in os.listdir(tmp_path / "b")  # exactly one part's size: not split
    for path in paths:
        with open(path, "rb") as f:
            assert f.read() == originals[os.path.basename(path)]


def test_install_refuses_a_corrupt_part_by_name(tmp_path):
    _synthetic_bundle(str(tmp_path / "b"), [10_000], part_bytes=4_096)
    part = tmp_path / "b" / "pkg0-1.0-py3-none-any.whl.part001"
    data = bytearray(part.read_bytes())
    data[7] ^= 0xFF
    part.write_bytes(bytes(data))
    proc = _install(tmp_path / "b", tmp_path / "target")
    assert proc.returncode == 1
    assert "part pkg0-1.0-py3-none-any.whl.part001 is corrupt" in proc.stderr
    assert "nothing was installed" in proc.stderr
    assert not (tmp_path / "target").exists()


def test_install_names_a_missing_part(tmp_path):
    _synthetic_bundle(str(tmp_path / "b"), [10_000], part_bytes=4_096)
    os.remove(tmp_path / "b" / "pkg0-1.0-py3-none-any.whl.part002")
    proc = _install(tmp_path / "b", tmp_path / "target")
    assert proc.returncode == 1
    assert "part pkg0-1.0-py3-none-any.whl.part002 is missing" in proc.stderr


def test_a_joined_file_is_checked_against_its_own_hash(tmp_path):
    _synthetic_bundle(str(tmp_path / "b"), [10_000], part_bytes=4_096)
    manifest_path = tmp_path / "b" / bundle_check.MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][0]["sha256"] = "0" * 64
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(bundle_check.BundleError, match="joined from its parts"):
        bundle_check.verify_and_join(str(tmp_path / "b"), str(tmp_path / "out"))


def test_have_leaves_out_satisfied_requirements_and_their_dependencies(tmp_path):
    d = str(tmp_path)
    wheels = {
        "graphi-tf": _fake_wheel(d, "graphi-tf", "0.1.0", ["tf-like==2.0", "numpy-like"]),
        "tf-like": _fake_wheel(d, "tf-like", "2.0", ["numpy-like>=1.5", "h5-like<3.15", "proto-like",
                                                     "win-only; sys_platform == 'win32'",
                                                     "cuda-only; extra == 'and-cuda'"]),
        "numpy-like": _fake_wheel(d, "numpy-like", "2.0"),
        "h5-like": _fake_wheel(d, "h5-like", "3.14", ["numpy-like"]),
        "proto-like": _fake_wheel(d, "proto-like", "7.0", ["deep-dep"]),
        "deep-dep": _fake_wheel(d, "deep-dep", "1.0"),
    }
    have = {"numpy-like": "2.5", "h5-like": "3.16", "proto-like": "7.1"}
    chosen, left_out = bundle.select_wheels("graphi-tf", wheels, have, "3.12")
    names = [bundle.wheel_project(p)[0] for p in chosen]
    assert names == ["graphi-tf", "tf-like", "h5-like"]  # h5-like 3.16 does not satisfy <3.15
    assert set(left_out) == {"numpy-like", "proto-like"}  # and deep-dep is not followed


def test_a_requirement_with_extras_brings_the_extras_dependencies(tmp_path):
    d = str(tmp_path)
    wheels = {
        "graphi-tf": _fake_wheel(d, "graphi-tf", "0.1.0", ["lib-like[fast]", "other-like"]),
        "other-like": _fake_wheel(d, "other-like", "1.0", ["lib-like"]),
        "lib-like": _fake_wheel(d, "lib-like", "1.0", ["speed-like; extra == 'fast'", "docs-like; extra == 'docs'"]),
        "speed-like": _fake_wheel(d, "speed-like", "1.0"),
        "docs-like": _fake_wheel(d, "docs-like", "1.0"),
    }
    chosen, _ = bundle.select_wheels("graphi-tf", wheels, {}, "3.12")
    names = [bundle.wheel_project(p)[0] for p in chosen]
    assert sorted(names) == ["graphi-tf", "lib-like", "other-like", "speed-like"]
    assert len(names) == len(set(names))


def test_read_have_takes_name_version_lines_only(tmp_path):
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("Google_Pasta==0.2.0\nnumpy==2.5.2\n-e git+https://x/y#egg=z\n"
                      "torch @ file:///wheels/torch.whl\n# comment\nprotobuf===6.31.1\n")
    assert bundle.read_have(str(freeze)) == {"google-pasta": "0.2.0", "numpy": "2.5.2", "protobuf": "6.31.1"}


def test_a_missing_have_file_is_named(tmp_path):
    with pytest.raises(bundle.BundleError, match="--have .*nope.txt"):
        bundle.read_have(str(tmp_path / "nope.txt"))


def test_cli_refuses_a_bad_python_version(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "graphi_tf.lab.cli", "bundle", "--python-version", "three",
                           "--out", str(tmp_path / "b"), "--wheel", "x.whl"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 1
    assert "--python-version 'three' is invalid; allowed: 3.N" in proc.stderr


@pytest.mark.timeout(1200)
def test_bundle_installs_with_no_index_into_a_fresh_venv_and_runs_a_graphi_step(tmp_path):
    freeze = subprocess.run([sys.executable, "-m", "pip", "list", "--format=freeze"],
                            capture_output=True, text=True, check=True).stdout
    (tmp_path / "have.txt").write_text(freeze)
    version = "%d.%d" % sys.version_info[:2]
    out = tmp_path / "bundle"
    made = subprocess.run([sys.executable, "-m", "graphi_tf.lab.cli", "bundle", "--python-version", version,
                           "--python", sys.executable, "--have", str(tmp_path / "have.txt"),
                           "--part-size", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=1100, cwd=str(tmp_path),
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT))
    assert made.returncode == 0, made.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert [f["project"] for f in manifest["files"]] == ["graphi-tf"]  # this environment has the rest
    assert len(manifest["files"][0]["parts"]) > 1  # 1 MiB parts

    # A fresh venv that sees this environment's installed packages (a path line, so the
    # editable graphi_tf of this checkout is not among them), as a target machine sees its own.
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    fresh_python = str(venv / "bin" / "python")
    site = subprocess.run([fresh_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    with open(os.path.join(site, "host_packages.pth"), "w") as f:
        f.write("\n".join(sorted(ours)) + "\n")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",) and not k.startswith("GRAPHI_")}
    env.update(PYTHON=fresh_python, PIP_NO_INDEX="1", TF_CPP_MIN_LOG_LEVEL="3")
    target = tmp_path / "target"
    installed = subprocess.run(["bash", str(out / "install.sh"), str(target)], capture_output=True, text=True,
                               timeout=600, env=env, cwd=str(tmp_path))
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert f"from {target}/graphi_tf/__init__.py" in installed.stdout

    step = (
        "import graphi_tf, numpy as np, tensorflow as tf\n"
        "g = tf.Graph()\n"
        "with g.as_default():\n"
        "    y = tf.reduce_sum(tf.matmul(tf.ones([8, 8]), tf.ones([8, 8])))\n"
        "with tf.compat.v1.Session(graph=g, config=graphi_tf.session_config()) as s:\n"
        "    value = s.run(y)\n"
        "ran = sum(int(x['steps_run']) for x in graphi_tf.info()['graphs'])\n"
        "print(graphi_tf.__file__, value, ran)\n")
    ran = subprocess.run([fresh_python, "-c", step], capture_output=True, text=True, timeout=300,
                         cwd=str(tmp_path), env=dict(env, PYTHONPATH=str(target)))
    assert ran.returncode == 0, ran.stderr[-3000:]
    where, value, steps = ran.stdout.split()[-3:]
    assert where.startswith(str(target))
    assert float(value) == 512.0
    assert int(steps) >= 1
