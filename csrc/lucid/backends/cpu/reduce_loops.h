// The CPU's row-reduction machinery, shared by the reduce, scan and sort kernels. A reduction
// over `dims` is run on x seen as a contiguous [outer, r, inner] block (r = the reduced elements
// of one output element; ops/reduce_layout.h, shared with the CUDA backend). A Reducer describes the math once:
//   using S = state;  S init() const;  void step(S&, C v, int64_t k) const;  (k: index in r)
//   void merge(S& a, const S& b) const;  (b covers later k than a)  void write(const S&, int64_t o) const;
// Optional fast paths (vectorisable loops) a Reducer may add:
//   void row(S&, const T* p, int64_t k0, int64_t n) const;      adds p[0..n) (indices k0..)
//   void cols(S* st, const T* p, int64_t r, int64_t stride, int64_t w) const;
//                                              column j < w reduces p[k * stride + j], k < r
// run_reduce splits the work into fixed blocks (never by thread count), so results are the same
// for any number of threads; long rows are split into kReduceBlock-element partial states.
// Also the AVX2 sum / product / max spans the reducers use, and reduce_sum_into, the sum entry
// the core Sum and SumTo kernels call.
#pragma once
#include <cstdint>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "lucid/backends/cpu/loops.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/core.h"
#include "lucid/ops/reduce_layout.h"
#include "lucid/ops/reduce_util.h"

namespace lucid::cpu {

// Copies a tensor computed in a RowLayout's permuted order back into `out` (x's shape).
inline void unpermute_into(const Tensor& out, const Tensor& tmp, const IntList& perm) {
  if (perm.empty()) { copy_into(out, tmp); return; }
  Strides st(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) st[perm[i]] = tmp.strides()[i];
  copy_into(out, Tensor::make_view(tmp, out.shape(), st, tmp.offset()));
}

constexpr int64_t kReduceBlock = 8192;  // elements per partial state of a long row
constexpr int64_t kReduceCols = 64;     // inner columns per task when inner > 1

template <class R, class T>
concept HasRow = requires(const R& red, typename R::S& s, const T* p) { red.row(s, p, int64_t{}, int64_t{}); };
template <class R, class T>
concept HasCols = requires(const R& red, typename R::S* s, const T* p) {
  red.cols(s, p, int64_t{}, int64_t{}, int64_t{});
};

template <class T, class R>
inline void reduce_span(const R& red, typename R::S& s, const T* p, int64_t k0, int64_t n) {
  if constexpr (HasRow<R, T>) {
    red.row(s, p, k0, n);
  } else {
    for (int64_t k = 0; k < n; ++k) red.step(s, static_cast<compute_t<T>>(p[k]), k0 + k);
  }
}

template <class T, class R>
void run_reduce(const RowLayout& L, const R& red) {
  using C = compute_t<T>;
  using S = typename R::S;
  const T* x = L.data.template data<T>();
  const int64_t outer = L.outer, r = L.r, inner = L.inner;
  if (outer == 0 || inner == 0) return;
  if (inner == 1) {
    int64_t nb = (r + kReduceBlock - 1) / kReduceBlock;
    if (nb <= 1 || outer >= 64) {
      int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(r, 1));
      parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          S s = red.init();
          reduce_span<T>(red, s, x + o * r, 0, r);
          red.write(s, o);
        }
      });
      return;
    }
    // Few long rows: fixed blocks of kReduceBlock elements, merged in order.
    std::vector<S> part(outer * nb, red.init());
    parallel_for(0, outer * nb, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / nb, blk = t % nb;
        int64_t k0 = blk * kReduceBlock, k1 = std::min(r, k0 + kReduceBlock);
        S s = red.init();
        reduce_span<T>(red, s, x + o * r + k0, k0, k1 - k0);
        part[t] = s;
      }
    });
    for (int64_t o = 0; o < outer; ++o) {
      S s = part[o * nb];
      for (int64_t blk = 1; blk < nb; ++blk) red.merge(s, part[o * nb + blk]);
      red.write(s, o);
    }
    return;
  }
  // inner > 1: accumulate kReduceCols columns at a time down the r axis.
  int64_t ncol = (inner + kReduceCols - 1) / kReduceCols;
  int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(r * std::min(inner, kReduceCols), 1));
  parallel_for(0, outer * ncol, grain, [&](int64_t b, int64_t e) {
    S st[kReduceCols];
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / ncol, j0 = (t % ncol) * kReduceCols, j1 = std::min(inner, j0 + kReduceCols);
      int64_t w = j1 - j0;
      for (int64_t j = 0; j < w; ++j) st[j] = red.init();
      const T* base = x + o * r * inner + j0;
      if constexpr (HasCols<R, T>) {
        red.cols(st, base, r, inner, w);
      } else {
        for (int64_t k = 0; k < r; ++k) {
          const T* row = base + k * inner;
          for (int64_t j = 0; j < w; ++j) red.step(st[j], static_cast<C>(row[j]), k);
        }
      }
      for (int64_t j = 0; j < w; ++j) red.write(st[j], o * inner + j0 + j);
    }
  });
}

// Accumulator type for sums/products: double for floats, int64 for integers and bool.
template <class C>
using acc_t = std::conditional_t<std::is_floating_point_v<C>, double, int64_t>;

// Sum / product of p[0..n) with 8 independent accumulators (vectorisable, fixed order).
// float rows: blocks of 128 are summed in 16 float lanes (each lane adds 8 values, error ~8 ulp
// of the block), then the lanes are added in double: double accuracy at float speed.
inline double sum_span_f32(const float* p, int64_t n) {
  __m256d t0 = _mm256_setzero_pd(), t1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 128 <= n; i += 128) {
    __m256 a0 = _mm256_loadu_ps(p + i), a1 = _mm256_loadu_ps(p + i + 8);
    for (int64_t k = 16; k < 128; k += 16) {
      a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i + k));
      a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + k + 8));
    }
    t0 = _mm256_add_pd(t0, _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(a0)), _mm256_cvtps_pd(_mm256_extractf128_ps(a0, 1))));
    t1 = _mm256_add_pd(t1, _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(a1)), _mm256_cvtps_pd(_mm256_extractf128_ps(a1, 1))));
  }
  alignas(32) double l[4];
  _mm256_store_pd(l, _mm256_add_pd(t0, t1));
  double s = (l[0] + l[1]) + (l[2] + l[3]);
  for (; i < n; ++i) s += static_cast<double>(p[i]);
  return s;
}

template <class T, class A>
inline A sum_span(const T* p, int64_t n) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, float> && std::is_same_v<A, double>) return sum_span_f32(p, n);
  A a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) a[l] += static_cast<A>(static_cast<C>(p[i + l]));
  A s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
  for (; i < n; ++i) s += static_cast<A>(static_cast<C>(p[i]));
  return s;
}

template <class T, class A>
inline A prod_span(const T* p, int64_t n) {
  using C = compute_t<T>;
  A a[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) a[l] *= static_cast<A>(static_cast<C>(p[i + l]));
  A s = ((a[0] * a[1]) * (a[2] * a[3])) * ((a[4] * a[5]) * (a[6] * a[7]));
  for (; i < n; ++i) s *= static_cast<A>(static_cast<C>(p[i]));
  return s;
}

// Max (or min) of p[0..n); NaN if any element is NaN; the identity when n == 0. float and
// double use AVX2 (compare-select plus an unordered mask); other types a scalar loop.
template <class T, bool IsMax>
inline compute_t<T> ext_span(const T* p, int64_t n) {
  using C = compute_t<T>;
  C s = ext_identity<C, IsMax>();
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    __m256 m = _mm256_set1_ps(s), bad = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
      __m256 v = _mm256_loadu_ps(p + i);
      m = IsMax ? _mm256_max_ps(v, m) : _mm256_min_ps(v, m);
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    if (_mm256_movemask_ps(bad)) return std::numeric_limits<float>::quiet_NaN();
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, m);
    for (int l = 0; l < 8; ++l) s = ext_select<C, IsMax>(lanes[l], s);
  } else if constexpr (std::is_same_v<T, double>) {
    __m256d m = _mm256_set1_pd(s), bad = _mm256_setzero_pd();
    for (; i + 4 <= n; i += 4) {
      __m256d v = _mm256_loadu_pd(p + i);
      m = IsMax ? _mm256_max_pd(v, m) : _mm256_min_pd(v, m);
      bad = _mm256_or_pd(bad, _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
    }
    if (_mm256_movemask_pd(bad)) return std::numeric_limits<double>::quiet_NaN();
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, m);
    for (int l = 0; l < 4; ++l) s = ext_select<C, IsMax>(lanes[l], s);
  }
  for (; i < n; ++i) s = ext_select<C, IsMax>(static_cast<C>(p[i]), s);
  return s;
}

// Writes the sum of x over `dims` (empty = all) into the contiguous `out` (the reduced shape,
// keepdim or not; out's dtype, accumulating in double / int64) with run_reduce: no permuting copy
// when the reduced dims are adjacent (backends/cpu/kernels/reduce.cpp). No dispatch, no autograd:
// the core Sum and SumTo kernels call it.
void reduce_sum_into(const Tensor& x, const IntList& dims, const Tensor& out);

}  // namespace lucid::cpu
