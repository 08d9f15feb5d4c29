// CPU kernels of the reductions (records in ops/reduce_ops.cpp): Mean, Var, Std, Prod,
// ProdOthers, LogSumExp, All, Any, and reduce_sum_into, the sum the core Sum and SumTo kernels
// call. Each is a Reducer run on the shared row-reduction driver (backends/cpu/reduce_loops.h);
// floats accumulate in double, so float32 results match PyTorch to ~1e-7 relative.
#include <sleef.h>

#include <cmath>

#include "lucid/backends/cpu/reduce_loops.h"

namespace lucid::cpu {

namespace {

// ---- Sum ------------------------------------------------------------------------------------------
template <class T>
struct SumR {
  using C = compute_t<T>;
  using S = acc_t<C>;
  T* out;
  S init() const { return 0; }
  void step(S& s, C v, int64_t) const { s += static_cast<S>(v); }
  void row(S& s, const T* p, int64_t, int64_t n) const { s += sum_span<T, S>(p, n); }
  void merge(S& a, const S& b) const { a += b; }
  void write(const S& s, int64_t o) const { out[o] = static_cast<T>(static_cast<C>(s)); }
};

}  // namespace

void reduce_sum_into(const Tensor& x, const IntList& dims, const Tensor& out) {
  LUCID_CHECK(out.is_contiguous(), Error, "reduce_sum_into: the output must be contiguous");
  Tensor xc = as_dtype(x, out.dtype());
  RowLayout L = row_layout(xc, reduce_dims(dims, xc.ndim(), "sum"));
  LUCID_CHECK(L.outer * L.inner == out.numel(), Error, "reduce_sum_into: output has ", out.numel(),
              " elements, expected ", L.outer * L.inner);
  if (out.dtype() == DType::Bool) {
    Tensor tmp = Tensor::empty(out.shape(), DType::Int64);
    reduce_sum_into(xc, dims, tmp);
    copy_into(out, tmp);
    return;
  }
  LUCID_DISPATCH_NUMERIC(out.dtype(), "sum", [&] { run_reduce<scalar_t>(L, SumR<scalar_t>{out.data<scalar_t>()}); });
}

namespace {

// ---- Mean ---------------------------------------------------------------------------------------
template <class T>
struct MeanR {
  using C = compute_t<T>;
  using S = double;
  T* out;
  double scale;
  S init() const { return 0.0; }
  void step(S& s, C v, int64_t) const { s += static_cast<double>(v); }
  void row(S& s, const T* p, int64_t, int64_t n) const { s += sum_span<T, double>(p, n); }
  void merge(S& a, const S& b) const { a += b; }
  void write(const S& s, int64_t o) const { out[o] = static_cast<T>(static_cast<C>(s * scale)); }
};

void mean_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  Tensor x = as_dtype(in[0], o.dtype());
  IntList dims = reduce_attr_dims(a, x.ndim(), "mean");
  RowLayout L = row_layout(x, dims);
  LUCID_DISPATCH_FLOATING(o.dtype(), "mean", [&] {
    run_reduce<scalar_t>(L, MeanR<scalar_t>{o.data<scalar_t>(), 1.0 / static_cast<double>(L.r)});
  });
}

// ---- Var / Std (Welford, merged with Chan's formula: ops/reduce_util.h) --------------------------
template <class T>
struct VarR {
  using C = compute_t<T>;
  using S = Welford;
  T* out;
  double correction;
  bool take_sqrt;
  S init() const { return {}; }
  void step(S& s, C v, int64_t) const { welford_step(s, static_cast<double>(v)); }
  // Two passes over a block (mean, then squared deviations), merged with Chan's formula.
  void row(S& s, const T* p, int64_t, int64_t n) const {
    if (n == 0) return;
    double m = sum_span<T, double>(p, n) / static_cast<double>(n);
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; ++l) {
        double d = static_cast<double>(static_cast<C>(p[i + l])) - m;
        a[l] += d * d;
      }
    double m2 = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    for (; i < n; ++i) {
      double d = static_cast<double>(static_cast<C>(p[i])) - m;
      m2 += d * d;
    }
    merge(s, S{static_cast<double>(n), m, m2});
  }
  void cols(S* st, const T* p, int64_t r, int64_t stride, int64_t w) const {
    if (r == 0) return;
    double sum[kReduceCols] = {}, m2[kReduceCols] = {};
    for (int64_t k = 0; k < r; ++k)
      for (int64_t j = 0; j < w; ++j) sum[j] += static_cast<double>(static_cast<C>(p[k * stride + j]));
    for (int64_t j = 0; j < w; ++j) sum[j] /= static_cast<double>(r);
    for (int64_t k = 0; k < r; ++k)
      for (int64_t j = 0; j < w; ++j) {
        double d = static_cast<double>(static_cast<C>(p[k * stride + j])) - sum[j];
        m2[j] += d * d;
      }
    for (int64_t j = 0; j < w; ++j) merge(st[j], S{static_cast<double>(r), sum[j], m2[j]});
  }
  void merge(S& a, const S& b) const { welford_merge(a, b); }
  void write(const S& s, int64_t o) const { out[o] = static_cast<T>(static_cast<C>(welford_result(s, correction, take_sqrt))); }
};

void var_std_kernel(const TensorList& in, const TensorList& out, const Attrs& a, bool take_sqrt) {
  const Tensor& x = in[0];
  const Tensor& o = out[0];
  IntList dims = reduce_attr_dims(a, x.ndim(), take_sqrt ? "std" : "var");
  RowLayout L = row_layout(x, dims);
  LUCID_DISPATCH_FLOATING(o.dtype(), take_sqrt ? "std" : "var", [&] {
    run_reduce<scalar_t>(L, VarR<scalar_t>{o.data<scalar_t>(), a.f("correction"), take_sqrt});
  });
}

void var_kernel(const TensorList& in, const TensorList& out, const Attrs& a) { var_std_kernel(in, out, a, false); }
void std_kernel(const TensorList& in, const TensorList& out, const Attrs& a) { var_std_kernel(in, out, a, true); }

// ---- Prod -----------------------------------------------------------------------------------------
template <class T>
struct ProdR {
  using C = compute_t<T>;
  using S = acc_t<C>;
  T* out;
  S init() const { return 1; }
  void step(S& s, C v, int64_t) const { s *= static_cast<S>(v); }
  void row(S& s, const T* p, int64_t, int64_t n) const { s *= prod_span<T, S>(p, n); }
  void merge(S& a, const S& b) const { a *= b; }
  void write(const S& s, int64_t o) const { out[o] = static_cast<T>(static_cast<C>(s)); }
};

void prod_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  Tensor x = as_dtype(in[0], o.dtype());
  RowLayout L = row_layout(x, reduce_attr_dims(a, x.ndim(), "prod"));
  LUCID_DISPATCH_NUMERIC(o.dtype(), "prod", [&] { run_reduce<scalar_t>(L, ProdR<scalar_t>{o.data<scalar_t>()}); });
}

// Product of the other elements of each reduction group (exact with zeros: prefix * suffix).
template <class T>
void prod_others_rows(const RowLayout& L, T* dst) {
  using C = compute_t<T>;
  using A = acc_t<C>;
  const T* x = L.data.template data<T>();
  int64_t r = L.r, inner = L.inner;
  int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(r * inner, 1));
  parallel_for(0, L.outer, grain, [&](int64_t b, int64_t e) {
    std::vector<A> acc(inner);
    std::vector<A> pre(r * inner);
    for (int64_t o = b; o < e; ++o) {
      const T* src = x + o * r * inner;
      T* out = dst + o * r * inner;
      std::fill(acc.begin(), acc.end(), A(1));
      for (int64_t k = 0; k < r; ++k)
        for (int64_t j = 0; j < inner; ++j) {
          pre[k * inner + j] = acc[j];
          acc[j] *= static_cast<A>(static_cast<C>(src[k * inner + j]));
        }
      std::fill(acc.begin(), acc.end(), A(1));
      for (int64_t k = r - 1; k >= 0; --k)
        for (int64_t j = 0; j < inner; ++j) {
          out[k * inner + j] = static_cast<T>(static_cast<C>(pre[k * inner + j] * acc[j]));
          acc[j] *= static_cast<A>(static_cast<C>(src[k * inner + j]));
        }
    }
  });
}

void prod_others_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  RowLayout L = row_layout(x, reduce_attr_dims(a, x.ndim(), "prod"));
  Tensor dst = L.perm.empty() ? out[0] : Tensor::empty(L.data.shape(), x.dtype());
  LUCID_DISPATCH_NUMERIC(x.dtype(), "prod", [&] { prod_others_rows<scalar_t>(L, dst.data<scalar_t>()); });
  if (!L.perm.empty()) unpermute_into(out[0], dst, L.perm);
}

// ---- LogSumExp (online: running max m and sum s of exp(v - m), ops/reduce_util.h) ---------------
// exp in place over n values (SLEEF AVX2, 1 ulp).
inline void exp_inplace(float* v, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(v + i, Sleef_expf8_u10avx2(_mm256_loadu_ps(v + i)));
  for (; i < n; ++i) v[i] = std::exp(v[i]);
}
inline void exp_inplace(double* v, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(v + i, Sleef_expd4_u10avx2(_mm256_loadu_pd(v + i)));
  for (; i < n; ++i) v[i] = std::exp(v[i]);
}

template <class T>
struct LseR {
  using C = compute_t<T>;
  using E = std::conditional_t<std::is_same_v<T, double>, double, float>;  // exp precision
  using S = Lse;
  T* out;
  S init() const { return {-INFINITY, 0.0}; }
  static void add(S& st, double m, double s) { lse_add(st, m, s); }
  // A block with maximum m and the sum of exp(x - m) (m = +-inf or NaN decide by themselves).
  static void add_block(S& st, double m, double s) {
    if (std::isinf(m) || std::isnan(m)) add(st, m, 1.0);
    else add(st, m, s);
  }
  void step(S& st, C v, int64_t) const { add(st, static_cast<double>(v), 1.0); }
  // Two passes: the block's max, then the sum of exp(x - max) in E with SLEEF.
  void row(S& st, const T* p, int64_t, int64_t n) const {
    if (n == 0) return;
    C m = ext_span<T, true>(p, n);
    double acc = 0;
    if (!std::isinf(static_cast<double>(m)) && !std::isnan(static_cast<double>(m))) {
      E buf[256];
      for (int64_t i0 = 0; i0 < n; i0 += 256) {
        int64_t w = std::min<int64_t>(256, n - i0);
        for (int64_t j = 0; j < w; ++j) buf[j] = static_cast<E>(static_cast<C>(p[i0 + j])) - static_cast<E>(m);
        exp_inplace(buf, w);
        acc += sum_span<E, double>(buf, w);
      }
    }
    add_block(st, static_cast<double>(m), acc);
  }
  void cols(S* st, const T* p, int64_t r, int64_t stride, int64_t w) const {
    if (r == 0) return;
    C m[kReduceCols];
    for (int64_t j = 0; j < w; ++j) m[j] = ext_identity<C, true>();
    for (int64_t k = 0; k < r; ++k)
      for (int64_t j = 0; j < w; ++j) m[j] = ext_select<C, true>(static_cast<C>(p[k * stride + j]), m[j]);
    double acc[kReduceCols] = {};
    E buf[kReduceCols];
    for (int64_t k = 0; k < r; ++k) {
      for (int64_t j = 0; j < w; ++j) buf[j] = static_cast<E>(static_cast<C>(p[k * stride + j])) - static_cast<E>(m[j]);
      exp_inplace(buf, w);
      for (int64_t j = 0; j < w; ++j) acc[j] += static_cast<double>(buf[j]);
    }
    for (int64_t j = 0; j < w; ++j) add_block(st[j], static_cast<double>(m[j]), acc[j]);
  }
  void merge(S& a, const S& b) const { add(a, b.m, b.s); }
  void write(const S& st, int64_t o) const { out[o] = static_cast<T>(static_cast<C>(lse_result(st))); }
};

void logsumexp_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  Tensor x = as_dtype(in[0], o.dtype());
  RowLayout L = row_layout(x, reduce_attr_dims(a, x.ndim(), "logsumexp"));
  LUCID_DISPATCH_FLOATING(o.dtype(), "logsumexp", [&] { run_reduce<scalar_t>(L, LseR<scalar_t>{o.data<scalar_t>()}); });
}

// ---- All / Any ------------------------------------------------------------------------------------
template <class T, bool IsAll, class O>
struct BoolR {
  using C = compute_t<T>;
  using S = bool;
  O* out;
  S init() const { return IsAll; }
  void step(S& s, C v, int64_t) const {
    bool b = v != C(0);
    s = IsAll ? (s && b) : (s || b);
  }
  void merge(S& a, const S& b) const { a = IsAll ? (a && b) : (a || b); }
  void write(const S& s, int64_t o) const { out[o] = static_cast<O>(s); }
};

template <bool IsAll>
void bool_reduce_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  const Tensor& o = out[0];
  RowLayout L = row_layout(x, reduce_attr_dims(a, x.ndim(), IsAll ? "all" : "any"));
  LUCID_DISPATCH_ALL(x.dtype(), IsAll ? "all" : "any", [&] {
    if (o.dtype() == DType::UInt8) run_reduce<scalar_t>(L, BoolR<scalar_t, IsAll, uint8_t>{o.data<uint8_t>()});
    else run_reduce<scalar_t>(L, BoolR<scalar_t, IsAll, bool>{o.data<bool>()});
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Mean, CPU, mean_kernel);
LUCID_REGISTER_KERNEL(Var, CPU, var_kernel);
LUCID_REGISTER_KERNEL(Std, CPU, std_kernel);
LUCID_REGISTER_KERNEL(Prod, CPU, prod_kernel);
LUCID_REGISTER_KERNEL(ProdOthers, CPU, prod_others_kernel);
LUCID_REGISTER_KERNEL(LogSumExp, CPU, logsumexp_kernel);
LUCID_REGISTER_KERNEL(All, CPU, bool_reduce_kernel<true>);
LUCID_REGISTER_KERNEL(Any, CPU, bool_reduce_kernel<false>);

}  // namespace lucid::cpu
