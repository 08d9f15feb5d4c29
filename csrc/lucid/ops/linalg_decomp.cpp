// Decomposition and solver ops of lucid.linalg: LinalgSolve, LinalgSolveTriangular, LinalgInv,
// LinalgDet, LinalgSlogdet, LinalgCholesky, LinalgQr, LinalgSvd, LinalgEigh, LinalgLstsq. Each
// record validates its inputs (float32/float64, square where needed, equal batch shapes; the
// API functions below broadcast batches and handle vector right-hand sides first) and carries a
// VJP written with ops: PyTorch's formulas (FunctionsManual.cpp), so a traced backward records
// ordinary ops. The CPU kernels (backends/cpu/kernels/linalg_decomp.cpp) call LAPACK
// (backends/cpu/lapack). They lower as opaque kernels in the compiler.
#include <cmath>
#include <limits>

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/core.h"
#include "lucid/ops/creation.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/linalg.h"
#include "lucid/ops/movement.h"
#include "lucid/ops/reduce.h"

namespace lucid {

namespace {

void check_float(const char* op, const char* arg, const Tensor& t) {
  LUCID_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::Float64, TypeError, op, ": argument '", arg,
              "' expected a float32 or float64 tensor, got ", dtype_name(t.dtype()));
}

void check_matrix(const char* op, const char* arg, const Tensor& t) {
  check_float(op, arg, t);
  LUCID_CHECK(t.ndim() >= 2, ValueError, op, ": argument '", arg,
              "' expected a tensor with at least 2 dimensions, got a ", t.ndim(), "-D tensor of shape ",
              shape_str(t.shape()));
}

void check_square(const char* op, const char* arg, const Tensor& t) {
  check_matrix(op, arg, t);
  int64_t r = t.shape()[t.ndim() - 2], c = t.shape()[t.ndim() - 1];
  LUCID_CHECK(r == c, ValueError, op, ": argument '", arg, "' expected batches of square matrices, but they are ", r,
              " by ", c, " matrices (shape ", shape_str(t.shape()), ")");
}

Shape batch_of(const Tensor& t, int core = 2) { return Shape(t.shape().begin(), t.shape().end() - core); }
Shape with(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail);
  return s;
}
int64_t rows(const Tensor& t) { return t.shape()[t.ndim() - 2]; }
int64_t cols(const Tensor& t) { return t.shape()[t.ndim() - 1]; }

// A right-hand side B of a system with matrix A: same dtype, n rows, the same batch shape.
void check_rhs(const char* op, const Tensor& A, const Tensor& B) {
  check_matrix(op, "B", B);
  LUCID_CHECK(B.dtype() == A.dtype(), TypeError, op, ": argument 'B' expected dtype ", dtype_name(A.dtype()),
              " (the dtype of 'A'), got ", dtype_name(B.dtype()));
  LUCID_CHECK(rows(B) == rows(A), ValueError, op, ": argument 'B' expected ", rows(A),
              " rows (A.shape[-2]), got shape ", shape_str(B.shape()), " for A of shape ", shape_str(A.shape()));
  LUCID_CHECK(batch_of(B) == batch_of(A), ValueError, op, ": arguments 'A' and 'B' expected equal batch shapes, got ",
              shape_str(A.shape()), " and ", shape_str(B.shape()));
}

double dtype_eps(DType t) {
  return t == DType::Float32 ? double(std::numeric_limits<float>::epsilon()) : std::numeric_limits<double>::epsilon();
}

Tensor unsq2(const Tensor& t) { return unsqueeze(unsqueeze(t, -1), -1); }
Tensor eye_like(const Tensor& A) { return eye(rows(A), rows(A), A.dtype()); }

// 1 on the diagonal, so that E (differences of eigen/singular values, zero there) can divide.
Tensor differences(const Tensor& v) {
  Tensor E = sub(unsqueeze(v, -2), unsqueeze(v, -1));
  return add(E, eye(cols(E), cols(E), v.dtype()));
}

Tensor solve_raw(const Tensor& A, const Tensor& B) { return dispatch1(OpId::LinalgSolve, {A, B}); }
Tensor solve_tri_raw(const Tensor& A, const Tensor& B, bool upper, bool unit) {
  return dispatch1(OpId::LinalgSolveTriangular, {A, B}, {{"upper", upper}, {"unitriangular", unit}});
}
// X A = B for triangular A, as A^T X^T = B^T.
Tensor solve_tri_right(const Tensor& A, const Tensor& B, bool upper) {
  return mT(solve_tri_raw(mT(A), mT(B), !upper, false));
}

}  // namespace

// ---- LinalgSolve / LinalgSolveTriangular ---------------------------------------------------
LUCID_REGISTER_OP(LinalgSolve, "", [] {
  OpDef d;
  d.num_inputs = 2;
  d.save = kSaveInputs | kSaveOutputs;
  d.unsaved_inputs = {1};
  d.infer = [](const TensorList& in, const Attrs&) {
    check_square("linalg.solve", "A", in[0]);
    check_rhs("linalg.solve", in[0], in[1]);
    return std::vector<TensorMeta>{{in[1].shape(), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    Tensor gB = solve_raw(mT(c.inputs[0]), c.grads[0]);
    TensorList r(2);
    if (c.needs_grad[0]) r[0] = neg(matmul(gB, mT(c.outputs[0])));
    if (c.needs_grad[1]) r[1] = gB;
    return r;
  };
  return d;
}());

LUCID_REGISTER_OP(LinalgSolveTriangular, "upper:bool, unitriangular:bool", [] {
  OpDef d;
  d.num_inputs = 2;
  d.save = kSaveInputs | kSaveOutputs;
  d.unsaved_inputs = {1};
  d.infer = [](const TensorList& in, const Attrs&) {
    check_square("linalg.solve_triangular", "A", in[0]);
    check_rhs("linalg.solve_triangular", in[0], in[1]);
    return std::vector<TensorMeta>{{in[1].shape(), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    bool upper = c.attrs.b("upper"), unit = c.attrs.b("unitriangular");
    Tensor gB = solve_tri_raw(mT(c.inputs[0]), c.grads[0], !upper, unit);
    TensorList r(2);
    if (c.needs_grad[0]) {
      Tensor gA = neg(matmul(gB, mT(c.outputs[0])));
      r[0] = upper ? triu(gA, unit ? 1 : 0) : tril(gA, unit ? -1 : 0);
    }
    if (c.needs_grad[1]) r[1] = gB;
    return r;
  };
  return d;
}());

namespace {
// torch's rule: B is a (batch of) vector(s) when 1-D or when its shape is A.shape[:-1].
bool vector_rhs(const Tensor& A, const Tensor& B) {
  return B.ndim() == 1 || (B.ndim() == A.ndim() - 1 && B.shape() == Shape(A.shape().begin(), A.shape().end() - 1));
}

// Broadcasts the batch dims of A [*, n, n] and B [*, n, k] (B a vector: [*, n]) and calls f(A, B).
template <class F>
Tensor with_rhs(const char* op, const Tensor& A, const Tensor& B, const F& f) {
  check_matrix(op, "A", A);
  LUCID_CHECK(B.ndim() >= 1, ValueError, op, ": argument 'B' expected at least 1 dimension, got a 0-D tensor");
  bool vec = vector_rhs(A, B);
  Tensor B2 = vec ? unsqueeze(B, -1) : B;
  check_matrix(op, "B", B2);
  Shape batch = broadcast_shapes(batch_of(A), batch_of(B2), op);
  Tensor Ae = expand(A, with(batch, {rows(A), cols(A)}));
  Tensor Be = expand(B2, with(batch, {rows(B2), cols(B2)}));
  Tensor X = f(Ae, Be);
  return vec ? squeeze(X, {-1}) : X;
}
}  // namespace

Tensor linalg_solve(const Tensor& A, const Tensor& B, bool left) {
  if (!left) {  // X A = B  <=>  A^T X^T = B^T
    check_matrix("linalg.solve", "A", A);
    check_matrix("linalg.solve", "B", B);
    return mT(linalg_solve(mT(A), mT(B), true));
  }
  return with_rhs("linalg.solve", A, B, [](const Tensor& a, const Tensor& b) { return solve_raw(a, b); });
}

Tensor linalg_solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
  const char* op = "linalg.solve_triangular";
  check_matrix(op, "A", A);
  check_matrix(op, "B", B);
  if (!left) return mT(linalg_solve_triangular(mT(A), mT(B), !upper, true, unitriangular));
  Shape batch = broadcast_shapes(batch_of(A), batch_of(B), op);
  return solve_tri_raw(expand(A, with(batch, {rows(A), cols(A)})), expand(B, with(batch, {rows(B), cols(B)})), upper,
                       unitriangular);
}

// ---- LinalgInv / LinalgDet / LinalgSlogdet ----------------------------------------------------
LUCID_REGISTER_OP(LinalgInv, "", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveOutputs;
  d.infer = [](const TensorList& in, const Attrs&) {
    check_square("linalg.inv", "A", in[0]);
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    Tensor Ait = mT(c.outputs[0]);
    return TensorList{neg(matmul(Ait, matmul(c.grads[0], Ait)))};
  };
  return d;
}());

Tensor linalg_inv(const Tensor& A) { return dispatch1(OpId::LinalgInv, {A}); }

LUCID_REGISTER_OP(LinalgDet, "", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveInputs | kSaveOutputs;
  d.infer = [](const TensorList& in, const Attrs&) {
    check_square("linalg.det", "A", in[0]);
    return std::vector<TensorMeta>{{batch_of(in[0]), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {  // d det = det * tr(A^-1 dA): gA = A^-T (g det)
    const Tensor& A = c.inputs[0];
    return TensorList{solve_raw(mT(A), mul(unsq2(mul(c.grads[0], c.outputs[0])), expand(eye_like(A), A.shape())))};
  };
  return d;
}());

Tensor linalg_det(const Tensor& A) { return dispatch1(OpId::LinalgDet, {A}); }

LUCID_REGISTER_OP(LinalgSlogdet, "", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveInputs;
  d.infer = [](const TensorList& in, const Attrs&) {
    check_square("linalg.slogdet", "A", in[0]);
    Shape b = batch_of(in[0]);
    return std::vector<TensorMeta>{{b, in[0].dtype()}, {b, in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {  // sign is piecewise constant; d logabsdet = tr(A^-1 dA)
    const Tensor& A = c.inputs[0];
    if (!c.grads[1].defined()) return TensorList{Tensor()};
    return TensorList{solve_raw(mT(A), mul(unsq2(c.grads[1]), expand(eye_like(A), A.shape())))};
  };
  return d;
}());

std::pair<Tensor, Tensor> linalg_slogdet(const Tensor& A) {
  TensorList r = dispatch(OpId::LinalgSlogdet, {A});
  return {r[0], r[1]};
}

// ---- LinalgCholesky -------------------------------------------------------------------------
LUCID_REGISTER_OP(LinalgCholesky, "upper:bool", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveOutputs;
  d.infer = [](const TensorList& in, const Attrs&) {
    check_square("linalg.cholesky", "A", in[0]);
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {  // Murray (2016): gA = L^-T Phi(L^T gL) L^-1, Phi = symmetrised tril
    bool upper = c.attrs.b("upper");
    Tensor L = upper ? mT(c.outputs[0]) : c.outputs[0];
    Tensor gL = upper ? mT(c.grads[0]) : c.grads[0];
    Tensor gA = tril(matmul(mT(L), gL));
    gA = mul_scalar(add(gA, mT(tril(gA, -1))), 0.5);
    gA = solve_tri_raw(mT(L), gA, true, false);
    return TensorList{solve_tri_right(L, gA, false)};
  };
  return d;
}());

Tensor linalg_cholesky(const Tensor& A, bool upper) { return dispatch1(OpId::LinalgCholesky, {A}, {{"upper", upper}}); }

// ---- LinalgQr -------------------------------------------------------------------------------
LUCID_REGISTER_OP(LinalgQr, "mode:str", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveOutputs;
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_matrix("linalg.qr", "A", in[0]);
    const std::string& mode = a.s("mode");
    LUCID_CHECK(mode == "reduced" || mode == "complete" || mode == "r", ValueError,
                "linalg.qr: argument 'mode' expected 'reduced', 'complete' or 'r', got '", mode, "'");
    const Tensor& A = in[0];
    int64_t m = rows(A), n = cols(A), k = std::min(m, n);
    Shape b = batch_of(A);
    bool complete = mode == "complete";
    Shape q = mode == "r" ? Shape{0} : with(b, {m, complete ? m : k});
    return std::vector<TensorMeta>{{q, A.dtype()}, {with(b, {complete ? m : k, n}), A.dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    const std::string& mode = c.attrs.s("mode");
    LUCID_CHECK(mode != "r", Error,
                "linalg.qr: The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
                "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
    const Tensor &Q = c.outputs[0], &R = c.outputs[1], &gQ = c.grads[0], &gR = c.grads[1];
    int64_t m = rows(Q), n = cols(R);
    LUCID_CHECK(mode == "reduced" || m <= n, Error,
                "linalg.qr: The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
    Tensor M;  // gR R^T - Q^T gQ
    if (gR.defined()) M = matmul(gR, mT(R));
    if (gQ.defined()) M = M.defined() ? sub(M, matmul(mT(Q), gQ)) : neg(matmul(mT(Q), gQ));
    if (m >= n) {
      Tensor T = triu(M);
      Tensor sym = sub(add(T, mT(T)), diag_embed(diagonal(T, 0, -2, -1)));  // T + T^T with the diagonal once
      Tensor b = matmul(Q, sym);
      if (gQ.defined()) b = add(b, gQ);
      return TensorList{solve_tri_right(mT(R), b, false)};  // b R^-T
    }
    Tensor Mn = neg(M);
    Tensor head = matmul(Q, tril(sub(Mn, mT(Mn))));
    head = solve_tri_right(mT(narrow(R, -1, 0, m)), head, false);  // head X^-T, X = R[:, :m]
    Shape zs = Q.shape();
    zs.back() = n - m;
    Tensor gA = cat({head, full(zs, 0.0, Q.dtype())}, -1);
    if (gR.defined()) gA = add(gA, matmul(Q, gR));
    return TensorList{gA};
  };
  return d;
}());

std::pair<Tensor, Tensor> linalg_qr(const Tensor& A, const std::string& mode) {
  TensorList r = dispatch(OpId::LinalgQr, {A}, {{"mode", mode}});
  return {r[0], r[1]};
}

// ---- LinalgSvd ------------------------------------------------------------------------------
namespace {
// torch's svd_backward for reduced factors U [*, m, k], S [*, k], Vh [*, k, n].
Tensor svd_backward(const Tensor& gU, const Tensor& gS, const Tensor& gVh, const Tensor& U, const Tensor& S,
                    const Tensor& Vh) {
  int64_t m = rows(U), n = cols(Vh);
  if (!gU.defined() && !gVh.defined())
    return m >= n ? matmul(U, mul(unsqueeze(gS, -1), Vh)) : matmul(mul(U, unsqueeze(gS, -2)), Vh);
  auto skew = [](const Tensor& X) { return sub(X, mT(X)); };
  Tensor E = differences(mul(S, S));
  Tensor Srow = unsqueeze(S, -2), Scol = unsqueeze(S, -1);
  Tensor ret;
  if (gU.defined() && gVh.defined())
    ret = div(add(mul(skew(matmul(mT(U), gU)), Srow), mul(Scol, skew(matmul(Vh, mT(gVh))))), E);
  else if (gU.defined())
    ret = mul(div(skew(matmul(mT(U), gU)), E), Srow);
  else
    ret = mul(Scol, div(skew(matmul(Vh, mT(gVh))), E));
  if (gS.defined()) ret = add(ret, diag_embed(gS));
  if (m > n && gU.defined()) {  // gA = [U ret + (I - U U^T) gU S^-1] Vh
    Tensor gA = matmul(U, ret);
    Tensor gUSinv = div(gU, Srow);
    gA = sub(add(gA, gUSinv), matmul(U, matmul(mT(U), gUSinv)));
    return matmul(gA, Vh);
  }
  if (m < n && gVh.defined()) {  // gA = U [ret Vh + S^-1 gVh (I - V Vh)]
    Tensor gA = matmul(ret, Vh);
    Tensor SinvgVh = div(gVh, Scol);
    gA = sub(add(gA, SinvgVh), matmul(matmul(SinvgVh, mT(Vh)), Vh));
    return matmul(U, gA);
  }
  return m >= n ? matmul(U, matmul(ret, Vh)) : matmul(matmul(U, ret), Vh);
}
}  // namespace

LUCID_REGISTER_OP(LinalgSvd, "full_matrices:bool, compute_uv:bool", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveOutputs;
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_matrix("linalg.svd", "A", in[0]);
    const Tensor& A = in[0];
    int64_t m = rows(A), n = cols(A), k = std::min(m, n);
    bool full = a.b("full_matrices"), uv = a.b("compute_uv");
    Shape b = batch_of(A);
    Shape us = uv ? with(b, {m, full ? m : k}) : Shape{0}, vs = uv ? with(b, {full ? n : k, n}) : Shape{0};
    return std::vector<TensorMeta>{{us, A.dtype()}, {with(b, {k}), A.dtype()}, {vs, A.dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    LUCID_CHECK(c.attrs.b("compute_uv"), Error,
                "linalg.svd: the gradient needs the singular vectors, which were not computed (compute_uv=False)");
    const Tensor &S = c.outputs[1];
    int64_t k = cols(S);
    bool full = c.attrs.b("full_matrices");
    auto narrow_u = [&](const Tensor& t) { return full && t.defined() ? narrow(t, -1, 0, k) : t; };
    auto narrow_v = [&](const Tensor& t) { return full && t.defined() ? narrow(t, -2, 0, k) : t; };
    return TensorList{svd_backward(narrow_u(c.grads[0]), c.grads[1], narrow_v(c.grads[2]), narrow_u(c.outputs[0]), S,
                                   narrow_v(c.outputs[2]))};
  };
  return d;
}());

std::tuple<Tensor, Tensor, Tensor> linalg_svd(const Tensor& A, bool full_matrices) {
  TensorList r = dispatch(OpId::LinalgSvd, {A}, {{"full_matrices", full_matrices}, {"compute_uv", true}});
  return {r[0], r[1], r[2]};
}

Tensor linalg_svdvals(const Tensor& A) {
  // The singular vectors are computed only when a gradient will need them (as torch does).
  bool uv = GradMode::is_enabled() && A.defined() && A.requires_grad();
  return dispatch(OpId::LinalgSvd, {A}, {{"full_matrices", false}, {"compute_uv", uv}})[1];
}

// ---- LinalgEigh -----------------------------------------------------------------------------
LUCID_REGISTER_OP(LinalgEigh, "upper:bool, compute_v:bool", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveOutputs;
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_square("linalg.eigh", "A", in[0]);
    const Tensor& A = in[0];
    Shape vs = a.b("compute_v") ? A.shape() : Shape{0};
    return std::vector<TensorMeta>{{batch_of(A, 1), A.dtype()}, {vs, A.dtype()}};
  };
  d.vjp = [](const VjpContext& c) {  // gA = V (diag(gL) + skew(V^T gV) / 2E) V^T
    LUCID_CHECK(c.attrs.b("compute_v"), Error,
                "linalg.eigh: the gradient needs the eigenvectors, which were not computed (compute_v=False)");
    const Tensor &L = c.outputs[0], &V = c.outputs[1], &gL = c.grads[0], &gV = c.grads[1];
    if (!gV.defined()) return TensorList{matmul(mul(V, unsqueeze(gL, -2)), mT(V))};
    Tensor VgV = matmul(mT(V), gV);
    Tensor ret = div(mul_scalar(sub(VgV, mT(VgV)), 0.5), differences(L));
    if (gL.defined()) ret = add(ret, diag_embed(gL));
    return TensorList{matmul(V, matmul(ret, mT(V)))};
  };
  return d;
}());

namespace {
bool parse_uplo(const std::string& uplo, const char* op) {
  LUCID_CHECK(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u", ValueError, op,
              ": argument 'UPLO' expected 'L' or 'U', got '", uplo, "'");
  return uplo == "U" || uplo == "u";
}
}  // namespace

std::pair<Tensor, Tensor> linalg_eigh(const Tensor& A, const std::string& uplo) {
  TensorList r = dispatch(OpId::LinalgEigh, {A}, {{"upper", parse_uplo(uplo, "linalg.eigh")}, {"compute_v", true}});
  return {r[0], r[1]};
}

Tensor linalg_eigvalsh(const Tensor& A, const std::string& uplo) {
  bool v = GradMode::is_enabled() && A.defined() && A.requires_grad();
  return dispatch(OpId::LinalgEigh, {A}, {{"upper", parse_uplo(uplo, "linalg.eigvalsh")}, {"compute_v", v}})[0];
}

// ---- pinv and LinalgLstsq -------------------------------------------------------------------
Tensor linalg_pinv(const Tensor& A, std::optional<double> atol, std::optional<double> rtol) {
  check_matrix("linalg.pinv", "A", A);
  int64_t m = rows(A), n = cols(A);
  if (std::min(m, n) == 0) return full(with(batch_of(A), {n, m}), 0.0, A.dtype());
  // torch's defaults: rtol = eps * max(m, n) unless only a positive atol is given.
  double rt = rtol ? *rtol : (atol && *atol > 0 ? 0.0 : dtype_eps(A.dtype()) * double(std::max(m, n)));
  auto [U, S, Vh] = linalg_svd(A, false);
  Tensor cutoff = mul_scalar(amax(S, {-1}, true), rt);
  if (atol) cutoff = clamp(cutoff, *atol, std::nullopt);
  Tensor Sinv = where(gt(S, cutoff), reciprocal(S), zeros_like(S));
  return matmul(mul(mT(Vh), unsqueeze(Sinv, -2)), mT(U));
}

namespace {
// torch's pinv_backward: the gradient through pinvA = pinv(A) given g = d loss / d pinvA.
Tensor pinv_backward(const Tensor& g, const Tensor& P, const Tensor& A) {
  int64_t m = rows(A), n = cols(A);
  Tensor Ph = mT(P), gh = mT(g);
  if (m <= n) {
    Tensor K = matmul(gh, P);
    Tensor KPh = matmul(K, Ph);
    return add(sub(add(neg(mT(matmul(P, K))), KPh), matmul(matmul(A, P), KPh)),
               matmul(matmul(Ph, P), sub(gh, matmul(K, A))));
  }
  Tensor K = matmul(P, gh);
  Tensor PhK = matmul(Ph, K);
  return sub(add(add(neg(mT(matmul(K, P))), matmul(matmul(sub(gh, matmul(A, K)), P), Ph)), PhK),
             matmul(matmul(PhK, P), A));
}
}  // namespace

LUCID_REGISTER_OP(LinalgLstsq, "rcond:float, driver:str", [] {
  OpDef d;
  d.num_inputs = 2;
  d.save = kSaveInputs;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const char* op = "linalg.lstsq";
    check_matrix(op, "A", in[0]);
    check_rhs(op, in[0], in[1]);
    const std::string& drv = a.s("driver");
    LUCID_CHECK(drv == "gels" || drv == "gelsy" || drv == "gelsd" || drv == "gelss", ValueError, op,
                ": argument 'driver' expected one of 'gels', 'gelsy', 'gelsd', 'gelss', got '", drv, "'");
    const Tensor &A = in[0], &B = in[1];
    Shape b = batch_of(A);
    bool has_rank = drv != "gels", has_sv = drv == "gelsd" || drv == "gelss";
    return std::vector<TensorMeta>{{with(b, {cols(A), cols(B)}), A.dtype()},
                                   {has_rank ? b : Shape{0}, DType::Int64},
                                   {has_sv ? with(b, {std::min(rows(A), cols(A))}) : Shape{0}, A.dtype()}};
  };
  d.vjp = [](const VjpContext& c) {  // X = pinv(A) B
    const Tensor &A = c.inputs[0], &B = c.inputs[1], &gX = c.grads[0];
    TensorList r(2);
    if (!gX.defined()) return r;
    Tensor P = linalg_pinv(A, std::nullopt, std::nullopt);
    if (c.needs_grad[0]) r[0] = pinv_backward(matmul(gX, mT(B)), P, A);
    if (c.needs_grad[1]) r[1] = matmul(mT(P), gX);
    return r;
  };
  return d;
}());

std::tuple<Tensor, Tensor, Tensor> linalg_lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond,
                                                 const std::string& driver) {
  const char* op = "linalg.lstsq";
  check_matrix(op, "A", A);
  double rc = rcond ? *rcond : dtype_eps(A.dtype()) * double(std::max(rows(A), cols(A)));
  TensorList r(3);
  Tensor X = with_rhs(op, A, B, [&](const Tensor& a, const Tensor& b) {
    r = dispatch(OpId::LinalgLstsq, {a, b}, {{"rcond", rc}, {"driver", driver}});
    return r[0];
  });
  return {X, r[1], r[2]};
}

}  // namespace lucid
