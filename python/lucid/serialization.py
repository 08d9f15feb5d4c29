"""lucid.save / lucid.load in the safetensors format (no pickle); lucid.load also reads PyTorch
checkpoints (torch.save files, detected by content) through lucid._torch_checkpoint.

File layout (https://github.com/huggingface/safetensors): an 8-byte little-endian header length N,
a JSON header of N bytes ({name: {"dtype", "shape", "data_offsets"}, "__metadata__": {str: str}}),
then the raw little-endian tensor bytes. A flat {str: Tensor} dict (a module state_dict) is stored
as exactly that, so files interoperate with safetensors / PyTorch by parameter name. Anything else
(nested dicts, optimizer state dicts with int keys, lists, tuples, numbers, strings, None, dtypes)
is stored as a JSON "skeleton" string in __metadata__["lucid.skeleton"] whose leaves reference
tensors stored under path-like names ("state/0/exp_avg").

Loading trusts nothing in the file. The header is validated exactly as the `safetensors` package
does (lucid._safetensors_header: size limit, JSON types, contiguous offsets covering the data
section exactly), except that lucid also rejects duplicated JSON keys. On top of that lucid rejects
what it cannot represent: dtypes F4/F6/F8/C64/U64 and shapes numpy cannot allocate (more than 64
dims, or itemsize times the nonzero dims above 2**63 - 1). The skeleton is decoded node by node
against the tags the encoder writes (depth bounded, dtype names from a fixed table, every stored
tensor referenced exactly once). Every rejection raises SafetensorsError (a ValueError) with the
message "lucid.load(<file>): <cause>"; lucid.save raises TypeError / ValueError "lucid.save(<file>): <cause>".

Values: BOOL bytes other than 0/1 (which safetensors accepts) load as True, so every op agrees
with `bool(byte)`. BF16 goes through float32 (NumPy has no bfloat16), so a signalling NaN comes
back quiet (bit 0x0040 set); every other bit pattern is preserved. I16/U16/U32 widen losslessly
to int32/int32/int64.

Saving rejects a tensor named "__metadata__" (safetensors reserves it) and user metadata under
"lucid.skeleton", instead of writing a file that loads without them.
"""
import json
import math
import os
from collections import OrderedDict

import numpy as np

import lucid
from lucid._C import Tensor
from lucid import _device
from lucid._safetensors_header import SafetensorsError, Invalid, parse, strict_json
from lucid._torch_checkpoint import UnpicklingError, is_torch_checkpoint, load_torch_checkpoint

__all__ = ["save", "load", "load_metadata", "SafetensorsError", "UnpicklingError"]

_DTYPE_TO_ST = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int32": "I32", "int64": "I64", "float16": "F16",
                "bfloat16": "BF16", "float32": "F32", "float64": "F64"}
_DTYPES = {name: getattr(lucid, name) for name in _DTYPE_TO_ST}  # the only names a skeleton may use
_NP = {"BOOL": np.uint8, "U8": np.uint8, "I8": np.int8, "I32": np.int32, "I64": np.int64, "F16": np.float16,
       "F32": np.float32, "F64": np.float64, "BF16": np.uint16,
       # safetensors dtypes lucid has no storage type for, widened on load, losslessly
       "I16": np.int16, "U16": np.uint16, "U32": np.uint32}
_WIDEN = {"I16": np.int32, "U16": np.int32, "U32": np.int64}
_ITEMSIZE = {"BF16": 4, "I16": 4, "U16": 4, "U32": 8}  # bytes of the array lucid builds, if not _NP's
_MAX_NDIM = 64  # numpy's limit (NPY_MAXDIMS); lucid builds every tensor through numpy
_SKELETON_KEY = "lucid.skeleton"
_RESERVED = "__metadata__"
_KEY_TYPES = (str, int, float, bool, type(None))  # dict keys a skeleton can hold
_MAX_NESTING = 64  # containers inside containers in a saved object; the skeleton JSON is at most 3x deeper


def _c(arr):
    """C-contiguous copy that keeps 0-d arrays 0-d (np.ascontiguousarray makes them 1-d)."""
    return np.array(arr, order="C", copy=True)


def _tensor_bytes(t):
    """The tensor's elements as little-endian bytes, read on the host (a device tensor is copied
    to the CPU first, as torch.save does)."""
    t = t.detach().cpu()
    name = t.dtype.name
    if name == "bfloat16":
        f32 = _c(lucid.cast(t, lucid.float32).numpy())
        return (f32.view(np.uint32) >> 16).astype("<u2").tobytes()
    arr = _c(t.numpy())
    return arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()


def _tensor_from_bytes(buf, st_dtype, shape, name):
    if st_dtype not in _NP:
        raise Invalid(f"tensor {name!r}: safetensors dtype {st_dtype} is not supported by lucid")
    nbytes = _ITEMSIZE.get(st_dtype, np.dtype(_NP[st_dtype]).itemsize)
    for s in shape:
        nbytes *= s or 1
    if nbytes > 2 ** 63 - 1 or len(shape) > _MAX_NDIM:
        raise Invalid(f"tensor {name!r}: shape {list(shape)[:8]}{'...' if len(shape) > 8 else ''} "
                      f"({len(shape)} dims) is too large for lucid")
    arr = np.frombuffer(buf, dtype=np.dtype(_NP[st_dtype]).newbyteorder("<")).reshape(shape)
    if st_dtype == "BF16":
        f32 = (arr.astype(np.uint32) << 16).view(np.float32)
        return lucid.cast(lucid.from_numpy(_c(f32)).clone(), lucid.bfloat16)
    if st_dtype == "BOOL":
        arr = arr != 0  # any nonzero byte is True (safetensors accepts them; lucid's ops assume 0/1)
    arr = arr.astype(_WIDEN.get(st_dtype, arr.dtype.newbyteorder("=")), copy=True)
    return lucid.from_numpy(_c(arr)).clone()


# ---------------------------------------------------------------- skeleton (non-flat objects)
class _Encoder:
    def __init__(self):
        self.tensors = OrderedDict()

    def _name(self, path):
        base = "/".join(path) if path else "tensor"
        name, k = base, 1
        while name in self.tensors or name == _RESERVED:
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
        if isinstance(obj, (np.integer,)):
            return int(obj)
        if isinstance(obj, (np.floating,)):
            return self.encode(float(obj), path)
        if not isinstance(obj, (dict, tuple, list, set, frozenset)):
            raise TypeError(f"cannot store an object of type {type(obj).__name__} (at '{'/'.join(path)}'); "
                            "lucid.save stores tensors and plain Python containers/numbers/strings only")
        if len(path) >= _MAX_NESTING:
            raise ValueError(f"containers nested deeper than {_MAX_NESTING} levels (at '{'/'.join(path)}')")
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if not isinstance(k, _KEY_TYPES):
                    raise TypeError(f"dict keys must be str/int/float/bool/None, got {type(k).__name__}")
                if isinstance(k, float) and not math.isfinite(k):
                    raise ValueError(f"dict key {k!r} (at '{'/'.join(path)}') is not storable: JSON has no {k!r}")
                items.append([k, self.encode(v, path + [str(k)])])
            return {"__dict__": items, "__ordered__": isinstance(obj, OrderedDict)}
        if isinstance(obj, tuple):
            return {"__tuple__": [self.encode(v, path + [str(i)]) for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return [self.encode(v, path + [str(i)]) for i, v in enumerate(obj)]
        return {"__set__": [self.encode(v, path + [str(i)]) for i, v in enumerate(sorted(obj, key=repr))]}


_SPECIAL_FLOATS = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


class _Decoder:
    """Rebuilds what _Encoder wrote; every node must be one of its forms, exactly."""

    def __init__(self, tensors):
        self.tensors = tensors
        self.unused = set(tensors)

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        keys = set(node)
        if keys == {"__tensor__"}:
            name = node["__tensor__"]
            if not isinstance(name, str) or name not in self.unused:
                raise Invalid(f"{name!r:.60} is not a stored tensor, or is referenced twice")
            self.unused.remove(name)
            return self.tensors[name]
        if keys == {"__float__"} and isinstance(node["__float__"], str) and node["__float__"] in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[node["__float__"]]
        if keys == {"__dtype__"} and isinstance(node["__dtype__"], str) and node["__dtype__"] in _DTYPES:
            return _DTYPES[node["__dtype__"]]
        if keys == {"__tuple__"} and isinstance(node["__tuple__"], list):
            return tuple(self.decode(v) for v in node["__tuple__"])
        if keys == {"__set__"} and isinstance(node["__set__"], list):
            try:
                return set(self.decode(v) for v in node["__set__"])
            except TypeError:
                raise Invalid("a set holds an unhashable element") from None
        if (keys == {"__dict__", "__ordered__"} and isinstance(node["__ordered__"], bool)
                and isinstance(node["__dict__"], list)):
            d = OrderedDict() if node["__ordered__"] else {}
            for item in node["__dict__"]:
                if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], _KEY_TYPES)):
                    raise Invalid(f"malformed dict item {item!r:.60}")
                d[item[0]] = self.decode(item[1])
            return d
        raise Invalid(f"malformed entry {node!r:.80}")


def _decode_skeleton(text, tensors):
    dec = _Decoder(tensors)
    try:
        obj = dec.decode(strict_json(text, 3 * _MAX_NESTING + 1, parse_int=int))
        if dec.unused:
            raise Invalid(f"stored tensors {sorted(dec.unused)[:5]} are not referenced by it")
    except Invalid as e:
        raise Invalid(f"{_SKELETON_KEY}: {e}") from None
    return obj


def _is_flat_tensor_dict(obj):
    return isinstance(obj, dict) and len(obj) > 0 and all(
        isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())


# ---------------------------------------------------------------- file format
def _serialize(tensors, metadata):
    header = {}
    if metadata:
        header[_RESERVED] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        if name == _RESERVED:
            raise ValueError(f"a tensor cannot be named '{_RESERVED}': the safetensors format reserves it "
                             "for the file's metadata")
        if t.dtype.name not in _DTYPE_TO_ST:
            raise TypeError(f"unsupported dtype {t.dtype} for '{name}'")
        b = _tensor_bytes(t)
        header[name] = {"dtype": _DTYPE_TO_ST[t.dtype.name], "shape": [int(s) for s in t.shape],
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((8 - len(hjson) % 8) % 8)  # 8-byte alignment of the data section, as safetensors does
    return len(hjson).to_bytes(8, "little") + hjson + b"".join(blobs)


def _encode_file(obj, metadata):
    meta = dict(metadata or {})
    if _SKELETON_KEY in meta:
        raise ValueError(f"metadata key '{_SKELETON_KEY}' is reserved for lucid's object skeleton")
    if _is_flat_tensor_dict(obj):
        tensors = OrderedDict(obj)
        meta.setdefault("format", "pt")
    else:
        enc = _Encoder()
        skeleton = enc.encode(obj, [])
        tensors = enc.tensors
        meta[_SKELETON_KEY] = json.dumps(skeleton, allow_nan=False)
    return _serialize(tensors, meta)


def _name_of(f):
    if isinstance(f, (str, os.PathLike)):
        return os.fspath(f)
    return getattr(f, "name", None) or f"<{type(f).__name__}>"


def save(obj, f, metadata=None):
    """Save a state dict (or nested dicts/lists of tensors and plain values) to `f` (path or binary file).
    Errors are TypeError / ValueError with the message "lucid.save(<file>): <cause>"."""
    try:
        data = _encode_file(obj, metadata)
    except (TypeError, ValueError) as e:
        raise (TypeError if isinstance(e, TypeError) else ValueError)(f"lucid.save({_name_of(f)}): {e}") from None
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    else:
        f.write(data)


def _read(f, op):
    """(bytes, the name errors use) of a path, bytes or binary file object."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return fh.read(), _name_of(f)
    if isinstance(f, (bytes, bytearray, memoryview)):
        return bytes(f), f"<{len(f)} bytes>"
    data = f.read()
    if not isinstance(data, bytes):
        raise TypeError(f"{op}: expected a path, bytes or a binary file object, got {type(f).__name__}")
    return data, _name_of(f)


def _check_map_location(map_location):
    """torch's forms (a device, a str, a dict of location -> location, a callable) are accepted. A
    device or str puts every tensor on that device (returned, None for the CPU); the other forms
    load on the CPU. A device lucid lacks raises."""
    if map_location is None or callable(map_location):
        return None
    targets = map_location.values() if isinstance(map_location, dict) else [map_location]
    for t in targets:
        _device.check(t, "lucid.load: map_location")
    if isinstance(map_location, dict) or _device.device(map_location).type == "cpu":
        return None
    return _device.device(map_location)


def _to_device(obj, dev):
    """obj with every tensor inside (dicts, lists, tuples) moved to dev; None: obj as it is."""
    if dev is None:
        return obj
    if isinstance(obj, Tensor):
        return obj.to(dev)
    if isinstance(obj, dict):
        return type(obj)((k, _to_device(v, dev)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_to_device(v, dev) for v in obj)
    return obj


def load(f, map_location=None, weights_only=True, mmap=None):
    """Load a file, its format told by its content: what `save` wrote (or any safetensors file, as an
    OrderedDict name -> tensor, in data order), or a PyTorch checkpoint written by torch.save, read
    with a restricted unpickler (lucid._torch_checkpoint: tensors, containers and primitive values
    only, as torch.load(weights_only=True)). weights_only=False is refused for a PyTorch checkpoint:
    lucid never runs arbitrary pickled code. Raises SafetensorsError for an invalid safetensors file
    and UnpicklingError for a PyTorch checkpoint it refuses (see the module docstrings).
    map_location='cuda' (a device or str) puts every tensor on that device as it is read."""
    dev = _check_map_location(map_location)
    data, where = _read(f, "lucid.load")
    if is_torch_checkpoint(data):
        if weights_only is False:
            raise UnpicklingError(f"lucid.load({where}): weights_only=False is not supported: lucid reads PyTorch "
                                  "checkpoints with a restricted unpickler only (tensors, containers and primitive "
                                  "values), never arbitrary pickled objects; pass weights_only=True")
        return _to_device(load_torch_checkpoint(data, where), dev)
    try:
        n, metadata, entries = parse(data)
        body = memoryview(data)[8 + n:]
        tensors = OrderedDict((name, _to_device(_tensor_from_bytes(body[b:e], dtype, shape, name), dev))
                              for name, dtype, shape, b, e in entries)
        if _SKELETON_KEY in metadata:
            return _decode_skeleton(metadata[_SKELETON_KEY], tensors)
        return tensors
    except Invalid as e:
        raise SafetensorsError(f"lucid.load({where}): {e}") from None


def load_metadata(f):
    """The __metadata__ dict of a safetensors file (validated as `load` does; SafetensorsError if invalid)."""
    data, where = _read(f, "lucid.load_metadata")
    try:
        return parse(data)[1]
    except Invalid as e:
        raise SafetensorsError(f"lucid.load_metadata({where}): {e}") from None
