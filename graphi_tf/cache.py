"""The per-graph config cache: tuned settings and node costs, one JSON file per graph.

An entry records what ``graphi_tf.tune`` decided for one graph on one machine: the chosen
setting (E executor teams × T threads, ready-op policy; the default when no setting beat
it), the sweep table, the evidence of the decision (per-round medians, ratios to the
default, their spread, the reason), and the measured cost of every node. A later process that runs the same graph on the same machine with the
same TensorFlow and graphi_tf adopts it at import (``apply_cached_entries``), so it runs
tuned from its first step without code changes.

Where: ``$GRAPHI_CACHE_DIR``, else ``$XDG_CACHE_HOME/graphi_tf``, else
``~/.cache/graphi_tf``. One file per entry, ``<key>.json``, where the key is a hash of
(graph signature, TensorFlow version, graphi_tf version, machine fingerprint).

Safety: files are written to a temporary file in the same directory, fsync'ed and renamed
over the entry (``os.replace``), so readers and concurrent writers never see half an entry;
the last writer wins. A corrupt entry (not JSON, missing or mistyped fields, key not
matching its content), one from another schema version, one for another machine (foreign)
or one for another TensorFlow or graphi_tf version (stale) is reported once per file and
process with a ``GraphiCacheWarning`` and ignored: never a crash, never silently used.

This module imports neither TensorFlow nor the native library at import time.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import pathlib
import tempfile
import time
import warnings
from typing import Any, Dict, Mapping, Optional, Sequence

from graphi_tf import decision as _decision
from graphi_tf import environment as _environment

SCHEMA_VERSION = 1
"""Version of the entry layout; an entry with another version is ignored (and reported)."""

ENV_CACHE_DIR = _environment.CACHE_DIR
ENV_TUNE = _environment.TUNE

_ENTRY_SUFFIX = ".json"
_TEMP_SUFFIX = ".tmp"

# Paths (and other report keys) already reported with a GraphiCacheWarning in this
# process. The only module state; tests reset it with _reset_reports().
_reported: set = set()


class GraphiCacheWarning(UserWarning):
    """A cache entry (or the cache directory) could not be used; it was ignored."""


def _reset_reports() -> None:
    """Forgets which entries were reported, so they are reported again (for tests)."""
    _reported.clear()


def _report_once(report_key: str, message: str) -> None:
    if report_key in _reported:
        return
    _reported.add(report_key)
    warnings.warn(GraphiCacheWarning(message), stacklevel=3)


# --------------------------------------------------------------------------- location


def cache_dir() -> pathlib.Path:
    """Returns the cache directory (it may not exist yet).

    ``$GRAPHI_CACHE_DIR`` if set and non-empty; else ``$XDG_CACHE_HOME/graphi_tf`` if
    ``XDG_CACHE_HOME`` is an absolute path (the XDG spec says relative ones are ignored);
    else ``~/.cache/graphi_tf``.
    """
    explicit = _environment.read().cache_dir
    if explicit:
        return pathlib.Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return pathlib.Path(xdg) / "graphi_tf"
    return pathlib.Path.home() / ".cache" / "graphi_tf"


def auto_tune_enabled() -> bool:
    """Whether automatic behaviour is on: ``GRAPHI_TUNE`` unset, empty or 1 (the default).

    ``GRAPHI_TUNE=0`` turns it off: cached settings are not applied (and the native
    runtime falls back to the fifo policy). Any other value is reported once and nothing is
    applied: the native runtime refuses to run a GRAPHI step until it is mended.
    """
    raw = _environment.read().tune
    if raw == "0":
        return False
    if raw not in ("", "1"):
        _report_once(
            f"env:{ENV_TUNE}={raw}",
            f"{ENV_TUNE}={raw!r} is invalid; allowed: 0 (off) or 1 (on). No cached setting is applied, "
            "and GRAPHI steps fail until it is mended.",
        )
        return False
    return True


# --------------------------------------------------------------------------- identity


def _current_tf_version() -> str:
    try:
        from graphi_tf import _build_info  # the loader refuses any other installed TF

        return str(_build_info.TF_VERSION)
    except ImportError:  # pragma: no cover - only on a broken install
        import tensorflow as tf

        return str(tf.__version__)


def _current_graphi_version() -> str:
    from graphi_tf.version import __version__

    return __version__


def _runtime_info(info: Optional[Mapping[str, Any]]) -> Mapping[str, Any]:
    if info is not None:
        return info
    from graphi_tf import _loader

    return _loader.native().runtime_info()


def machine_fingerprint(info: Optional[Mapping[str, Any]] = None) -> dict:
    """What identifies this machine for the cache: CPU model, usable cores, tile layout.

    Args:
      info: ``graphi_tf.info()`` or the native ``runtime_info()``; None reads it now.

    Returns:
      ``{"cpu_model": str, "usable_cores": int, "tiles": [int, ...]}`` where ``tiles`` is
      the core count of each usable L2 tile in order. CPU ids are left out, so a process
      pinned to other cores of the same kind of machine shares the entries.
    """
    info = _runtime_info(info)
    return {
        "cpu_model": str(info["cpu_model"]),
        "usable_cores": int(info["usable_cores"]),
        "tiles": [len(tile) for tile in info["tiles"]],
    }


def _canonical_fingerprint(fingerprint: Mapping[str, Any]) -> dict:
    try:
        return {
            "cpu_model": str(fingerprint["cpu_model"]),
            "usable_cores": int(fingerprint["usable_cores"]),
            "tiles": [int(n) for n in fingerprint["tiles"]],
        }
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(
            f"machine fingerprint {fingerprint!r} is invalid ({e}); "
            "expected cpu_model (str), usable_cores (int), tiles (list of int)"
        ) from e


# The load classes a setting is tuned for (cc/tuning/load_class.h): one step at a
# time, or a level of steps in flight (concurrent requests), named by the power of two
# it holds: 2, 3-5 ("under_load_4"), 6-11, 12-22, 23-45, 46 or more ("under_load_64").
LOAD_ALONE = "alone"
LOAD_LEVEL_IN_FLIGHT = {
    "under_load_2": "2",
    "under_load_4": "3-5",
    "under_load_8": "6-11",
    "under_load_16": "12-22",
    "under_load_32": "23-45",
    "under_load_64": "46 or more",
}
"""The steps in flight each level under load holds (``LoadClassOf`` in load_class.cc)."""
LOAD_UNDER_LOAD_LEVELS = tuple(LOAD_LEVEL_IN_FLIGHT)
LOAD_CLASSES = (LOAD_ALONE, *LOAD_UNDER_LOAD_LEVELS)


def entry_key(
    signature: str,
    tf_version: str,
    graphi_version: str,
    fingerprint: Mapping[str, Any],
    load_class: str = LOAD_ALONE,
) -> str:
    """The cache key: the first 32 hex digits of the SHA-256 of a canonical JSON of
    (graph signature, TensorFlow version, graphi_tf version, machine fingerprint, load
    class). The load class is left out for ``"alone"``, so entries written before load
    classes keep their keys (they were all timed one step at a time or are read as such).

    Raises:
      ValueError: ``load_class`` is not one of ``LOAD_CLASSES``.
    """
    identity = {
        "signature": str(signature),
        "tf_version": str(tf_version),
        "graphi_tf_version": str(graphi_version),
        "machine": _canonical_fingerprint(fingerprint),
    }
    if load_class not in LOAD_CLASSES:
        raise ValueError(f"load_class={load_class!r} is invalid; allowed: {', '.join(LOAD_CLASSES)}")
    if load_class != LOAD_ALONE:
        identity["load_class"] = load_class
    canonical = json.dumps(
        identity,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()[:32]


# --------------------------------------------------------------------------- entries


@dataclasses.dataclass
class CacheEntry:
    """One graph's tuned setting and node costs on one machine, for one load class.

    Fields:
      key: ``entry_key(signature, tf_version, graphi_tf_version, machine, load_class)``;
        the file name.
      schema: ``SCHEMA_VERSION`` of the writer.
      signature: the graph's signature (native ``graphs()``; stable across processes).
      tf_version, graphi_tf_version: versions of the writer.
      machine: ``machine_fingerprint()`` of the writer.
      setting: ``{"executors": E, "threads_per_executor": T, "policy": str}``.
      median_step_ms: median step time of that setting in the sweep (for ``tune``: the
        median of its per-round medians).
      table: the sweep, one dict per setting (``tune``: executors, threads_per_executor,
        median_ms, min_ms, max_ms, round_medians_ms, ratio_median, ratio_spread, rounds,
        eliminated_after_round; entries of older versions have vs_best instead).
      node_count: nodes in the graph.
      node_costs_ns: measured cost per node id (-1: unknown).
      node_names: node name per node id (costs are only used if these match the graph).
      created_unix: when it was written (seconds since the epoch).
      note: free text (who wrote it, how).
      evidence: why this setting: ``graphi_tf.decision.Decision.to_dict()`` (default and
        chosen setting, reason, per-setting round medians, ratios, ratio median and
        spread, eliminated_after_round; shape in ``build``), or None (entries written
        before the decision rule, or by writers without one). Optional in the file.
      load_class: ``"alone"`` (timed one step at a time: ``tune``, or the autotuner
        without overlapping steps) or a level of ``LOAD_UNDER_LOAD_LEVELS`` (the
        autotuner under that many concurrent steps; figures are then ms per request). A
        graph has one entry per class, and follows the one of the class it is in, else
        the nearest class's. Optional in the file (``"alone"``).
    """

    key: str
    schema: int
    signature: str
    tf_version: str
    graphi_tf_version: str
    machine: dict
    setting: dict
    median_step_ms: float
    table: list
    node_count: int
    node_costs_ns: list
    node_names: list
    created_unix: float
    note: str = ""
    evidence: Optional[dict] = None
    load_class: str = LOAD_ALONE

    @classmethod
    def build(
        cls,
        *,
        signature: str,
        machine: Mapping[str, Any],
        executors: int,
        threads_per_executor: int,
        policy: str,
        median_step_ms: float,
        table: Sequence[Mapping[str, Any]] = (),
        node_count: int = 0,
        node_costs_ns: Sequence[int] = (),
        node_names: Sequence[str] = (),
        note: str = "",
        tf_version: Optional[str] = None,
        graphi_tf_version: Optional[str] = None,
        created_unix: Optional[float] = None,
        evidence: Optional[Mapping[str, Any]] = None,
        load_class: str = LOAD_ALONE,
        inter_op_threads: int = 0,
        intra_op_threads: int = 0,
    ) -> "CacheEntry":
        """A new entry for this process's versions (unless given), with its key computed.

        ``evidence`` is None or a plain dict in ``graphi_tf.decision.Decision.to_dict()``
        shape (settings as "ExT" labels, round indices 0-based)::

            {"default": "2x1", "chosen": "1x2", "adopted": true,
             "reason": "1x2 adopted: 0.83 of the default 2x1, faster in 6 of 6 rounds, 5 needed",
             "rule": {"min_rounds_to_adopt": 3, "eliminate_ratio": 1.1},   # optional
             "evidence": [{"setting": "2x1", "round_medians_ms": [25.1, 24.9, ...],
                           "ratios": [1.0, 1.0, ...], "ratio_median": 1.0,
                           "ratio_spread": 0.0, "eliminated_after_round": null},
                          {"setting": "1x2", "round_medians_ms": [20.8, null, ...], ...}]}

        ``round_medians_ms`` has one item per round (null where the setting was not
        timed); ``ratio_median``/``ratio_spread`` are null for a setting with no ratio.

        A stock point (TensorFlow's executor on I inter-op and A intra-op threads GRAPHI
        owns) is executors x threads_per_executor = 0 x 0 with ``inter_op_threads`` = I and
        ``intra_op_threads`` = A; the setting then holds those two fields as well.

        Raises:
          ValueError: ``evidence`` does not have that shape, or its ``chosen`` is not
            ``executors`` x ``threads_per_executor`` (the message says which field), or
            ``load_class`` is not one of ``LOAD_CLASSES``.
        """
        setting: Dict[str, Any] = {
            "executors": int(executors),
            "threads_per_executor": int(threads_per_executor),
            "policy": str(policy),
        }
        if inter_op_threads or intra_op_threads:
            setting.update(inter_op_threads=int(inter_op_threads), intra_op_threads=int(intra_op_threads))
        _check_setting(setting)
        if evidence is not None:
            evidence = json.loads(json.dumps(dict(evidence)))  # a plain, JSON-able copy
            _check_evidence(evidence, setting)
        tf_version = tf_version if tf_version is not None else _current_tf_version()
        graphi_tf_version = graphi_tf_version if graphi_tf_version is not None else _current_graphi_version()
        machine = _canonical_fingerprint(machine)
        return cls(
            key=entry_key(signature, tf_version, graphi_tf_version, machine, load_class),
            schema=SCHEMA_VERSION,
            signature=str(signature),
            tf_version=tf_version,
            graphi_tf_version=graphi_tf_version,
            machine=machine,
            setting=setting,
            median_step_ms=float(median_step_ms),
            table=[dict(row) for row in table],
            node_count=int(node_count),
            node_costs_ns=[int(c) for c in node_costs_ns],
            node_names=[str(n) for n in node_names],
            created_unix=float(time.time() if created_unix is None else created_unix),
            note=str(note),
            evidence=evidence,
            load_class=load_class,
        )

    def decision(self) -> Optional["_decision.Decision"]:
        """The evidence as a ``graphi_tf.decision.Decision`` (None if the entry has none)."""
        return None if self.evidence is None else _decision.Decision.from_dict(self.evidence)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> "CacheEntry":
        """Validates ``data`` (a parsed entry file) and returns the entry.

        Raises:
          ValueError: the data is not a valid entry of this schema; the message says why.
        """
        if not isinstance(data, dict):
            raise ValueError(f"top level is {type(data).__name__}, not an object")
        if "schema" not in data:
            raise ValueError("missing field 'schema'")
        schema = data["schema"]
        if schema != SCHEMA_VERSION or isinstance(schema, bool):
            raise _SchemaMismatch(
                f"schema version {schema!r}, this graphi_tf reads version {SCHEMA_VERSION}"
            )
        for field in dataclasses.fields(cls):
            if field.name not in data and field.name not in _OPTIONAL_FIELDS:
                raise ValueError(f"missing field {field.name!r}")
        _check(data, "key", str)
        _check(data, "signature", str)
        _check(data, "tf_version", str)
        _check(data, "graphi_tf_version", str)
        _check(data, "note", str)
        _check(data, "node_count", int)
        _check_number(data, "median_step_ms")
        _check_number(data, "created_unix")
        machine = data["machine"]
        if not isinstance(machine, dict):
            raise ValueError("field 'machine' is not an object")
        _check(machine, "cpu_model", str, "machine.")
        _check(machine, "usable_cores", int, "machine.")
        _check_list(machine, "tiles", int, "machine.")
        setting = data["setting"]
        if not isinstance(setting, dict):
            raise ValueError("field 'setting' is not an object")
        _check_setting(setting)
        _check_list(data, "table", dict)
        _check_list(data, "node_costs_ns", int)
        _check_list(data, "node_names", str)
        if len(data["node_costs_ns"]) != len(data["node_names"]):
            raise ValueError(
                f"{len(data['node_costs_ns'])} node costs but {len(data['node_names'])} node names"
            )
        evidence = data.get("evidence")
        if evidence is not None:
            _check_evidence(evidence, setting)
        load_class = data.get("load_class", LOAD_ALONE)
        if load_class == "under_load":
            raise ValueError(
                "field 'load_class' is 'under_load', written before load levels: it does not "
                f"say how much load it was tuned under (now one of {', '.join(LOAD_CLASSES)})"
            )
        if load_class not in LOAD_CLASSES:
            raise ValueError(f"field 'load_class' is {load_class!r}, not one of {', '.join(LOAD_CLASSES)}")
        expected_key = entry_key(
            data["signature"], data["tf_version"], data["graphi_tf_version"], machine, load_class
        )
        if data["key"] != expected_key:
            raise ValueError(f"key {data['key']!r} does not match its content (expected {expected_key!r})")
        return cls(**{field.name: data[field.name] for field in dataclasses.fields(cls) if field.name in data})


# Fields an entry file may lack (added after SCHEMA_VERSION 1 was first written; the
# dataclass default applies).
_OPTIONAL_FIELDS = ("evidence", "load_class")


class _SchemaMismatch(ValueError):
    pass


def setting_of(setting: Mapping[str, Any]) -> _decision.Setting:
    """An entry's ``setting`` object as a ``graphi_tf.decision.Setting``: ``(E, T)``, ``(0, 0)``
    for stock, ``(0, 0, I, A)`` for a stock point."""
    if "inter_op_threads" in setting:
        return _decision.stock_point(setting["inter_op_threads"], setting["intra_op_threads"])
    return (int(setting["executors"]), int(setting["threads_per_executor"]))


def _check_setting(setting: Mapping[str, Any]) -> None:
    _check(setting, "executors", int, "setting.")
    _check(setting, "threads_per_executor", int, "setting.")
    _check(setting, "policy", str, "setting.")
    stock = (setting["executors"], setting["threads_per_executor"]) == _decision.STOCK
    if not stock and (setting["executors"] < 1 or setting["threads_per_executor"] < 1):
        raise ValueError(
            f"setting {setting['executors']}x{setting['threads_per_executor']} is invalid "
            "(both must be >= 1, or both 0 for stock)"
        )
    if "inter_op_threads" in setting or "intra_op_threads" in setting:
        _check(setting, "inter_op_threads", int, "setting.")
        _check(setting, "intra_op_threads", int, "setting.")
        if not stock or setting["inter_op_threads"] < 1 or setting["intra_op_threads"] < 1:
            raise ValueError(
                f"setting stock:{setting['inter_op_threads']}x{setting['intra_op_threads']} is invalid "
                "(a stock point has executors x threads_per_executor = 0 x 0 and both pool sizes >= 1)"
            )


def _check_evidence(evidence: Any, setting: Mapping[str, Any]) -> None:
    try:
        decision = _decision.Decision.from_dict(evidence)
    except ValueError as e:
        raise ValueError(f"field 'evidence' is invalid: {e}") from None
    if decision.chosen != setting_of(setting):
        raise ValueError(
            f"field 'evidence' chose {evidence['chosen']} but the entry's setting is "
            f"{_decision.setting_label(setting_of(setting))}"
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check(data: Mapping[str, Any], name: str, kind: type, prefix: str = "") -> None:
    if name not in data:
        raise ValueError(f"missing field {prefix}{name!r}")
    value = data[name]
    ok = _is_int(value) if kind is int else isinstance(value, kind)
    if not ok:
        raise ValueError(f"field {prefix}{name!r} is {type(value).__name__}, not {kind.__name__}")


def _check_number(data: Mapping[str, Any], name: str) -> None:
    value = data[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"field {name!r} is {value!r}, not a finite number")


def _check_list(data: Mapping[str, Any], name: str, kind: type, prefix: str = "") -> None:
    if name not in data:
        raise ValueError(f"missing field {prefix}{name!r}")
    value = data[name]
    if not isinstance(value, list):
        raise ValueError(f"field {prefix}{name!r} is {type(value).__name__}, not a list")
    for i, item in enumerate(value):
        ok = _is_int(item) if kind is int else isinstance(item, kind)
        if not ok:
            raise ValueError(f"field {prefix}{name}[{i}] is {type(item).__name__}, not {kind.__name__}")


def entry_path(key: str, directory: Optional[pathlib.Path] = None) -> pathlib.Path:
    """The file of entry ``key``: ``<cache_dir>/<key>.json``."""
    return (directory if directory is not None else cache_dir()) / f"{key}{_ENTRY_SUFFIX}"


def write_entry(entry: CacheEntry, directory: Optional[pathlib.Path] = None) -> pathlib.Path:
    """Writes ``entry`` atomically as ``<key>.json`` in the cache directory; returns its path.

    The JSON goes to a temporary file in the same directory, is flushed and fsync'ed, and
    renamed over the entry with ``os.replace``: a reader sees the old entry or the new one,
    never part of one; of concurrent writers of one key the last wins. On failure the
    temporary file is removed and the old entry is untouched.

    Raises:
      OSError: the directory or the file could not be written.
    """
    directory = directory if directory is not None else cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = entry_path(entry.key, directory)
    payload = json.dumps(entry.to_dict(), indent=1, sort_keys=True) + "\n"
    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{entry.key}.", suffix=_TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    _fsync_directory(directory)
    return target


def _fsync_directory(directory: pathlib.Path) -> None:
    """Makes the rename durable where the platform allows it (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_entry(path: pathlib.Path) -> Optional[CacheEntry]:
    """Reads and validates one entry file.

    Returns None, after reporting it once per path and process with a
    ``GraphiCacheWarning`` that names the file and the reason, if the file cannot be read,
    is not JSON, has another schema version, misses or mistypes a field, or its key does
    not match its content or its file name. Whether it fits this machine and these
    versions is ``load_matching_entries``'s business.
    """
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None  # removed since it was listed (cache clear in another process)
    except (OSError, UnicodeDecodeError) as e:
        _report_once(str(path), f"graphi_tf cache entry {path} is unreadable and was ignored: {e}")
        return None
    try:
        data = json.loads(text)
    except ValueError as e:
        _report_once(str(path), f"graphi_tf cache entry {path} is corrupt (not valid JSON: {e}) and was ignored")
        return None
    try:
        entry = CacheEntry.from_dict(data)
    except _SchemaMismatch as e:
        _report_once(
            str(path),
            f"graphi_tf cache entry {path} was written with another {e} and was ignored",
        )
        return None
    except ValueError as e:
        _report_once(str(path), f"graphi_tf cache entry {path} is corrupt ({e}) and was ignored")
        return None
    if path.name != f"{entry.key}{_ENTRY_SUFFIX}":
        _report_once(
            str(path),
            f"graphi_tf cache entry {path} is corrupt (its key {entry.key} does not match the "
            "file name) and was ignored",
        )
        return None
    return entry


def _entry_files(directory: pathlib.Path) -> list:
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    except OSError as e:
        _report_once(f"dir:{directory}", f"graphi_tf cache directory {directory} is unreadable and was ignored: {e}")
        return []
    return [
        directory / name
        for name in names
        if name.endswith(_ENTRY_SUFFIX) and not name.startswith(".")
    ]


def list_entries(directory: Optional[pathlib.Path] = None) -> list:
    """All valid entries in the cache directory, whatever machine or versions they are for.

    Invalid files are reported (once) and left out. Sorted by creation time, oldest first.
    """
    directory = directory if directory is not None else cache_dir()
    entries = [e for e in (read_entry(p) for p in _entry_files(directory)) if e is not None]
    entries.sort(key=lambda e: (e.created_unix, e.key))
    return entries


def entry_status(entry: CacheEntry, info: Optional[Mapping[str, Any]] = None) -> str:
    """"ok" if ``entry`` is for this machine and these versions, else "foreign" (another
    machine) or "stale" (another TensorFlow or graphi_tf version)."""
    return _mismatch(entry, *_current_identity(info))[0]


def _current_identity(info: Optional[Mapping[str, Any]]) -> tuple:
    info = _runtime_info(info)
    tf_version = str(info.get("tf_version") or _current_tf_version())
    graphi_version = str(info.get("version") or _current_graphi_version())
    return tf_version, graphi_version, machine_fingerprint(info)


def _mismatch(entry: CacheEntry, tf_version: str, graphi_version: str, fingerprint: dict) -> tuple:
    if _canonical_fingerprint(entry.machine) != fingerprint:
        return "foreign", (
            f"it is for another machine ({_describe_machine(entry.machine)}; this one is "
            f"{_describe_machine(fingerprint)})"
        )
    if entry.tf_version != tf_version:
        return "stale", f"it was tuned with TensorFlow {entry.tf_version} (this is {tf_version})"
    if entry.graphi_tf_version != graphi_version:
        return "stale", f"it was tuned with graphi_tf {entry.graphi_tf_version} (this is {graphi_version})"
    return "ok", ""


def _describe_machine(machine: Mapping[str, Any]) -> str:
    tiles = list(machine["tiles"])
    sizes = sorted(set(tiles))
    layout = f"{len(tiles)} tiles of {'/'.join(map(str, sizes))} cores" if tiles else "no tiles"
    return f"{machine['cpu_model']!s}, {machine['usable_cores']} usable cores, {layout}"


def load_matching_entries(
    info: Optional[Mapping[str, Any]] = None, directory: Optional[pathlib.Path] = None
) -> list:
    """The valid entries for this machine and these TensorFlow and graphi_tf versions.

    Args:
      info: ``graphi_tf.info()`` (or the native ``runtime_info()``; versions missing from it
        are this installation's); None reads it now.
      directory: the cache directory; None for ``cache_dir()``.

    Corrupt, foreign (another machine) and stale (another TensorFlow or graphi_tf version)
    entries are reported once per file and process and left out. Sorted by creation time,
    oldest first.
    """
    tf_version, graphi_version, fingerprint = _current_identity(info)
    directory = directory if directory is not None else cache_dir()
    matching = []
    for path in _entry_files(directory):
        entry = read_entry(path)
        if entry is None:
            continue
        status, why = _mismatch(entry, tf_version, graphi_version, fingerprint)
        if status != "ok":
            _report_once(str(path), f"graphi_tf cache entry {path} is {status} and was ignored: {why}")
            continue
        matching.append(entry)
    matching.sort(key=lambda e: (e.created_unix, e.key))
    return matching


def find_entry(key_or_prefix: str, directory: Optional[pathlib.Path] = None) -> list:
    """Entry files whose key is ``key_or_prefix`` or starts with it (an exact key wins)."""
    directory = directory if directory is not None else cache_dir()
    exact = entry_path(key_or_prefix, directory)
    if key_or_prefix and exact.is_file():
        return [exact]
    if not key_or_prefix:
        return []
    return [p for p in _entry_files(directory) if p.name.startswith(key_or_prefix)]


def clear(directory: Optional[pathlib.Path] = None) -> int:
    """Removes every entry file from the cache directory; returns how many were removed.

    Temporary files of writers that may still be running are left alone.
    """
    directory = directory if directory is not None else cache_dir()
    removed = 0
    for path in _entry_files(directory):
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed += 1
    return removed


# --------------------------------------------------------------------------- adoption


def apply_cached_entries(native: Any = None, directory: Optional[pathlib.Path] = None) -> int:
    """Hands every matching cache entry to the native runtime; returns how many.

    For each entry for this machine and these versions, oldest first, calls
    ``native.adopt_setting(signature, E, T, policy, "cache", node_costs_ns, node_names,
    load_class)``: executors of that graph, now and later in this process, use the cached
    setting of the load class they are in, and its costs. Does nothing (returns 0, reads nothing) when ``GRAPHI_TUNE=0``. Never raises for
    a bad entry or an unreadable cache: those are reported once and skipped.

    Args:
      native: the native module (``graphi_tf._loader.native()`` if None).
      directory: the cache directory; None for ``cache_dir()``.
    """
    if not auto_tune_enabled():
        return 0
    if native is None:
        from graphi_tf import _loader

        native = _loader.native()
    try:
        directory = directory if directory is not None else cache_dir()
    except RuntimeError as e:  # no home directory to put ~/.cache in
        _report_once("dir:<home>", f"graphi_tf cache directory unknown and ignored: {e}")
        return 0
    adopted = 0
    for entry in load_matching_entries(native.runtime_info(), directory):
        setting = entry.setting
        # A stock point also names its pools (only then: the arguments are newer).
        pools = {name: setting[name] for name in ("inter_op_threads", "intra_op_threads") if name in setting}
        try:
            native.adopt_setting(
                entry.signature,
                setting["executors"],
                setting["threads_per_executor"],
                setting["policy"],
                "cache",
                list(entry.node_costs_ns),
                list(entry.node_names),
                entry.load_class,
                **pools,
            )
        except (ValueError, TypeError, RuntimeError) as e:
            path = entry_path(entry.key, directory)
            _report_once(f"adopt:{path}", f"graphi_tf cache entry {path} could not be applied and was ignored: {e}")
            continue
        adopted += 1
    return adopted

