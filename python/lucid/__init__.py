"""Lucid: a deep-learning framework with a C++ engine and a PyTorch-shaped Python API."""
from lucid import _C
from lucid._C import memory_allocated, max_memory_allocated, reset_peak_memory_stats, memory_cached, empty_cache  # noqa: F401
from lucid._C import ArgumentError  # noqa: F401  (a ValueError and a RuntimeError: bad argument or shape)
from lucid._C import DTypeError  # noqa: F401  (a TypeError and a RuntimeError: a tensor of the wrong dtype)
from lucid._C import OutOfMemoryError  # noqa: F401  (a RuntimeError: a device allocator is out of memory)
from lucid._C import Tensor, dtype, set_num_threads, get_num_threads, get_default_dtype, set_default_dtype, promote_types, result_type
from lucid._dtypes import (bool_ as bool, uint8, int8, int32, int64, float16, bfloat16, float32, float64,  # noqa: A001
                           half, float, double, long, int)  # noqa: A001
from lucid._device import device, set_default_device, get_default_device  # noqa: F401
from lucid._numeric_info import finfo, iinfo  # noqa: F401
from lucid import _tensor  # noqa: F401  (attaches Python-level Tensor methods)
from lucid import _pickling  # noqa: F401  (copy.deepcopy and pickle of tensors and engine functions)
from lucid.autograd.grad_mode import no_grad, enable_grad, set_grad_enabled, is_grad_enabled, inference_mode
from lucid._creation import tensor, as_tensor, from_dlpack, from_numpy
from lucid._ops import *  # noqa: F401,F403
from lucid import autograd  # noqa: E402
from lucid import return_types  # noqa: E402,F401
from lucid import nn, optim, cuda, linalg, special  # noqa: E402  (pylib)
from lucid import backends  # noqa: E402,F401  (torch.backends: lucid.backends.cudnn flags)
from lucid._ops_torch_toplevel import *  # noqa: E402,F401,F403  (nn.functional ops torch also exports at top level)
from lucid.linalg._legacy import *  # noqa: E402,F401,F403  (torch.cholesky, qr, svd, ... : the pre-linalg forms)
from lucid.serialization import save, load  # noqa: E402  (pylib)
from lucid import compile  # noqa: E402,A004  (callable namespace: lucid.compile(model))
from lucid import amp  # noqa: E402  (torch.amp: autocast, GradScaler)
from lucid.amp.grad_scaler import GradScaler  # noqa: E402,F401  (torch.GradScaler is torch.amp.GradScaler)
from lucid.amp.autocast_mode import (autocast, is_autocast_enabled, set_autocast_enabled, get_autocast_dtype,  # noqa: E402,F401
                                     set_autocast_dtype, is_autocast_cpu_enabled, set_autocast_cpu_enabled,
                                     get_autocast_cpu_dtype, set_autocast_cpu_dtype, get_autocast_gpu_dtype,
                                     set_autocast_gpu_dtype, clear_autocast_cache, is_autocast_cache_enabled,
                                     set_autocast_cache_enabled, autocast_increment_nesting, autocast_decrement_nesting)

from lucid._missing import NotImplementedYetError, module_getattr as _module_getattr  # noqa: E402

__version__ = "0.1.0"
__getattr__ = _module_getattr("torch", "lucid")  # a PyTorch name lucid lacks says so (lucid/_missing.py)
