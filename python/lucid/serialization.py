"""lucid.save / lucid.load in the safetensors format (no pickle).

File layout (https://github.com/huggingface/safetensors): an 8-byte little-endian header length N,
a JSON header of N bytes ({name: {"dtype", "shape", "data_offsets"}, "__metadata__": {str: str}}),
then the raw little-endian tensor bytes. A flat {str: Tensor} dict (a module state_dict) is stored
as exactly that, so files interoperate with safetensors / PyTorch by parameter name. Anything else
(nested dicts, optimizer state dicts with int keys, lists, tuples, numbers, strings, None, dtypes)
is stored as a JSON "skeleton" string in __metadata__["lucid.skeleton"] whose leaves reference
tensors stored under path-like names ("state/0/exp_avg").
"""
import io
import json
import os
import struct
from collections import OrderedDict

import numpy as np

import lucid
from lucid._C import Tensor

__all__ = ["save", "load"]

_DTYPE_TO_ST = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int32": "I32", "int64": "I64", "float16": "F16",
                "bfloat16": "BF16", "float32": "F32", "float64": "F64"}
_ST_TO_DTYPE = {v: k for k, v in _DTYPE_TO_ST.items()}
_NP = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I32": np.int32, "I64": np.int64, "F16": np.float16,
       "F32": np.float32, "F64": np.float64, "BF16": np.uint16}
# safetensors dtypes lucid has no storage type for: widened on load, losslessly.
_WIDEN = {"I16": (np.int16, "int32"), "U16": (np.uint16, "int32"), "U32": (np.uint32, "int64"),
          "F8_E4M3": None, "F8_E5M2": None, "U64": None}
_SKELETON_KEY = "lucid.skeleton"


def _c(arr):
    """C-contiguous copy that keeps 0-d arrays 0-d (np.ascontiguousarray makes them 1-d)."""
    return np.array(arr, order="C", copy=True)


def _tensor_bytes(t):
    t = t.detach()
    name = t.dtype.name
    if name == "bfloat16":
        f32 = _c(lucid.cast(t, lucid.float32).numpy())
        return (f32.view(np.uint32) >> 16).astype("<u2").tobytes()
    arr = _c(t.numpy())
    return arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()


def _tensor_from_bytes(buf, st_dtype, shape):
    shape = tuple(int(s) for s in shape)
    if st_dtype in _NP:
        arr = np.frombuffer(buf, dtype=np.dtype(_NP[st_dtype]).newbyteorder("<")).reshape(shape)
        if st_dtype == "BF16":
            f32 = (arr.astype(np.uint32) << 16).view(np.float32)
            return lucid.cast(lucid.from_numpy(_c(f32)).clone(), lucid.bfloat16)
        arr = arr.astype(arr.dtype.newbyteorder("="), copy=True)
        return lucid.from_numpy(_c(arr)).clone()
    widen = _WIDEN.get(st_dtype)
    if widen is None:
        raise ValueError(f"load: safetensors dtype {st_dtype} is not supported by lucid")
    np_dt, lucid_name = widen
    arr = np.frombuffer(buf, dtype=np.dtype(np_dt).newbyteorder("<")).reshape(shape)
    return lucid.from_numpy(_c(arr.astype(np.int32 if lucid_name == "int32" else np.int64)))


# ---------------------------------------------------------------- skeleton (non-flat objects)
class _Encoder:
    def __init__(self):
        self.tensors = OrderedDict()

    def _name(self, path):
        base = "/".join(path) if path else "tensor"
        name, k = base, 1
        while name in self.tensors:
            name = f"{base}#{k}"
            k += 1
        return name

    def encode(self, obj, path):
        if isinstance(obj, Tensor):
            name = self._name(path)
            self.tensors[name] = obj
            return {"__tensor__": name}
        if obj is None or isinstance(obj, (bool, int, str)):
            return obj
        if isinstance(obj, float):
            if obj != obj or obj in (float("inf"), float("-inf")):
                return {"__float__": repr(obj)}
            return obj
        if isinstance(obj, lucid.dtype):
            return {"__dtype__": obj.name}
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if not isinstance(k, (str, int, bool, float)) and k is not None:
                    raise TypeError(f"save: dict keys must be str/int/float/bool, got {type(k).__name__}")
                items.append([k, self.encode(v, path + [str(k)])])
            return {"__dict__": items, "__ordered__": isinstance(obj, OrderedDict)}
        if isinstance(obj, tuple):
            return {"__tuple__": [self.encode(v, path + [str(i)]) for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return [self.encode(v, path + [str(i)]) for i, v in enumerate(obj)]
        if isinstance(obj, (set, frozenset)):
            return {"__set__": [self.encode(v, path + [str(i)]) for i, v in enumerate(sorted(obj, key=repr))]}
        if isinstance(obj, (np.integer,)):
            return int(obj)
        if isinstance(obj, (np.floating,)):
            return self.encode(float(obj), path)
        raise TypeError(f"save: cannot store an object of type {type(obj).__name__} (at '{'/'.join(path)}'); "
                        "lucid.save stores tensors and plain Python containers/numbers/strings only")


def _decode(obj, tensors):
    if isinstance(obj, list):
        return [_decode(v, tensors) for v in obj]
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            return tensors[obj["__tensor__"]]
        if "__float__" in obj:
            return float(obj["__float__"])
        if "__dtype__" in obj:
            return getattr(lucid.dtype, obj["__dtype__"])
        if "__tuple__" in obj:
            return tuple(_decode(v, tensors) for v in obj["__tuple__"])
        if "__set__" in obj:
            return set(_decode(v, tensors) for v in obj["__set__"])
        if "__dict__" in obj:
            d = OrderedDict() if obj.get("__ordered__") else {}
            for k, v in obj["__dict__"]:
                d[k] = _decode(v, tensors)
            return d
        raise ValueError(f"load: malformed lucid skeleton entry {obj!r}")
    return obj


def _is_flat_tensor_dict(obj):
    return isinstance(obj, dict) and len(obj) > 0 and all(
        isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())


# ---------------------------------------------------------------- file format
def _serialize(tensors, metadata):
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        if t.dtype.name not in _DTYPE_TO_ST:
            raise TypeError(f"save: unsupported dtype {t.dtype} for '{name}'")
        b = _tensor_bytes(t)
        header[name] = {"dtype": _DTYPE_TO_ST[t.dtype.name], "shape": [int(s) for s in t.shape],
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((8 - len(hjson) % 8) % 8)  # 8-byte alignment of the data section, as safetensors does
    return struct.pack("<Q", len(hjson)) + hjson + b"".join(blobs)


def _deserialize(data):
    if len(data) < 8:
        raise ValueError("load: file is too small to be a safetensors file")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError("load: invalid safetensors header length (is this a safetensors file?)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"load: invalid safetensors header: {e}") from None
    metadata = header.pop("__metadata__", None) or {}
    body = memoryview(data)[8 + n:]
    entries = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
    tensors = OrderedDict()
    for name, info in entries:
        b, e = info["data_offsets"]
        if not (0 <= b <= e <= len(body)):
            raise ValueError(f"load: tensor '{name}' has data offsets outside the file")
        tensors[name] = _tensor_from_bytes(bytes(body[b:e]), info["dtype"], info["shape"])
    return tensors, metadata


def save(obj, f, metadata=None):
    """Save a state dict (or nested dicts/lists of tensors and plain values) to `f` (path or binary file)."""
    meta = dict(metadata or {})
    if _is_flat_tensor_dict(obj):
        tensors = OrderedDict(obj)
        meta.setdefault("format", "pt")
    else:
        enc = _Encoder()
        skeleton = enc.encode(obj, [])
        tensors = enc.tensors
        meta[_SKELETON_KEY] = json.dumps(skeleton)
    data = _serialize(tensors, meta)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    else:
        f.write(data)


def load(f, map_location=None, weights_only=True, mmap=None):
    """Load what `save` wrote (or any safetensors file, as an OrderedDict name -> tensor)."""
    if map_location is not None and str(map_location) not in ("cpu",):
        lucid._C._parse_device(str(map_location))
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            data = fh.read()
    elif isinstance(f, (bytes, bytearray)):
        data = bytes(f)
    else:
        data = f.read()
    tensors, metadata = _deserialize(data)
    if _SKELETON_KEY in metadata:
        return _decode(json.loads(metadata[_SKELETON_KEY]), tensors)
    return tensors


def load_metadata(f):
    """The __metadata__ dict of a safetensors file."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            data = fh.read()
    else:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]).get("__metadata__", {}) or {}


_ = io
