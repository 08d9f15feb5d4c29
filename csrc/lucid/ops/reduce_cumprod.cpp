// Cumprod (cumulative product along a dim; integer and bool inputs give int64, as PyTorch) and
// CumprodBackward, its fused gradient. The gradient of x_k is sum_{j>=k} g_j prod_{i<=j, i!=k} x_i,
// which is exact with zeros: with z the first zero of a row, positions before z get
// (sum_{k<=j<z} g_j y_j) / x_k, position z gets sum_{j>=z} g_j y_{z-1} prod_{z<i<=j} x_i, and
// positions after z get 0 (one O(n) pass per row; PyTorch's formula). With create_graph the VJP
// is the O(n^2) composite of ops instead (cumprod of x with x_k replaced by 1, for every k), so
// double backward works. Also the in-place scans cumsum_ and cumprod_.
#include "lucid/autograd/grad_mode.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/creation.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/movement.h"
#include "lucid/ops/reduce.h"
#include "lucid/ops/reduce_util.h"

namespace lucid {

namespace {

// f(base) for every row's first flat offset; the row's elements are g.inner apart.
template <class F>
void for_scan_rows(const DimRows& g, const F& f) {
  parallel_for(0, g.count(), std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(g.n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) f(g.base(r));
  });
}

template <class T>
void cumprod_rows(const T* x, T* y, const DimRows& g) {
  using C = compute_t<T>;
  using A = acc_t<C>;
  for_scan_rows(g, [&](int64_t base) {
    A acc = 1;
    for (int64_t k = 0; k < g.n; ++k) {
      int64_t p = base + k * g.inner;
      acc *= static_cast<A>(static_cast<C>(x[p]));
      y[p] = static_cast<T>(static_cast<C>(acc));
    }
  });
}

template <class T>
void cumprod_backward_rows(const T* gr, const T* x, const T* y, T* gi, const DimRows& g) {
  using C = compute_t<T>;
  for_scan_rows(g, [&](int64_t base) {
    auto at = [&](const T* p, int64_t k) { return static_cast<double>(static_cast<C>(p[base + k * g.inner])); };
    int64_t z = 0;
    while (z < g.n && at(x, z) != 0.0) ++z;
    double acc = 0;
    for (int64_t k = z - 1; k >= 0; --k) {
      acc += at(gr, k) * at(y, k);
      gi[base + k * g.inner] = static_cast<T>(static_cast<C>(acc / at(x, k)));
    }
    if (z == g.n) return;
    double p = z > 0 ? at(y, z - 1) : 1.0;
    double s = at(gr, z) * p;
    for (int64_t j = z + 1; j < g.n; ++j) {
      p *= at(x, j);
      s += at(gr, j) * p;
      gi[base + j * g.inner] = static_cast<T>(C(0));
    }
    gi[base + z * g.inner] = static_cast<T>(static_cast<C>(s));
  });
}

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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const Tensor& o = out[0];
    Tensor x = as_dtype(in[0], o.dtype()).contiguous_data();
    if (x.numel() == 0) return;
    DimRows g = dim_rows(x.shape(), wrap_dim(a.i("dim"), x.ndim(), "cumprod"));
    LUCID_DISPATCH_NUMERIC(o.dtype(), "cumprod", [&] { cumprod_rows<scalar_t>(x.data<scalar_t>(), o.data<scalar_t>(), g); });
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    const Tensor& x = c.inputs[0];
    int64_t dim = wrap_dim(c.attrs.i("dim"), x.ndim(), "cumprod");
    if (x.ndim() == 0 || x.shape()[dim] <= 1) return TensorList{g};
    Tensor xg = as_dtype(x, g.dtype());
    if (GradMode::is_enabled()) return TensorList{cumprod_grad_composite(g, xg, dim)};
    return TensorList{dispatch1(OpId::CumprodBackward, {g, xg, as_dtype(c.outputs[0], g.dtype())}, {{"dim", dim}})};
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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    Tensor g = in[0].contiguous_data(), x = in[1].contiguous_data(), y = in[2].contiguous_data();
    if (g.numel() == 0) return;
    DimRows r = dim_rows(g.shape(), wrap_dim(a.i("dim"), g.ndim(), "cumprod_backward"));
    LUCID_DISPATCH_FLOATING(g.dtype(), "cumprod_backward", [&] {
      cumprod_backward_rows<scalar_t>(g.data<scalar_t>(), x.data<scalar_t>(), y.data<scalar_t>(), out[0].data<scalar_t>(), r);
    });
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
