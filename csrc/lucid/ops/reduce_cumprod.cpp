// Cumprod (cumulative product along a dim; integer and bool inputs give int64, as PyTorch) and
// CumprodBackward, its fused gradient. The gradient of x_k is sum_{j>=k} g_j prod_{i<=j, i!=k} x_i,
// which is exact with zeros: with z the first zero of a row, positions before z get
// (sum_{k<=j<z} g_j y_j) / x_k, position z gets sum_{j>=z} g_j y_{z-1} prod_{z<i<=j} x_i, and
// positions after z get 0 (one O(n) pass per row; PyTorch's formula). With create_graph the VJP
// is the O(n^2) composite of ops instead (cumprod of x with x_k replaced by 1, for every k), so
// double backward works. Also the in-place scans cumsum_ and cumprod_. Kernels:
// backends/<device>/kernels/scan.*.
#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/creation.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/movement.h"
#include "lucid/ops/reduce.h"

namespace lucid {

namespace {

// x in dtype dt, through the Cast op (recorded by autograd and the tracer); x itself when it has it.
Tensor in_dtype(const Tensor& x, DType dt) { return x.dtype() == dt ? x : cast(x, dt); }

// The create_graph form: C[.., k, j] = cumprod over i of (x_i, with x_k replaced by 1), so
// grad_k = sum_{j>=k} g_j C[k, j]. Written with differentiable ops; O(n^2) memory per row.
Tensor cumprod_grad_composite(const Tensor& g, const Tensor& x, int64_t dim) {
  int64_t n = x.shape()[dim];
  Tensor xm = movedim(x, {dim}, {-1}), gm = movedim(g, {dim}, {-1});
  Tensor diag = cast(eye(n, n, DType::Float32), DType::Bool);
  Tensor omitted = where(diag, scalar_tensor(1.0), unsqueeze(xm, -2));
  Tensor upper = triu(full({n, n}, 1.0, g.dtype()));  // j >= k
  Tensor gk = sum(mul(mul(cumprod(omitted, -1), upper), unsqueeze(gm, -2)), {-1});
  return movedim(gk, {-1}, {dim});
}

}  // namespace

LUCID_REGISTER_OP(Cumprod, "dim:int, dtype:dtype?", [] {
  OpDef d;
  d.api_name = "cumprod";
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    wrap_dim(a.i("dim"), in[0].ndim(), "cumprod");
    DType t = a.has("dtype") ? a.dtype("dtype") : is_integral(in[0].dtype(), true) ? DType::Int64 : in[0].dtype();
    return std::vector<TensorMeta>{{in[0].shape(), t}};
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    const Tensor& x = c.inputs[0];
    int64_t dim = wrap_dim(c.attrs.i("dim"), x.ndim(), "cumprod");
    if (x.ndim() == 0 || x.shape()[dim] <= 1) return TensorList{g};
    Tensor xg = in_dtype(x, g.dtype());
    if (GradMode::is_enabled()) return TensorList{cumprod_grad_composite(g, xg, dim)};
    return TensorList{dispatch1(OpId::CumprodBackward, {g, xg, in_dtype(c.outputs[0], g.dtype())}, {{"dim", dim}})};
  };
  return d;
}());

LUCID_REGISTER_OP(CumprodBackward, "dim:int", [] {
  OpDef d;
  d.api_name = "cumprod_backward";
  d.num_inputs = 3;
  d.differentiable = false;  // create_graph uses the composite form (see Cumprod's VJP)
  d.infer = [](const TensorList& in, const Attrs& a) {
    LUCID_CHECK(in[0].shape() == in[1].shape() && in[1].shape() == in[2].shape() && in[0].dtype() == in[1].dtype() &&
                    in[1].dtype() == in[2].dtype() && is_floating(in[0].dtype()),
                ValueError, "cumprod_backward: expected grad, input and output of one shape and floating dtype");
    wrap_dim(a.i("dim"), in[0].ndim(), "cumprod_backward");
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
  };
  return d;
}());

Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  Attrs a{{"dim", dim}};
  if (dtype) a.set("dtype", *dtype);
  return dispatch1(OpId::Cumprod, {x}, a);
}

const Tensor& cumsum_(const Tensor& x, int64_t dim, std::optional<DType> dtype) { return copy_(x, cumsum(x, dim, dtype)); }

// Cumprod saves its input for backward: a recorded product reads a copy of x, which the write
// into x does not change (PyTorch saves the original self for the same reason).
const Tensor& cumprod_(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  Tensor src = x.requires_grad() && GradMode::is_enabled() ? cast(x, x.dtype()) : x;
  return copy_(x, cumprod(src, dim, dtype));
}

}  // namespace lucid
