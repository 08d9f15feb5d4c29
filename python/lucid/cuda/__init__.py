"""lucid.cuda: torch.cuda's device queries, streams and events, memory statistics and synchronize.

`is_available()`, `device_count()`, `get_device_name()`, `get_device_capability()` and
`get_device_properties()` answer from the engine's device discovery (csrc/lucid/backends/cuda/):
in a build with the CUDA backend (CMake's LUCID_CUDA) they ask the CUDA runtime; a CPU-only build,
or a machine without a GPU or driver, has 0 devices, so
`lucid.device("cuda" if lucid.cuda.is_available() else "cpu")` picks the CPU. Asking for a
device's properties then raises RuntimeError saying why there is none (torch's CUDA build raises
RuntimeError too; its CPU-only build an AssertionError), and an index out of range raises
AssertionError("Invalid device id"), as torch. `library_versions()` gives the versions of the CUDA
libraries a CUDA build links (cuBLAS, cuBLASLt, cuDNN, cudnn-frontend, NVRTC, CUB, the CUDA
runtime), asked without a GPU; a CPU-only build raises RuntimeError saying it has none.

Tensors live on a CUDA device (`lucid.zeros(4, device="cuda")`, `x.cuda()`); their memory comes
from a stream-ordered caching allocator (csrc/lucid/backends/cuda/cuda_allocator.cu), whose
counters `memory_allocated()`, `max_memory_allocated()`, `memory_reserved()`,
`max_memory_reserved()`, `memory_stats()` report and `reset_peak_memory_stats()` and
`empty_cache()` act on; `mem_get_info()` is the whole GPU's free and total;
`set_per_process_memory_fraction()` caps what the allocator may reserve. Running out raises
`OutOfMemoryError` (a RuntimeError) naming the sizes, and the process stays usable.

Every kernel runs on the current stream of its device, per thread: the legacy default stream
(`default_stream()`) unless `set_stream(s)` or `with lucid.cuda.stream(s):` chose another.
`Stream(priority=)` hands out streams of a per-device pool, as torch; `ExternalStream(ptr)` wraps a
stream made elsewhere. `Event(enable_timing=)` records, waits, queries and times. A tensor's memory
belongs to the stream it was allocated on (A), and returns to A's free memory as soon as the
tensor is freed. Using it on another stream B needs B ordered after A's writes
(`B.wait_stream(A)`), and, before the tensor is freed, either A ordered after B's work on it
(`A.wait_stream(B)`) or `x.record_stream(B)` (torch's Tensor.record_stream): then the freed memory
is not reused before the work queued on B until the free has finished. Meanwhile it counts in
`memory_reserved()` and `memory_stats()['active_bytes.all.current']`, not in `memory_allocated()`,
as torch.

The allocator is chosen by LUCID_CUDA_ALLOCATOR: unset or "native" (the caching allocator) or
"cudaMallocAsync" (the driver's stream-ordered pool).

Functions taking a device accept None or 'cuda' (device 0), an int, 'cuda:N' or a lucid.device.
Without a GPU they raise RuntimeError saying why there is none (except `empty_cache()`, a no-op
then, as torch's); a device index out of range raises RuntimeError "invalid device ordinal" (the
property queries: AssertionError "Invalid device id", as torch). The seeding calls are no-ops.

`lucid.cuda.amp` (amp.py) is torch.cuda.amp's deprecated `GradScaler`, over lucid.amp.GradScaler."""
import builtins

from lucid import _C
from lucid._device import device as _device

__all__ = ["is_available", "device_count", "get_device_name", "get_device_capability", "get_device_properties",
           "library_versions", "manual_seed", "manual_seed_all", "synchronize", "OutOfMemoryError",
           "Stream", "ExternalStream", "Event", "StreamContext", "stream", "current_stream", "default_stream",
           "set_stream", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "memory_cached", "max_memory_cached", "reset_peak_memory_stats", "reset_max_memory_allocated",
           "empty_cache", "memory_stats", "mem_get_info", "get_allocator_backend", "reset_max_memory_cached",
           "set_per_process_memory_fraction"]

OutOfMemoryError = _C.OutOfMemoryError


def is_available():
    """True when at least one CUDA device can be used (a CUDA build of lucid, a driver and a GPU)."""
    return device_count() > 0


def device_count():
    """The number of CUDA devices visible to this process; 0 without the CUDA backend, a driver or a GPU."""
    return _C._cuda_device_count()


def _device_index(device, where, invalid=RuntimeError):
    """torch.cuda's device argument: None or 'cuda' (the current device, 0), an int, 'cuda:N' or a
    lucid.device of type cuda; then checked against the devices present, as torch does: an index
    out of range raises `invalid` (RuntimeError "invalid device ordinal"; the property queries
    pass AssertionError, torch's "Invalid device id")."""
    if device is None:
        index = None
    elif isinstance(device, builtins.int) and not isinstance(device, builtins.bool):
        index = device
    elif isinstance(device, (str, _device)):
        parsed = _device(device)
        if parsed.type != "cuda":
            raise ValueError(f"lucid.cuda.{where}: expected a cuda device, but got: {parsed}")
        index = parsed.index
    else:
        raise TypeError(f"lucid.cuda.{where}: argument 'device' expected an int, a str or a lucid.device, got "
                        f"{type(device).__name__}")
    count = device_count()
    if count == 0:
        raise RuntimeError(f"lucid.cuda.{where}: no CUDA device is available: {_C._cuda_unavailable_reason()}")
    index = 0 if index is None else index
    if not 0 <= index < count:
        what = "Invalid device id" if invalid is AssertionError else "CUDA error: invalid device ordinal"
        raise invalid(f"{what}: lucid.cuda.{where} was given device {index}, but "
                      f"{count} CUDA device{'s are' if count > 1 else ' is'} visible (0 to {count - 1})")
    return index


def get_device_properties(device=None):
    """The properties of a CUDA device (name, major, minor, total_memory, multi_processor_count)."""
    return _C._cuda_device_properties(_device_index(device, "get_device_properties", AssertionError))


def get_device_name(device=None):
    """The name of a CUDA device, e.g. 'NVIDIA H200'."""
    return _C._cuda_device_properties(_device_index(device, "get_device_name", AssertionError)).name


def get_device_capability(device=None):
    """The (major, minor) compute capability of a CUDA device, e.g. (9, 0)."""
    props = _C._cuda_device_properties(_device_index(device, "get_device_capability", AssertionError))
    return props.major, props.minor


def library_versions(compiled=False):
    """{name: version code} of the CUDA libraries this build links, e.g. {'cuda_runtime': 13000,
    'cublas': 130100, 'cublaslt': 130100, 'cudnn': 91900, 'cudnn_frontend': 13200, 'nvrtc': 13000,
    'cub': 300001}, in each library's own encoding (torch.backends.cudnn.version()'s for cuDNN).
    The versions the libraries loaded in this process report; with `compiled=True`, those of the
    headers this build was compiled against (NVRTC's header has none: 0). Needs no GPU or driver.
    RuntimeError in a build without the CUDA backend."""
    if not _C._cuda_is_built():
        raise RuntimeError(f"lucid.cuda.library_versions: {_C._cuda_unavailable_reason()}")
    return {lib.name: (lib.compiled if compiled else lib.loaded) for lib in _C._cuda_libraries()}


def manual_seed(seed):
    """Seeds the random stream CUDA tensors draw from. lucid has one Philox generator for every device
    (so a seed gives the same numbers on the CPU and on a GPU), so this is lucid.manual_seed: unlike
    torch, it reseeds the CPU's draws too. Without a GPU it only seeds, as torch's is a no-op there."""
    _C.manual_seed(int(seed))


def manual_seed_all(seed):
    """The same as manual_seed (one generator serves every device)."""
    _C.manual_seed(int(seed))


def synchronize(device=None):
    """Waits for all work queued on a CUDA device (every stream) to finish."""
    _C._cuda_synchronize(_device_index(device, "synchronize"))


# --- streams and events -------------------------------------------------------------------------

class Stream:
    """A CUDA stream of a device (torch.cuda.Stream). `Stream(device=None, priority=0)` takes a
    stream of the device's pool for that priority (a lower number is a higher priority; clamped
    to the device's range); pooled streams do not synchronise with the legacy default stream.
    `cuda_stream` is the cudaStream_t as an int (0: the legacy default stream)."""

    def __init__(self, device=None, priority=0, **kwargs):
        index = _device_index(device, "Stream")
        self._init(index, _C._cuda_pooled_stream(index, int(priority)))

    def _init(self, index, handle):
        self.device_index = index
        self.cuda_stream = handle

    @classmethod
    def _wrap(cls, index, handle):
        s = Stream.__new__(Stream)
        s._init(index, handle)
        return s

    @property
    def device(self):
        return _device("cuda", self.device_index)

    @property
    def priority(self):
        return _C._cuda_stream_priority(self.device_index, self.cuda_stream)

    @staticmethod
    def priority_range(device=None):
        """(least, greatest) priority of the device's streams, e.g. (0, -5)."""
        return _C._cuda_stream_priority_range(_device_index(device, "Stream.priority_range"))

    def query(self):
        """True when all work queued on this stream has finished."""
        return _C._cuda_stream_query(self.device_index, self.cuda_stream)

    def synchronize(self):
        """Waits for all work queued on this stream to finish."""
        _C._cuda_stream_synchronize(self.device_index, self.cuda_stream)

    def wait_event(self, event):
        """Makes this stream's later work wait for `event` (nothing if it was never recorded)."""
        event.wait(self)

    def wait_stream(self, stream):
        """Makes this stream's later work wait for the work queued on `stream` so far."""
        _C._cuda_stream_wait_stream(self.device_index, self.cuda_stream, stream.device_index, stream.cuda_stream)

    def record_event(self, event=None):
        """Records `event` (a new Event when None) on this stream and returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __enter__(self):  # `with lucid.cuda.Stream() as s:` is `with lucid.cuda.stream(s):`
        context = StreamContext(self)
        context.__enter__()
        self.__dict__.setdefault("_contexts", []).append(context)
        return self

    def __exit__(self, *exc):
        self._contexts.pop().__exit__(*exc)
        return False

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return self.device_index == other.device_index and self.cuda_stream == other.cuda_stream

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return f"<lucid.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


class ExternalStream(Stream):
    """A stream created outside lucid (torch's, CuPy's ...), given as its cudaStream_t int; lucid does
    not own or destroy it."""

    def __init__(self, stream_ptr, device=None, **kwargs):
        self._init(_device_index(device, "ExternalStream"), int(stream_ptr))


class Event:
    """A CUDA event (torch.cuda.Event): marks a point of a stream's work. `enable_timing` lets
    elapsed_time measure between two events; `blocking` makes synchronize() sleep instead of spin.
    The event is created on the device of the first stream it is recorded on."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError("lucid.cuda.Event: interprocess events are not supported")
        _device_index(None, "Event")
        self._event = _C._CudaEvent(bool(enable_timing), bool(blocking))

    @property
    def cuda_event(self):
        """The cudaEvent_t as an int (0 before the first record)."""
        return self._event.handle

    @property
    def device(self):
        return _device("cuda", self._event.device) if self._event.recorded else None

    def record(self, stream=None):
        """Records the event on `stream` (the current stream by default)."""
        stream = current_stream() if stream is None else stream
        self._event.record(stream.device_index, stream.cuda_stream)

    def wait(self, stream=None):
        """Makes `stream`'s (the current stream's) later work wait for this event."""
        stream = current_stream() if stream is None else stream
        self._event.wait(stream.device_index, stream.cuda_stream)

    def query(self):
        """True when the work recorded before the event has finished (or it was never recorded)."""
        return self._event.query()

    def synchronize(self):
        """Waits for the work recorded before the event to finish."""
        self._event.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds between this event and `end_event` (both recorded, with enable_timing=True)."""
        return self._event.elapsed_time(end_event._event)

    def __repr__(self):
        return f"<lucid.cuda.Event {self.cuda_event:#x}>" if self.cuda_event else "<lucid.cuda.Event uninitialized>"


def current_stream(device=None):
    """This thread's current stream of a CUDA device."""
    index = _device_index(device, "current_stream")
    return Stream._wrap(index, _C._cuda_current_stream(index))


def default_stream(device=None):
    """The default stream of a CUDA device (the legacy default stream)."""
    return Stream._wrap(_device_index(device, "default_stream"), 0)


def set_stream(stream):
    """Makes `stream` the current stream of its device on this thread (None: nothing)."""
    if stream is None:
        return
    _C._cuda_set_stream(stream.device_index, stream.cuda_stream)


class StreamContext:
    """`with StreamContext(s):` runs the block with s as its device's current stream, then puts the
    previous one back (None: nothing changes)."""

    def __init__(self, stream):
        self.stream = stream
        self._prev = None

    def __enter__(self):
        if self.stream is not None:
            self._prev = current_stream(self.stream.device_index)
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            set_stream(self._prev)
        return False


def stream(stream):
    """torch.cuda.stream: `with lucid.cuda.stream(s):` makes s the current stream inside the block."""
    return StreamContext(stream)


# --- memory -------------------------------------------------------------------------------------

def memory_stats(device=None):
    """The caching allocator's counters of a device: a dict with a subset of torch.cuda.memory_stats'
    keys (allocated_bytes.all.current/peak, reserved_bytes.all.current/peak, active.all.current,
    active_bytes.all.current, segment.all.current, num_alloc_retries, num_ooms, num_device_alloc,
    num_device_free ...). As torch's, the active counts include freed blocks still waiting for a
    stream recorded with Tensor.record_stream; the allocated bytes do not."""
    stats = _C._cuda_memory_stats(_device_index(device, "memory_stats"))
    return dict(sorted(stats.items()))


def memory_allocated(device=None):
    """Bytes of the device held by tensors (the allocator's rounded block sizes)."""
    return _C.memory_allocated(f"cuda:{_device_index(device, 'memory_allocated')}")


def max_memory_allocated(device=None):
    """The most memory_allocated(device) has been since the start or reset_peak_memory_stats."""
    return _C.max_memory_allocated(f"cuda:{_device_index(device, 'max_memory_allocated')}")


def memory_reserved(device=None):
    """Bytes of the device the caching allocator holds (allocated plus cached for reuse)."""
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None):
    """The most memory_reserved(device) has been since the start or reset_peak_memory_stats."""
    return memory_stats(device)["reserved_bytes.all.peak"]


def memory_cached(device=None):
    """Deprecated name of memory_reserved (as torch)."""
    return memory_reserved(device)


def max_memory_cached(device=None):
    """Deprecated name of max_memory_reserved (as torch)."""
    return max_memory_reserved(device)


def reset_peak_memory_stats(device=None):
    """Restarts the allocated and reserved peaks of the device from their current values."""
    _C.reset_peak_memory_stats(f"cuda:{_device_index(device, 'reset_peak_memory_stats')}")


def reset_max_memory_allocated(device=None):
    """Restarts max_memory_allocated(device) (with the other peaks, as torch's does)."""
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    """Deprecated name (as torch): restarts the peaks of the device."""
    reset_peak_memory_stats(device)


def set_per_process_memory_fraction(fraction, device=None):
    """Caps the memory lucid's caching allocator may reserve on the device at `fraction` (0 to 1) of
    its total; past it an allocation raises OutOfMemoryError (after freeing the cache)."""
    if isinstance(fraction, builtins.bool) or not isinstance(fraction, (builtins.int, builtins.float)):
        raise TypeError(f"lucid.cuda.set_per_process_memory_fraction: argument 'fraction' expected a float, got "
                        f"{type(fraction).__name__}")
    _C._cuda_set_memory_fraction(builtins.float(fraction), _device_index(device, "set_per_process_memory_fraction"))


def empty_cache():
    """Frees the cached, unused memory of every CUDA device (after waiting for its queued work), so
    other processes can use it; tensors keep theirs. A no-op without a CUDA device."""
    for index in builtins.range(device_count()):
        _C.empty_cache(f"cuda:{index}")


def get_allocator_backend():
    """'native' (lucid's caching allocator) or 'cudaMallocAsync', as LUCID_CUDA_ALLOCATOR chose."""
    _device_index(None, "get_allocator_backend")
    return _C._cuda_allocator_backend()


def mem_get_info(device=None):
    """(free, total) bytes of the device's memory, as the driver reports them (all processes)."""
    return _C._cuda_mem_get_info(_device_index(device, "mem_get_info"))


from lucid.cuda import amp  # noqa: E402,F401  (torch.cuda.amp: the deprecated GradScaler)
