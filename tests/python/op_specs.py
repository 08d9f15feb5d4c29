"""The op-spec table: one OpSpec row per public op, gathered from specs/<family>.py.

Each row says how to call the op in lucid and in PyTorch, which sample inputs to use, which
dtypes to check, and which registry ops (OpId names) it covers. test_ops.py drives generic tests
from it: forward against PyTorch per dtype, gradients against PyTorch, and finite-difference
checks in float64. test_op_coverage.py fails if a registered op has no row, kernel or VJP.

The device axis (PyTorch OpInfo's dtypesIfCUDA, ggml's test-backend-ops): `cuda_dtypes` are the
dtypes checked on CUDA (by default the CPU's, float16/bfloat16 included where the row has them),
and each row also runs its samples on CUDA against lucid's CPU result, bit for bit where the
row is exact (`cuda_exact`: by default, when every op it covers only moves, selects or compares
values, EXACT_OPS), else within the row's tolerance.
"""
import dataclasses
import importlib
import pkgutil
from typing import Callable, Sequence

import numpy as np


@dataclasses.dataclass
class Sample:
    """Positional inputs (NumPy arrays become tensors; anything else is passed as is) + kwargs."""
    args: Sequence
    kwargs: dict = dataclasses.field(default_factory=dict)
    grad_args: Sequence[int] | None = None  # which args get requires_grad (default: float arrays)


@dataclasses.dataclass
class OpSpec:
    name: str                      # test id
    ops: Sequence[str]             # registry OpId names this row covers
    lucid_fn: Callable             # (lucid, *args, **kwargs) -> tensor or tuple of tensors
    torch_fn: Callable             # (torch, *args, **kwargs) -> same structure
    samples: Callable[[np.random.Generator, str], list]  # (rng, dtype name) -> [Sample]
    dtypes: Sequence[str] = ("float32", "float64")
    grad: bool = True              # compare gradients (float64) and finite differences
    fd: bool = True                # run the finite-difference check
    atol: float = 1e-5
    rtol: float = 1e-5
    low_precision_tol: float = 1e-2  # float16 / bfloat16 tolerance
    cuda_dtypes: Sequence[str] | None = None  # dtypes checked on CUDA; None: `dtypes`
    cuda_exact: bool | None = None  # CUDA == CPU bit for bit; None: every op of `ops` in EXACT_OPS

    def __post_init__(self):
        if self.cuda_dtypes is None:
            self.cuda_dtypes = tuple(self.dtypes)
        if self.cuda_exact is None:
            self.cuda_exact = bool(self.ops) and set(self.ops) <= EXACT_OPS


# Ops whose every output element is an input element (moved, selected, sign-flipped, clamped to a
# bound), a comparison, a count or a constant: CUDA must give the CPU's values exactly.
EXACT_OPS = frozenset("""
    Copy Expand Reshape Neg Fill Permute AsStrided AsStridedScatter Abs Sign Floor Ceil Round Trunc IsNan IsInf
    LogicalNot BitwiseNot Maximum Minimum Eq Ne Lt Le Gt Ge LogicalAnd LogicalOr LogicalXor BitwiseAnd BitwiseOr
    BitwiseXor Where Clamp MaskedFill Relu Relu6 Hardtanh Threshold Hardshrink Amax Amin MaxDim MinDim Argmax Argmin
    All Any ReduceEqMask IndexMask Sort TopK Median MedianDim View Squeeze Unsqueeze Slice Select Unfold Diagonal
    SliceScatter Cat Flip Roll Tril Triu Repeat Pad Gather Scatter IndexGather Empty Eye Embedding MaxPool2d
    MaxPool2dGather AdaptiveMaxPool2d
""".split())


def arr(rng, shape, dtype, low=-2.0, high=2.0):
    """Random array of a lucid dtype name (floats uniform in [low, high], ints in a small range)."""
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        a = rng.uniform(low, high, size=shape)
        return a.astype(np.float32 if dtype in ("float16", "bfloat16") else dtype)  # cast later
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.integers(int(max(low, -5)), int(max(high, 1)) + 3, size=shape).astype(dtype)


def positive(rng, shape, dtype, low=0.5, high=2.0):
    return arr(rng, shape, dtype, low, high)


def all_specs() -> list[OpSpec]:
    import specs
    out = []
    for mod in pkgutil.iter_modules(specs.__path__):
        m = importlib.import_module(f"specs.{mod.name}")
        out.extend(getattr(m, "SPECS", []))
    return out
