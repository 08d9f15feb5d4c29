"""lucid.cuda: torch.cuda's device queries.

`is_available()`, `device_count()`, `get_device_name()`, `get_device_capability()` and
`get_device_properties()` answer from the engine's device discovery (csrc/lucid/backends/cuda/):
in a build with the CUDA backend (CMake's LUCID_CUDA) they ask the CUDA runtime; a CPU-only build,
or a machine without a GPU or driver, has 0 devices, so
`lucid.device("cuda" if lucid.cuda.is_available() else "cpu")` picks the CPU. Asking for a
device's properties then raises RuntimeError saying why there is none (torch's CUDA build raises
RuntimeError too; its CPU-only build an AssertionError), and an index out of range raises
AssertionError("Invalid device id"), as torch. The seeding calls are no-ops, as torch's are on a
machine without CUDA (lucid has no CUDA tensors yet), so `lucid.cuda.manual_seed_all(0)` in a ported
script does not fail. `library_versions()` gives the versions of the CUDA libraries a CUDA build
links (cuBLAS, cuBLASLt, cuDNN, cudnn-frontend, NVRTC, CUB, the CUDA runtime), asked without a GPU;
a CPU-only build raises RuntimeError saying it has none.
Tensors on a CUDA device are not built yet (see lucid._device)."""
import builtins

from lucid import _C
from lucid._device import device as _device

__all__ = ["is_available", "device_count", "get_device_name", "get_device_capability", "get_device_properties",
           "library_versions", "manual_seed", "manual_seed_all"]


def is_available():
    """True when at least one CUDA device can be used (a CUDA build of lucid, a driver and a GPU)."""
    return device_count() > 0


def device_count():
    """The number of CUDA devices visible to this process; 0 without the CUDA backend, a driver or a GPU."""
    return _C._cuda_device_count()


def _device_index(device, where):
    """torch.cuda's device argument: None or 'cuda' (the current device, 0), an int, 'cuda:N' or a
    lucid.device of type cuda; then checked against the devices present, as torch does."""
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
        raise AssertionError(f"Invalid device id: lucid.cuda.{where} was given device {index}, but "
                             f"{count} CUDA device{'s are' if count > 1 else ' is'} visible (0 to {count - 1})")
    return index


def get_device_properties(device=None):
    """The properties of a CUDA device (name, major, minor, total_memory, multi_processor_count)."""
    return _C._cuda_device_properties(_device_index(device, "get_device_properties"))


def get_device_name(device=None):
    """The name of a CUDA device, e.g. 'NVIDIA H200'."""
    return _C._cuda_device_properties(_device_index(device, "get_device_name")).name


def get_device_capability(device=None):
    """The (major, minor) compute capability of a CUDA device, e.g. (9, 0)."""
    props = _C._cuda_device_properties(_device_index(device, "get_device_capability"))
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
    """No-op: lucid has no CUDA tensors yet (torch.cuda.manual_seed is one on a CPU-only machine)."""
    int(seed)


def manual_seed_all(seed):
    """No-op: lucid has no CUDA tensors yet (torch.cuda.manual_seed_all is one on a CPU-only machine)."""
    int(seed)
