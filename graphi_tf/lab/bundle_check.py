"""Checking and joining a ``graphi-tf bundle`` (its manifest's hashes and parts).

Standard library only and no graphi_tf import: the bundle carries a copy of this file, and
its install.sh runs it on the target, where nothing is installed yet:

    python3 bundle_check.py BUNDLE_DIR OUT_DIR

checks every file the manifest lists (size and sha256; each part of a split file, then the
joined file), writes the wheels into OUT_DIR and prints their paths, one per line. A missing
or corrupt file is one line on stderr naming it, and exit status 1. ``graphi_tf.lab.bundle``,
which makes bundles, uses the same functions.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from typing import Any, Dict, List, Optional, Sequence

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
_HASH_CHUNK = 4 << 20


class BundleError(Exception):
    """A bundle cannot be made or read; the message names the file and what is wrong."""



def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_HASH_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def split_file(path: str, part_bytes: int) -> List[Dict[str, Any]]:
    """Splits ``path`` into ``path.part000``, ``path.part001`` ... of at most ``part_bytes``
    each, beside it, and removes ``path``. Returns the parts' manifest records."""
    if part_bytes < 1:
        raise ValueError(f"part_bytes={part_bytes} is invalid; allowed: >= 1")
    parts: List[Dict[str, Any]] = []
    with open(path, "rb") as src:
        index = 0
        while True:
            data = src.read(part_bytes)
            if not data and index > 0:
                break
            name = f"{os.path.basename(path)}.part{index:03d}"
            with open(os.path.join(os.path.dirname(path), name), "wb") as dst:
                dst.write(data)
            parts.append({"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
            index += 1
            if len(data) < part_bytes:
                break
    os.remove(path)
    return parts


def join_parts(directory: str, record: Dict[str, Any], out_path: str) -> None:
    """Joins the parts of one manifest file record into ``out_path``. Raises BundleError
    naming the first missing or corrupt part; the joined file's hash is checked too."""
    digest = hashlib.sha256()
    with open(out_path, "wb") as out:
        for part in record["parts"]:
            path = os.path.join(directory, part["name"])
            check_file(path, part, "part")
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(_HASH_CHUNK), b""):
                    digest.update(chunk)
                    out.write(chunk)
    if digest.hexdigest() != record["sha256"]:
        raise BundleError(f"{record['name']}: joined from its parts it has sha256 {digest.hexdigest()}, "
                          f"the manifest says {record['sha256']}")


def check_file(path: str, record: Dict[str, Any], what: str = "file") -> None:
    """Raises BundleError unless ``path`` exists with the record's size and sha256."""
    name = os.path.basename(path)
    if not os.path.isfile(path):
        raise BundleError(f"{what} {name} is missing from {os.path.dirname(path) or '.'}")
    size = os.path.getsize(path)
    if size != record["size"]:
        raise BundleError(f"{what} {name} is corrupt: {size} bytes, the manifest says {record['size']}")
    actual = sha256_file(path)
    if actual != record["sha256"]:
        raise BundleError(f"{what} {name} is corrupt: sha256 {actual}, the manifest says {record['sha256']}")


def verify_and_join(directory: str, out_dir: Optional[str] = None) -> List[str]:
    """Checks every file of the bundle in ``directory`` against its manifest and joins the
    split ones (into ``out_dir``, default ``directory``). Returns the wheel paths, in the
    manifest's order. Raises BundleError naming the first missing or corrupt file."""
    manifest_path = os.path.join(directory, MANIFEST)
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
    except OSError:
        raise BundleError(f"{MANIFEST} is missing from {directory}") from None
    except ValueError as e:
        raise BundleError(f"{manifest_path} is not valid JSON: {e}") from None
    if manifest.get("format") != MANIFEST_FORMAT:
        raise BundleError(f"{manifest_path}: format {manifest.get('format')!r}; "
                          f"this graphi_tf reads format {MANIFEST_FORMAT}")
    out_dir = out_dir or directory
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for record in manifest["files"]:
        target = os.path.join(out_dir, record["name"])
        if record.get("parts"):
            join_parts(directory, record, target)
        else:
            check_file(os.path.join(directory, record["name"]), record)
            if out_dir != directory:
                shutil.copyfile(os.path.join(directory, record["name"]), target)
        paths.append(target)
    return paths



def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        sys.stderr.write("usage: python3 bundle_check.py BUNDLE_DIR OUT_DIR\n")
        return 2
    try:
        paths = verify_and_join(args[0], args[1])
    except BundleError as e:
        sys.stderr.write(f"bundle: error: {e}\n")
        return 1
    print("\n".join(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
