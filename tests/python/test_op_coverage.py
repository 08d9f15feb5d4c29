"""Every registered op has a kernel, a VJP (or an explicit non-differentiable mark) and a row
in the op-spec table; every declared op is registered."""
import lucid
from op_specs import all_specs

# Compiler-internal ops have no eager form, so no op-spec row; the compile tests cover them
# (tests/cpp/test_passes*.cpp and tests/python/test_compile*.py).
COMPILER_INTERNAL = {"FusedElementwise"}


def test_every_declared_op_is_registered():
    missing = [o["name"] for o in lucid._C._op_registry() if not o["registered"]]
    assert not missing, f"ops declared in op_list.def without an OpDef: {missing}"


def test_every_op_has_kernel_and_vjp():
    bad = [o["name"] for o in lucid._C._op_registry()
           if o["registered"] and (not o["kernel"] or (o["differentiable"] and not o["vjp"]))]
    assert not bad, f"ops without a kernel or a VJP/non-differentiable mark: {bad}"


def test_every_op_has_a_spec_row():
    covered = {op for s in all_specs() for op in s.ops}
    ops = {o["name"] for o in lucid._C._op_registry() if o["registered"]} - COMPILER_INTERNAL
    assert not ops - covered, f"ops without an op-spec row: {sorted(ops - covered)}"
