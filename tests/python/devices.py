"""The device axis of the test suite, in one place (PyTorch's `instantiate_device_type_tests`,
in small): the devices a test runs on, the mark that skips the CUDA half without a GPU ("no
CUDA device"), moving NumPy samples and results between lucid, torch and the host, the factory
device scope for ops without tensor inputs, and the rule for kernels the CUDA backend lacks yet.

A device-parametrised test takes `device` from DEVICES (`@pytest.mark.parametrize("device",
DEVICES)`); its CPU half is the test as it was, its CUDA half moves the same inputs (and
modules) to the GPU and compares with torch on the same GPU.

Kernels not written yet (tests/python/cuda_pending_ops.txt): a CUDA test that reaches one
stops with the engine's NotImplementedError "<op>: not implemented on cuda:N". `pending_ok`
accepts exactly that error (never a skip: any other error, or a completed run with a wrong
result, fails) and notes it on the test's report; conftest's terminal summary counts those
tests, so a device run tells how much of the suite was blocked by a missing kernel. A test that
completes is checked in full even when its row names a pending op (the op may only be reached
in backward); test_op_coverage.py holds the pending list to the registry, so a kernel that lands
must leave the list.
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


@contextlib.contextmanager
def pending_ok(request, device):
    """Around a test body on device. On CUDA, a NotImplementedError naming a kernel not written
    yet ends the body, and the test passes with a note on its report (see the module comment);
    every other error propagates. The CPU half runs the body as is."""
    if device == "cpu":
        yield
        return
    try:
        yield
    except NotImplementedError as e:
        m = NOT_ON_CUDA.search(str(e))
        if m is None:
            raise
        assert pending_cuda_ops(), (f"{e}: an op without a CUDA kernel, yet cuda_pending_ops.txt lists none "
                                    "(test_op_coverage.py should fail too)")
        request.node.user_properties.append((PENDING_PROPERTY, m.group(1)))
