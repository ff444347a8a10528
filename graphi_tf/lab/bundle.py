"""``graphi-tf bundle``: an offline wheelhouse for a machine with no package index.

Compute nodes of HPC clusters often reach no package index. ``graphi-tf bundle
--python-version X.Y --out DIR`` writes everything such a machine needs to run graphi_tf:

* graphi_tf built for Python X.Y (with an interpreter of that version: ``--python``, else
  ``pythonX.Y`` on PATH or in pyenv; it compiles against the TensorFlow installed there, or
  against ``tensorflow-cpu==2.21.0`` fetched into an isolated build environment);
* ``tensorflow-cpu==2.21.0`` and the rest of the dependency closure for Python X.Y on this
  platform, less what the target already has: ``--have FILE`` takes a ``pip freeze`` of the
  target, and a requirement that one of its versions satisfies is neither bundled nor
  followed further;
* ``manifest.json``: every file with its sha256 and size, and for a file split by
  ``--part-size MiB`` its parts (``NAME.part000`` ...) with theirs;
* ``install.sh``, which checks every hash, joins the parts, checks the joined files and
  installs the wheels with no index into a target directory (``pip install --no-index
  --no-deps --target``), then imports graphi_tf from there. A missing or corrupt file is one
  clear error naming it, before anything is installed.

On the target: ``bash DIR/install.sh TARGET`` and then ``PYTHONPATH=TARGET python3 ...`` or
``TARGET/bin/graphi-tf`` (docs/manycore.md).

Nothing here imports TensorFlow.
"""
from __future__ import annotations

import argparse
import dataclasses
import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from graphi_tf.lab import cli_common
from graphi_tf._argtypes import int_at_least as _int_at_least

from graphi_tf.lab.bundle_check import MANIFEST, MANIFEST_FORMAT, BundleError, sha256_file, split_file

INSTALL_SCRIPT = "install.sh"
CHECK_SCRIPT = "bundle_check.py"
PROJECT = "graphi-tf"
MIB = 1 << 20


# --------------------------------------------------------------------------- names and versions


def canonical_name(name: str) -> str:
    """PEP 503's normalized project name: ``Google_Pasta`` -> ``google-pasta``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_project(filename: str) -> Tuple[str, str]:
    """(canonical project name, version) of a wheel file name."""
    parts = os.path.basename(filename).split("-")
    if len(parts) < 5 or not filename.endswith(".whl"):
        raise BundleError(f"{filename!r} is not a wheel file name (NAME-VERSION-...-PLATFORM.whl)")
    return canonical_name(parts[0]), parts[1]


def read_have(path: str) -> Dict[str, str]:
    """The ``name==version`` lines of a ``pip freeze`` file, by canonical name. Lines of
    another form (``-e ...``, ``name @ url``, comments) are skipped: they pin nothing that
    a wheel's requirement could be checked against. Raises BundleError if unreadable."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise BundleError(f"--have {path!r} cannot be read: {e.strerror}") from None
    have: Dict[str, str] = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*===?\s*([^\s;]+)", line)
        if m:
            have[canonical_name(m.group(1))] = m.group(2)
    return have


def wheel_requirements(path: str) -> List[str]:
    """The ``Requires-Dist`` lines of a wheel's METADATA."""
    with zipfile.ZipFile(path) as z:
        names = [n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1]
        if not names:
            raise BundleError(f"{os.path.basename(path)} has no .dist-info/METADATA")
        metadata = email.parser.Parser().parsestr(z.read(names[0]).decode("utf-8", "replace"))
    return list(metadata.get_all("Requires-Dist") or [])


def select_wheels(root: str, wheels: Dict[str, str], have: Dict[str, str],
                  python_version: str) -> Tuple[List[str], Dict[str, str]]:
    """The wheels the target needs: starting at project ``root``, every requirement (markers
    evaluated for Python ``python_version``, with the extras a requirement asks for) that the
    target's ``have`` version does not satisfy is taken from ``wheels`` (canonical name ->
    path) and followed.

    Returns (the paths in dependency order, root first; {project: why it was left out}).
    Raises BundleError if a needed project has no wheel."""
    from packaging.requirements import Requirement  # pip's own vocabulary; imported on use

    def applies(req: Any, extras: frozenset) -> bool:
        if req.marker is None:
            return True
        return any(req.marker.evaluate({"python_version": python_version,
                                        "python_full_version": f"{python_version}.0", "extra": extra})
                   for extra in ({""} | set(extras)))

    chosen: List[str] = []
    skipped: Dict[str, str] = {}
    extras_of: Dict[str, frozenset] = {root: frozenset()}
    queue = [root]
    done: set = set()
    while queue:
        name = queue.pop(0)
        if name in done:
            continue
        done.add(name)
        path = wheels.get(name)
        if path is None:
            raise BundleError(f"no wheel of {name!r} was downloaded; it is required by the bundle")
        if path not in chosen:
            chosen.append(path)
        for text in wheel_requirements(path):
            req = Requirement(text)
            if not applies(req, extras_of[name]):
                continue
            dep = canonical_name(req.name)
            if dep in extras_of and not (set(req.extras) - extras_of[dep]):
                continue
            if dep not in extras_of and dep in have and req.specifier.contains(have[dep], prereleases=True) \
                    and not req.extras:
                skipped.setdefault(dep, f"the target has {dep}=={have[dep]} ({req})")
                continue
            extras_of[dep] = extras_of.get(dep, frozenset()) | frozenset(req.extras)
            skipped.pop(dep, None)
            done.discard(dep)  # new extras: follow it again
            if dep not in queue:
                queue.append(dep)
    return chosen, skipped


# --------------------------------------------------------------------------- making a bundle


@dataclasses.dataclass(frozen=True)
class BundleRequest:
    """What ``make_bundle`` writes.

    Fields:
      python_version: the target's "X.Y".
      out_dir: where the bundle goes (created; must be empty or absent).
      python: an interpreter of that version to build graphi_tf with (None: find one).
      source: graphi_tf's source tree (None: the checkout this module lies in).
      graphi_wheel: a graphi_tf wheel already built for that version, instead of building.
      have: the target's installed projects (``read_have``).
      part_bytes: files over this size are split into parts of it (None: no split).
      find_links, no_index: passed to ``pip download`` (an offline local wheelhouse).
    """

    python_version: str
    out_dir: str
    python: Optional[str] = None
    source: Optional[str] = None
    graphi_wheel: Optional[str] = None
    have: Dict[str, str] = dataclasses.field(default_factory=dict)
    part_bytes: Optional[int] = None
    find_links: Tuple[str, ...] = ()
    no_index: bool = False


def find_python(version: str) -> str:
    """An interpreter of Python ``version`` ("X.Y"): ``pythonX.Y`` on PATH, else pyenv's.
    Raises BundleError naming what was looked for."""
    found = shutil.which(f"python{version}")
    if found:
        return found
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    versions = os.path.join(root, "versions")
    if os.path.isdir(versions):
        for name in sorted(os.listdir(versions), reverse=True):
            candidate = os.path.join(versions, name, "bin", f"python{version}")
            if re.fullmatch(re.escape(version) + r"\.\d+", name) and os.access(candidate, os.X_OK):
                return candidate
    raise BundleError(f"no Python {version} found (python{version} on PATH or in pyenv); "
                      f"give one with --python")


def python_version_of(python: str) -> str:
    out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise BundleError(f"--python {python!r} does not run: {out.stderr.strip()[-300:]}")
    return out.stdout.strip()


def default_source() -> Optional[str]:
    """The source checkout this module lies in, if it is one (it has setup.py)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return root if os.path.isfile(os.path.join(root, "setup.py")) else None


def _run(cmd: Sequence[str], what: str, **kwargs: Any) -> None:
    _log(f"[bundle] {what}")
    proc = subprocess.run(list(cmd), capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise BundleError(f"{what} failed (exit status {proc.returncode}):\n{tail}")


def build_graphi_wheel(python: str, source: str, out_dir: str, pip_args: Sequence[str] = ()) -> str:
    """Builds graphi_tf's wheel with ``python``: against its installed TensorFlow when it has
    one (and pybind11), else in pip's isolated build environment. Returns the wheel's path."""
    probe = subprocess.run([python, "-c", "import tensorflow, pybind11, setuptools"],
                           capture_output=True, text=True)
    isolation = [] if probe.returncode == 0 else ["--use-pep517"]
    cmd = [python, "-m", "pip", "wheel", "--no-deps", "-w", out_dir, *pip_args, source]
    if not isolation:
        cmd.insert(4, "--no-build-isolation")
    _run(cmd, f"building graphi_tf with {python}"
         + (" against its TensorFlow" if not isolation else " in an isolated build environment"))
    wheels = [f for f in os.listdir(out_dir) if f.endswith(".whl") and wheel_project(f)[0] == PROJECT]
    if len(wheels) != 1:
        raise BundleError(f"building graphi_tf left {len(wheels)} graphi_tf wheels in {out_dir}")
    return os.path.join(out_dir, wheels[0])


def download_closure(wheel: str, python_version: str, out_dir: str, pip_args: Sequence[str] = ()) -> None:
    """``pip download``s the binary wheels ``wheel`` depends on, for Python ``python_version``
    on this platform, into ``out_dir``."""
    cmd = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--python-version",
           python_version, "--implementation", "cp", "-d", out_dir, *pip_args, wheel]
    _run(cmd, f"downloading the dependencies for Python {python_version}")


def make_bundle(request: BundleRequest) -> Dict[str, Any]:
    """Writes the bundle ``request`` describes; returns its manifest. Raises BundleError."""
    if os.path.isdir(request.out_dir) and os.listdir(request.out_dir):
        raise BundleError(f"--out {request.out_dir!r} is not empty; give a new or empty directory")
    if not re.fullmatch(r"3\.\d+", request.python_version):
        raise BundleError(f"--python-version {request.python_version!r} is invalid; allowed: 3.N, e.g. 3.12")
    pip_args: List[str] = [arg for link in request.find_links for arg in ("--find-links", link)]
    if request.no_index:
        pip_args.append("--no-index")
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="graphi_bundle_") as work:
        if request.graphi_wheel:
            graphi_wheel = request.graphi_wheel
        else:
            python = request.python or find_python(request.python_version)
            version = python_version_of(python)
            if version != request.python_version:
                raise BundleError(f"--python {python!r} is Python {version}, not {request.python_version}")
            source = request.source or default_source()
            if source is None:
                raise BundleError("graphi_tf's source tree is not beside this installation; "
                                  "give --source DIR or a built --wheel")
            graphi_wheel = build_graphi_wheel(python, source, os.path.join(work, "build"), pip_args)
        name, _ = wheel_project(graphi_wheel)
        if name != PROJECT:
            raise BundleError(f"--wheel {graphi_wheel!r} is not a graphi_tf wheel")
        downloads = os.path.join(work, "downloads")
        os.makedirs(downloads)
        shutil.copy(graphi_wheel, downloads)
        download_closure(os.path.join(downloads, os.path.basename(graphi_wheel)), request.python_version,
                         downloads, pip_args)
        wheels = {wheel_project(f)[0]: os.path.join(downloads, f)
                  for f in sorted(os.listdir(downloads)) if f.endswith(".whl")}
        have = {k: v for k, v in request.have.items() if k != PROJECT}
        chosen, skipped = select_wheels(PROJECT, wheels, have, request.python_version)
        os.makedirs(request.out_dir, exist_ok=True)
        files = []
        for path in chosen:
            target = os.path.join(request.out_dir, os.path.basename(path))
            shutil.copyfile(path, target)
            record: Dict[str, Any] = {"name": os.path.basename(path), "project": wheel_project(path)[0],
                                      "version": wheel_project(path)[1], "size": os.path.getsize(target),
                                      "sha256": sha256_file(target)}
            if request.part_bytes and record["size"] > request.part_bytes:
                record["parts"] = split_file(target, request.part_bytes)
            files.append(record)
    manifest = {
        "format": MANIFEST_FORMAT,
        "created_unix": time.time(),
        "python_version": request.python_version,
        "platform": sys.platform,
        "machine": os.uname().machine,
        "part_bytes": request.part_bytes,
        "files": files,
        "left_out": skipped,
        "seconds_to_make": round(time.time() - started, 1),
    }
    with open(os.path.join(request.out_dir, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.copyfile(os.path.join(here, CHECK_SCRIPT), os.path.join(request.out_dir, CHECK_SCRIPT))
    script = os.path.join(request.out_dir, INSTALL_SCRIPT)
    shutil.copyfile(os.path.join(here, "bundle_install.sh"), script)
    os.chmod(script, 0o755)
    return manifest


def transfer_files(manifest: Dict[str, Any]) -> List[Tuple[str, int]]:
    """(name, bytes) of every file that travels, in manifest order (parts for split files),
    then manifest.json, install.sh and bundle_check.py (their sizes not counted: 0)."""
    out: List[Tuple[str, int]] = []
    for record in manifest["files"]:
        for item in record.get("parts") or [record]:
            out.append((item["name"], int(item["size"])))
    return out + [(MANIFEST, 0), (INSTALL_SCRIPT, 0), (CHECK_SCRIPT, 0)]


# --------------------------------------------------------------------------- command line


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``bundle`` subcommand to ``graphi-tf``'s subparsers."""
    parser = cli_common.add_subcommand(
        subparsers, "bundle", run, help="write an offline wheelhouse (graphi_tf, TensorFlow, dependencies) "
                                        "for a machine with no package index",
        description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--python-version", required=True, metavar="X.Y",
                        help="the target's Python, e.g. 3.12")
    parser.add_argument("--out", required=True, metavar="DIR", help="a new or empty directory for the bundle")
    parser.add_argument("--have", metavar="FILE",
                        help="a `pip freeze` of the target: what it already has in a satisfying version is "
                             "not bundled")
    parser.add_argument("--part-size", type=_int_at_least(1), metavar="MiB",
                        help="split files over MiB mebibytes into parts of MiB (install.sh joins them)")
    parser.add_argument("--python", metavar="PATH",
                        help="interpreter of the target's version to build graphi_tf with "
                             "(default: pythonX.Y on PATH or in pyenv)")
    parser.add_argument("--source", metavar="DIR", help="graphi_tf's source tree (default: this checkout)")
    parser.add_argument("--wheel", metavar="FILE", help="a graphi_tf wheel already built for the target's "
                                                          "Python, instead of building one")
    parser.add_argument("--find-links", action="append", default=[], metavar="DIR",
                        help="also look for wheels here (pip's --find-links; repeatable)")
    parser.add_argument("--no-index", action="store_true",
                        help="download nothing: take every wheel from --find-links")


def request_from_args(args: argparse.Namespace) -> BundleRequest:
    return BundleRequest(
        python_version=args.python_version, out_dir=args.out, python=args.python, source=args.source,
        graphi_wheel=args.wheel, have=read_have(args.have) if args.have else {},
        part_bytes=args.part_size * MIB if args.part_size else None,
        find_links=tuple(args.find_links), no_index=args.no_index)


def run(args: argparse.Namespace) -> int:
    """Handler of ``graphi-tf bundle``."""
    try:
        manifest = make_bundle(request_from_args(args))
    except BundleError as e:
        return cli_common.error(str(e), 1)
    total = sum(size for _, size in transfer_files(manifest))
    for record in manifest["files"]:
        parts = f" in {len(record['parts'])} parts" if record.get("parts") else ""
        print(f"{record['name']}  {record['size'] / MIB:.1f} MiB{parts}")
    for project, why in sorted(manifest["left_out"].items()):
        print(f"left out {project}: {why}")
    print(f"wrote {args.out}: {len(manifest['files'])} wheels, {total / MIB:.1f} MiB; on the target: "
          f"bash {os.path.join(args.out, INSTALL_SCRIPT)} TARGET_DIR")
    return 0


def main(argv: Optional[Iterable[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog=f"{cli_common.PROG} bundle")
    add_arguments(parser)
    return run(parser.parse_args(list(argv) if argv is not None else None))


if __name__ == "__main__":
    sys.exit(main())
