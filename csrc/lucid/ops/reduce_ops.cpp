// Reductions: Mean, Var, Std, Prod (+ ProdOthers for its VJP), LogSumExp (+ ExpSub for its
// VJP), Cumsum, All, Any. Kernels run on the shared row-reduction driver (reduce_util.h) and
// accumulate floats in double, so float32 results match PyTorch to ~1e-7 relative. VJPs are
// written with ops.
#include <sleef.h>

#include <cmath>

#include "lucid/ops/elementwise_util.h"
#include "lucid/ops/reduce.h"
#include "lucid/ops/reduce_util.h"

namespace lucid {

// ---- shared helpers ---------------------------------------------------------------------------
static IntList attr_dims(const Attrs& a, int64_t ndim, const char* op) { return reduce_dims(a.ints("dims"), ndim, op); }

static std::vector<TensorMeta> reduce_meta(const char* op, const Tensor& x, const Attrs& a, DType out) {
  IntList dims = attr_dims(a, x.ndim(), op);
  return {{reduced_shape(x.shape(), dims, a.b("keepdim", false)), out}};
}

// The output gradient reshaped to the keepdim shape, so it broadcasts against the input.
static Tensor keep_shape(const Tensor& g, const VjpContext& c, const char* op) {
  const Shape& s = c.input_meta[0].shape;
  if (c.attrs.b("keepdim", false)) return g;
  IntList dims = attr_dims(c.attrs, static_cast<int64_t>(s.size()), op);
  return reshape(g, reduced_shape(s, dims, true));
}

static int64_t reduced_count(const Shape& s, const IntList& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= s[d];
  return n;
}

static Attrs reduce_attrs(const IntList& dims, bool keepdim) { return {{"dims", dims}, {"keepdim", keepdim}}; }

// ---- Sum fast path (offered to the core Sum / SumTo kernels) ---------------------------------------
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

void reduce_sum_into(const Tensor& x, const IntList& dims, const Tensor& out) {
  LUCID_CHECK(out.is_contiguous(), Error, "reduce_sum_into: the output must be contiguous");
  Tensor xc = as_dtype(x, out.dtype());
  RowLayout L = row_layout(xc, reduce_dims(dims, xc.ndim(), "sum"));
  LUCID_CHECK(L.outer * L.inner == out.numel(), Error, "reduce_sum_into: output has ", out.numel(),
              " elements, expected ", L.outer * L.inner);
  if (out.dtype() == DType::Bool) {
    Tensor tmp = Tensor::empty(out.shape(), DType::Int64);
    reduce_sum_into(xc, dims, tmp);
    cpu::copy_into(out, tmp);
    return;
  }
  LUCID_DISPATCH_NUMERIC(out.dtype(), "sum", [&] { run_reduce<scalar_t>(L, SumR<scalar_t>{out.data<scalar_t>()}); });
}

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

static DType mean_dtype(const Tensor& x, const Attrs& a, const char* op) {
  DType t = a.has("dtype") ? a.dtype("dtype") : x.dtype();
  LUCID_CHECK(is_floating(t), TypeError, op, ": could not infer output dtype; input dtype must be a floating "
              "point dtype (or pass dtype=), got ", dtype_name(t));
  return t;
}

LUCID_REGISTER_OP(Mean, "dims:ints, keepdim:bool?, dtype:dtype?", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) { return reduce_meta("mean", in[0], a, mean_dtype(in[0], a, "mean")); };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const Tensor& o = out[0];
    Tensor x = as_dtype(in[0], o.dtype());
    IntList dims = attr_dims(a, x.ndim(), "mean");
    RowLayout L = row_layout(x, dims);
    LUCID_DISPATCH_FLOATING(o.dtype(), "mean", [&] {
      run_reduce<scalar_t>(L, MeanR<scalar_t>{o.data<scalar_t>(), 1.0 / static_cast<double>(L.r)});
    });
  };
  d.vjp = [](const VjpContext& c) {
    const Shape& s = c.input_meta[0].shape;
    int64_t n = reduced_count(s, attr_dims(c.attrs, static_cast<int64_t>(s.size()), "mean"));
    return TensorList{mul_scalar(expand(keep_shape(c.grads[0], c, "mean"), s), 1.0 / static_cast<double>(n))};
  };
  return d;
}());

Tensor mean(const Tensor& x, const IntList& dims, bool keepdim, std::optional<DType> dtype) {
  Attrs a = reduce_attrs(dims, keepdim);
  if (dtype) a.set("dtype", *dtype);
  return dispatch1(OpId::Mean, {x}, a);
}

// ---- Var / Std (Welford, merged with Chan's formula) ---------------------------------------------
struct Welford {
  double n = 0, mean = 0, m2 = 0;
};

template <class T>
struct VarR {
  using C = compute_t<T>;
  using S = Welford;
  T* out;
  double correction;
  bool take_sqrt;
  S init() const { return {}; }
  void step(S& s, C v, int64_t) const {
    double x = static_cast<double>(v);
    s.n += 1;
    double dlt = x - s.mean;
    s.mean += dlt / s.n;
    s.m2 += dlt * (x - s.mean);
  }
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
  void merge(S& a, const S& b) const {
    if (b.n == 0) return;
    if (a.n == 0) { a = b; return; }
    double n = a.n + b.n, dlt = b.mean - a.mean;
    a.m2 += b.m2 + dlt * dlt * a.n * b.n / n;
    a.mean += dlt * b.n / n;
    a.n = n;
  }
  void write(const S& s, int64_t o) const {
    double v = s.m2 / std::max(0.0, s.n - correction);
    out[o] = static_cast<T>(static_cast<C>(take_sqrt ? std::sqrt(v) : v));
  }
};

static void var_kernel(const TensorList& in, const TensorList& out, const Attrs& a, bool take_sqrt) {
  const Tensor& x = in[0];
  const Tensor& o = out[0];
  IntList dims = attr_dims(a, x.ndim(), take_sqrt ? "std" : "var");
  RowLayout L = row_layout(x, dims);
  LUCID_DISPATCH_FLOATING(o.dtype(), take_sqrt ? "std" : "var", [&] {
    run_reduce<scalar_t>(L, VarR<scalar_t>{o.data<scalar_t>(), a.f("correction"), take_sqrt});
  });
}

static std::vector<TensorMeta> var_infer(const TensorList& in, const Attrs& a, const char* op) {
  LUCID_CHECK(is_floating(in[0].dtype()), TypeError, op, ": expected a floating point input, got dtype ",
              dtype_name(in[0].dtype()));
  return reduce_meta(op, in[0], a, in[0].dtype());
}

// d var / dx = 2 (x - mean) / (N - correction); d std / dx = (x - mean) / ((N - correction) std).
static Tensor var_grad_core(const VjpContext& c, const char* op, double factor) {
  const Shape& s = c.input_meta[0].shape;
  IntList dims = attr_dims(c.attrs, static_cast<int64_t>(s.size()), op);
  double n = static_cast<double>(reduced_count(s, dims)) - c.attrs.f("correction");
  const Tensor& x = c.inputs[0];
  Tensor centered = sub(x, mean(x, dims, true));
  return mul(keep_shape(c.grads[0], c, op), mul_scalar(centered, factor / std::max(0.0, n)));
}

LUCID_REGISTER_OP(Var, "dims:ints, keepdim:bool?, correction:float", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveInputs;
  d.infer = [](const TensorList& in, const Attrs& a) { return var_infer(in, a, "var"); };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) { var_kernel(in, out, a, false); };
  d.vjp = [](const VjpContext& c) { return TensorList{var_grad_core(c, "var", 2.0)}; };
  return d;
}());

LUCID_REGISTER_OP(Std, "dims:ints, keepdim:bool?, correction:float", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveInputs | kSaveOutputs;
  d.infer = [](const TensorList& in, const Attrs& a) { return var_infer(in, a, "std"); };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) { var_kernel(in, out, a, true); };
  d.vjp = [](const VjpContext& c) {
    // Where std == 0 the gradient is 0 (as in PyTorch), not 0/0: divide by std + [std == 0]
    // and zero those entries.
    Tensor sd = keep_shape(c.outputs[0], c, "std");
    Tensor is_zero = dispatch1(OpId::ReduceEqMask, {sd, full({}, 0.0, sd.dtype())}, {{"dtype", sd.dtype()}});
    Tensor g = div(var_grad_core(c, "std", 1.0), add(sd, is_zero));
    return TensorList{mul(g, sub(ones_like(is_zero), is_zero))};
  };
  return d;
}());

Tensor var(const Tensor& x, const IntList& dims, double correction, bool keepdim) {
  Attrs a = reduce_attrs(dims, keepdim);
  a.set("correction", correction);
  return dispatch1(OpId::Var, {x}, a);
}
Tensor std_(const Tensor& x, const IntList& dims, double correction, bool keepdim) {
  Attrs a = reduce_attrs(dims, keepdim);
  a.set("correction", correction);
  return dispatch1(OpId::Std, {x}, a);
}

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

static DType int_to_long(DType t) { return is_integral(t, true) ? DType::Int64 : t; }

LUCID_REGISTER_OP(Prod, "dims:ints, keepdim:bool?, dtype:dtype?", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveInputs | kSaveOutputs;  // the result only for the version check: PyTorch saves and reads it
  d.infer = [](const TensorList& in, const Attrs& a) {
    return reduce_meta("prod", in[0], a, a.has("dtype") ? a.dtype("dtype") : int_to_long(in[0].dtype()));
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const Tensor& o = out[0];
    Tensor x = as_dtype(in[0], o.dtype());
    RowLayout L = row_layout(x, attr_dims(a, x.ndim(), "prod"));
    LUCID_DISPATCH_NUMERIC(o.dtype(), "prod", [&] { run_reduce<scalar_t>(L, ProdR<scalar_t>{o.data<scalar_t>()}); });
  };
  d.vjp = [](const VjpContext& c) {
    const Tensor& x = c.inputs[0];
    Tensor others = dispatch1(OpId::ProdOthers, {x}, {{"dims", c.attrs.ints("dims")}});
    return TensorList{mul(keep_shape(c.grads[0], c, "prod"), others)};
  };
  return d;
}());

// Product of the other elements of each reduction group (exact with zeros: prefix * suffix).
template <class T>
static void prod_others_rows(const RowLayout& L, T* dst) {
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

LUCID_REGISTER_OP(ProdOthers, "dims:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    attr_dims(a, in[0].ndim(), "prod");
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const Tensor& x = in[0];
    RowLayout L = row_layout(x, attr_dims(a, x.ndim(), "prod"));
    Tensor dst = L.perm.empty() ? out[0] : Tensor::empty(L.data.shape(), x.dtype());
    LUCID_DISPATCH_NUMERIC(x.dtype(), "prod", [&] { prod_others_rows<scalar_t>(L, dst.data<scalar_t>()); });
    if (!L.perm.empty()) unpermute_into(out[0], dst, L.perm);
  };
  d.vjp = [](const VjpContext&) -> TensorList {
    throw NotImplementedError("prod: the second derivative of prod is not implemented");
  };
  return d;
}());

Tensor prod(const Tensor& x, const IntList& dims, bool keepdim, std::optional<DType> dtype) {
  Attrs a = reduce_attrs(dims, keepdim);
  if (dtype) a.set("dtype", *dtype);
  return dispatch1(OpId::Prod, {x}, a);
}

// ---- LogSumExp (online: running max m and sum s of exp(v - m)) -----------------------------------
struct Lse {
  double m = -INFINITY, s = 0;
};

// exp in place over n values (SLEEF AVX2, 1 ulp).
static inline void exp_inplace(float* v, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(v + i, Sleef_expf8_u10avx2(_mm256_loadu_ps(v + i)));
  for (; i < n; ++i) v[i] = std::exp(v[i]);
}
static inline void exp_inplace(double* v, int64_t n) {
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
  S init() const { return {}; }
  static void add(S& st, double m, double s) {
    if (std::isnan(m) || std::isnan(st.m)) { st.m = NAN; return; }
    if (m == -INFINITY) return;
    if (m > st.m) {
      st.s = (st.m == -INFINITY ? 0.0 : st.s * std::exp(st.m - m)) + s;
      st.m = m;
    } else {
      st.s += m == st.m ? s : s * std::exp(m - st.m);
    }
  }
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
  void write(const S& st, int64_t o) const {
    double r = std::isinf(st.m) || std::isnan(st.m) ? st.m : st.m + std::log(st.s);
    out[o] = static_cast<T>(static_cast<C>(r));
  }
};

LUCID_REGISTER_OP(LogSumExp, "dims:ints, keepdim:bool?", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveInputs | kSaveOutputs;
  d.infer = [](const TensorList& in, const Attrs& a) {
    DType t = is_floating(in[0].dtype()) ? in[0].dtype() : default_float_dtype();
    return reduce_meta("logsumexp", in[0], a, t);
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const Tensor& o = out[0];
    Tensor x = as_dtype(in[0], o.dtype());
    RowLayout L = row_layout(x, attr_dims(a, x.ndim(), "logsumexp"));
    LUCID_DISPATCH_FLOATING(o.dtype(), "logsumexp", [&] { run_reduce<scalar_t>(L, LseR<scalar_t>{o.data<scalar_t>()}); });
  };
  d.vjp = [](const VjpContext& c) {
    Tensor out = keep_shape(c.outputs[0], c, "logsumexp");
    return TensorList{mul(keep_shape(c.grads[0], c, "logsumexp"), exp_sub(c.inputs[0], out))};
  };
  return d;
}());

Tensor logsumexp(const Tensor& x, const IntList& dims, bool keepdim) {
  return dispatch1(OpId::LogSumExp, {x}, reduce_attrs(dims, keepdim));
}

LUCID_REGISTER_OP(ExpSub, "", [] {
  OpDef d = elementwise_op<OpId::ExpSub>();
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    Tensor ga = mul(c.grads[0], c.outputs[0]);
    return TensorList{ga, c.needs_grad[1] ? neg(ga) : Tensor()};
  };
  return d;
}());

Tensor exp_sub(const Tensor& a, const Tensor& b) { return dispatch1(OpId::ExpSub, {a, b}); }

// ---- Cumsum ---------------------------------------------------------------------------------------
template <class T>
static void cumsum_rows(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool reverse) {
  using C = compute_t<T>;
  using A = acc_t<C>;
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* src = x + o * n;
        T* dst = y + o * n;
        A acc = 0;
        if (reverse) {
          for (int64_t k = n - 1; k >= 0; --k) { acc += static_cast<A>(static_cast<C>(src[k])); dst[k] = static_cast<T>(static_cast<C>(acc)); }
        } else {
          for (int64_t k = 0; k < n; ++k) { acc += static_cast<A>(static_cast<C>(src[k])); dst[k] = static_cast<T>(static_cast<C>(acc)); }
        }
      }
    });
    return;
  }
  int64_t ncol = (inner + 255) / 256;
  int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n * std::min<int64_t>(inner, 256), 1));
  parallel_for(0, outer * ncol, grain, [&](int64_t b, int64_t e) {
    A acc[256];
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / ncol, j0 = (t % ncol) * 256, w = std::min<int64_t>(inner - j0, 256);
      for (int64_t j = 0; j < w; ++j) acc[j] = 0;
      for (int64_t kk = 0; kk < n; ++kk) {
        int64_t k = reverse ? n - 1 - kk : kk;
        int64_t base = (o * n + k) * inner + j0;
        for (int64_t j = 0; j < w; ++j) {
          acc[j] += static_cast<A>(static_cast<C>(x[base + j]));
          y[base + j] = static_cast<T>(static_cast<C>(acc[j]));
        }
      }
    }
  });
}

LUCID_REGISTER_OP(Cumsum, "dim:int, reverse:bool?, dtype:dtype?", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    wrap_dim(a.i("dim"), in[0].ndim(), "cumsum");
    DType t = a.has("dtype") ? a.dtype("dtype") : int_to_long(in[0].dtype());
    return std::vector<TensorMeta>{{in[0].shape(), t}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const Tensor& o = out[0];
    Tensor x = as_dtype(in[0], o.dtype()).contiguous_data();
    int64_t dim = wrap_dim(a.i("dim"), x.ndim(), "cumsum");
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t i = 0; i < x.ndim(); ++i) {
      if (i < dim) outer *= x.shape()[i];
      else if (i == dim) n = x.shape()[i];
      else inner *= x.shape()[i];
    }
    if (x.numel() == 0) return;
    LUCID_DISPATCH_NUMERIC(o.dtype(), "cumsum", [&] {
      cumsum_rows<scalar_t>(x.data<scalar_t>(), o.data<scalar_t>(), outer, n, inner, a.b("reverse", false));
    });
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{cumsum(c.grads[0], c.attrs.i("dim"), std::nullopt, !c.attrs.b("reverse", false))};
  };
  return d;
}());

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype, bool reverse) {
  Attrs a{{"dim", dim}, {"reverse", reverse}};
  if (dtype) a.set("dtype", *dtype);
  return dispatch1(OpId::Cumsum, {x}, a);
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
static OpDef bool_reduce_op() {
  OpDef d;
  d.num_inputs = 1;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) {
    // PyTorch keeps uint8 for uint8 inputs (legacy), bool otherwise.
    return reduce_meta(IsAll ? "all" : "any", in[0], a, in[0].dtype() == DType::UInt8 ? DType::UInt8 : DType::Bool);
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const Tensor& x = in[0];
    const Tensor& o = out[0];
    RowLayout L = row_layout(x, attr_dims(a, x.ndim(), IsAll ? "all" : "any"));
    LUCID_DISPATCH_ALL(x.dtype(), IsAll ? "all" : "any", [&] {
      if (o.dtype() == DType::UInt8) run_reduce<scalar_t>(L, BoolR<scalar_t, IsAll, uint8_t>{o.data<uint8_t>()});
      else run_reduce<scalar_t>(L, BoolR<scalar_t, IsAll, bool>{o.data<bool>()});
    });
  };
  return d;
}

LUCID_REGISTER_OP(All, "dims:ints, keepdim:bool?", bool_reduce_op<true>());
LUCID_REGISTER_OP(Any, "dims:ints, keepdim:bool?", bool_reduce_op<false>());

Tensor all(const Tensor& x, const IntList& dims, bool keepdim) { return dispatch1(OpId::All, {x}, reduce_attrs(dims, keepdim)); }
Tensor any(const Tensor& x, const IntList& dims, bool keepdim) { return dispatch1(OpId::Any, {x}, reduce_attrs(dims, keepdim)); }

}  // namespace lucid
