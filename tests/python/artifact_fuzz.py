"""Mutations of real artifacts (issue 11's untrusted-file checks), shared by
tests/python/test_compile_export_fuzz.py (500 cases in CI) and scripts/fuzz_artifacts.py (20,000).

Raw mutations (byte flips, truncations, appended bytes, zeroed ranges, an edited length field)
keep the checksums as they were: a loader must reject them with ArtifactError, except where the
bytes it changed are never read (alignment padding, the reserved field), and then it must load
and compute exactly what the original computes. Semantic mutations re-checksum what they edit
(a JSON value of the header, a token of a program's IR text), so they reach the checks behind
the checksums: the loader either rejects them with ArtifactError or builds a program that, when
run, raises a lucid error or returns a result (a different valid program may compute something
else). Nothing may crash, hang or read outside the file.
"""
import json
import random
import struct

import numpy as np

import lucid
from lucid import _C

PREFIX = 32
RAW = ("flip", "flip_header", "flip_blob", "truncate", "append", "zero_range", "length_field")
SEMANTIC = ("header_value", "ir_token")


def split(data):
    """(header dict, [blob bytes]) of a valid artifact."""
    n = struct.unpack_from("<Q", data, 16)[0]
    header = json.loads(data[PREFIX:PREFIX + n])
    blobs = [data[b["offset"]:b["offset"] + b["nbytes"]] for b in header["blobs"]]
    return header, blobs


def join(header, blobs, recheck=True):
    """An artifact from a header and blobs, laid out as the C++ writer does (offsets re-derived,
    checksums recomputed when recheck)."""
    header = dict(header)
    metas = [dict(m) for m in header["blobs"]]
    for m, b in zip(metas, blobs):
        m["nbytes"] = len(b)
        if recheck:
            m["xxh3"] = _C._artifact_checksum(b)
    offsets = [0] * len(blobs)
    for _ in range(4):
        for m, o in zip(metas, offsets):
            m["offset"] = o
        header["blobs"] = metas
        text = json.dumps(header, separators=(",", ":")).encode()
        at = -(-(PREFIX + len(text)) // 64) * 64
        new = []
        for b in blobs:
            new.append(at)
            at = -(-(at + len(b)) // 64) * 64
        if new == offsets:
            break
        offsets = new
    out = bytearray(b"LUCIDART" + struct.pack("<IIQ", 1, 0, len(text)))
    out += struct.pack("<Q", 0)
    out += text
    for o, b in zip(offsets, blobs):
        out += b"\0" * (o - len(out))
        out += b
    csum = int(_C._artifact_checksum(bytes(text)), 16)
    struct.pack_into("<Q", out, 24, csum)
    return bytes(out)


def _random_json(rng):
    return rng.choice([None, True, False, 0, -1, 1, 7, 2 ** 40, -(2 ** 63), 2 ** 64 + 5, 1.5, float("1e300"),
                       "", "x", "float32", "Add", [], [1, 2], [-3], {}, {"a": 1}, [[[]]]])


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _set(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


_IR_SWAPS = ["0", "1", "-1", "2", "3", "64", "1000000000000", "float64", "int64", "bool", "float16", "Add", "Mul",
             "MatMul", "Relu", "Sum", "Reshape", "none", "%0", "%99", "input", "state", "const", "true", "false",
             "[", "]", "(", ")", "{", "}", ",", "=", "<-", "assign", "return", "nan", "-inf", "1e308", ""]


def mutate(data, kind, rng):
    """One mutation of artifact bytes `data` of the given kind."""
    b = bytearray(data)
    n = len(b)
    hlen = struct.unpack_from("<Q", data, 16)[0]
    if kind == "flip":
        i = rng.randrange(n)
        b[i] ^= 1 << rng.randrange(8)
    elif kind == "flip_header":
        i = rng.randrange(PREFIX + hlen)
        b[i] ^= 1 << rng.randrange(8)
    elif kind == "flip_blob":
        i = rng.randrange(PREFIX + hlen, n) if n > PREFIX + hlen else rng.randrange(n)
        b[i] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        return bytes(b[:rng.randrange(n)])
    elif kind == "append":
        return bytes(b) + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
    elif kind == "zero_range":
        i = rng.randrange(n)
        j = min(n, i + rng.randrange(1, 64))
        b[i:j] = bytes(j - i)
    elif kind == "length_field":
        struct.pack_into("<Q", b, 16, rng.choice([0, 1, hlen - 1, hlen + 1, n, 2 ** 40, 2 ** 63, 2 ** 64 - 1]))
    elif kind == "header_value":
        header, blobs = split(data)
        paths = [p for p in _paths(header) if p]
        _set(header, rng.choice(paths), _random_json(rng))
        try:
            return join(header, blobs)
        except (TypeError, KeyError, ValueError, AttributeError, IndexError):
            return bytes(b)  # the edit broke the layout itself (blobs/offset): the raw bytes
    elif kind == "ir_token":
        header, blobs = split(data)
        programs = header.get("programs", [])
        if not programs:
            return bytes(b)
        k = programs[rng.randrange(len(programs))]["ir"]
        text = blobs[k].decode()
        toks = [i for i, c in enumerate(text) if c in " (,[%=:{"]
        i = rng.choice(toks) + 1 if toks else 0
        j = i
        while j < len(text) and (text[j].isalnum() or text[j] in "_.-"):
            j += 1
        text = text[:i] + rng.choice(_IR_SWAPS) + text[j:]
        blobs[k] = text.encode()
        return join(header, blobs)
    else:
        raise ValueError(kind)
    return bytes(b)


def outputs(loaded, inputs):
    with lucid.no_grad():
        out = loaded(*inputs)
    outs = out if isinstance(out, (tuple, list)) else [out]
    return [o.numpy() for o in outs]


def check_case(path, kind, expected, inputs):
    """Loads a mutated artifact and classifies the outcome: 'rejected' (ArtifactError at load),
    'identical' (loads, same result), 'call-error' or 'different' (semantic kinds only). Raises
    AssertionError for any outcome the mutation's kind does not allow."""
    try:
        loaded = lucid.compile.load_compiled(path)
    except lucid.compile.ArtifactError as e:
        assert str(e), "an ArtifactError without a cause"
        return "rejected"
    except Exception as e:  # noqa: BLE001  (anything but ArtifactError is a finding)
        raise AssertionError(f"{kind}: load raised {type(e).__name__} instead of ArtifactError: {e}") from e
    try:
        got = outputs(loaded, inputs)
    except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError) as e:
        assert kind in SEMANTIC, f"{kind}: a raw mutation loaded, then the call failed: {type(e).__name__}: {e}"
        return "call-error"
    same = len(got) == len(expected) and all(
        g.shape == e.shape and g.dtype == e.dtype and np.array_equal(g, e, equal_nan=True) for g, e in zip(got, expected))
    if same:
        return "identical"
    assert kind in SEMANTIC, f"{kind}: a raw mutation loaded and computed something else"
    return "different"


def make_artifacts(tmpdir):
    """Two real artifacts: a compiled conv/BatchNorm/linear model (eval: BatchNorm folded, fused
    elementwise groups) and a compiled training step (Adam, dropout, BatchNorm in training mode).
    Returns [(path, inputs, expected outputs)]."""
    nn, F = lucid.nn, lucid.nn.functional
    lucid.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                      nn.Linear(4 * 5 * 5, 3), nn.GELU()).eval()
    cm = lucid.compile(m)
    x = lucid.randn(2, 2, 5, 5)
    with lucid.no_grad():
        cm(x)
    p1 = f"{tmpdir}/model.lucid"
    lucid.compile.save_compiled(cm, p1)
    base1 = lucid.compile.load_compiled(p1)
    out = [(p1, (x,), outputs(base1, (x,)))]

    lucid.manual_seed(0)
    m2 = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    step = lucid.compile.fused_step(m2, F.cross_entropy, lucid.optim.Adam(m2.parameters(), lr=1e-2))
    xs, ys = lucid.randn(4, 6), lucid.tensor([0, 1, 2, 1])
    for _ in range(5):  # the first steps run eagerly while Adam creates its state
        step(xs, ys)
    p2 = f"{tmpdir}/step.lucid"
    lucid.compile.save_compiled(step, p2)

    with lucid.no_grad():  # a fresh load per case: every case starts from the saved state
        loss = lucid.compile.load_compiled(p2)(xs, ys)
    out.append((p2, (xs, ys), [loss.numpy()]))
    return out


def check_runner(runner, path):
    """The C++ loader on a mutated file: it exits 0 (ran) or 1 (a clear error on stderr); a signal
    (a crash) or any other status is a finding."""
    import subprocess  # noqa: PLC0415
    p = subprocess.run([runner, path], capture_output=True, text=True, timeout=60)
    assert p.returncode in (0, 1), f"run_artifact exited with {p.returncode} on a mutated file: {p.stderr[-300:]}"
    if p.returncode == 1:
        assert "run_artifact: " in p.stderr, p.stderr[-300:]
    return p.returncode


def run(n_cases, tmpdir, seed=0, log=None, runner=None, runner_cases=0):
    """n_cases mutations spread over the artifacts and kinds; returns {kind: {outcome: count}}.
    runner: the C++ runner binary, given the first runner_cases mutated files as well."""
    rng = random.Random(seed)
    arts = make_artifacts(tmpdir)
    datas = [open(p, "rb").read() for p, _, _ in arts]
    tally = {}
    kinds = RAW + SEMANTIC
    for c in range(n_cases):
        a = c % len(arts)
        kind = kinds[(c // len(arts)) % len(kinds)]
        bad = mutate(datas[a], kind, rng)
        path = f"{tmpdir}/case.lucid"
        with open(path, "wb") as f:
            f.write(bad)
        outcome = check_case(path, kind, arts[a][2], arts[a][1])
        if runner and c < runner_cases:
            rc = check_runner(runner, path)
            assert (rc == 1) == (outcome == "rejected") or kind in SEMANTIC, (kind, outcome, rc)
        tally.setdefault(kind, {}).setdefault(outcome, 0)
        tally[kind][outcome] += 1
        if log and c % 1000 == 999:
            log(f"{c + 1} cases: {tally}")
    return tally
