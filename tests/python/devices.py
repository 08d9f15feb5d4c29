"""The device axis of the test suite, in one place (PyTorch's `instantiate_device_type_tests`,
in small): the devices a test runs on, the mark that skips the CUDA half without a GPU ("no
CUDA device"), moving NumPy samples and results between lucid, torch and the host, the factory
device scope for ops without tensor inputs, and the rule for kernels the CUDA backend lacks yet.

A device-parametrised test takes `device` from DEVICES (`@pytest.mark.parametrize("device",
DEVICES)`); its CPU half is the test as it was, its CUDA half moves the same inputs (and
modules) to the GPU and compares with torch on the same GPU.

Kernels not written yet (tests/python/cuda_pending_ops.txt): a CUDA test (its `device`
parameter "cuda") that reaches one stops with the engine's NotImplementedError "<op>: not
implemented on cuda:N". `pending_op` recognises exactly that error, and conftest passes such a
test with a note on its report (never a skip: any other error, or a completed run with a wrong
result, fails); conftest's terminal summary counts them, so a device run tells how much of the
suite a missing kernel blocked. A test that completes is checked in full even when its row
names a pending op (the op may only be reached in backward); test_op_coverage.py holds the
pending list to the registry, so a kernel that lands must leave the list, and with the list
empty no such error is excused.
"""
import contextlib
import pathlib
import re

import numpy as np
import pytest
import torch

import lucid

HAS_CUDA = lucid.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

# The CPU half keeps the id "cpu"; `-k cuda` selects the CUDA half.
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=requires_cuda)]

PENDING_FILE = pathlib.Path(__file__).with_name("cuda_pending_ops.txt")
NOT_ON_CUDA = re.compile(r"(\S+): not implemented on cuda")
PENDING_PROPERTY = "cuda_pending"  # the user_properties key conftest's summary counts

if HAS_CUDA and torch.cuda.is_available():
    # The references are full-precision float32: torch's cuDNN convolutions default to TF32
    # (its cuBLAS matmuls do not), which would differ from a float32 kernel by ~1e-3.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def pending_cuda_ops():
    """The OpId names tests/python/cuda_pending_ops.txt lists (ops without a CUDA kernel)."""
    lines = PENDING_FILE.read_text().splitlines()
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}


def to_device(t, device):
    """t (a lucid or torch tensor) on device; the CPU half returns t itself (no copy, as before)."""
    if device == "cpu" or t is None:
        return t
    return t.to(device)


def host(t):
    """A lucid or torch tensor's values on the host (detached; .cpu() first for a CUDA tensor)."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    return t


def to_numpy(t):
    """A lucid or torch tensor (any device) as a NumPy array; bfloat16 through float32."""
    t = host(t)
    bf16 = torch.bfloat16 if isinstance(t, torch.Tensor) else lucid.bfloat16
    if t.dtype == bf16:
        t = t.float()
    return t.numpy()


def factory_scope(lib, device):
    """The factory device for ops without tensor inputs (zeros, arange, randn, tensor(...)):
    `with lucid.device("cuda"):` / `with torch.device("cuda"):`; nothing on the CPU."""
    if device == "cpu":
        return contextlib.nullcontext()
    return lib.device(device)


def pending_op(item, call):
    """The op a CUDA test stopped at, when its body raised the engine's NotImplementedError
    "<op>: not implemented on cuda:N" while cuda_pending_ops.txt still lists ops; else None.
    conftest's pytest_runtest_makereport turns such a test into a pass noted on its report."""
    if call.when != "call" or call.excinfo is None or not call.excinfo.errisinstance(NotImplementedError):
        return None
    callspec = getattr(item, "callspec", None)
    if callspec is None or callspec.params.get("device") != "cuda":
        return None
    m = NOT_ON_CUDA.search(str(call.excinfo.value))
    return m.group(1) if m is not None and pending_cuda_ops() else None
