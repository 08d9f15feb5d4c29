"""lucid.load on malformed and hostile safetensors files, with the `safetensors` package as the reference.

A seeded mutation fuzzer (and a hypothesis test of header field values) builds thousands of files from
valid ones (byte flips, truncation, header-length edits, wrong JSON types for dtype/shape/data_offsets,
negative/float/bool shapes, overlapping/gapped/trailing ranges, duplicate keys written as raw JSON text,
non-object JSON, bad UTF-8, bad __metadata__, deep nesting, bool bytes other than 0/1, skeleton edits)
and checks each one: lucid.load raises SafetensorsError, or loads exactly what safetensors.deserialize
(the function behind safetensors.numpy.load; a test checks that safe_open accepts the same files)
loads: same names, dtypes, shapes and bytes. Where safetensors rejects, lucid must reject; where it
accepts, lucid may reject only for its documented extra rules (duplicate keys, dtypes lucid has no
type for, shapes numpy cannot allocate, a malformed lucid.skeleton), and the test checks the cause it
names. Targeted tests cover each finding of the hostile-input probe (issue 9, item 10)."""
import io
import json
import math
import random
import re
import struct
from collections import OrderedDict

import numpy as np
import pytest
import safetensors
from hypothesis import given, settings, strategies as st
from safetensors.numpy import save as st_save_np

import lucid
from lucid.serialization import SafetensorsError

MAX_HEADER_SIZE = 100_000_000  # safetensors/src/tensor.rs
U64_MAX = 2 ** 64 - 1
ST_NP = {"BOOL": np.uint8, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16, "I32": np.int32,
         "U32": np.uint32, "I64": np.int64, "F16": np.uint16, "BF16": np.uint16, "F32": np.uint32, "F64": np.uint64}
LUCID_DTYPE = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int32", "U16": "int32", "I32": "int32",
               "U32": "int64", "I64": "int64", "F16": "float16", "BF16": "bfloat16", "F32": "float32",
               "F64": "float64"}
ALL_DTYPES = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ",
              "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"]


# ---------------------------------------------------------------- raw JSON text (duplicates, raw tokens)
class Raw(str):
    """A JSON token written verbatim (-0, 1e400, NaN, a lone surrogate escape, deep nesting)."""


class Pairs(list):
    """A JSON object as a list of (key, value) pairs, so keys can repeat."""


def emit(v):
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, dict):
        v = Pairs(v.items())
    if isinstance(v, Pairs):
        return "{" + ",".join(json.dumps(k) + ":" + emit(x) for k, x in v) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(emit(x) for x in v) + "]"
    return json.dumps(v)


def pack(header_text, body=b"", n=None):
    hb = header_text if isinstance(header_text, bytes) else header_text.encode("utf-8", "surrogatepass")
    return struct.pack("<Q", len(hb) if n is None else n) + hb + body


def split(data):
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n], object_pairs_hook=Pairs), data[8 + n:]


# ---------------------------------------------------------------- the reference and the comparison
def reference(data):
    try:
        return safetensors.deserialize(data)
    except safetensors.SafetensorError:
        return None


def header_facts(data):
    """For a file safetensors accepted: (has a duplicate key anywhere, the __metadata__ dict)."""
    dup = []

    def hook(pairs):
        dup.append(len({k for k, _ in pairs}) != len(pairs))
        return dict(pairs)
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n], object_pairs_hook=hook)
    return any(dup), header.get("__metadata__") or {}


def numpy_cannot_hold(dtype, shape):
    itemsize = {"BF16": 4}.get(dtype, np.dtype(LUCID_DTYPE[dtype].replace("bfloat16", "float32")).itemsize)
    try:
        np.empty([min(s, 1) for s in shape], np.dtype(f"V{itemsize}"))  # numpy's dimension limit
        np.empty(shape, np.dtype(f"V{itemsize}"))
    except (ValueError, OverflowError):
        return True
    return False


def lucid_tensors(obj, out):
    """Every tensor in a loaded object, in any order."""
    if isinstance(obj, lucid.Tensor):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            lucid_tensors(v, out)
    elif isinstance(obj, (list, tuple, set)):
        for v in obj:
            lucid_tensors(v, out)
    return out


def same_tensor(t, dtype, shape, raw):
    """lucid tensor `t` holds exactly the safetensors tensor (dtype, shape, raw bytes)."""
    if t.dtype.name != LUCID_DTYPE[dtype] or tuple(t.shape) != tuple(shape):
        return False
    want = np.frombuffer(raw, np.dtype(ST_NP[dtype]).newbyteorder("<")).reshape(shape)
    if dtype == "BOOL":
        want = want != 0
        return np.array_equal(t.numpy(), want) and np.array_equal((t == True).numpy(), want)  # noqa: E712
    if dtype == "BF16":  # through float32: a signalling NaN comes back quiet, every other pattern exactly
        got = (lucid.cast(t, lucid.float32).numpy().view(np.uint32) >> 16).astype(np.uint16)
        nan = (want & 0x7FFF) > 0x7F80
        return np.array_equal(np.where(nan, want | 0x0040, want), got)
    got = t.numpy()
    if dtype in ("F16", "F32", "F64"):
        got = got.view(want.dtype)
    return np.array_equal(got, want.astype(got.dtype))


def check(data):
    """One file: returns "accepted" or "rejected"; fails on any disagreement with safetensors."""
    ref = reference(data)
    try:
        got = lucid.load(data)
    except SafetensorsError as e:
        msg = str(e)
        assert msg.startswith(f"lucid.load(<{len(data)} bytes>): "), msg
        if ref is not None:
            dup, meta = header_facts(data)
            allowed = ((dup and "duplicate key" in msg)
                       or ("not supported by lucid" in msg and any(i["dtype"] not in LUCID_DTYPE for _, i in ref))
                       or ("too large for lucid" in msg and any(numpy_cannot_hold(i["dtype"], i["shape"])
                                                                for _, i in ref if i["dtype"] in LUCID_DTYPE))
                       or ("lucid.skeleton" in msg and "lucid.skeleton" in meta))
            assert allowed, f"lucid rejected a file safetensors accepts: {msg}\n{data[:300]!r}"
        return "rejected"
    assert ref is not None, f"lucid loaded a file safetensors rejects: {data[:300]!r}"
    _, meta = header_facts(data)
    if "lucid.skeleton" in meta:  # names are internal to the skeleton: compare the tensors as a multiset
        tensors = lucid_tensors(got, [])
        assert len(tensors) == len(ref)
        todo = list(tensors)
        for _, info in ref:
            i = next(i for i, t in enumerate(todo) if same_tensor(t, info["dtype"], info["shape"], bytes(info["data"])))
            del todo[i]
    else:
        assert isinstance(got, OrderedDict) and sorted(got) == sorted(name for name, _ in ref)
        for name, info in ref:
            assert same_tensor(got[name], info["dtype"], info["shape"], bytes(info["data"])), name
    return "accepted"


# ---------------------------------------------------------------- valid files to mutate
def base_files():
    rng = np.random.default_rng(0)
    arrays = {"u8": rng.integers(0, 256, (3,), dtype=np.uint8), "b": rng.integers(0, 2, (2, 2)).astype(bool),
              "f32": rng.standard_normal(2).astype(np.float32), "i64": np.array(-5, np.int64),
              "f16_empty": np.zeros((0, 3), np.float16), "i16": np.array([-3, 7], np.int16),
              "u32": np.array([4000000000], np.uint32), "f64": rng.standard_normal((2, 1)),
              "i8": np.array([-128, 0, 5, 127], np.int8), "u16": np.array([65535], np.uint16)}
    files = [st_save_np(arrays),
             pack(emit({"__metadata__": {"format": "pt", "k": "v"},
                        "bf": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]},
                        "f8": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [6, 8]},
                        "u64": {"dtype": "U64", "shape": [1], "data_offsets": [8, 16]}}),
                  b"\x80\x3f\xc1\xff\xa0\x7f" + b"\x01\x02" + b"\x07" * 8)]
    buf = io.BytesIO()
    lucid.save({"w": lucid.tensor([[1.0, 2.0]]), "mask": lucid.tensor([True, False, True])}, buf)
    files.append(buf.getvalue())
    buf = io.BytesIO()
    lucid.save({"state": {0: {"exp_avg": lucid.full((2,), 0.5), "step": lucid.tensor(3, dtype=lucid.int64)}},
                "param_groups": [{"lr": 0.1, "betas": (0.9, 0.99), "dt": lucid.bfloat16, "s": {1, 2}}]}, buf)
    files.append(buf.getvalue())
    return files


# ---------------------------------------------------------------- mutations
def deep(d, leaf="1"):
    return Raw("[" * d + leaf + "]" * d)


SHAPES = [[], [-1], [2.0], [True], [False], ["2"], [[2]], None, {}, "2", [U64_MAX], [U64_MAX, 0], [2 ** 64],
          [2 ** 63], [Raw("-0")], [Raw("1e400")], [Raw("2e0")], [0, 2 ** 40, 2 ** 40], [2 ** 33, 2 ** 33, 0],
          [0, 2 ** 62], [0, 2 ** 61, 8], [1], [2], [3], [4], [2, 2], [0], [1, 1, 1], [Raw("-1")]]
DTYPES = ALL_DTYPES + ["u8", "XX", "", 1, None, [], ["F32"], {"F32": None}, {"U8": None}, {"F32": 1},
                      {"F32": None, "U8": None}, {}, True, Raw('"F\\u0033\\u0032"')]
VALUES = [None, True, 0, -1, 1.5, "s", [], {}, Raw("NaN"), Raw("-Infinity"), Raw("1e400"), Raw("-0"),
          Raw('"\\ud800"'), Raw('"\\udc00\\u0041"'), Raw('"\\ud83d\\ude00"'), Raw("9" * 30), Raw("9" * 400),
          deep(124), deep(125), deep(126), Raw('"\\x"'), Pairs([("a", 1), ("a", 2)])]


def offsets_variants(b, e):
    return [[e, b], [b + 1, e], [b, e + 1], [b - 1, e], [b, e - 1], [b, e, e], [b], [], [float(b), e], [True, e],
            [b, Raw("-0")], None, f"{b},{e}", {"0": b}, [U64_MAX, U64_MAX], [b, 2 ** 64], [0, 0], [0, e - b]]


def offsets_of(info):
    """(begin, end) of a well-formed entry, else None (an earlier mutation may have broken it)."""
    offsets = dict(info).get("data_offsets") if isinstance(info, Pairs) else None
    if isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets):
        return offsets
    return None


def mutate_header(rng, header, body):
    tensors = [i for i, (k, info) in enumerate(header) if k != "__metadata__" and offsets_of(info)]
    kind = rng.randrange(20)
    if tensors and kind < 6:
        i = rng.choice(tensors)
        name, info = header[i]
        fields = dict(info)
        b, e = offsets_of(info)
        field = rng.choice(["dtype", "shape", "data_offsets", None, None, "extra"])
        if kind == 0 and field:
            header[i] = (name, Pairs([(k, v) for k, v in info if k != field]))  # a field missing
        elif kind == 1:
            header[i] = (name, Pairs(list(info) + [(rng.choice(["dtype", "shape", "data_offsets", "x"]),
                                                    rng.choice(VALUES + DTYPES))]))  # duplicate or unknown
        elif kind == 2:  # the array form of a TensorInfo, sometimes of the wrong length
            seq = [fields.get("dtype"), fields.get("shape"), fields["data_offsets"]]
            header[i] = (name, seq[:rng.choice([3, 3, 2, 0])] + rng.choice([[], [], [1]]))
        elif kind == 3:
            header[i] = (name, rng.choice([None, "x", 1, [], True, Pairs()]))
        else:
            new = rng.choice({"dtype": DTYPES, "shape": SHAPES, "data_offsets": offsets_variants(b, e),
                              "extra": VALUES, None: DTYPES[:22]}[field])
            header[i] = (name, Pairs([(k, new if k == (field or "dtype") else v) for k, v in info]
                                     + ([("extra", new)] if field == "extra" else [])))
    elif kind == 6 and tensors:  # duplicate a tensor name
        i = rng.choice(tensors)
        j = rng.choice(tensors)
        header.insert(rng.randrange(len(header) + 1), (header[i][0], header[j][1]))
    elif kind == 7:
        header.insert(rng.randrange(len(header) + 1), ("__metadata__", rng.choice(
            [None, Pairs(), [], "x", {"k": 1}, {"k": None}, {"k": {"a": "b"}}, {"k": "v"},
             Pairs([("k", "1"), ("k", "2")]), {"k": Raw('"\\ud800"')}, [["k", "v"]]])))
    elif kind == 8 and len(tensors) >= 2:  # swap the data of two tensors (a valid reordering if sizes match)
        i, j = rng.sample(tensors, 2)
        (ni, ii), (nj, ij) = header[i], header[j]
        header[i], header[j] = (ni, ij), (nj, ii)
    elif kind == 9 and tensors:  # overlap / gap / shift every range
        delta = rng.choice([-2, -1, 1, 2, 8])
        pick = set(rng.sample(tensors, rng.randint(1, len(tensors))))
        for i in pick:
            name, info = header[i]
            header[i] = (name, Pairs([(k, [max(0, v[0] + delta), v[1] + delta] if k == "data_offsets" else v)
                                      for k, v in info]))
    elif kind == 10:
        body = body + bytes(rng.randrange(256) for _ in range(rng.choice([1, 2, 8])))
    elif kind == 11 and body:
        body = body[:-rng.choice([1, 2, len(body)])]
    elif kind == 12 and tensors:  # bool bytes (any tensor's bytes) set to arbitrary values
        b, e = offsets_of(header[rng.choice(tensors)][1])
        e = min(e, len(body))  # offsets may be huge after an earlier mutation
        body = body[:b] + bytes(rng.choice([0, 1, 2, 127, 128, 255]) for _ in range(max(0, e - b))) + body[e:]
    elif kind == 13:
        meta = dict(header).get("__metadata__")
        if isinstance(meta, Pairs) and isinstance(dict(meta).get("lucid.skeleton"), str):
            header = mutate_skeleton(rng, header)
        else:
            header.append((rng.choice(["__metadata__", "t"]), rng.choice(VALUES)))
    elif kind == 14:  # a zero-size tensor at the end: valid unless its shape or offsets are oddly typed
        zero = rng.choice([0, 0, Raw("-0"), 0.0, False])
        header.append(("empty", {"dtype": rng.choice(ALL_DTYPES), "data_offsets": [len(body), len(body)],
                                 "shape": rng.choice([[0], [2, 0], [zero], [0, 2 ** 62], [0, 2 ** 33, 2 ** 33],
                                                      [2 ** 33, 2 ** 33, 0], [U64_MAX, 0], [2 ** 64, 0],
                                                      [0] + [1] * 63, [0] + [1] * 64])}))
    elif kind == 15 and tensors:  # the last entry in the data is removed: its bytes become trailing data
        del header[max(tensors, key=lambda i: offsets_of(header[i][1]))]
    elif kind == 16:  # entries in another text order (valid: safetensors sorts by offsets)
        rng.shuffle(header)
    elif kind == 17 and tensors:  # a new valid name: unicode, escapes, empty, a near-miss of __metadata__
        i = rng.choice(tensors)
        header[i] = (rng.choice(["", "é/ü", "\u0000", "a\"b", "__metadata_", "__METADATA__", "😀", ""]),
                     header[i][1])
    elif kind == 19 and tensors:  # an unknown field nested around serde_json's depth limit (128 levels)
        name, info = header[i := rng.choice(tensors)]
        d = rng.choice([124, 125, 126, 127])
        header[i] = (name, Pairs(list(info) + [("x", rng.choice([deep(d), Raw('{"k":' * d + "1" + "}" * d)]))]))
    elif kind == 18:  # valid metadata edits
        header = Pairs([(k, v) for k, v in header if k != "__metadata__"])
        header.insert(rng.randrange(len(header) + 1), ("__metadata__", rng.choice(
            [Pairs(), None, {"": ""}, {"k": "\u0000é"}, {"lucid.skeleton_": "x"}])))
    return header, body


SKELETON_EDITS = [('"__dtype__": "bfloat16"', '"__dtype__": "__class__"'),
                  ('"__dtype__": "bfloat16"', '"__dtype__": "mro"'),
                  ('"__tuple__"', '"__list__"'), ('"__tensor__": "state/0/exp_avg"', '"__tensor__": "nope"'),
                  ('"__tensor__": "state/0/exp_avg"', '"__tensor__": "state/0/step"'),
                  ('"__ordered__": false', '"__ordered__": 0'), ('"__set__": [1, 2]', '"__set__": [[1], 2]'),
                  ('[0, {', '[[0], {'), ('[0, {', '[{"a": 1}, {'), ('0.1', 'NaN'), ('0.1', '1e400'),
                  ('"lr"', '"lr", "x"'), ('{"__tuple__"', '{"__float__": "1.5", "__tuple__"'),
                  ('"__float__"', '"__float__"'), ('0.1', '{"__float__": "inf"}'), ('0.1', '{"__float__": "2"}'),
                  ('0.1', '[' * 300 + ']' * 300), ('0.1', '[' * 190 + ']' * 190), ('0.1', '9' * 5000)]


def mutate_skeleton(rng, header):
    out = Pairs()
    for k, v in header:
        if k == "__metadata__":
            meta = Pairs()
            for mk, mv in v:
                if mk == "lucid.skeleton" and isinstance(mv, str):
                    old, new = rng.choice(SKELETON_EDITS)
                    mv = mv.replace(old, new, 1)
                meta.append((mk, mv))
            v = meta
        out.append((k, v))
    return out


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.randrange(12)
        if kind < 5:
            try:
                header, body = split(bytes(data))
            except (ValueError, UnicodeDecodeError, RecursionError, struct.error):
                continue
            if not isinstance(header, Pairs):
                continue
            header, body = mutate_header(rng, header, body)
            text = emit(header)
            text = (rng.choice(["", "", "", " ", "\t\n", "\ufeff"]) + text
                    + rng.choice(["", "", "", "   ", "\r\n", "\x00", "\x0b"]))
            data = bytearray(pack(text, body))
        elif kind < 8 and len(data) > 8:  # flip a bit or set a byte: in the header, the data or the length
            (n,) = struct.unpack("<Q", bytes(data[:8]))
            lo, hi = rng.choice([(8, 8 + n), (8, 8 + n), (8 + n, len(data)), (8 + n, len(data)), (0, 8)])
            lo, hi = min(lo, len(data) - 1), min(hi, len(data))
            i = rng.randrange(lo, max(lo + 1, hi))
            bits = 7 if 8 <= i < 8 + n and rng.random() < 0.8 else 8  # mostly keep the header ASCII
            data[i] = data[i] ^ (1 << rng.randrange(bits)) if rng.random() < 0.5 else rng.randrange(2 ** bits)
        elif kind == 8:
            del data[rng.randrange(len(data) + 1):]
        elif kind == 9 and len(data) >= 8:  # header length field
            (n,) = struct.unpack("<Q", bytes(data[:8]))
            n = rng.choice([n - 1, n + 1, n - 8, n + 8, 0, MAX_HEADER_SIZE, MAX_HEADER_SIZE + 1, U64_MAX, len(data),
                            2 ** 63, rng.randrange(2 ** 16)])
            data[:8] = struct.pack("<Q", n % 2 ** 64)
        elif kind == 10 and len(data) > 8:  # bad UTF-8 (or a raw control character) inside the header
            (n,) = struct.unpack("<Q", bytes(data[:8]))
            i = rng.randrange(8, max(9, min(len(data), 8 + n)))
            bad = rng.choice([b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82", b"\x01", b"\xf4\x90\x80\x80",
                              "é".encode(), b"\x7f"])
            data[i:i + len(bad)] = bad
        else:
            i = rng.randrange(len(data) + 1)
            data[i:i] = bytes(rng.randrange(256) for _ in range(rng.choice([1, 3, 8])))
    return bytes(data)


N_FUZZ = 6000


def test_mutated_files_match_safetensors():
    rng = random.Random(1234)
    bases = base_files()
    outcomes = {"accepted": 0, "rejected": 0}
    for base in bases:
        assert check(base) == ("rejected" if b"U64" in base else "accepted")
    for k in range(N_FUZZ):
        outcomes[check(mutate(rng, bases[k % len(bases)]))] += 1
    # the fuzzer exercises both paths in earnest
    assert outcomes["accepted"] > N_FUZZ // 20 and outcomes["rejected"] > N_FUZZ // 2, outcomes


def test_reference_is_what_safe_open_accepts(tmp_path):
    """safetensors.deserialize (bytes) and safe_open (a file) accept the same files: either is the reference."""
    rng = random.Random(99)
    bases = base_files()
    path = tmp_path / "m.safetensors"
    for k in range(200):
        data = mutate(rng, bases[k % len(bases)])
        path.write_bytes(data)
        try:
            with safetensors.safe_open(str(path), framework="numpy") as f:
                names = sorted(f.keys())
        except safetensors.SafetensorError:
            names = None
        ref = reference(data)
        assert names == (None if ref is None else sorted(name for name, _ in ref))


ENTRY_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 65, 2 ** 65) | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(ALL_DTYPES + ["u8", "", Raw("-0"), Raw("1e400"), Raw('"\\ud800"')]),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(["F32", "U8", "a"]), c, max_size=2),
    max_leaves=8)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(dtype=ENTRY_VALUES, shape=ENTRY_VALUES, offsets=ENTRY_VALUES, meta=ENTRY_VALUES,
       body=st.binary(max_size=12))
def test_header_field_values_match_safetensors(dtype, shape, offsets, meta, body):
    """Arbitrary JSON values in every header field, small integers in shape/offsets most of the time."""
    for entry in ({"dtype": dtype, "shape": shape, "data_offsets": offsets}, [dtype, shape, offsets]):
        check(pack(emit({"t": entry}), body))
    check(pack(emit({"__metadata__": meta, "t": {"dtype": "U8", "shape": [len(body)],
                                                   "data_offsets": [0, len(body)]}}), body))


DIM = st.integers(0, 5) | st.sampled_from([True, False, Raw("-0"), 2.0, Raw("1e0"), 2 ** 32, 2 ** 62, U64_MAX])


@settings(max_examples=400, derandomize=True, deadline=None)
@given(dtype=st.sampled_from(ALL_DTYPES), shape=st.lists(DIM, max_size=3), b=st.sampled_from([0, 0, 0, 1]),
       delta=st.sampled_from([0, 0, 0, -1, 1, 7]), extra=st.sampled_from([0, 0, 0, 1]))
def test_sizes_and_offsets_match_safetensors(dtype, shape, b, delta, extra):
    """Offsets near prod(shape) * bits / 8 bytes (as the format defines it), with oddly typed dims."""
    bits = {"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}.get(dtype) or 8 * np.dtype(ST_NP.get(dtype, np.uint8)).itemsize
    if dtype in ("C64", "U64"):
        bits = 64
    nbytes = int(math.prod(float(d) if isinstance(d, Raw) else d for d in shape) * bits) // 8
    e = max(0, b + (nbytes if nbytes <= 64 else 0) + delta)
    check(pack(emit({"t": {"dtype": dtype, "shape": shape, "data_offsets": [b, e]}}), bytes(e + extra)))


# ---------------------------------------------------------------- targeted: one per probe finding
def u8_file(shape, offsets, body=b"\x01\x02", dtype="U8"):
    return pack(emit({"a": {"dtype": dtype, "shape": shape, "data_offsets": offsets}}), body)


@pytest.mark.parametrize("shape", [[2.0], [True, 2], [-2], [Raw("-0")], ["2"], [[2]], [2 ** 64]])
def test_shapes_are_not_coerced(shape):
    data = u8_file(shape, [0, 2])
    assert reference(data) is None
    with pytest.raises(SafetensorsError, match="shape"):
        lucid.load(data)


@pytest.mark.parametrize("a,b,cause", [
    (([2], [0, 2]), ([2], [1, 3]), "invalid offset"),     # overlapping
    (([1], [0, 1]), ([1], [2, 3]), "invalid offset"),     # gap
    (([1], [1, 2]), ([1], [2, 3]), "invalid offset"),     # not starting at 0
    (([1], [0, 1]), ([1], [1, 2]), "not fully covered"),  # a trailing byte
    (([1], [0, 1]), ([1], [1, 3]), "needs 1"),            # size != numel * itemsize
])
def test_ranges_must_tile_the_data_exactly(a, b, cause):
    data = pack(emit({"a": {"dtype": "U8", "shape": a[0], "data_offsets": a[1]},
                      "b": {"dtype": "U8", "shape": b[0], "data_offsets": b[1]}}), b"\x01\x02\x03")
    assert reference(data) is None
    with pytest.raises(SafetensorsError, match=cause):
        lucid.load(data)


def test_ranges_in_any_key_order_load_as_safetensors_does():
    data = pack(emit({"z": {"dtype": "I16", "shape": [1], "data_offsets": [0, 2]},
                      "a": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}}), b"\xff\xff\x05\x06")
    assert check(data) == "accepted"
    got = lucid.load(data)
    assert list(got) == ["z", "a"] and got["z"].numpy().tolist() == [-1] and got["a"].numpy().tolist() == [5, 6]


def test_duplicate_keys_are_rejected():
    entry = {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}
    small = {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}
    data = pack(emit(Pairs([("a", small), ("a", entry)])), b"\x01\x02")
    # safetensors keeps the last duplicate; lucid refuses to guess (documented difference)
    assert [k for k, _ in reference(data)] == ["a"]
    with pytest.raises(SafetensorsError, match="duplicate key 'a'"):
        lucid.load(data)
    meta = pack(emit(Pairs([("__metadata__", Pairs([("k", "1"), ("k", "2")])), ("a", entry)])), b"\x01\x02")
    with pytest.raises(SafetensorsError, match="duplicate key 'k'"):
        lucid.load(meta)


def test_header_size_limit_is_safetensors_limit():
    at_limit = pack(b"{}" + b" " * (MAX_HEADER_SIZE - 2))
    assert reference(at_limit) == [] and lucid.load(at_limit) == OrderedDict()
    over = pack(b"{}" + b" " * (MAX_HEADER_SIZE - 1))
    assert reference(over) is None
    with pytest.raises(SafetensorsError, match="header too large"):
        lucid.load(over)
    with pytest.raises(SafetensorsError, match="header too large"):  # checked before the file size
        lucid.load(pack(b"{}", n=U64_MAX))


def test_bool_bytes_other_than_0_1_are_true_everywhere():
    data = u8_file([5], [0, 5], b"\x00\x01\x02\x7f\xff", dtype="BOOL")
    assert bytes(reference(data)[0][1]["data"]) == b"\x00\x01\x02\x7f\xff"  # safetensors accepts them
    t = lucid.load(data)["a"]
    want = [False, True, True, True, True]
    assert t.numpy().tolist() == want and t.numpy().view(np.uint8).tolist() == [0, 1, 1, 1, 1]
    assert (t == True).numpy().tolist() == want  # noqa: E712
    assert lucid.logical_not(t).numpy().tolist() == [not w for w in want]
    assert lucid.logical_and(t, lucid.tensor([True] * 5)).numpy().tolist() == want
    assert int(t.sum().item()) == 4 and bool(t.any().item()) and not bool(t.all().item())
    assert lucid.where(t, lucid.full((5,), 1.0), lucid.full((5,), 0.0)).numpy().tolist() == [0, 1, 1, 1, 1]


def skeleton_file(skeleton_text, tensors=None):
    buf = io.BytesIO()
    lucid.save(tensors or {"t": lucid.tensor([1.0])}, buf)
    header, body = split(buf.getvalue())
    header = Pairs([(k, v) for k, v in header if k != "__metadata__"])
    header.insert(0, ("__metadata__", {"lucid.skeleton": skeleton_text}))
    return pack(emit(header), body)


@pytest.mark.parametrize("skeleton,cause", [
    ('{"__dtype__": "__class__"}', "malformed entry"),
    ('{"__dtype__": "mro"}', "malformed entry"),
    ('[{"__tensor__": "t"}, {"__dtype__": "__dict__"}]', "malformed entry"),
    ('[{"__tensor__": "t"}, {"__unknown__": 1}]', "malformed entry"),
    ('[{"__tensor__": "t"}, {"__tuple__": [], "__set__": []}]', "malformed entry"),
    ('[{"__tensor__": "t"}, {"__float__": "1e5"}]', "malformed entry"),
    ('[{"__tensor__": "t"}, {"__dict__": [[[1], 2]], "__ordered__": false}]', "malformed dict item"),
    ('[{"__tensor__": "t"}, {"__dict__": [[1, 2, 3]], "__ordered__": false}]', "malformed dict item"),
    ('[{"__tensor__": "t"}, {"__set__": [[1]]}]', "unhashable"),
    ('[{"__tensor__": "t"}, {"__tensor__": "t"}]', "referenced twice"),
    ('[{"__tensor__": "nope"}]', "not a stored tensor"),
    ('[1, 2]', "not referenced"),
    ('[{"__tensor__": "t"}, ' + "[" * 5000 + "]" * 5000 + "]", "nested deeper"),
    ('[{"__tensor__": "t"}, ' + "[" * 300 + "]" * 300 + "]", "nested deeper"),
    ('[{"__tensor__": "t"}, NaN]', "invalid JSON"),
    ('{"__tensor__": "t", "__tensor__": "t"}', "duplicate key"),
    ('[{"__tensor__": "t"', "invalid JSON"),
], ids=lambda v: v[:60] if isinstance(v, str) else None)
def test_malformed_skeletons_are_rejected(skeleton, cause):
    data = skeleton_file(skeleton)
    assert reference(data) is not None  # a valid safetensors file: only lucid's skeleton is wrong
    with pytest.raises(SafetensorsError, match=f"lucid.skeleton: .*{cause}"):
        lucid.load(data)


def test_skeleton_dtypes_and_exact_ints_round_trip():
    obj = {"dts": [lucid.float32, lucid.bfloat16, lucid.bool], "big": 2 ** 70, "neg": -2 ** 80,
           "f": [float("nan"), float("-inf")], "t": lucid.tensor([1, 2])}
    buf = io.BytesIO()
    lucid.save(obj, buf)
    back = lucid.load(buf.getvalue())
    assert back["dts"] == [lucid.float32, lucid.bfloat16, lucid.bool]
    assert back["big"] == 2 ** 70 and type(back["big"]) is int and back["neg"] == -2 ** 80
    assert back["f"][0] != back["f"][0] and back["f"][1] == float("-inf")


def test_nesting_limit_is_checked_at_save():
    def nested(depth):
        obj = lucid.tensor([1.0])
        for _ in range(depth):
            obj = {"k": obj}
        return obj
    buf = io.BytesIO()
    lucid.save(nested(64), buf)
    back = lucid.load(buf.getvalue())
    for _ in range(64):
        back = back["k"]
    assert back.numpy().tolist() == [1.0]
    with pytest.raises(ValueError, match=r"lucid.save\(<BytesIO>\): containers nested deeper than 64"):
        lucid.save(nested(65), io.BytesIO())


def test_save_rejects_reserved_names(tmp_path):
    path = tmp_path / "m.safetensors"
    with pytest.raises(ValueError, match=rf"lucid.save\({re.escape(str(path))}\): a tensor cannot be named"):
        lucid.save({"__metadata__": lucid.tensor([1.0]), "w": lucid.tensor([2.0])}, path)
    with pytest.raises(ValueError, match="lucid.skeleton"):
        lucid.save({"w": lucid.tensor([2.0])}, io.BytesIO(), metadata={"lucid.skeleton": "[]"})
    with pytest.raises(ValueError, match="nan"):
        lucid.save({float("nan"): 1}, io.BytesIO())
    # in a nested object the key is only a skeleton key: it round-trips
    buf = io.BytesIO()
    lucid.save({"__metadata__": lucid.tensor([1.0]), "n": 3}, buf)
    back = lucid.load(buf.getvalue())
    assert back["n"] == 3 and back["__metadata__"].numpy().tolist() == [1.0]
    assert reference(buf.getvalue()) is not None


@pytest.mark.parametrize("header,body,cause", [
    ('{"a":{"dtype":"U8","shape":[2]}}', b"\x01\x02", "missing field 'data_offsets'"),    # was KeyError
    ('[{"a":1}]', b"", "must be an object"),                                              # was .pop on a list
    ('"x"', b"", "must be an object"),
    ('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":' + "[" * 5000 + "]" * 5000 + "}}",
     b"\x01\x02", "nested deeper"),                                                       # was RecursionError
    ('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":' + "[" * 126 + "]" * 126 + "}}",
     b"\x01\x02", "nested deeper than 127"),
    ('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":"\\ud800"}}', b"\x01\x02", "surrogate"),
    ('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":NaN}}', b"\x01\x02", "NaN"),
    ('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":1e400}}', b"\x01\x02", "out of range"),
    ('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}\x00', b"\x01\x02", "invalid JSON"),
    ('{"a":{"dtype":"u8","shape":[2],"data_offsets":[0,2]}}', b"\x01\x02", "unknown dtype 'u8'"),
    ('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2,2]}}', b"\x01\x02", "data_offsets"),
    ('{"__metadata__":{"k":1},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}', b"\x01\x02", "string values"),
    ('{"__metadata__":[],"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}', b"\x01\x02", "__metadata__"),
    ('{"a":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}', b"", "overflow"),
    ('{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}', b"\x01\x02", "whole number of bytes"),
    ('{"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}', b"\x01\x02", "not supported by lucid"),
    ('{"a":{"dtype":"U8","shape":[0,4611686018427387904,4],"data_offsets":[0,0]}}', b"", "too large for lucid"),
    ('{"a":{"dtype":"U8","shape":[%s],"data_offsets":[0,1]}}' % ",".join(["1"] * 65), b"\x01",
     "65 dims.*too large for lucid"),
], ids=lambda v: v[-60:] if isinstance(v, str) else None)
def test_malformed_headers_raise_one_clear_error(header, body, cause, tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(pack(header, body))
    with pytest.raises(SafetensorsError, match=rf"^lucid.load\({re.escape(str(path))}\): .*{cause}"):
        lucid.load(path)
    if "lucid" not in cause:
        assert reference(path.read_bytes()) is None
    else:
        assert reference(path.read_bytes()) is not None
    assert issubclass(SafetensorsError, ValueError)


@pytest.mark.parametrize("header", [
    '{"a":["U8",[2],[0,2]]}',                                              # serde reads a struct from an array
    '{"a":{"dtype":{"U8":null},"shape":[2],"data_offsets":[0,2]}}',        # and an enum from {"variant": null}
    ' \t{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":[{"y":-0}, 1e-400, "\\ud83d\\ude00"]}}\r\n',
    '{"__metadata__":null,"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
    '"e":{"dtype":"F32","shape":[0,1099511627776],"data_offsets":[2,2]}}',
])
def test_unusual_but_valid_headers_load_as_safetensors_does(header):
    assert check(pack(header, b"\x01\x02")) == "accepted"


def test_load_metadata_validates():
    with pytest.raises(SafetensorsError, match=r"lucid.load_metadata\(<BytesIO>\): .*not fully covered"):
        lucid.serialization.load_metadata(io.BytesIO(u8_file([2], [0, 2], b"\x01\x02\x03")))
    assert lucid.serialization.load_metadata(io.BytesIO(st_save_np({"a": np.zeros(1)}, {"k": "v"}))) == {"k": "v"}
