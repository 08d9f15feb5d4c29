"""The persistent compile cache (csrc/lucid/compile/export/disk_cache.h): optimised programs
stored on disk under LUCID_COMPILE_CACHE_DIR, read back by later processes (and later
CompiledModules) instead of running the passes. Every compiled result here is compared with
eager lucid on a twin model, bit for bit, never with another compiled result. Entries are
damaged in every way we can think of (byte flips, truncation, garbage, edited headers with valid
checksums, another graph's entry under this name) and must be ignored, deleted and replaced."""
import ctypes
import json
import os
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import lucid
import lucid.nn as nn
from lucid import _C

PYTHON_DIR = os.path.dirname(os.path.dirname(lucid.__file__))

# A fresh process: a compiled model (a no-grad entry and a grad entry: forward + backward) and a
# fused training step, each checked bit for bit against eager twins; prints what came from disk.
WORKER = textwrap.dedent("""
    import json, os, time
    import numpy as np
    import lucid, lucid.nn as nn, lucid.nn.functional as F, lucid.optim as optim

    start = float(os.environ.get("WORKER_START", "0"))
    while time.time() < start:  # concurrent workers compile at the same moment
        time.sleep(0.001)

    def build():
        lucid.manual_seed(0)
        return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))

    bad = []
    def check(name, got, want):
        g, w = got.detach().numpy(), want.detach().numpy()
        if g.shape != w.shape or g.tobytes() != w.tobytes():
            bad.append(name)

    rng = np.random.default_rng(0)
    x = lucid.tensor(rng.standard_normal((5, 6)).astype(np.float32))
    y = lucid.tensor(rng.integers(0, 4, 5))
    m, ref = build(), build()
    cm = lucid.compile(m, strict=True)
    with lucid.no_grad():
        check("no_grad forward", cm(x), ref(x))
    got, want = cm(x), ref(x)
    check("grad forward", got, want)
    (got * got).sum().backward()
    (want * want).sum().backward()
    for (n, p), q in zip(m.named_parameters(), ref.parameters()):
        check("grad of " + n, p.grad, q.grad)
    fm, fref = build(), build()
    opt = optim.SGD(fm.parameters(), lr=0.1, momentum=0.9)
    eopt = optim.SGD(fref.parameters(), lr=0.1, momentum=0.9)
    step = lucid.compile.fused_step(fm, F.cross_entropy, opt, strict=True)
    for i in range(5):
        loss = step(x, y)
        eopt.zero_grad()
        eloss = F.cross_entropy(fref(x), y)
        eloss.backward()
        eopt.step()
        check("step %d loss" % i, loss, eloss)
    for (n, p), q in zip(fm.named_parameters(), fref.parameters()):
        check("step parameter " + n, p, q)
    ci, si = cm.cache_info(), step.cache_info()
    print(json.dumps({"keys": ci["keys"], "from_disk": ci["from_disk"], "step_keys": si["keys"],
                      "step_from_disk": si["from_disk"], "bad": bad}))
""")


def worker_env(cache_dir, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LUCID_")}
    env.update(PYTHONPATH=PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", ""), LUCID_COMPILE_CACHE_DIR=str(cache_dir),
               **extra)
    return env


def run_worker(cache_dir):
    p = subprocess.run([sys.executable, "-c", WORKER], env=worker_env(cache_dir), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def files(d):
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def entries(d):
    return sorted(d.glob("*.lcc")) if d.exists() else []


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("LUCID_COMPILE_CACHE_DIR", str(d))
    for k in ("LUCID_COMPILE_CACHE_MB", "LUCID_DUMP_IR", "LUCID_COMPILE_DISABLE"):
        monkeypatch.delenv(k, raising=False)
    return d


def mlp(act=nn.ReLU):
    lucid.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), act(), nn.Linear(16, 4))


def batch(n=5, seed=0):
    return lucid.tensor(np.random.default_rng(seed).standard_normal((n, 6)).astype(np.float32))


def same_bits(got, want):
    g, w = got.detach().numpy(), want.detach().numpy()
    return g.shape == w.shape and g.dtype == w.dtype and g.tobytes() == w.tobytes()


def compile_and_check(x=None, build=mlp):
    """A fresh CompiledModule of a fresh model, called without grad: its output must equal a
    twin's eager output bit for bit. Returns its cache_info(). The process-wide executable cache
    is emptied first, so what runs is the program read from disk, not an executable in memory."""
    x = batch() if x is None else x
    _C._clear_executable_cache()
    m, ref = build(), build()
    cm = lucid.compile(m, strict=True)
    with lucid.no_grad():
        got, want = cm(x), ref(x)
    assert same_bits(got, want)
    return cm.cache_info()


# ---- the container, as container.h lays it out, to edit entries with valid checksums ----------

_xxh = ctypes.CDLL("libxxhash.so.0")
_xxh.XXH3_64bits.restype = ctypes.c_uint64
_xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def xxh3(b):
    return _xxh.XXH3_64bits(bytes(b), len(b))


def read_container(path):
    b = path.read_bytes()
    assert b[:8] == b"LUCIDART"
    hlen = struct.unpack_from("<Q", b, 16)[0]
    header = json.loads(b[32:32 + hlen])
    blobs = [b[e["offset"]:e["offset"] + e["nbytes"]] for e in header["blobs"]]
    return header, blobs


def write_container(path, header, blobs):
    align = lambda n: (n + 63) // 64 * 64
    h = dict(header, blobs=[{"offset": 0, "nbytes": len(b), "xxh3": "%016x" % xxh3(b)} for b in blobs])
    dump = lambda: json.dumps(h, separators=(",", ":"), ensure_ascii=False).encode()
    for _ in range(4):  # the offsets are in the header they follow
        at = align(32 + len(dump()))
        for e, b in zip(h["blobs"], blobs):
            e["offset"], at = at, align(at + len(b))
    text = dump()
    out = bytearray(b"LUCIDART" + struct.pack("<IIQQ", 1, 0, len(text), xxh3(text)) + text)
    for e, b in zip(h["blobs"], blobs):
        assert e["offset"] >= len(out)
        out += b"\0" * (e["offset"] - len(out)) + b
    path.write_bytes(bytes(out))


def regions(path):
    """Byte ranges the container checks: magic, version, header length and checksum, header, blobs."""
    header, _ = read_container(path)
    hlen = struct.unpack_from("<Q", path.read_bytes(), 16)[0]
    return [(0, 12), (16, 32 + hlen)] + [(e["offset"], e["offset"] + e["nbytes"]) for e in header["blobs"]]


# ---- tests ---------------------------------------------------------------------------------------


def test_second_process_gets_its_executables_from_disk(tmp_path):
    d = tmp_path / "cache"
    first = run_worker(d)
    assert first["bad"] == [] and first["from_disk"] == [] and len(first["keys"]) == 2
    assert len(first["step_keys"]) == 1
    second = run_worker(d)
    assert second["bad"] == []
    assert second["keys"] == first["keys"] and second["from_disk"] == second["keys"]
    assert second["step_from_disk"] == second["step_keys"] == first["step_keys"]
    assert len(entries(d)) == 3 and files(d) == [p.name for p in entries(d)]  # one per key, no temp files


def test_a_second_compiled_module_reads_the_entry(cache):
    first = compile_and_check()
    assert first["from_disk"] == [] and len(entries(cache)) == 1
    second = compile_and_check()
    assert second["from_disk"] == second["keys"] == first["keys"]
    assert len(entries(cache)) == 1


def test_entry_from_disk_has_the_stats_of_a_fresh_compile(cache, monkeypatch):
    def stats():
        _C._clear_executable_cache()
        cm = lucid.compile(mlp(), strict=True)
        with lucid.no_grad():
            cm(batch())
        (info,) = cm._info.values()
        return dict(info["stats"])

    monkeypatch.setenv("LUCID_COMPILE_CACHE_DIR", "0")
    fresh = stats()
    monkeypatch.setenv("LUCID_COMPILE_CACHE_DIR", str(cache))
    written, read = stats(), stats()
    assert not fresh["from_disk"] and not written["from_disk"] and read["from_disk"]
    for s in (fresh, written, read):
        s.pop("from_disk")
    assert fresh == written == read


@pytest.mark.parametrize("value", ["", "0"], ids=["empty", "zero"])
def test_empty_or_zero_disables_the_cache(tmp_path, monkeypatch, value):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("LUCID_COMPILE_CACHE_DIR", value)
    monkeypatch.chdir(tmp_path)
    assert compile_and_check()["from_disk"] == []
    assert compile_and_check()["from_disk"] == []
    assert list(tmp_path.rglob("*")) == []


def test_default_directory_follows_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.delenv("LUCID_COMPILE_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    compile_and_check()
    assert len(entries(tmp_path / "xdg" / "lucid" / "compile")) == 1
    assert oct((tmp_path / "xdg" / "lucid" / "compile").stat().st_mode & 0o777) == "0o700"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # the XDG spec ignores a relative path
    compile_and_check(batch(3))
    monkeypatch.delenv("XDG_CACHE_HOME")
    compile_and_check(batch(4))
    assert len(entries(tmp_path / "home" / ".cache" / "lucid" / "compile")) == 2
    assert not (tmp_path / "relative").exists()


def f_big_plus_1(x):
    return x + (2 ** 53 + 1)


def f_big(x):
    return x + 2 ** 53


def test_two_graphs_differing_only_in_a_constant_get_two_entries(cache):
    # The traced text prints constants as doubles (2**53 + 1 prints as 2**53): the key hashes
    # every constant's bytes, so the two graphs get their own entries.
    x = lucid.tensor([1, 2, 3])
    for rnd in range(2):
        for f in (f_big_plus_1, f_big):
            _C._clear_executable_cache()
            cm = lucid.compile(f, strict=True)
            assert cm(x).tolist() == f(x).tolist() and cm.cache_info()["from_disk"] == (cm.cache_info()["keys"] if rnd else [])
    assert len(entries(cache)) == 2


def test_compile_disable_is_part_of_the_key(cache, monkeypatch):
    compile_and_check()
    monkeypatch.setenv("LUCID_COMPILE_DISABLE", "epilogue")
    assert compile_and_check()["from_disk"] == []
    assert compile_and_check()["from_disk"] != []
    assert len(entries(cache)) == 2


def test_dump_ir_bypasses_the_cache(cache, monkeypatch, capfd):
    compile_and_check()
    monkeypatch.setenv("LUCID_DUMP_IR", "trace")
    assert compile_and_check()["from_disk"] == []
    assert "lucid IR after trace" in capfd.readouterr().err
    assert len(entries(cache)) == 1


def test_grad_entry_and_fused_step_round_trip_through_disk(cache):
    import lucid.nn.functional as F
    import lucid.optim as optim

    x, y = batch(), lucid.tensor(np.random.default_rng(1).integers(0, 4, 5))
    for rnd in range(2):  # the second round reads both entries from disk
        _C._clear_executable_cache()
        m, ref = mlp(), mlp()
        cm = lucid.compile(m, strict=True)
        got, want = cm(x), ref(x)
        (got * got).sum().backward()
        (want * want).sum().backward()
        assert same_bits(got, want)
        for p, q in zip(m.parameters(), ref.parameters()):
            assert same_bits(p.grad, q.grad)
        assert cm.cache_info()["from_disk"] == (cm.cache_info()["keys"] if rnd else [])

        fm, fref = mlp(nn.Tanh), mlp(nn.Tanh)
        opt = optim.SGD(fm.parameters(), lr=0.1, momentum=0.9)
        eopt = optim.SGD(fref.parameters(), lr=0.1, momentum=0.9)
        step = lucid.compile.fused_step(fm, F.cross_entropy, opt, strict=True)
        for _ in range(4):
            loss = step(x, y)
            eopt.zero_grad()
            eloss = F.cross_entropy(fref(x), y)
            eloss.backward()
            eopt.step()
            assert same_bits(loss, eloss)
        for p, q in zip(fm.parameters(), fref.parameters()):
            assert same_bits(p, q)
        if rnd:
            assert step.cache_info()["from_disk"] == step.cache_info()["keys"] != []


def assert_replaced(cache, path):
    """The damaged entry at `path` was ignored (the compile ran the passes and gave eager's
    result) and replaced by a valid one."""
    assert compile_and_check()["from_disk"] == []
    assert entries(cache) == [path]
    assert compile_and_check()["from_disk"] != []


def single_entry(cache):
    compile_and_check()
    (path,) = entries(cache)
    return path


@pytest.mark.parametrize("damage", ["empty", "prefix_only", "truncated_header", "truncated_half", "truncated_last_byte",
                                    "garbage", "appended", "other_entry_renamed"])
def test_damaged_file_is_ignored_and_replaced(cache, damage):
    path = single_entry(cache)
    b = path.read_bytes()
    if damage == "other_entry_renamed":
        compile_and_check(build=lambda: mlp(nn.Tanh))
        other = next(p for p in entries(cache) if p != path)
        os.replace(other, path)
    else:
        new = {"empty": b"", "prefix_only": b[:32], "truncated_header": b[:40], "truncated_half": b[:len(b) // 2],
               "truncated_last_byte": b[:-1], "garbage": np.random.default_rng(0).bytes(len(b)),
               "appended": None}[damage]
        if damage == "appended":  # a valid entry with bytes after it is still valid: only its checks count
            path.write_bytes(b + b"\0" * 100)
            assert compile_and_check()["from_disk"] != []
            return
        path.write_bytes(new)
    assert_replaced(cache, path)


def test_byte_flips_are_caught_or_harmless(cache):
    path = single_entry(cache)
    good = path.read_bytes()
    checked = regions(path)
    offsets = sorted(set(range(32)) | set(np.linspace(32, len(good) - 1, 96).astype(int).tolist()))
    caught = 0
    for off in offsets:
        b = bytearray(good)
        b[off] ^= 0x01
        path.write_bytes(bytes(b))
        info = compile_and_check()  # eager's result either way
        if any(lo <= off < hi for lo, hi in checked):
            assert info["from_disk"] == [], off
            caught += 1
        assert compile_and_check()["from_disk"] != [], off  # valid again (replaced, or the flip was padding)
        good = path.read_bytes()
    assert caught >= len(offsets) // 2


def _edit(field):
    def stamp(h, key, value):
        h["stamp"][key] = value

    return {
        "format": lambda h, b: h.update(format="lucid.compiled"),
        "format_version": lambda h, b: stamp(h, "format_version", h["stamp"]["format_version"] + 1),
        "lucid_version": lambda h, b: stamp(h, "lucid_version", "0.0.0-another-build"),
        "op_registry_hash": lambda h, b: stamp(h, "op_registry_hash", "%016x" % (int(h["stamp"]["op_registry_hash"], 16) ^ 1)),
        "isa": lambda h, b: stamp(h, "isa", h["stamp"]["isa"] + ["avx512vp2intersect"]),
        "libraries": lambda h, b: h["stamp"]["libraries"].update(onednn="0.0.0"),
        "device": lambda h, b: stamp(h, "devices", ["cuda"]),
        "op_schema": lambda h, b: h["ops"].update({next(iter(h["ops"])): "{changed}"}),
        "build": lambda h, b: h.update(build="0" * 32),
        "key": lambda h, b: h.update(key="f" * 32),
        "kind": lambda h, b: h.update(kind="joint 1 1"),
        "traced_text": lambda h, b: b.__setitem__(h["traced"], b[h["traced"]] + b" "),
        "program_hash": lambda h, b: h["programs"][0].update(hash=str(int(h["programs"][0]["hash"]) ^ 1)),
        "program_text": lambda h, b: b.__setitem__(h["programs"][0]["ir"],
                                                   b[h["programs"][0]["ir"]].replace(b"return (", b"return (%0, ")),
        "program_count": lambda h, b: h.update(programs=h["programs"] * 2),
        "stats": lambda h, b: h["programs"][0]["stats"].update(nodes_after=-1),
        "num_saved": lambda h, b: h.update(num_saved="2"),
        "const_dtype": lambda h, b: [c.update(dtype="float64") for c in h["programs"][0]["consts"]],
        "const_shape": lambda h, b: [c.update(shape=[2]) for c in h["programs"][0]["consts"]],
        "blob_index": lambda h, b: h["programs"][0].update(ir=10 ** 15),
    }[field]


@pytest.mark.parametrize("field", ["format", "format_version", "lucid_version", "op_registry_hash", "isa", "libraries",
                                   "device", "op_schema", "build", "key", "kind", "traced_text", "program_hash",
                                   "program_text", "program_count", "stats", "num_saved", "blob_index"])
def test_entry_of_another_stamp_build_or_graph_is_ignored_and_replaced(cache, field):
    # Each edit keeps every checksum valid: the entry's own checks must catch it.
    path = single_entry(cache)
    header, blobs = read_container(path)
    header.pop("blobs")
    write_container(path, header, blobs)  # the rewrite alone is accepted: the helper is faithful
    assert compile_and_check()["from_disk"] != []
    _edit(field)(header, blobs)
    write_container(path, header, blobs)
    assert_replaced(cache, path)


@pytest.mark.parametrize("field", ["const_dtype", "const_shape"])
def test_constants_of_an_entry_are_checked(cache, field):
    x = lucid.tensor([1, 2, 3])
    cm = lucid.compile(f_big_plus_1, strict=True)
    assert cm(x).tolist() == f_big_plus_1(x).tolist()
    (path,) = entries(cache)
    header, blobs = read_container(path)
    header.pop("blobs")
    assert header["programs"][0]["consts"], "the program keeps its constant"
    _edit(field)(header, blobs)
    write_container(path, header, blobs)
    for from_disk in (False, True):  # ignored and replaced
        _C._clear_executable_cache()
        cm = lucid.compile(f_big_plus_1, strict=True)
        assert cm(x).tolist() == f_big_plus_1(x).tolist()
        assert bool(cm.cache_info()["from_disk"]) == from_disk
    assert entries(cache) == [path]


def test_a_directory_in_the_entrys_place_or_an_unwritable_cache_still_compiles(cache, tmp_path, monkeypatch):
    path = single_entry(cache)
    path.unlink()
    path.mkdir()
    assert compile_and_check()["from_disk"] == []
    assert path.is_dir()
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("LUCID_COMPILE_CACHE_DIR", str(blocker / "cache"))
    assert compile_and_check()["from_disk"] == []
    assert blocker.read_text() == "not a directory"


def test_size_cap_evicts_least_recently_used(cache, monkeypatch):
    for n in (1, 2, 3):
        compile_and_check(batch(n))
    by_batch = {}
    for n in (1, 2, 3):
        # which file is which: the file a batch's compile reads (its mtime is touched)
        before = {p: p.stat().st_mtime_ns for p in entries(cache)}
        for p in before:
            os.utime(p, ns=(1, 1))
        assert compile_and_check(batch(n))["from_disk"] != []
        (touched,) = [p for p in entries(cache) if p.stat().st_mtime_ns != 1]
        by_batch[n] = touched
    a, b, c = by_batch[1], by_batch[2], by_batch[3]
    now = time.time()
    for i, p in enumerate((a, b, c)):  # oldest first: a, b, c
        os.utime(p, (now - 1000 + 10 * i, now - 1000 + 10 * i))
    assert compile_and_check(batch(1))["from_disk"] != []  # a is now the most recently used
    unrelated = cache / "notes.txt"
    unrelated.write_bytes(b"x" * 100_000)
    os.utime(unrelated, (0, 0))
    sizes = {p: p.stat().st_size for p in (a, b, c)}
    cap = sizes[a] + sizes[c] + 2 * max(sizes.values()) - 100  # room for one more entry, not for b too
    monkeypatch.setenv("LUCID_COMPILE_CACHE_MB", repr(cap / 2 ** 20))
    compile_and_check(batch(4))
    left = entries(cache)
    assert a in left and c in left and b not in left and len(left) == 3
    assert unrelated.exists()  # only entries are ever deleted
    monkeypatch.setenv("LUCID_COMPILE_CACHE_MB", "0")  # everything goes, the compile still works
    compile_and_check(batch(5))
    assert entries(cache) == [] and unrelated.exists()


def test_temporary_files_of_dead_writers_are_removed(cache):
    path = single_entry(cache)
    stale, fresh = cache / (path.name + ".tmp.99999.0.1"), cache / (path.name + ".tmp.99999.1.2")
    for p in (stale, fresh):
        p.write_bytes(b"half an entry")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    compile_and_check(batch(2))  # a write: the directory is scanned
    assert not stale.exists() and fresh.exists()


@pytest.mark.parametrize("value", ["lots", "-1", "nan", "1e400", ""])
def test_bad_size_cap_is_a_clear_error(cache, monkeypatch, value):
    monkeypatch.setenv("LUCID_COMPILE_CACHE_MB", value)
    cm = lucid.compile(mlp(), strict=True)
    with pytest.raises(lucid.compile.CompileError, match="LUCID_COMPILE_CACHE_MB: expected a size in megabytes"):
        with lucid.no_grad():
            cm(batch())


def test_processes_compiling_one_model_at_once_share_one_entry_per_key(tmp_path):
    d = tmp_path / "cache"
    start = str(time.time() + 3.0)  # after every worker has imported lucid
    procs = [subprocess.Popen([sys.executable, "-c", WORKER], env=worker_env(d, WORKER_START=start),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.splitlines()[-1]))
    assert all(r["bad"] == [] and len(r["keys"]) == 2 and len(r["step_keys"]) == 1 for r in results)
    assert len(entries(d)) == 3 and files(d) == [p.name for p in entries(d)]  # no temp files left
    last = run_worker(d)
    assert last["bad"] == [] and last["from_disk"] == last["keys"] and last["step_from_disk"] == last["step_keys"]
    assert len(entries(d)) == 3
