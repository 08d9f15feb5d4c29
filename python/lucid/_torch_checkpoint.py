"""Reading PyTorch checkpoints (`torch.save` files) into lucid tensors, without torch and without
running arbitrary pickled code: lucid.load dispatches here when a file is one (see serialization.py).

Formats. The zip format of torch >= 1.6: records `<archive>/data.pkl` (the pickled structure),
`<archive>/data/<key>` (each storage's raw bytes), `<archive>/byteorder` ("little" or "big"; absent
means little) and version records. The legacy format (`_use_new_zipfile_serialization=False`): one
stream of pickles (magic number, protocol version, system info, the structure, the storage keys)
followed by each storage as an 8-byte element count and its bytes. The tar format of torch < 0.4
raises, saying so.

Unpickling is restricted as torch's `weights_only=True` is: the only globals a file may name are
the tensor and parameter rebuilders (torch._utils._rebuild_tensor_v2, _rebuild_tensor_v3,
_rebuild_tensor, _rebuild_parameter, _rebuild_parameter_with_state), the storage types (torch.FloatStorage...,
torch.storage.UntypedStorage / TypedStorage), torch.Size, torch.device, torch's dtypes,
collections.OrderedDict / Counter, builtins.set / frozenset / bytearray / complex and
_codecs.encode (protocol 2's bytes). Each resolves to a lucid function that checks its arguments;
any other global raises UnpicklingError naming it. Storages come only through persistent ids.

Tensors. Each storage becomes one contiguous lucid tensor and every tensor saved over it is an
as_strided view of it with the saved size, stride and offset, so tensors that shared a storage in
the file share memory here too. dtype, shape, strides and offset are torch's. bfloat16 goes through
float32 (NumPy has none; every bit pattern but a signalling NaN's survives); int16 and uint16 widen
to int32 and uint32 to int64, exactly (lucid has none of them), so such a tensor no longer shares
memory with tensors of other dtypes over the same untyped storage. Complex, quantized, float8,
uint64 and other elements lucid cannot hold raise, naming the dtype. Everything
loads on the CPU, lucid's only device, whatever location the file names.

Bad input never crashes: a truncated or corrupt archive, a missing storage record, a record whose
size disagrees with its element count, a tensor reaching past its storage, a malformed persistent id
or rebuild call each raise UnpicklingError (a pickle.UnpicklingError) "lucid.load(<file>): <cause>".
"""
import _compat_pickle
import collections
import io
import pickle
import zipfile

import numpy as np

import lucid
from lucid import _C

__all__ = ["UnpicklingError", "is_torch_checkpoint", "load_torch_checkpoint"]


class UnpicklingError(pickle.UnpicklingError):
    """A PyTorch checkpoint lucid refuses to read (a forbidden global, a malformed or truncated file)."""


class _Bad(Exception):
    """Internal: the cause of a rejection; load_torch_checkpoint adds the file name."""


# torch dtype name -> (NumPy dtype of the file's bytes, lucid dtype name): lucid holds int16 and
# uint16 as int32 and uint32 as int64 (exactly); bfloat16 and bool are converted (see _Storage.typed).
_ELEMENTS = {"float64": ("<f8", "float64"), "float32": ("<f4", "float32"), "float16": ("<f2", "float16"),
             "bfloat16": ("<u2", "bfloat16"), "int64": ("<i8", "int64"), "int32": ("<i4", "int32"),
             "int16": ("<i2", "int32"), "int8": ("i1", "int8"), "uint8": ("u1", "uint8"), "bool": ("u1", "bool"),
             "uint16": ("<u2", "int32"), "uint32": ("<u4", "int64")}
# storage type name -> the torch dtype of its elements (an UntypedStorage holds bytes)
_STORAGES = {"DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
             "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16",
             "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool", "UntypedStorage": "uint8"}
_NO_LUCID_STORAGE = ("ComplexDoubleStorage", "ComplexFloatStorage", "QInt8Storage", "QInt32Storage", "QUInt8Storage",
                     "QUInt4x2Storage", "QUInt2x4Storage")
# torch dtypes lucid has no dtype for (a tensor of uint16/uint32 widens; a bare dtype value cannot)
_NO_LUCID_DTYPE = ("uint16", "uint32", "uint64", "int16", "complex32", "complex64", "complex128", "float8_e4m3fn",
                   "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "qint8", "qint32", "quint8")
_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
_MAX_NDIM = 64


class _Sealed:
    """Base of every object a global resolves to. pickle's BUILD opcode would set attributes on the
    object it targets (or call its __setstate__); on a shared object (a function, a class, a dtype)
    that would outlive the load, so these objects are fresh, slotted and refuse BUILD."""
    __slots__ = ()

    def __setstate__(self, state):
        raise _Bad(f"the pickle sets state on {self!r} (BUILD on a global), which a checkpoint never does")


class _Global(_Sealed):
    """An allowed global callable (a rebuild function, OrderedDict, torch.Size...)."""
    __slots__ = ("fn", "name")

    def __init__(self, fn, name):
        self.fn, self.name = fn, name

    def __call__(self, *args):
        return self.fn(*args)

    def __repr__(self):
        return self.name


class _StorageType(_Sealed):
    """What a file's storage global (torch.FloatStorage...) resolves to: a marker, never called."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __call__(self, *args, **kwargs):
        raise _Bad(f"the storage type torch.{self.name} may appear only in a persistent id")

    def __repr__(self):
        return f"torch.{self.name}"


class _DtypeRef(_Sealed):
    """A torch dtype global; replaced by the lucid dtype (a shared object) once the load is done."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"

    def lucid_dtype(self):
        if self.name in _NO_LUCID_DTYPE:
            raise _Bad(f"the checkpoint holds the dtype torch.{self.name}, which lucid has no dtype for")
        return getattr(lucid, self.name)


def _resolve(obj, memo):
    """obj with every _DtypeRef replaced by its lucid dtype (containers in place; tuples and sets rebuilt)."""
    if isinstance(obj, _DtypeRef):
        return obj.lucid_dtype()
    t = type(obj)
    if t not in (list, tuple, set, frozenset) and not isinstance(obj, dict):
        return obj
    if id(obj) in memo:
        return memo[id(obj)]
    if t is list:
        memo[id(obj)] = obj
        obj[:] = [_resolve(v, memo) for v in obj]
    elif isinstance(obj, dict):
        memo[id(obj)] = obj
        items = [(_resolve(k, memo), _resolve(v, memo)) for k, v in obj.items()]
        obj.clear()
        obj.update(items)
    else:
        obj = memo[id(obj)] = t(_resolve(v, memo) for v in obj)
    return obj


class _Storage:
    """One storage of the file: its element type and count, its bytes (once read), and the lucid
    tensor of its elements per dtype they are read as (one, except for an UntypedStorage)."""

    def __init__(self, key, kind, numel):
        self.key, self.kind, self.numel = key, kind, numel
        self.raw, self.big_endian, self._typed = None, False, {}

    def nbytes(self):
        return self.numel * np.dtype(_ELEMENTS[_STORAGES[self.kind]][0]).itemsize

    def fill(self, raw, big_endian):
        if len(raw) != self.nbytes():
            raise _Bad(f"storage {self.key!r} holds {len(raw)} bytes, but its {self.kind} of {self.numel} elements "
                       f"needs {self.nbytes()}")
        self.raw, self.big_endian = raw, big_endian

    def typed(self, dtype):
        """(1-D lucid tensor of the storage's elements as torch dtype `dtype`, its element count)."""
        if self.raw is None:
            raise _Bad(f"storage {self.key!r} is used before its data is read")
        if dtype not in self._typed:
            code, lucid_name = _ELEMENTS[dtype]
            np_dtype = np.dtype(code).newbyteorder(">" if self.big_endian else "<")
            if len(self.raw) % np_dtype.itemsize:
                raise _Bad(f"storage {self.key!r} of {len(self.raw)} bytes does not hold whole {dtype} elements")
            arr = np.frombuffer(self.raw, dtype=np_dtype)
            if dtype == "bfloat16":
                f32 = (arr.astype(np.uint32) << 16).view(np.float32)
                t = _C.cast(_C.from_numpy(f32.copy()).clone(), lucid.bfloat16)
            else:
                arr = arr != 0 if dtype == "bool" else arr.astype(np.dtype(getattr(np, lucid_name)))
                t = _C.from_numpy(np.array(arr, copy=True)).clone()
            self._typed[dtype] = t
        return self._typed[dtype], self._typed[dtype].numel()


def _int(v, what):
    if type(v) is not int:
        raise _Bad(f"{what} expected an int, got {type(v).__name__}")
    return v


def _ints(v, what):
    if not isinstance(v, tuple) or len(v) > _MAX_NDIM:
        raise _Bad(f"{what} expected a tuple of at most {_MAX_NDIM} ints, got {type(v).__name__}")
    return tuple(_int(x, what) for x in v)


def _size(seq=()):
    """torch.Size(...) -> a tuple of ints (lucid's shapes are tuples)."""
    if not isinstance(seq, (tuple, list)):
        raise _Bad(f"torch.Size expected a tuple of ints, got {type(seq).__name__}")
    return _ints(tuple(seq), "torch.Size")


def _device_of(*args):
    if not args or not isinstance(args[0], str) or len(args) > 2 or (len(args) == 2 and type(args[1]) is not int):
        raise _Bad(f"torch.device expected (type: str[, index: int]), got {args!r:.80}")
    return args[0] if len(args) == 1 else f"{args[0]}:{args[1]}"


def _encode(text, encoding="utf-8"):
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise _Bad("_codecs.encode may only turn a str into bytes with latin1 (protocol 2's bytes)")
    return text.encode("latin1")


def _bytearray(data=b""):
    if not isinstance(data, (bytes, str)):
        raise _Bad(f"builtins.bytearray expected bytes, got {type(data).__name__}")
    return bytearray(data.encode("latin1") if isinstance(data, str) else data)


def _complex(real=0.0, imag=0.0):
    if not all(isinstance(v, (int, float)) for v in (real, imag)):
        raise _Bad("builtins.complex expected two numbers")
    return complex(real, imag)


class _Unpickler(pickle.Unpickler):
    """pickle's unpickler with every global looked up in a fixed table (torch's weights_only rules)."""

    def __init__(self, file, open_storage, probe=False):
        super().__init__(file, encoding="utf-8")
        self._open_storage = open_storage  # (key, kind, numel, view) -> _Storage, or (storage, offset, count)
        self._probe = probe  # a pass that only walks the structure: tensors and parameters are None
        self._globals = {
            "torch._utils._rebuild_tensor_v2": self._rebuild_tensor_v2,
            "torch._utils._rebuild_tensor_v3": self._rebuild_tensor_v3,
            "torch._utils._rebuild_tensor": self._rebuild_tensor,
            "torch._utils._rebuild_parameter": self._rebuild_parameter,
            "torch._utils._rebuild_parameter_with_state": self._rebuild_parameter_with_state,
            "torch.Size": _size, "torch.device": _device_of, "_codecs.encode": _encode,
            "collections.OrderedDict": collections.OrderedDict, "collections.Counter": collections.Counter,
            "builtins.set": set, "builtins.frozenset": frozenset, "builtins.bytearray": _bytearray,
            "builtins.complex": _complex,
        }

    def load(self):
        return _resolve(super().load(), {})

    def find_class(self, module, name):
        # protocol 2 names Python 2 modules (__builtin__.set): map them as pickle itself does
        module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        full = f"{module}.{name}"
        if full in self._globals:
            return _Global(self._globals[full], full)
        if module in ("torch", "torch.cuda", "torch.storage") and (name in _STORAGES or name == "TypedStorage"):
            return _StorageType(name)
        if module == "torch" and (name in _ELEMENTS or name in _NO_LUCID_DTYPE):
            return _DtypeRef(name)
        if module in ("torch", "torch.cuda") and name in _NO_LUCID_STORAGE:
            raise _Bad(f"the checkpoint holds a {full}, which lucid has no dtype for")
        raise _Bad(f"unsupported global '{full}': a checkpoint may hold only tensors, containers and primitive "
                   "values (the globals torch.load(weights_only=True) allows)")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"):
            raise _Bad(f"malformed persistent id {pid!r:.80} (expected ('storage', type, key, location, numel))")
        kind, key, location, numel = pid[1:5]
        if not isinstance(kind, _StorageType) or kind.name == "TypedStorage":
            raise _Bad(f"persistent id {pid!r:.80}: the storage type must be a torch storage class")
        if not isinstance(key, str) or not isinstance(location, str):
            raise _Bad(f"persistent id {pid!r:.80}: key and location must be strings")
        view = pid[5] if len(pid) == 6 else None
        if view is not None and not (isinstance(view, tuple) and len(view) == 3):
            raise _Bad(f"persistent id {pid!r:.80}: malformed storage view")
        if _int(numel, "a storage's element count") < 0:
            raise _Bad(f"persistent id {pid!r:.80}: a negative element count")
        return self._open_storage(key, kind.name, numel, view)

    def _rebuild_tensor_v2(self, storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                           metadata=None):
        if self._probe:
            return None
        return self._rebuild(storage, storage_offset, size, stride, requires_grad, backward_hooks, None)

    def _rebuild_tensor_v3(self, storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                           metadata=None):
        """A tensor whose dtype is given apart from its (untyped) storage: torch's newer dtypes (uint16...)."""
        if self._probe:
            return None
        if not isinstance(dtype, _DtypeRef):
            raise _Bad(f"_rebuild_tensor_v3 expected a torch dtype, got {type(dtype).__name__}")
        if dtype.name not in _ELEMENTS:
            raise _Bad(f"the checkpoint holds a tensor of dtype torch.{dtype.name}, which lucid has no dtype for")
        return self._rebuild(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype.name)

    def _rebuild(self, storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype):
        if backward_hooks:
            raise _Bad("a tensor with backward hooks cannot be loaded")
        t = _tensor_over(storage, storage_offset, size, stride, dtype)
        if requires_grad is not False:
            if requires_grad is not True:
                raise _Bad(f"requires_grad expected a bool, got {type(requires_grad).__name__}")
            if t.dtype.is_floating_point:
                t.requires_grad_(True)
        return t

    def _rebuild_tensor(self, storage, storage_offset, size, stride):
        if self._probe:
            return None
        return _tensor_over(storage, storage_offset, size, stride, None)

    def _rebuild_parameter(self, data, requires_grad, backward_hooks):
        if self._probe:
            return None
        if not isinstance(data, lucid.Tensor) or type(requires_grad) is not bool:
            raise _Bad("_rebuild_parameter expected (Tensor, bool, hooks)")
        if backward_hooks:
            raise _Bad("a parameter with backward hooks cannot be loaded")
        return lucid.nn.Parameter(data, requires_grad)

    def _rebuild_parameter_with_state(self, data, requires_grad, backward_hooks, state):
        if self._probe:
            return None
        if state:
            raise _Bad("a parameter carrying Python attributes (_rebuild_parameter_with_state) cannot be loaded")
        return self._rebuild_parameter(data, requires_grad, backward_hooks)


def _tensor_over(storage, offset, size, stride, dtype):
    """The saved tensor: an as_strided view of its storage's elements (read as torch dtype `dtype`,
    or the storage's own), after checking it fits."""
    view_offset, view_numel = 0, None
    if isinstance(storage, tuple):  # legacy storage view: (storage, element offset, element count)
        storage, view_offset, view_numel = storage
    if not isinstance(storage, _Storage):
        raise _Bad(f"a tensor's storage must come from a persistent id, got {type(storage).__name__}")
    offset = _int(offset, "storage_offset")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if len(size) != len(stride) or offset < 0 or any(s < 0 for s in size + stride):
        raise _Bad(f"a tensor has size {list(size)}, stride {list(stride)} and offset {offset}: expected "
                   "non-negative sizes, strides and offset of one length")
    elements, numel = storage.typed(dtype or _STORAGES[storage.kind])
    if view_numel is None:
        view_numel = numel
    if all(s > 0 for s in size):
        needed = offset + 1 + sum((n - 1) * st for n, st in zip(size, stride))
        if needed > view_numel:
            raise _Bad(f"a tensor of size {list(size)}, stride {list(stride)} and offset {offset} needs {needed} "
                       f"elements, but its storage {storage.key!r} holds {view_numel}")
    return _C.as_strided(elements, size, stride, view_offset + offset)


def _is_legacy(data):
    """A legacy stream starts with a pickle (of any protocol) of the magic number."""
    if data[:1] != b"\x80":
        return False
    try:
        return _Unpickler(io.BytesIO(data), None).load() == _LEGACY_MAGIC
    except Exception:  # noqa: BLE001  (a probe: any failure means "not this format")
        return False


def _is_tar(data):
    return data[257:262] == b"ustar"


def is_torch_checkpoint(data):
    """True for the content of a torch.save file (zip, legacy or the old tar format), by its first bytes."""
    return data[:4] == b"PK\x03\x04" or _is_tar(data) or _is_legacy(data)


def _load_zip(data):
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        names = archive.namelist()
    except (zipfile.BadZipFile, EOFError, ValueError) as e:
        raise _Bad(f"not a readable torch checkpoint: the zip archive is truncated or corrupt ({e})") from None
    pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pkl) != 1:
        raise _Bad(f"not a torch checkpoint: expected one '<archive>/data.pkl' record, found {len(pkl)}")
    prefix = pkl[0][:-len("data.pkl")]

    def read(name, expected=None):
        try:
            info = archive.getinfo(name)
        except KeyError:
            return None
        if expected is not None and info.file_size != expected:
            raise _Bad(f"record {name!r} holds {info.file_size} bytes, expected {expected}")
        try:
            return archive.read(info)
        except (zipfile.BadZipFile, EOFError, ValueError, OSError, RuntimeError) as e:
            raise _Bad(f"record {name!r} is truncated or corrupt ({e})") from None

    order = read(prefix + "byteorder")
    if order not in (None, b"little", b"big"):
        raise _Bad(f"record 'byteorder' holds {order!r:.40}, expected b'little' or b'big'")
    storages = {}

    def open_storage(key, kind, numel, view):
        if view is not None:
            raise _Bad("a storage view in a zip checkpoint (only legacy files have them)")
        if key not in storages:
            s = storages[key] = _Storage(key, kind, numel)
            raw = read(f"{prefix}data/{key}", s.nbytes())
            if raw is None:
                raise _Bad(f"the storage record '{prefix}data/{key}' is missing from the archive")
            s.fill(raw, order == b"big")
        s = storages[key]
        if (s.kind, s.numel) != (kind, numel):
            raise _Bad(f"storage {key!r} is named as {kind} of {numel} and as {s.kind} of {s.numel}")
        return s

    return _Unpickler(io.BytesIO(read(pkl[0])), open_storage).load()


def _load_legacy(data):
    """The legacy stream: the structure is unpickled once to find where the storages start, then
    again with every storage read (its tensors are built as the structure is rebuilt)."""
    f = io.BytesIO(data)
    header = _Unpickler(f, None)
    if header.load() != _LEGACY_MAGIC:
        raise _Bad("not a torch checkpoint (bad legacy magic number)")
    if header.load() != 1001:
        raise _Bad("unsupported legacy protocol version (expected 1001)")
    info = header.load()
    if not isinstance(info, dict) or not info.get("little_endian", True) is True:
        raise _Bad("a big-endian legacy checkpoint is not supported")
    start = f.tell()
    seen = {}

    def note(key, kind, numel, view):
        seen.setdefault(key, _Storage(key, kind, numel))
        return seen[key] if view is None else (seen[key], 0, 0)

    _Unpickler(f, note, probe=True).load()
    keys = _Unpickler(f, None).load()
    if not isinstance(keys, list) or set(keys) != set(seen) or len(keys) != len(seen):
        raise _Bad("the legacy storage key list does not match the storages the structure names")
    for key in keys:
        s = seen[key]
        head = f.read(8)
        if len(head) != 8:
            raise _Bad(f"the file ends before storage {key!r}")
        numel = int.from_bytes(head, "little", signed=True)
        if numel != s.numel:
            raise _Bad(f"storage {key!r} holds {numel} elements, its persistent id says {s.numel}")
        raw = f.read(s.nbytes())
        s.fill(raw, False)

    def open_storage(key, kind, numel, view):
        s = seen[key]
        if (s.kind, s.numel) != (kind, numel):
            raise _Bad(f"storage {key!r} is named as {kind} of {numel} and as {s.kind} of {s.numel}")
        if view is None:
            return s
        _, offset, count = view
        _int(offset, "a storage view's offset"), _int(count, "a storage view's size")
        if offset < 0 or count < 0 or offset + count > s.numel:
            raise _Bad(f"a view of storage {key!r} spans elements {offset}..{offset + count}, beyond its {s.numel}")
        return (s, offset, count)

    f.seek(start)
    return _Unpickler(f, open_storage).load()


def load_torch_checkpoint(data, where):
    """The object a torch.save file holds, with lucid tensors; raises UnpicklingError naming the cause."""
    try:
        if data[:4] == b"PK\x03\x04":
            return _load_zip(data)
        if _is_tar(data):
            raise _Bad("the tar checkpoint format of torch before 0.4 is not supported; re-save it with a current "
                       "torch (torch.save writes the zip format)")
        return _load_legacy(data)
    except _Bad as e:
        raise UnpicklingError(f"lucid.load({where}): {e}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            MemoryError, RecursionError) as e:
        raise UnpicklingError(f"lucid.load({where}): the pickled structure is malformed or truncated "
                              f"({type(e).__name__}: {e})") from None
