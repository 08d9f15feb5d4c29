"""lucid.backends.cudnn: torch.backends.cudnn's switches for lucid's cuDNN convolutions.

- `allow_tf32` (default True, as torch's): float32 convolutions may run on TF32 tensor cores (10-bit
  mantissa products, float32 accumulation). False keeps them full FP32: cuDNN engines with tensor
  cores are then not taken for float32 (float16/bfloat16 always use them).
- `benchmark` (default False): on the first call of each convolution geometry, time every cuDNN
  engine that supports it and keep the fastest (this synchronises the device once per geometry);
  otherwise cuDNN's heuristic picks.
- `deterministic` (default False): only engines whose results do not depend on scheduling
  (`lucid.use_deterministic_algorithms(True)` asks the same).
- `enabled` (default True): recorded only; lucid's CUDA convolutions always use cuDNN.

Each flag is read when a convolution runs and is part of its plan's cache key, so a change takes
effect at the next call. `flags(...)` sets some for a `with` block, as torch.backends.cudnn.flags.
`is_available()` and `version()` (e.g. 91900 for 9.19.0) answer without a GPU. The flags exist in a
CPU-only build too, where they change nothing."""
import contextlib
import sys
import types

from lucid import _C

__all__ = ["allow_tf32", "benchmark", "deterministic", "enabled", "flags", "is_available", "version"]


def is_available():
    """True when this build of lucid has the CUDA backend, and with it cuDNN."""
    return _C._cuda_is_built()


def version():
    """The version of the cuDNN library loaded (major*10000 + minor*100 + patch, torch's encoding),
    or None in a build without the CUDA backend."""
    for lib in _C._cuda_libraries():
        if lib.name == "cudnn":
            return lib.loaded
    return None


def _flag(name):
    return property(lambda self: _C._cudnn_flag(name),
                    lambda self, value: _C._cudnn_set_flag(name, bool(value)),
                    doc=f"lucid.backends.cudnn.{name} (see the module's docstring)")


class _CudnnModule(types.ModuleType):
    allow_tf32 = _flag("allow_tf32")
    benchmark = _flag("benchmark")
    deterministic = _flag("deterministic")
    enabled = True


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, deterministic=False, allow_tf32=True):
    """Sets the flags for a `with` block and restores them after (torch.backends.cudnn.flags; its
    defaults too)."""
    mod = sys.modules[__name__]
    saved = (mod.enabled, mod.benchmark, mod.deterministic, mod.allow_tf32)
    mod.enabled, mod.benchmark, mod.deterministic, mod.allow_tf32 = enabled, benchmark, deterministic, allow_tf32
    try:
        yield
    finally:
        mod.enabled, mod.benchmark, mod.deterministic, mod.allow_tf32 = saved


sys.modules[__name__].__class__ = _CudnnModule
