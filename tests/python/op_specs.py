"""The op-spec table: one OpSpec row per public op, gathered from specs/<family>.py.

Each row says how to call the op in lucid and in PyTorch, which sample inputs to use, which
dtypes to check, and which registry ops (OpId names) it covers. test_ops.py drives generic tests
from it: forward against PyTorch per dtype, gradients against PyTorch, and finite-difference
checks in float64. test_op_coverage.py fails if a registered op has no row, kernel or VJP.

The device axis (PyTorch OpInfo's dtypesIfCUDA, ggml's test-backend-ops): `cuda_dtypes` are the
dtypes checked on CUDA. By default they are the CPU's, plus float16 and bfloat16 for a row that
checks float32 but no 16-bit type, unless NO_16BIT_ON_CUDA names it: 16-bit is the GPU's main
case, and lucid's CPU computes those rows in 16-bit as torch does (each was checked once against
torch's CPU at the row's low_precision_tol), so the CUDA-vs-CPU test has its reference. Each row
also runs its samples on CUDA against lucid's CPU result, bit for bit where the row is exact
(`cuda_exact`: by default, when every op it covers only moves, selects or compares values,
EXACT_OPS), else within the row's tolerance.
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
            extra = ()
            if "float32" in self.dtypes and not {"float16", "bfloat16"} & set(self.dtypes) and \
                    self.name not in NO_16BIT_ON_CUDA:
                extra = ("float16", "bfloat16")
            self.cuda_dtypes = tuple(self.dtypes) + extra
        if self.cuda_exact is None:
            self.cuda_exact = bool(self.ops) and set(self.ops) <= EXACT_OPS


# Rows checking float32 whose 16-bit forms CUDA does not check either (so cuda_dtypes = dtypes):
NO_16BIT_ON_CUDA = frozenset("""
    linalg_solve linalg_solve_triangular linalg_inv linalg_det linalg_slogdet linalg_cholesky linalg_qr
    linalg_svd linalg_svdvals linalg_eigh linalg_eigvalsh linalg_pinv linalg_lstsq linalg_lstsq_gels linalg_matrix_norm tensor_norm
    norm_function linalg_matrix_rank linalg_matrix_power tensor_matrix_power det_alias slogdet_alias logdet
    logdet_grad inverse_alias pinverse
""".split()  # lucid's decompositions take float32 and float64 only, as torch's
    + """
    cdist cdist_p1 cdist_p2 cdist_p3 cdist_pinf pdist special_ndtri special_log_ndtr multi_margin_loss
    multilabel_margin_loss local_response_norm avg_pool3d lp_pool3d affine_grid ctc_loss
""".split()  # torch has no 16-bit CPU kernel (nothing to fall back on where its CUDA one differs)
    + """
    round_decimals einsum triplet_margin_loss conv3d conv_transpose3d conv_tbc topk_large
""".split()  # 16-bit rounding moves a value past the row's tolerance (a tie, a long sum)
    + """
    fractional_max_pool2d fractional_max_pool3d
""".split())  # the samples build NumPy arrays of the dtype, and NumPy has no bfloat16


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
