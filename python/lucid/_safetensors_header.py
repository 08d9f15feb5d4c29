"""Parse and validate a safetensors header exactly as the `safetensors` package does (no pickle, no trust).

The reference is the Rust crate behind the `safetensors` pip package (safetensors/src/tensor.rs:
SafeTensors::read_metadata, Metadata::validate, the serde derives of HashMetadata / TensorInfo / Dtype)
and serde_json's parser. A file is accepted only if all of these hold:
  - at least 8 bytes; the little-endian u64 header length N is <= 100_000_000 (MAX_HEADER_SIZE, checked
    before the file size) and 8 + N <= file size;
  - the N header bytes are UTF-8 and one JSON value (surrounding JSON whitespace allowed), parsed as
    serde_json does: no NaN/Infinity, no lone surrogate escape anywhere, no number that overflows f64,
    at most 127 nested arrays/objects; integers outside i64/u64 and "-0" are floats;
  - the value is an object; "__metadata__" is null or an object of string values; every other entry
    is a TensorInfo: an object with "dtype", "shape" and "data_offsets" (other fields ignored) or the
    3-element array [dtype, shape, data_offsets]; dtype is one of DTYPE_BITS's names (or serde's
    enum-as-map form {"F32": null}); shape is an array of integers in [0, 2**64); data_offsets is an
    array of exactly 2 such integers;
  - sorted by data_offsets, the ranges are contiguous from 0 (begin == previous end, end >= begin);
    prod(shape) * bits, computed in u64 with overflow an error, is a whole number of bytes equal to
    end - begin; and the last end is exactly the size of the data section (no trailing bytes).
One deliberate difference: lucid rejects a duplicated key in any JSON object. safetensors rejects a
duplicated "__metadata__" or TensorInfo field too, but keeps the last of a duplicated tensor name or
metadata key (a silent overwrite) and ignores duplicates inside unknown fields.
Checked against safetensors 0.8.0 by tests/python/test_serialization_malformed.py.

Every rejection raises Invalid(cause); the caller (lucid.serialization) reports it as SafetensorsError
naming the operation and the file.
"""
import json
import math
import re
import struct

__all__ = ["SafetensorsError", "Invalid", "MAX_HEADER_SIZE", "DTYPE_BITS", "strict_json", "parse"]

MAX_HEADER_SIZE = 100_000_000
_MAX_JSON_DEPTH = 127  # serde_json's recursion limit: 128 nested arrays/objects is an error
_U64_MAX = 2 ** 64 - 1
_I64_MIN = -2 ** 63
_SURROGATE = re.compile("[\ud800-\udfff]")
DTYPE_BITS = {"BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
              "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
              "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64}


class SafetensorsError(ValueError):
    """A file lucid.load cannot accept: malformed or hostile safetensors data, or a malformed lucid skeleton.
    The message is "<op>(<file>): <cause>"."""


class Invalid(Exception):
    """Internal: the cause of a rejection, before the operation and file name are attached."""


# ---------------------------------------------------------------- JSON, as serde_json reads it
def _json_float(s):
    v = float(s)
    if math.isinf(v):
        raise Invalid(f"number out of range: {s[:40]}")
    return v


def _json_int(s):
    # serde_json keeps an integer only if it fits u64 (or i64 when negative); "-0" is the float -0.0
    if len(s) <= 21 and s != "-0":
        v = int(s)
        if _I64_MIN <= v <= _U64_MAX:
            return v
    return _json_float(s)


def _json_constant(s):
    raise Invalid(f"invalid JSON value {s}")


def _json_object(pairs):
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise Invalid(f"duplicate key {dup!r}")
    return obj


def strict_json(text, max_depth, parse_int=_json_int):
    """json.loads with serde_json's rules (see the module docstring), duplicate keys rejected and at most
    `max_depth` nested arrays/objects; raises Invalid. parse_int=int keeps every integer exact (lucid's
    skeleton) instead of serde_json's u64/i64 range."""
    try:
        root = json.loads(text, parse_float=_json_float, parse_int=parse_int, parse_constant=_json_constant,
                          object_pairs_hook=_json_object)
    except ValueError as e:  # JSONDecodeError, or int() past Python's digit limit
        raise Invalid(f"invalid JSON: {e}") from None
    except RecursionError:
        raise Invalid(f"JSON nested deeper than {max_depth} levels") from None
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                raise Invalid("invalid JSON: lone surrogate in a string escape")
        elif isinstance(node, (list, dict)):
            if depth > max_depth:
                raise Invalid(f"JSON nested deeper than {max_depth} levels")
            if isinstance(node, dict):
                stack.extend((k, depth) for k in node)
                node = node.values()
            stack.extend((v, depth + 1) for v in node)
    return root


# ---------------------------------------------------------------- header entries, as serde derives them
def _usize(v):
    return type(v) is int and v >= 0  # bool is not an int here; floats never are; big ints are floats


def _dtype(v, name):
    if isinstance(v, dict) and len(v) == 1:  # serde's externally tagged enum form {"F32": null}
        (v, unit), = v.items()
        if unit is not None:
            raise Invalid(f"tensor {name!r}: dtype {{{v!r}: {unit!r}}} is not a unit variant")
    if not isinstance(v, str) or v not in DTYPE_BITS:
        raise Invalid(f"tensor {name!r}: unknown dtype {v!r} (expected one of {', '.join(DTYPE_BITS)})")
    return v


def _tensor_info(name, info):
    if isinstance(info, list):  # serde also reads a struct from a sequence of its fields, in order
        if len(info) != 3:
            raise Invalid(f"tensor {name!r}: a TensorInfo array needs 3 elements, got {len(info)}")
        dtype, shape, offsets = info
    elif isinstance(info, dict):
        for field in ("dtype", "shape", "data_offsets"):
            if field not in info:
                raise Invalid(f"tensor {name!r}: missing field {field!r}")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    else:
        raise Invalid(f"tensor {name!r}: expected an object with dtype/shape/data_offsets, got {info!r:.60}")
    dtype = _dtype(dtype, name)
    if not isinstance(shape, list) or not all(_usize(s) for s in shape):
        raise Invalid(f"tensor {name!r}: shape must be an array of non-negative integers, got {shape!r:.60}")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_usize(o) for o in offsets):
        raise Invalid(f"tensor {name!r}: data_offsets must be an array of 2 non-negative integers, "
                      f"got {offsets!r:.60}")
    return name, dtype, tuple(shape), offsets[0], offsets[1]


def _validate(tensors):
    """Metadata::validate: contiguous ranges from 0, each exactly prod(shape) * bits / 8 bytes; returns the
    end of the data section."""
    start = 0
    for name, dtype, shape, b, e in tensors:
        if b != start or e < b:
            raise Invalid(f"invalid offset for tensor {name!r}: data_offsets [{b}, {e}] do not start where "
                          f"the previous tensor ends ({start})")
        start = e
        nelements = 1
        for s in shape:
            nelements *= s
            if nelements > _U64_MAX:
                raise Invalid(f"tensor {name!r}: overflow computing the buffer size of shape {list(shape)}")
        nbits = nelements * DTYPE_BITS[dtype]
        if nbits > _U64_MAX:
            raise Invalid(f"tensor {name!r}: overflow computing the buffer size of shape {list(shape)}")
        if nbits % 8:
            raise Invalid(f"tensor {name!r}: {dtype} shape {list(shape)} is not a whole number of bytes")
        if e - b != nbits // 8:
            raise Invalid(f"tensor {name!r}: data_offsets [{b}, {e}] hold {e - b} bytes, but {dtype} shape "
                          f"{list(shape)} needs {nbits // 8}")
    return start


def parse(data):
    """Validate a whole safetensors file (bytes). Returns (header_size N, metadata dict,
    [(name, dtype, shape, begin, end)] sorted by data offsets); the data section is data[8 + N:]."""
    if len(data) < 8:
        raise Invalid(f"header too small: the file has {len(data)} bytes, fewer than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > MAX_HEADER_SIZE:
        raise Invalid(f"header too large: {n} bytes (safetensors allows at most {MAX_HEADER_SIZE})")
    if 8 + n > len(data):
        raise Invalid(f"invalid header length {n}: the file has only {len(data) - 8} bytes after it")
    try:
        text = data[8:8 + n].decode("utf-8")
    except UnicodeDecodeError as e:
        raise Invalid(f"invalid UTF-8 in header: {e}") from None
    try:
        header = strict_json(text, _MAX_JSON_DEPTH)
    except Invalid as e:
        raise Invalid(f"header: {e}") from None
    if not isinstance(header, dict):
        raise Invalid(f"header: the JSON must be an object, got {type(header).__name__}")
    metadata = header.pop("__metadata__", None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise Invalid(f"__metadata__ must be an object of string values, got {metadata!r:.80}")
    tensors = sorted((_tensor_info(k, v) for k, v in header.items()), key=lambda t: (t[3], t[4]))
    end = _validate(tensors)
    if 8 + n + end != len(data):
        raise Invalid(f"incomplete metadata, file not fully covered: the tensors use {end} data bytes, "
                      f"the file has {len(data) - 8 - n}")
    return n, metadata, tensors
