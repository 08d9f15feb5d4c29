"""Every registered op has a CPU kernel, a VJP (or an explicit non-differentiable mark) and a row
in the op-spec table; every declared op is registered. Kernels are checked per device: each
backend registers its own into the op records (LUCID_REGISTER_KERNEL), and the ops the CUDA
backend has no kernel for yet are exactly those listed in cuda_pending_ops.txt (the goal is an
empty list; calling one on a CUDA tensor raises "not implemented on cuda", tested in
tests/cpp/test_dispatch_device.cpp)."""
import pytest

import lucid
from devices import pending_cuda_ops
from op_specs import all_specs

# Compiler-internal ops have no eager form, so no op-spec row; the compile tests cover them
# (tests/cpp/test_passes*.cpp and tests/python/test_compile*.py).
COMPILER_INTERNAL = {"FusedElementwise"}
# The channel-blocked layout ops exist for the CPU backend's layout pass (ops/blocked_layout.h):
# only the CPU's passes emit them, so CUDA needs no kernel (their spec rows check the CPU only).
CPU_LAYOUT_OPS = {"BlockChannels", "UnblockChannels", "MaxPool2dBlocked", "AvgPool2dBlocked",
                  "AdaptiveAvgPool2dBlocked", "BatchNormBlocked"}


def test_every_declared_op_is_registered():
    missing = [o["name"] for o in lucid._C._op_registry() if not o["registered"]]
    assert not missing, f"ops declared in op_list.def without an OpDef: {missing}"


def test_every_op_has_cpu_kernel_and_vjp():
    bad = [o["name"] for o in lucid._C._op_registry()
           if o["registered"] and (not o["kernels"]["cpu"] or (o["differentiable"] and not o["vjp"]))]
    assert not bad, f"ops without a CPU kernel or a VJP/non-differentiable mark: {bad}"


@pytest.mark.skipif(not lucid._C._cuda_is_built(), reason="this build has no CUDA backend (LUCID_CUDA=OFF)")
def test_ops_without_a_cuda_kernel_are_exactly_the_listed_ones():
    ops = {o["name"]: o for o in lucid._C._op_registry() if o["registered"]}
    missing = {n for n, o in ops.items() if not o["kernels"]["cuda"]} - COMPILER_INTERNAL - CPU_LAYOUT_OPS
    listed = pending_cuda_ops()
    assert not listed - ops.keys(), f"cuda_pending_ops.txt names unknown ops: {sorted(listed - ops.keys())}"
    assert not missing - listed, f"ops without a CUDA kernel, not listed in cuda_pending_ops.txt: {sorted(missing - listed)}"
    assert not listed - missing, f"ops with a CUDA kernel now: remove them from cuda_pending_ops.txt: {sorted(listed - missing)}"


def test_view_ops_run_on_every_device():
    # A view op only computes strides: its one function serves every device's tensors.
    views = [o for o in lucid._C._op_registry() if o["registered"] and o["kernels"]["cuda"] and not o["kernels"]["cpu"]]
    assert not views, "an op with a CUDA kernel but no CPU kernel"
    reg = {o["name"]: o for o in lucid._C._op_registry()}
    for name in ("View", "Reshape", "Permute", "Slice", "Expand"):
        assert reg[name]["kernels"] == {"cpu": True, "cuda": True}, name


def test_every_op_has_a_spec_row():
    covered = {op for s in all_specs() for op in s.ops}
    ops = {o["name"] for o in lucid._C._op_registry() if o["registered"]} - COMPILER_INTERNAL
    assert not ops - covered, f"ops without an op-spec row: {sorted(ops - covered)}"
