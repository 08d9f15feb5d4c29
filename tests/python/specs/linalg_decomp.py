"""Spec rows for lucid.linalg (decompositions, solvers, norms) and einsum.

Inputs are well conditioned (a random matrix plus a multiple of the identity), symmetric
positive-definite for cholesky/eigh (the lucid and torch functions symmetrise their input, so a
finite-difference step on one entry stays in the domain the analytic gradient assumes), with
distinct eigen/singular values. Decompositions whose factors are unique only up to signs (QR,
SVD, eigh) are compared after the same sign normalisation in both frameworks, which is
differentiable, so the gradients compared are of gauge-invariant quantities.
"""
import math

import numpy as np

from op_specs import OpSpec, Sample, arr

F = ("float32", "float64")


def _wc(rng, shape, dt):
    """A well-conditioned square matrix (batch): random + 4 * identity."""
    a = arr(rng, shape, dt, -1.0, 1.0)
    return (a + 4 * np.eye(shape[-1])).astype(a.dtype)


def _sym(x):
    return 0.5 * (x + x.transpose(-1, -2))


def _spd_samples(rng, dt):
    return [Sample([_wc(rng, s, dt)]) for s in ((3, 3), (2, 4, 4), (1, 1))]


# ---- solvers --------------------------------------------------------------------------------
def _solve_samples(rng, dt):
    return [Sample([_wc(rng, (3, 3), dt), arr(rng, (3, 2), dt)]),
            Sample([_wc(rng, (3, 3), dt), arr(rng, (3,), dt)]),
            Sample([_wc(rng, (2, 3, 3), dt), arr(rng, (2, 3), dt)]),
            Sample([_wc(rng, (2, 1, 3, 3), dt), arr(rng, (4, 3, 2), dt)]),
            Sample([_wc(rng, (3, 3), dt), arr(rng, (2, 3), dt)], {"left": False})]


def _tri_samples(rng, dt):
    return [Sample([_wc(rng, (3, 3), dt), arr(rng, (3, 2), dt)], {"upper": True}),
            Sample([_wc(rng, (2, 3, 3), dt), arr(rng, (2, 3, 4), dt)], {"upper": False}),
            Sample([_wc(rng, (3, 3), dt), arr(rng, (2, 3), dt)], {"upper": False, "left": False}),
            Sample([_wc(rng, (3, 3), dt), arr(rng, (3, 1), dt)], {"upper": True, "unitriangular": True})]


def _sq_samples(rng, dt):
    return [Sample([_wc(rng, s, dt)]) for s in ((3, 3), (2, 4, 4), (1, 1))]


def _det_samples(rng, dt):
    a = arr(rng, (3, 3), dt)
    return [Sample([a]), Sample([_wc(rng, (2, 3, 3), dt) - 4.5 * np.eye(3, dtype=dt)]), Sample([arr(rng, (2, 2, 2), dt)])]


# ---- factorizations, gauge-fixed ----------------------------------------------------------
def _qr_fix(m, Q, R):
    s = m.sign(R.diagonal(0, -2, -1))
    return Q * s.unsqueeze(-2), R * s.unsqueeze(-1)


def _qr_l(l, a, mode="reduced"):
    Q, R = l.linalg.qr(a, mode=mode)
    return _qr_fix(l, Q, R)


def _qr_t(t, a, mode="reduced"):
    Q, R = t.linalg.qr(a, mode=mode)
    return _qr_fix(t, Q, R)


def _qr_samples(rng, dt):
    return [Sample([arr(rng, (4, 3), dt)]), Sample([arr(rng, (3, 3), dt)]), Sample([arr(rng, (2, 3, 5), dt)]),
            Sample([arr(rng, (3, 5), dt)], {"mode": "complete"}), Sample([arr(rng, (3, 3), dt)], {"mode": "complete"})]


def _svd_fix(m, U, S, Vh, k):
    U, Vh = U[..., :k], Vh[..., :k, :]
    s = m.sign(U[..., :1, :])
    return U * s, S, Vh * s.transpose(-1, -2)


def _svd_l(l, a, full_matrices=True):
    U, S, Vh = l.linalg.svd(a, full_matrices=full_matrices)
    return _svd_fix(l, U, S, Vh, S.shape[-1])


def _svd_t(t, a, full_matrices=True):
    U, S, Vh = t.linalg.svd(a, full_matrices=full_matrices)
    return _svd_fix(t, U, S, Vh, S.shape[-1])


def _svd_samples(rng, dt):
    return [Sample([arr(rng, (4, 3), dt)], {"full_matrices": False}), Sample([arr(rng, (3, 5), dt)]),
            Sample([arr(rng, (2, 3, 3), dt)], {"full_matrices": False}), Sample([arr(rng, (5, 2), dt)])]


def _eigh_l(l, a, UPLO="L"):
    w, V = l.linalg.eigh(_sym(a), UPLO=UPLO)
    return w, V * l.sign(V[..., :1, :])


def _eigh_t(t, a, UPLO="L"):
    w, V = t.linalg.eigh(_sym(a), UPLO=UPLO)
    return w, V * t.sign(V[..., :1, :])


def _eigh_samples(rng, dt):
    return [Sample([arr(rng, (4, 4), dt)]), Sample([arr(rng, (2, 3, 3), dt)], {"UPLO": "U"})]


def _rect_samples(rng, dt):
    return [Sample([arr(rng, (4, 3), dt)]), Sample([arr(rng, (3, 5), dt)]), Sample([arr(rng, (2, 3, 3), dt)])]


def _lstsq_samples(rng, dt):
    return [Sample([arr(rng, (5, 3), dt), arr(rng, (5, 2), dt)]),
            Sample([arr(rng, (2, 4, 3), dt), arr(rng, (2, 4, 1), dt)], {"driver": "gelsd"}),
            Sample([arr(rng, (5, 3), dt), arr(rng, (5,), dt)], {"driver": "gels"}),
            Sample([arr(rng, (3, 3), dt), arr(rng, (3, 2), dt)], {"driver": "gelss"}),
            Sample([arr(rng, (3, 5), dt), arr(rng, (3, 2), dt)], {"driver": "gelsd"}),  # minimum-norm solution
            Sample([arr(rng, (2, 4, 3), dt), arr(rng, (1, 4, 2), dt)])]  # broadcast batches


def _lstsq_gels_samples(rng, dt):
    # torch's CUDA lstsq has the one driver 'gels' (full-rank A, m >= n), the default there
    return [Sample([arr(rng, (5, 3), dt), arr(rng, (5, 2), dt)], {"driver": "gels"}),
            Sample([arr(rng, (2, 4, 3), dt), arr(rng, (2, 4, 1), dt)], {"driver": "gels"}),
            Sample([arr(rng, (3, 3), dt), arr(rng, (3,), dt)], {"driver": "gels"}),
            Sample([arr(rng, (2, 4, 3), dt), arr(rng, (1, 4, 2), dt)], {"driver": "gels"})]


def _lstsq(m, a, b, driver=None):
    r = m.linalg.lstsq(a, b, driver=driver)
    return r.solution, r.residuals, r.singular_values, r.rank


# ---- norms ----------------------------------------------------------------------------------
def _vnorm_samples(rng, dt):
    out = []
    for ord_ in (2, 1, math.inf, -math.inf, 3, 0.5):
        out.append(Sample([arr(rng, (3, 4), dt)], {"ord": ord_}))
    out.append(Sample([arr(rng, (2, 3, 4), dt)], {"ord": 2, "dim": (0, 2), "keepdim": True}))
    out.append(Sample([arr(rng, (2, 3, 4), dt)], {"ord": 1, "dim": -1}))
    return out


def _count_norm_samples(rng, dt):
    x = arr(rng, (3, 4), dt)
    x[0, 1] = 0
    return [Sample([x], {"ord": 0}), Sample([x], {"ord": 0, "dim": 1})]


def _mnorm_samples(rng, dt):
    out = [Sample([arr(rng, (3, 4), dt)], {"ord": o}) for o in ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)]
    out.append(Sample([arr(rng, (2, 3, 4), dt)], {"ord": 1, "dim": (0, 2), "keepdim": True}))
    out.append(Sample([arr(rng, (2, 3, 4), dt)], {"ord": "nuc", "dim": (2, 0)}))
    return out


def _norm_samples(rng, dt):
    return [Sample([arr(rng, (3, 4), dt)]), Sample([arr(rng, (3, 4), dt)], {"ord": 1}),
            Sample([arr(rng, (2, 3, 4), dt)], {"ord": math.inf, "dim": 1}),
            Sample([arr(rng, (2, 3, 4), dt)], {"ord": "fro", "dim": (1, 2)}), Sample([arr(rng, (5,), dt)], {"ord": 3})]


def _tnorm_samples(rng, dt):
    return [Sample([arr(rng, (3, 4), dt)]), Sample([arr(rng, (3, 4), dt)], {"p": 1, "dim": 0}),
            Sample([arr(rng, (2, 3, 4), dt)], {"p": "fro", "dim": (1, 2), "keepdim": True}),
            Sample([arr(rng, (2, 3, 4), dt)], {"p": "nuc", "dim": (1, 2)}),
            Sample([arr(rng, (2, 3), dt)], {"p": 2, "dim": 1})]


def _zero_norm_samples(rng, dt):
    x = arr(rng, (3, 4), dt)
    x[1] = 0
    return [Sample([x], {"dim": 1}), Sample([x], {"ord": 3, "dim": 1})]


# ---- composites: matrix_rank, matrix_power, multi_dot, vecdot, torch.* aliases ---------------
def _rank_samples(rng, dt):
    low = (arr(rng, (5, 2), dt) @ arr(rng, (2, 4), dt)).astype(dt)
    return [Sample([low]), Sample([arr(rng, (2, 3, 4), dt)]), Sample([low], {"atol": 1.0}),
            Sample([_sym(_wc(rng, (3, 3), dt))], {"hermitian": True})]


def _power_samples(rng, dt):
    return [Sample([_wc(rng, (3, 3), dt) / 4], {"n": n}) for n in (3, 1, -2)] + \
        [Sample([_wc(rng, (2, 3, 3), dt) / 4], {"n": 5})]


def _multi_dot_samples(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), arr(rng, (4, 5), dt), arr(rng, (5, 2), dt)]),
            Sample([arr(rng, (4,), dt), arr(rng, (4, 3), dt), arr(rng, (3,), dt)])]


def _vecdot_samples(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), arr(rng, (4,), dt)]), Sample([arr(rng, (3, 4), dt), arr(rng, (2, 3, 4), dt)],
                                                                      {"dim": -1}),
            Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)], {"dim": 0})]


def _alias_samples(rng, dt):
    return [Sample([_wc(rng, (3, 3), dt)]), Sample([_wc(rng, (2, 3, 3), dt)])]


def _logdet_samples(rng, dt):
    a = _wc(rng, (3, 3), dt)
    return [Sample([a]), Sample([np.stack([a, -a])])]  # det(-a) < 0: nan, as torch


# ---- einsum ---------------------------------------------------------------------------------
EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ii->i", [(4, 4)]),
    ("ii", [(3, 3)]), ("ij->", [(3, 4)]), ("ij->ji", [(3, 4)]), ("...ij,...jk", [(2, 3, 4), (4, 2)]),
    ("i,j->ij", [(3,), (4,)]), ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]), ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ij->i", [(3, 1), (3, 4)]), ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]), ("iij->j", [(3, 3, 2)]),
    ("i,i", [(5,), (5,)]), ("b...i,bi->b...", [(2, 3, 4), (2, 4)]), ("ij,kj", [(3, 4), (5, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]), ("i,i->i", [(1,), (3,)]), ("ba...->...", [(2, 3)]),
]


def _einsum_samples(rng, dt):
    return [Sample([eq] + [arr(rng, s, dt) for s in shapes]) for eq, shapes in EINSUM]


def _einsum_list(m, eq, *ops):
    return m.einsum(eq, list(ops))


SPECS = [
    OpSpec("linalg_solve", ["LinalgSolve"], lambda l, a, b, **k: l.linalg.solve(a, b, **k),
           lambda t, a, b, **k: t.linalg.solve(a, b, **k), _solve_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_solve_triangular", ["LinalgSolveTriangular"],
           lambda l, a, b, **k: l.linalg.solve_triangular(a, b, **k),
           lambda t, a, b, **k: t.linalg.solve_triangular(a, b, **k), _tri_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_inv", ["LinalgInv"], lambda l, a: l.linalg.inv(a), lambda t, a: t.linalg.inv(a), _sq_samples,
           dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_det", ["LinalgDet"], lambda l, a: l.linalg.det(a), lambda t, a: t.linalg.det(a), _det_samples,
           dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_slogdet", ["LinalgSlogdet"], lambda l, a: tuple(l.linalg.slogdet(a)),
           lambda t, a: tuple(t.linalg.slogdet(a)), _det_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_cholesky", ["LinalgCholesky"], lambda l, a, **k: l.linalg.cholesky(_sym(a), **k),
           lambda t, a, **k: t.linalg.cholesky(_sym(a), **k),
           lambda rng, dt: _spd_samples(rng, dt) + [Sample([_wc(rng, (3, 3), dt)], {"upper": True})],
           dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_qr", ["LinalgQr"], _qr_l, _qr_t, _qr_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_svd", ["LinalgSvd"], _svd_l, _svd_t, _svd_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_svdvals", ["LinalgSvd"], lambda l, a: l.linalg.svdvals(a), lambda t, a: t.linalg.svdvals(a),
           _rect_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_eigh", ["LinalgEigh"], _eigh_l, _eigh_t, _eigh_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_eigvalsh", ["LinalgEigh"], lambda l, a, **k: l.linalg.eigvalsh(_sym(a), **k),
           lambda t, a, **k: t.linalg.eigvalsh(_sym(a), **k), _eigh_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_pinv", ["LinalgSvd"], lambda l, a: l.linalg.pinv(a), lambda t, a: t.linalg.pinv(a), _rect_samples,
           dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_lstsq", ["LinalgLstsq"], _lstsq, _lstsq, _lstsq_samples, dtypes=F, atol=1e-4, rtol=1e-4,
           cuda_dtypes=()),  # the CPU drivers; CUDA has 'gels' only: the next row
    OpSpec("linalg_lstsq_gels", ["LinalgLstsq"], _lstsq, _lstsq, _lstsq_gels_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_vector_norm", [], lambda l, a, **k: l.linalg.vector_norm(a, **k),
           lambda t, a, **k: t.linalg.vector_norm(a, **k), _vnorm_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    # ord=0 counts non-zeros: a step function (lucid's result has no gradient; torch's is zero)
    OpSpec("linalg_vector_norm_count", [], lambda l, a, **k: l.linalg.vector_norm(a, **k),
           lambda t, a, **k: t.linalg.vector_norm(a, **k), _count_norm_samples, dtypes=F, grad=False),
    OpSpec("linalg_vector_norm_at_zero", [], lambda l, a, **k: l.linalg.vector_norm(a, **k),
           lambda t, a, **k: t.linalg.vector_norm(a, **k), _zero_norm_samples, dtypes=F, fd=False),
    OpSpec("linalg_matrix_norm", [], lambda l, a, **k: l.linalg.matrix_norm(a, **k),
           lambda t, a, **k: t.linalg.matrix_norm(a, **k), _mnorm_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_norm", [], lambda l, a, **k: l.linalg.norm(a, **k), lambda t, a, **k: t.linalg.norm(a, **k),
           _norm_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("tensor_norm", [], lambda l, a, **k: a.norm(**k), lambda t, a, **k: a.norm(**k), _tnorm_samples,
           dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("norm_function", [], lambda l, a, **k: l.norm(a, **k), lambda t, a, **k: t.norm(a, **k), _tnorm_samples,
           dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_matrix_rank", ["LinalgSvd", "LinalgEigh"], lambda l, a, **k: l.linalg.matrix_rank(a, **k),
           lambda t, a, **k: t.linalg.matrix_rank(a, **k), _rank_samples, dtypes=F, grad=False),
    OpSpec("linalg_matrix_power", ["LinalgInv"], lambda l, a, **k: l.linalg.matrix_power(a, **k),
           lambda t, a, **k: t.linalg.matrix_power(a, **k), _power_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    # n=0: identities (torch's gradient is zeros, lucid's None: the result does not depend on A)
    OpSpec("linalg_matrix_power_0", [], lambda l, a: l.linalg.matrix_power(a, 0), lambda t, a: t.linalg.matrix_power(a, 0),
           _alias_samples, dtypes=F, grad=False),
    OpSpec("tensor_matrix_power", ["LinalgInv"], lambda l, a, n: a.matrix_power(n), lambda t, a, n: a.matrix_power(n),
           _power_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_multi_dot", [], lambda l, *ts: l.linalg.multi_dot(ts), lambda t, *ts: t.linalg.multi_dot(ts),
           _multi_dot_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("linalg_vecdot", [], lambda l, a, b, **k: l.linalg.vecdot(a, b, **k),
           lambda t, a, b, **k: t.linalg.vecdot(a, b, **k), _vecdot_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("det_alias", ["LinalgDet"], lambda l, a: (l.det(a), a.det()), lambda t, a: (t.det(a), a.det()),
           _alias_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("slogdet_alias", ["LinalgSlogdet"], lambda l, a: (tuple(l.slogdet(a)), tuple(a.slogdet())),
           lambda t, a: (tuple(t.slogdet(a)), tuple(a.slogdet())), _alias_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("logdet", ["LinalgSlogdet"], lambda l, a: (l.logdet(a), a.logdet()), lambda t, a: (t.logdet(a), a.logdet()),
           _logdet_samples, dtypes=F, atol=1e-4, rtol=1e-4, grad=False),
    OpSpec("logdet_grad", ["LinalgSlogdet"], lambda l, a: l.logdet(a), lambda t, a: t.logdet(a), _alias_samples,
           dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("inverse_alias", ["LinalgInv"], lambda l, a: (l.inverse(a), a.inverse()),
           lambda t, a: (t.inverse(a), a.inverse()), _alias_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("pinverse", ["LinalgSvd"], lambda l, a: (l.pinverse(a), a.pinverse(rcond=1e-10)),
           lambda t, a: (t.pinverse(a), a.pinverse(rcond=1e-10)), _rect_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("einsum", [], lambda l, eq, *ops: l.einsum(eq, *ops), lambda t, eq, *ops: t.einsum(eq, *ops),
           _einsum_samples, dtypes=F, atol=1e-4, rtol=1e-4),
    OpSpec("einsum_list", [], _einsum_list, _einsum_list, _einsum_samples, dtypes=("float64",), grad=False),
]
