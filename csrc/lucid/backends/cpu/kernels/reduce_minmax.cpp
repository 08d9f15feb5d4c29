// CPU kernels of the extremum reductions and their masks (records in ops/reduce_minmax.cpp):
// Amax/Amin, MaxDim/MinDim, Argmax/Argmin on the row-reduction driver
// (backends/cpu/reduce_loops.h), ReduceEqMask and IndexMask. NaN wins, as in PyTorch; among
// equal values the first index is selected.
#include <cstring>

#include "lucid/backends/cpu/reduce_loops.h"

namespace lucid::cpu {

namespace {

template <class T, bool IsMax>
struct ExtR {
  using C = compute_t<T>;
  struct S {
    C v;
    int64_t i;
  };
  T* vals;
  int64_t* idx;
  static bool better(C v, C cur) {
    if (is_nan_v(cur)) return false;
    if (is_nan_v(v)) return true;
    return IsMax ? v > cur : v < cur;
  }
  S init() const { return {C(0), -1}; }
  void step(S& s, C v, int64_t k) const {
    if (s.i < 0 || better(v, s.v)) { s.v = v; s.i = k; }
  }
  // Column fast path: branch-free compare-select on value and index arrays.
  void cols(S* st, const T* p, int64_t r, int64_t stride, int64_t w) const {
    if (r == 0) return;
    C bv[kReduceCols];
    int64_t bi[kReduceCols];
    for (int64_t j = 0; j < w; ++j) { bv[j] = static_cast<C>(p[j]); bi[j] = 0; }
    for (int64_t k = 1; k < r; ++k) {
      const T* row = p + k * stride;
      for (int64_t j = 0; j < w; ++j) {
        C v = static_cast<C>(row[j]);
        bool take = IsMax ? v > bv[j] : v < bv[j];
        if constexpr (std::is_floating_point_v<C>) take = (take || v != v) && bv[j] == bv[j];
        bv[j] = take ? v : bv[j];
        bi[j] = take ? k : bi[j];
      }
    }
    for (int64_t j = 0; j < w; ++j) merge(st[j], S{bv[j], bi[j]});
  }
  void merge(S& a, const S& b) const {
    if (b.i >= 0 && (a.i < 0 || better(b.v, a.v))) a = b;
  }
  void write(const S& s, int64_t o) const {
    if (vals) vals[o] = static_cast<T>(s.v);
    if (idx) idx[o] = s.i;
  }
};

template <bool IsMax>
void run_ext(const Tensor& x, const IntList& dims, const Tensor* vals, const Tensor* idx, const char* op) {
  RowLayout L = row_layout(x, dims);
  LUCID_DISPATCH_ALL(x.dtype(), op, [&] {
    run_reduce<scalar_t>(L, ExtR<scalar_t, IsMax>{vals ? vals->data<scalar_t>() : nullptr,
                                                  idx ? idx->data<int64_t>() : nullptr});
  });
}

// ---- Amax / Amin ------------------------------------------------------------------------------------
template <class T, bool IsMax>
struct AmaxR {
  using C = compute_t<T>;
  using S = C;
  T* out;
  S init() const { return ext_identity<C, IsMax>(); }
  void step(S& s, C v, int64_t) const { s = ext_select<C, IsMax>(v, s); }
  void row(S& s, const T* p, int64_t, int64_t n) const { s = ext_select<C, IsMax>(ext_span<T, IsMax>(p, n), s); }
  void merge(S& a, const S& b) const { a = ext_select<C, IsMax>(b, a); }
  void write(const S& s, int64_t o) const { out[o] = static_cast<T>(s); }
};

template <bool IsMax>
void amax_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* name = IsMax ? "amax" : "amin";
  RowLayout L = row_layout(in[0], reduce_attr_dims(a, in[0].ndim(), name));
  LUCID_DISPATCH_ALL(in[0].dtype(), name, [&] { run_reduce<scalar_t>(L, AmaxR<scalar_t, IsMax>{out[0].data<scalar_t>()}); });
}

// ---- MaxDim / MinDim, Argmax / Argmin ---------------------------------------------------------------
template <bool IsMax>
void max_dim_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* name = IsMax ? "max" : "min";
  run_ext<IsMax>(in[0], index_reduce_dims(a, in[0].ndim(), name), &out[0], &out[1], name);
}

template <bool IsMax>
void argmax_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* name = IsMax ? "argmax" : "argmin";
  run_ext<IsMax>(in[0], index_reduce_dims(a, in[0].ndim(), name), nullptr, &out[0], name);
}

// ---- Masks -------------------------------------------------------------------------------------------
void reduce_eq_mask_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& o = out[0];
  StridedIter it({&o, &in[0], &in[1]});
  LUCID_DISPATCH_ALL(in[0].dtype(), "reduce_eq_mask", [&] {
    using T = scalar_t;
    using C = compute_t<T>;
    LUCID_DISPATCH_FLOATING(o.dtype(), "reduce_eq_mask", [&] {
      using O = scalar_t;
      it.for_each([](char** p, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          C x = static_cast<C>(*reinterpret_cast<const T*>(p[1] + i * s[1]));
          C r = static_cast<C>(*reinterpret_cast<const T*>(p[2] + i * s[2]));
          bool eq = x == r || (is_nan_v(x) && is_nan_v(r));
          *reinterpret_cast<O*>(p[0] + i * s[0]) = static_cast<O>(eq ? 1.0f : 0.0f);
        }
      });
    });
  });
}

void index_mask_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  std::memset(o.data_ptr(), 0, o.numel() * itemsize(o.dtype()));
  Tensor idx = in[0].contiguous_data();
  const int64_t* ip = idx.data<int64_t>();
  int64_t nd = o.ndim();
  const DimRows rows = dim_rows(o.shape(), nd > 0 ? wrap_dim(a.i("dim"), nd, "index_mask") : 0);
  const int64_t outer = rows.outer, n = rows.n, inner = rows.inner;
  LUCID_DISPATCH_FLOATING(o.dtype(), "index_mask", [&] {
    scalar_t* op = o.data<scalar_t>();
    for (int64_t r = 0; r < outer; ++r)
      for (int64_t j = 0; j < inner; ++j) {
        int64_t k = ip[r * inner + j];
        LUCID_CHECK(k >= 0 && k < n, IndexError, "index_mask: index ", k, " is out of range for size ", n);
        op[(r * n + k) * inner + j] = static_cast<scalar_t>(1.0f);
      }
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Amax, CPU, amax_kernel<true>);
LUCID_REGISTER_KERNEL(Amin, CPU, amax_kernel<false>);
LUCID_REGISTER_KERNEL(MaxDim, CPU, max_dim_kernel<true>);
LUCID_REGISTER_KERNEL(MinDim, CPU, max_dim_kernel<false>);
LUCID_REGISTER_KERNEL(Argmax, CPU, argmax_kernel<true>);
LUCID_REGISTER_KERNEL(Argmin, CPU, argmax_kernel<false>);
LUCID_REGISTER_KERNEL(ReduceEqMask, CPU, reduce_eq_mask_kernel);
LUCID_REGISTER_KERNEL(IndexMask, CPU, index_mask_kernel);

}  // namespace lucid::cpu
