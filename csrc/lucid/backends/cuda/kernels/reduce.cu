// CUDA kernels of the reductions (records in ops/core_sum.cpp and ops/reduce_ops.cpp): Sum,
// SumTo, Mean, Var, Std, Prod, LogSumExp, All, Any. Each is a Reducer run on the row-reduction
// driver (reduce_driver.cuh), the same math as the CPU's (backends/cpu/kernels/reduce.cpp): the
// input is cast to the output dtype first, floats accumulate in double, integers in int64; var and
// std merge Welford states (Chan's formula); logsumexp keeps a running max and a rescaled sum (the
// states and their updates are ops/reduce_util.h's, shared with the CPU).
#include <cmath>

#include "lucid/backends/cuda/kernels/reduce_driver.cuh"

namespace lucid::cuda {

namespace {

// ---- Sum / Prod -------------------------------------------------------------------------------------
template <class T, bool IsProd>
struct SumProdR {
  using C = compute_t<T>;
  using S = acc_t<C>;
  T* out;
  __device__ S init() const { return IsProd ? S(1) : S(0); }
  __device__ void step(S& s, C v, int64_t) const {
    if constexpr (IsProd) s *= static_cast<S>(v);
    else s += static_cast<S>(v);
  }
  __device__ void merge(S& a, const S& b) const {
    if constexpr (IsProd) a *= b;
    else a += b;
  }
  __device__ void write(const S& s, int64_t o) const { store(out, o, static_cast<C>(s)); }
};

// out <- sum (or product) of x over dims, x cast to out's dtype first (bool: counted in int64).
template <bool IsProd>
void sum_prod_into(const Tensor& x, const IntList& dims, const Tensor& out, const char* name) {
  LUCID_CHECK(out.is_contiguous(), Error, name, ": the output must be contiguous");
  DeviceGuard g(out.device());
  if (out.dtype() == DType::Bool) {
    Tensor tmp = Tensor::empty(out.shape(), DType::Int64, out.device());
    sum_prod_into<IsProd>(x, dims, tmp, name);
    copy_on_device(out, tmp);
    return;
  }
  Tensor xc = x.dtype() == out.dtype() ? x : contiguous_as(x, out.dtype());
  RowLayout L = row_layout(xc, dims);
  LUCID_CHECK(L.outer * L.inner == out.numel(), Error, name, ": output has ", out.numel(), " elements, expected ",
              L.outer * L.inner);
  LUCID_DISPATCH_NUMERIC(out.dtype(), name, [&] {
    launch_reduce<scalar_t>(L, SumProdR<scalar_t, IsProd>{out.data<scalar_t>()}, out.device(), name);
  });
}

void sum_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  sum_prod_into<false>(in[0], reduce_attr_dims(a, in[0].ndim(), "sum"), out[0], "sum");
}

// The broadcast dims of x relative to the target shape (sum_to_dims, as the CPU).
void sum_to_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& x = in[0];
  IntList dims = sum_to_dims(x.shape(), out[0].shape());
  DeviceGuard g(out[0].device());
  if (dims.empty()) {
    copy_on_device(out[0], x);
    return;
  }
  sum_prod_into<false>(x, dims, out[0], "sum_to");
}

void prod_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  sum_prod_into<true>(in[0], reduce_attr_dims(a, in[0].ndim(), "prod"), out[0], "prod");
}

// ---- Mean -------------------------------------------------------------------------------------------
template <class T>
struct MeanR {
  using C = compute_t<T>;
  using S = double;
  T* out;
  double scale;
  __device__ S init() const { return 0.0; }
  __device__ void step(S& s, C v, int64_t) const { s += static_cast<double>(v); }
  __device__ void merge(S& a, const S& b) const { a += b; }
  __device__ void write(const S& s, int64_t o) const { store(out, o, static_cast<C>(s * scale)); }
};

void mean_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  DeviceGuard g(o.device());
  Tensor x = in[0].dtype() == o.dtype() ? in[0] : contiguous_as(in[0], o.dtype());
  RowLayout L = row_layout(x, reduce_attr_dims(a, x.ndim(), "mean"));
  LUCID_DISPATCH_FLOATING(o.dtype(), "mean", [&] {
    launch_reduce<scalar_t>(L, MeanR<scalar_t>{o.data<scalar_t>(), 1.0 / static_cast<double>(L.r)}, o.device(), "mean");
  });
}

// ---- Var / Std (the Welford state of ops/reduce_util.h) ---------------------------------------------
template <class T>
struct VarR {
  using C = compute_t<T>;
  using S = Welford;
  T* out;
  double correction;
  bool take_sqrt;
  __device__ S init() const { return {0.0, 0.0, 0.0}; }
  __device__ void step(S& s, C v, int64_t) const { welford_step(s, static_cast<double>(v)); }
  __device__ void merge(S& a, const S& b) const { welford_merge(a, b); }
  __device__ void write(const S& s, int64_t o) const { store(out, o, static_cast<C>(welford_result(s, correction, take_sqrt))); }
};

template <bool TakeSqrt>
void var_std_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* name = TakeSqrt ? "std" : "var";
  const Tensor& o = out[0];
  DeviceGuard g(o.device());
  RowLayout L = row_layout(in[0], reduce_attr_dims(a, in[0].ndim(), name));
  LUCID_DISPATCH_FLOATING(o.dtype(), name, [&] {
    launch_reduce<scalar_t>(L, VarR<scalar_t>{o.data<scalar_t>(), a.f("correction"), TakeSqrt}, o.device(), name);
  });
}

// ---- LogSumExp --------------------------------------------------------------------------------------
// The running max and rescaled sum of ops/reduce_util.h (lse_add, lse_result), as the CPU's LseR.
template <class T>
struct LseR {
  using C = compute_t<T>;
  using S = Lse;
  T* out;
  __device__ S init() const { return {-INFINITY, 0.0}; }
  __device__ void step(S& st, C v, int64_t) const { lse_add(st, static_cast<double>(v), 1.0); }
  __device__ void merge(S& a, const S& b) const { lse_add(a, b.m, b.s); }
  __device__ void write(const S& st, int64_t o) const { store(out, o, static_cast<C>(lse_result(st))); }
};

void logsumexp_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  DeviceGuard g(o.device());
  Tensor x = in[0].dtype() == o.dtype() ? in[0] : contiguous_as(in[0], o.dtype());
  RowLayout L = row_layout(x, reduce_attr_dims(a, x.ndim(), "logsumexp"));
  LUCID_DISPATCH_FLOATING(o.dtype(), "logsumexp", [&] {
    launch_reduce<scalar_t>(L, LseR<scalar_t>{o.data<scalar_t>()}, o.device(), "logsumexp");
  });
}

// ---- All / Any --------------------------------------------------------------------------------------
template <class T, bool IsAll, class O>
struct BoolR {
  using C = compute_t<T>;
  using S = bool;
  O* out;
  __device__ S init() const { return IsAll; }
  __device__ void step(S& s, C v, int64_t) const {
    bool b = v != C(0);
    s = IsAll ? (s && b) : (s || b);
  }
  __device__ void merge(S& a, const S& b) const { a = IsAll ? (a && b) : (a || b); }
  __device__ void write(const S& s, int64_t o) const { out[o] = static_cast<O>(s); }
};

template <bool IsAll>
void bool_reduce_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* name = IsAll ? "all" : "any";
  const Tensor& o = out[0];
  DeviceGuard g(o.device());
  RowLayout L = row_layout(in[0], reduce_attr_dims(a, in[0].ndim(), name));
  LUCID_DISPATCH_ALL(in[0].dtype(), name, [&] {
    if (o.dtype() == DType::UInt8)
      launch_reduce<scalar_t>(L, BoolR<scalar_t, IsAll, uint8_t>{o.data<uint8_t>()}, o.device(), name);
    else
      launch_reduce<scalar_t>(L, BoolR<scalar_t, IsAll, bool>{o.data<bool>()}, o.device(), name);
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Sum, CUDA, sum_kernel);
LUCID_REGISTER_KERNEL(SumTo, CUDA, sum_to_kernel);
LUCID_REGISTER_KERNEL(Mean, CUDA, mean_kernel);
LUCID_REGISTER_KERNEL(Var, CUDA, var_std_kernel<false>);
LUCID_REGISTER_KERNEL(Std, CUDA, var_std_kernel<true>);
LUCID_REGISTER_KERNEL(Prod, CUDA, prod_kernel);
LUCID_REGISTER_KERNEL(LogSumExp, CUDA, logsumexp_kernel);
LUCID_REGISTER_KERNEL(All, CUDA, bool_reduce_kernel<true>);
LUCID_REGISTER_KERNEL(Any, CUDA, bool_reduce_kernel<false>);

}  // namespace lucid::cuda
