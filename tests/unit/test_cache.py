"""The per-graph config cache (graphi_tf.cache): location, keys, entries, validation,
concurrency, and adoption of cached settings at import."""
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

from graphi_tf import cache
from graphi_tf import _loader
from graphi_tf import decision as _decision_record

pytestmark = pytest.mark.timeout(120)

INFO = {
    "cpu_model": "Fake Xeon 8368",
    "usable_cores": 4,
    "tiles": [[0, 1], [2, 3]],
    "tf_version": "2.21.0",
    "version": "0.1.0",
}
FINGERPRINT = {"cpu_model": "Fake Xeon 8368", "usable_cores": 4, "tiles": [2, 2]}


def decide(round_medians, default, order):
    """The native rule's decision, as graphi_tf.decision records it."""
    return _decision_record.decide(_loader.native(), round_medians, default, order)


@pytest.fixture(autouse=True)
def _own_cache(cache_env):
    """Every test here on a cache of its own (conftest's cache_env)."""
    return cache_env


def make_entry(signature="0123456789abcdef", machine=FINGERPRINT, tf_version="2.21.0",
               graphi_tf_version="0.1.0", executors=2, threads=2, created_unix=None, **kw):
    fields = dict(
        signature=signature, machine=machine, executors=executors, threads_per_executor=threads,
        policy="critical_path_first", median_step_ms=12.5,
        table=[{"executors": executors, "threads_per_executor": threads, "median_ms": 12.5,
                "min_ms": 12.0, "max_ms": 14.0, "vs_best": 1.0}],
        node_count=3, node_costs_ns=[100, -1, 2500], node_names=["a", "b", "c"],
        note="unit test", tf_version=tf_version, graphi_tf_version=graphi_tf_version,
        created_unix=created_unix)
    fields.update(kw)
    return cache.CacheEntry.build(**fields)


def evidence_for(chosen=(2, 2)):
    """A Decision.to_dict() in which ``chosen`` wins (or the default 4x1 is kept)."""
    other = chosen if chosen != (4, 1) else (2, 2)
    faster = 8.0 if chosen != (4, 1) else 10.0
    rounds = [{(4, 1): 10.0, other: faster}, {(4, 1): 10.0, other: faster + 0.5},
              {(4, 1): 10.0, other: faster + 0.2}]
    return decide(rounds, (4, 1), [other, (4, 1)]).to_dict()


def cache_warnings(record):
    return [w for w in record if issubclass(w.category, cache.GraphiCacheWarning)]


# ----------------------------------------------------------------------------- location


def test_cache_dir_is_graphi_cache_dir_when_set(monkeypatch, tmp_path):
    monkeypatch.setenv("GRAPHI_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "mine"


def test_cache_dir_is_under_xdg_cache_home_without_graphi_cache_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("GRAPHI_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "graphi_tf"


def test_cache_dir_is_home_dot_cache_without_either(monkeypatch, tmp_path):
    monkeypatch.delenv("GRAPHI_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "graphi_tf"


def test_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path):
    monkeypatch.delenv("GRAPHI_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "graphi_tf"


# ----------------------------------------------------------------------------- keys


def test_machine_fingerprint_is_cpu_model_usable_cores_and_tile_sizes():
    assert cache.machine_fingerprint(INFO) == FINGERPRINT


def test_entry_key_is_sha256_prefix_of_the_canonical_json_of_its_components():
    # Pinned: changing the derivation silently orphans every user's cache.
    canonical = ('{"graphi_tf_version":"0.1.0","machine":{"cpu_model":"Fake Xeon 8368",'
                 '"tiles":[2,2],"usable_cores":4},"signature":"0123456789abcdef",'
                 '"tf_version":"2.21.0"}')
    key = cache.entry_key("0123456789abcdef", "2.21.0", "0.1.0", FINGERPRINT)
    assert key == hashlib.sha256(canonical.encode()).hexdigest()[:32]
    assert key == "256e76b8b7e95ab990ad83c3380e5c9f"


def test_entry_key_ignores_fingerprint_key_order():
    reordered = {"tiles": [2, 2], "usable_cores": 4, "cpu_model": "Fake Xeon 8368"}
    assert (cache.entry_key("0123456789abcdef", "2.21.0", "0.1.0", reordered)
            == cache.entry_key("0123456789abcdef", "2.21.0", "0.1.0", FINGERPRINT))


@pytest.mark.parametrize("change", [
    {"signature": "fedcba9876543210"},
    {"tf_version": "2.22.0"},
    {"graphi_version": "0.2.0"},
    {"fingerprint": dict(FINGERPRINT, cpu_model="Other CPU")},
    {"fingerprint": dict(FINGERPRINT, usable_cores=2)},
    {"fingerprint": dict(FINGERPRINT, tiles=[1, 1, 1, 1])},
])
def test_entry_key_changes_with_each_component(change):
    base = dict(signature="0123456789abcdef", tf_version="2.21.0", graphi_version="0.1.0",
                fingerprint=FINGERPRINT)
    assert cache.entry_key(**base) != cache.entry_key(**dict(base, **change))


# ----------------------------------------------------------------------------- entries


def test_written_entry_reads_back_equal(cache_env):
    entry = make_entry()
    path = cache.write_entry(entry)
    assert path == cache_env / f"{entry.key}.json"
    assert cache.read_entry(path) == entry


def test_write_leaves_only_the_entry_file(cache_env):
    entry = make_entry()
    for _ in range(3):
        cache.write_entry(entry)
    assert sorted(os.listdir(cache_env)) == [f"{entry.key}.json"]


def test_failed_write_keeps_the_old_entry_and_leaves_no_temp_file(cache_env, monkeypatch):
    old = make_entry(executors=1, threads=1)
    path = cache.write_entry(old)

    def broken_replace(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(cache.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        cache.write_entry(make_entry(executors=2, threads=2))
    assert sorted(os.listdir(cache_env)) == [path.name]
    assert cache.read_entry(path).setting["executors"] == 1


def test_list_entries_ignores_temp_files_of_running_writers(cache_env):
    entry = make_entry()
    cache.write_entry(entry)
    (cache_env / f".{entry.key}.abc123.tmp").write_text("{half an ent")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert [e.key for e in cache.list_entries()] == [entry.key]
    assert cache_warnings(record) == []


def test_an_entry_with_evidence_reads_back_equal(cache_env):
    entry = make_entry(evidence=evidence_for((2, 2)))
    assert cache.read_entry(cache.write_entry(entry)) == entry
    assert entry.decision().chosen == (2, 2) and entry.decision().adopted


def test_an_entry_may_keep_the_default_with_its_evidence(cache_env):
    entry = make_entry(executors=4, threads=1, evidence=evidence_for((4, 1)))
    assert cache.read_entry(cache.write_entry(entry)).decision().adopted is False


def test_an_entry_written_before_evidence_existed_still_loads(cache_env):
    data = make_entry().to_dict()
    del data["evidence"]
    path = _write_raw(cache_env, f"{data['key']}.json", json.dumps(data))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        entry = cache.read_entry(path)
    assert entry is not None and entry.evidence is None and entry.decision() is None


def test_build_takes_evidence_as_a_plain_dict_and_keeps_a_copy():
    evidence = evidence_for((2, 2))
    entry = make_entry(evidence=evidence)
    evidence["reason"] = "changed afterwards"
    assert entry.evidence["reason"].startswith("2x2 adopted")


def test_build_rejects_evidence_of_the_wrong_shape_naming_the_field():
    evidence = evidence_for((2, 2))
    del evidence["evidence"][0]["ratios"]
    with pytest.raises(ValueError, match=r"field 'evidence' is invalid: evidence\[0\] has no field 'ratios'"):
        make_entry(evidence=evidence)


def test_build_rejects_evidence_that_chose_another_setting():
    with pytest.raises(ValueError, match="field 'evidence' chose 2x2 but the entry's setting is 1x1"):
        make_entry(executors=1, threads=1, evidence=evidence_for((2, 2)))


# ----------------------------------------------------------------------------- bad entries


def _write_raw(directory, name, text):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


def _assert_reported_once_and_ignored(path, reason_fragment):
    with pytest.warns(cache.GraphiCacheWarning) as record:
        assert cache.load_matching_entries(INFO) == []
    messages = [str(w.message) for w in cache_warnings(record)]
    assert len(messages) == 1, messages
    assert str(path) in messages[0] and reason_fragment in messages[0], messages[0]
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        assert cache.load_matching_entries(INFO) == []
    assert cache_warnings(again) == [], "reported a second time"


def test_corrupt_json_is_reported_once_and_ignored(cache_env):
    key = make_entry().key
    path = _write_raw(cache_env, f"{key}.json", '{"schema": 1, "key": ')
    _assert_reported_once_and_ignored(path, "not valid JSON")


def test_entry_with_another_schema_version_is_reported_once_and_ignored(cache_env):
    data = make_entry().to_dict()
    data["schema"] = cache.SCHEMA_VERSION + 1
    path = _write_raw(cache_env, f"{data['key']}.json", json.dumps(data))
    _assert_reported_once_and_ignored(path, "schema version")


def test_entry_missing_a_field_is_reported_once_and_ignored(cache_env):
    data = make_entry().to_dict()
    del data["node_costs_ns"]
    path = _write_raw(cache_env, f"{data['key']}.json", json.dumps(data))
    _assert_reported_once_and_ignored(path, "missing field 'node_costs_ns'")


def test_entry_with_a_mistyped_field_is_reported_once_and_ignored(cache_env):
    data = make_entry().to_dict()
    data["setting"]["executors"] = "2"
    path = _write_raw(cache_env, f"{data['key']}.json", json.dumps(data))
    _assert_reported_once_and_ignored(path, "setting.'executors'")


def test_entry_with_malformed_evidence_is_reported_once_and_ignored(cache_env):
    data = make_entry(evidence=evidence_for((2, 2))).to_dict()
    data["evidence"]["evidence"][1]["round_medians_ms"] = "fast"
    path = _write_raw(cache_env, f"{data['key']}.json", json.dumps(data))
    _assert_reported_once_and_ignored(path, "field 'evidence' is invalid")


def test_entry_whose_key_does_not_match_its_content_is_reported_once_and_ignored(cache_env):
    data = make_entry().to_dict()
    data["signature"] = "ffffffffffffffff"  # edited by hand: the key no longer matches
    path = _write_raw(cache_env, f"{data['key']}.json", json.dumps(data))
    _assert_reported_once_and_ignored(path, "does not match its content")


def test_entry_renamed_to_another_key_is_reported_once_and_ignored(cache_env):
    entry = make_entry()
    path = _write_raw(cache_env, "0" * 32 + ".json", json.dumps(entry.to_dict()))
    _assert_reported_once_and_ignored(path, "does not match the file name")


def test_entry_from_another_machine_is_reported_once_as_foreign_and_ignored(cache_env):
    path = cache.write_entry(make_entry(machine=dict(FINGERPRINT, cpu_model="AMD EPYC 9654")))
    _assert_reported_once_and_ignored(path, "foreign")


def test_entry_for_another_tensorflow_version_is_reported_once_as_stale_and_ignored(cache_env):
    path = cache.write_entry(make_entry(tf_version="2.20.0"))
    _assert_reported_once_and_ignored(path, "TensorFlow 2.20.0")


def test_entry_for_another_graphi_tf_version_is_reported_once_as_stale_and_ignored(cache_env):
    path = cache.write_entry(make_entry(graphi_tf_version="0.0.9"))
    _assert_reported_once_and_ignored(path, "graphi_tf 0.0.9")


def test_matching_entries_are_loaded_next_to_bad_ones(cache_env):
    good = make_entry()
    cache.write_entry(good)
    cache.write_entry(make_entry(tf_version="2.20.0"))
    _write_raw(cache_env, "f" * 32 + ".json", "garbage")
    with pytest.warns(cache.GraphiCacheWarning):
        assert cache.load_matching_entries(INFO) == [good]


def test_reset_reports_makes_a_bad_entry_reported_again(cache_env):
    _write_raw(cache_env, "f" * 32 + ".json", "garbage")
    with pytest.warns(cache.GraphiCacheWarning):
        cache.load_matching_entries(INFO)
    cache._reset_reports()
    with pytest.warns(cache.GraphiCacheWarning):
        cache.load_matching_entries(INFO)


# ----------------------------------------------------------------------------- concurrency

_WRITER = textwrap.dedent("""
    import os, sys, time
    from graphi_tf import cache
    writer, go = sys.argv[1], sys.argv[2]
    entry = cache.CacheEntry.build(
        signature="0123456789abcdef",
        machine={"cpu_model": "Fake Xeon 8368", "usable_cores": 4, "tiles": [2, 2]},
        executors=2, threads_per_executor=2, policy="fifo", median_step_ms=1.0,
        node_count=2000, node_costs_ns=list(range(2000)), node_names=[f"n{i}" for i in range(2000)],
        tf_version="2.21.0", graphi_tf_version="0.1.0")
    path = cache.entry_path(entry.key)
    deadline = time.time() + 60
    while not os.path.exists(go):  # start together
        assert time.time() < deadline
        time.sleep(0.001)
    bad_reads = 0
    for i in range(20):
        entry.note = f"writer {writer} write {i}"
        cache.write_entry(entry)
        if cache.read_entry(path) is None:
            bad_reads += 1
    print(bad_reads)
""")


def test_two_processes_writing_one_key_at_once_leave_a_valid_entry_and_no_temp_files(cache_env, tmp_path):
    go = tmp_path / "go"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, name, str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("A", "B")]
    time.sleep(0.5)
    go.write_text("")
    outputs = [p.communicate(timeout=100) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, err[-2000:]
        assert out.strip() == "0", "a reader saw a partial entry"
    files = os.listdir(cache_env)
    assert len(files) == 1 and files[0].endswith(".json"), files
    with warnings.catch_warnings():
        warnings.simplefilter("error", cache.GraphiCacheWarning)
        entry = cache.read_entry(cache_env / files[0])
    assert entry.note in {f"writer {w} write 19" for w in "AB"}
    assert entry.node_costs_ns == list(range(2000))


# ----------------------------------------------------------------------------- clear


def test_clear_removes_every_entry_and_returns_the_count(cache_env):
    for sig in ("0000000000000001", "0000000000000002", "0000000000000003"):
        cache.write_entry(make_entry(signature=sig))
    _write_raw(cache_env, "e" * 32 + ".json", "corrupt entries are removed too")
    assert cache.clear() == 4
    assert cache.list_entries() == []


def test_clear_of_a_missing_directory_removes_nothing(cache_env):
    assert not cache_env.exists()
    assert cache.clear() == 0


# ----------------------------------------------------------------------------- adoption


class FakeNative:
    def __init__(self, info=INFO):
        self.info = dict(info)
        self.adopted = []
        self.load_classes = []

    def runtime_info(self):
        return dict(self.info)

    def adopt_setting(self, signature, executors, threads_per_executor, policy, source, costs, names,
                      load_class="alone", inter_op_threads=0, intra_op_threads=0):
        self.adopted.append((signature, executors, threads_per_executor, policy, source, costs, names))
        self.load_classes.append((signature, load_class))
        self.pools = getattr(self, "pools", []) + [(inter_op_threads, intra_op_threads)]


def stock_point_entry(load_class="alone", inter=2, intra=1, **kw):
    """An entry whose setting is stock point stock:<inter>x<intra>, decided against stock."""
    point = (0, 0, inter, intra)
    rounds = [{(0, 0): 10.0, point: 8.0}, {(0, 0): 10.0, point: 8.2}, {(0, 0): 10.0, point: 8.1}]
    evidence = decide(rounds, (0, 0), [(0, 0), point]).to_dict()
    return make_entry(executors=0, threads=0, inter_op_threads=inter, intra_op_threads=intra,
                      evidence=evidence, load_class=load_class, **kw)


def test_a_stock_point_entry_keeps_its_pool_sizes_and_reads_back(cache_env):
    path = cache.write_entry(stock_point_entry())
    entry = cache.read_entry(path)
    assert entry.setting == {"executors": 0, "threads_per_executor": 0, "policy": "critical_path_first",
                             "inter_op_threads": 2, "intra_op_threads": 1}
    assert cache.setting_of(entry.setting) == (0, 0, 2, 1)
    assert entry.evidence["chosen"] == "stock:2x1"


def test_the_cache_keeps_a_stock_point_per_load_class_and_applies_each_with_its_pools(cache_env):
    cache.write_entry(stock_point_entry(created_unix=1.0))
    cache.write_entry(stock_point_entry(load_class="under_load_4", inter=1, intra=2, created_unix=2.0))
    native = FakeNative()
    assert cache.apply_cached_entries(native) == 2
    assert native.load_classes == [("0123456789abcdef", "alone"), ("0123456789abcdef", "under_load_4")]
    assert [a[1:3] for a in native.adopted] == [(0, 0), (0, 0)]
    assert native.pools == [(2, 1), (1, 2)]


@pytest.mark.parametrize("inter, intra, executors", [(0, 1, 0), (2, 0, 0), (2, 1, 2)])
def test_an_invalid_stock_point_is_refused_naming_it(inter, intra, executors):
    with pytest.raises(ValueError, match=f"setting stock:{inter}x{intra} is invalid"):
        make_entry(executors=executors, threads=executors, inter_op_threads=inter, intra_op_threads=intra)


def test_apply_cached_entries_adopts_matching_entries_as_cache_oldest_first(cache_env):
    newer = cache.write_entry(make_entry(signature="00000000000000bb", executors=1, threads=2,
                                         created_unix=2000.0))
    older = cache.write_entry(make_entry(signature="00000000000000aa", executors=2, threads=2,
                                         created_unix=1000.0))
    cache.write_entry(make_entry(signature="00000000000000cc", tf_version="1.15.0"))
    assert newer.exists() and older.exists()
    native = FakeNative()
    with pytest.warns(cache.GraphiCacheWarning, match="stale"):
        assert cache.apply_cached_entries(native) == 2
    assert native.adopted == [
        ("00000000000000aa", 2, 2, "critical_path_first", "cache", [100, -1, 2500], ["a", "b", "c"]),
        ("00000000000000bb", 1, 2, "critical_path_first", "cache", [100, -1, 2500], ["a", "b", "c"]),
    ]


def test_a_graph_has_one_entry_per_load_class_and_each_is_adopted_for_its_class(cache_env):
    alone = cache.write_entry(make_entry(executors=1, threads=1, created_unix=1.0))
    loaded = cache.write_entry(make_entry(executors=2, threads=1, created_unix=2.0, load_class="under_load_4"))
    assert alone != loaded and alone.exists() and loaded.exists()
    assert cache.read_entry(loaded).load_class == "under_load_4"
    native = FakeNative()
    assert cache.apply_cached_entries(native) == 2
    assert native.load_classes == [("0123456789abcdef", "alone"), ("0123456789abcdef", "under_load_4")]
    assert [a[1:3] for a in native.adopted] == [(1, 1), (2, 1)]


def test_an_alone_entrys_key_is_the_key_entries_had_before_load_classes():
    before = cache.entry_key("0123456789abcdef", "2.21.0", "0.1.0", FINGERPRINT)
    assert cache.entry_key("0123456789abcdef", "2.21.0", "0.1.0", FINGERPRINT, "alone") == before
    assert cache.entry_key("0123456789abcdef", "2.21.0", "0.1.0", FINGERPRINT, "under_load_4") != before


def test_an_entry_file_without_a_load_class_reads_as_alone(cache_env):
    data = make_entry().to_dict()
    del data["load_class"]
    _write_raw(cache_env, data["key"] + ".json", json.dumps(data))
    entries = cache.list_entries(cache_env)
    assert [e.load_class for e in entries] == ["alone"]


def test_an_entry_with_an_unknown_load_class_is_reported_and_ignored(cache_env):
    data = make_entry().to_dict()
    data["load_class"] = "busy"
    _write_raw(cache_env, data["key"] + ".json", json.dumps(data))
    native = FakeNative()
    with pytest.warns(cache.GraphiCacheWarning, match="load_class.*busy"):
        assert cache.apply_cached_entries(native) == 0
    assert native.adopted == []


def test_an_entry_tuned_under_load_before_load_levels_is_reported_and_ignored(cache_env):
    data = make_entry(load_class="under_load_4").to_dict()
    data["load_class"] = "under_load"
    _write_raw(cache_env, data["key"] + ".json", json.dumps(data))
    native = FakeNative()
    with pytest.warns(cache.GraphiCacheWarning, match="'under_load', written before load levels"):
        assert cache.apply_cached_entries(native) == 0
    assert native.adopted == []


def test_an_unknown_load_class_names_the_allowed_ones():
    with pytest.raises(ValueError, match="load_class='busy' is invalid; allowed: alone, under_load_2, "
                                         "under_load_4, under_load_8, under_load_16, under_load_32, "
                                         "under_load_64"):
        make_entry(load_class="busy")


def test_apply_cached_entries_does_nothing_with_graphi_tune_0(cache_env, monkeypatch):
    cache.write_entry(make_entry())
    _write_raw(cache_env, "f" * 32 + ".json", "garbage")
    monkeypatch.setenv("GRAPHI_TUNE", "0")
    native = FakeNative()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert cache.apply_cached_entries(native) == 0
    assert native.adopted == []
    assert cache_warnings(record) == [], "GRAPHI_TUNE=0 must not even read the cache"


def test_apply_cached_entries_reports_an_entry_native_refuses_and_goes_on(cache_env):
    cache.write_entry(make_entry(signature="00000000000000aa", created_unix=1.0))
    cache.write_entry(make_entry(signature="00000000000000bb", created_unix=2.0))

    class Refusing(FakeNative):
        def adopt_setting(self, signature, *args):
            if signature == "00000000000000aa":
                raise ValueError("executors=2 does not fit")
            super().adopt_setting(signature, *args)

    native = Refusing()
    with pytest.warns(cache.GraphiCacheWarning, match="could not be applied.*does not fit"):
        assert cache.apply_cached_entries(native) == 1
    assert [a[0] for a in native.adopted] == ["00000000000000bb"]


def test_invalid_graphi_tune_value_is_reported_and_nothing_is_applied(monkeypatch):
    monkeypatch.setenv("GRAPHI_TUNE", "maybe")
    with pytest.warns(cache.GraphiCacheWarning, match="GRAPHI_TUNE='maybe' is invalid; allowed: 0 .* or 1"):
        assert cache.auto_tune_enabled() is False
