// CPU kernels of the sort family (records in ops/sort_ops.cpp): Sort, TopK, Median (all
// elements) and MedianDim. Each works on the rows of one dim of a contiguous copy of x (row r =
// element (o, ., j) of the [outer, n, inner] view): a row is gathered into (value, index) pairs
// and handed to std::sort / std::stable_sort / std::partial_sort / std::nth_element, in parallel
// over rows above a grain. NaN orders as the largest value (PyTorch's rule: first when
// descending or largest, last otherwise); `median` propagates NaN (the first NaN of the row is
// selected), `nanmedian` ignores it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "lucid/backends/cpu/reduce_loops.h"

namespace lucid::cpu {

namespace {

template <class C>
struct Item {
  C v;
  int64_t i;
};

// Strict weak order with NaN as the largest value; Desc reverses it (NaN first).
template <class C, bool Desc>
struct Before {
  bool operator()(const Item<C>& a, const Item<C>& b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if constexpr (Desc) return a.v > b.v || (std::isnan(a.v) && !std::isnan(b.v));
      else return a.v < b.v || (!std::isnan(a.v) && std::isnan(b.v));
    } else {
      return Desc ? b.v < a.v : a.v < b.v;
    }
  }
};

// Rows per parallel task: sorting costs about log2(n) comparisons per element.
int64_t row_grain(int64_t n) {
  int64_t lg = 1;
  while ((int64_t{1} << lg) < n) ++lg;
  return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n * lg, 1));
}

// Runs f(buf, base_out) for every row, buf holding the row's (value, index) pairs; base_out is
// the flat offset of the row's first element in an output whose dim has size n_out (its
// elements inner apart).
template <class T, class F>
void for_rows(const T* x, const DimRows& g, int64_t n_out, const F& f) {
  using C = compute_t<T>;
  if (g.count() == 0 || g.n == 0) return;
  parallel_for(0, g.count(), row_grain(g.n), [&](int64_t b, int64_t e) {
    std::vector<Item<C>> buf(g.n);
    for (int64_t r = b; r < e; ++r) {
      int64_t bi = g.base(r);
      for (int64_t k = 0; k < g.n; ++k) buf[k] = {static_cast<C>(x[bi + k * g.inner]), k};
      f(buf, (r / g.inner) * n_out * g.inner + r % g.inner);
    }
  });
}

template <class T>
void write_row(const std::vector<Item<compute_t<T>>>& buf, int64_t count, T* v, int64_t* idx, int64_t base,
               int64_t inner) {
  for (int64_t k = 0; k < count; ++k) {
    v[base + k * inner] = static_cast<T>(buf[k].v);
    idx[base + k * inner] = buf[k].i;
  }
}

// ---- Sort ----------------------------------------------------------------------------------------
template <class T, bool Desc>
void sort_rows(const Tensor& x, const Tensor& vals, const Tensor& idx, int64_t dim, bool stable) {
  using C = compute_t<T>;
  DimRows g = dim_rows(x.shape(), dim);
  T* v = vals.data<T>();
  int64_t* ip = idx.data<int64_t>();
  for_rows<T>(x.data<T>(), g, g.n, [&](std::vector<Item<C>>& buf, int64_t bo) {
    if (stable) std::stable_sort(buf.begin(), buf.end(), Before<C, Desc>{});
    else std::sort(buf.begin(), buf.end(), Before<C, Desc>{});
    write_row<T>(buf, g.n, v, ip, bo, g.inner);
  });
}

// ---- TopK ----------------------------------------------------------------------------------------
template <class T, bool Largest>
void topk_rows(const Tensor& x, const Tensor& vals, const Tensor& idx, int64_t dim, int64_t k, bool sorted) {
  using C = compute_t<T>;
  DimRows g = dim_rows(x.shape(), dim);
  T* v = vals.data<T>();
  int64_t* ip = idx.data<int64_t>();
  if (k == 0) return;
  Before<C, Largest> cmp;
  for_rows<T>(x.data<T>(), g, k, [&](std::vector<Item<C>>& buf, int64_t bo) {
    auto kth = buf.begin() + k;
    if (sorted && k * 16 <= g.n) {
      std::partial_sort(buf.begin(), kth, buf.end(), cmp);
    } else {
      if (k < g.n) std::nth_element(buf.begin(), kth - 1, buf.end(), cmp);
      if (sorted) std::sort(buf.begin(), kth, cmp);
    }
    write_row<T>(buf, k, v, ip, bo, g.inner);
  });
}

// ---- Median --------------------------------------------------------------------------------------
// The row's lower median: the first NaN when NaN propagates (median), the ((m - 1) / 2)-th of
// the m non-NaN values otherwise (nanmedian; NaN and the row's first index when m == 0).
template <class C>
Item<C> row_median(std::vector<Item<C>>& buf, bool ignore_nan) {
  int64_t n = static_cast<int64_t>(buf.size()), m = n;
  if constexpr (std::is_floating_point_v<C>) {
    m = 0;
    for (const Item<C>& it : buf) {
      if (!std::isnan(it.v)) ++m;
      else if (!ignore_nan) return it;
    }
    if (m == 0) return buf[0];
  }
  auto mid = buf.begin() + (m - 1) / 2;
  std::nth_element(buf.begin(), mid, buf.end(), Before<C, false>{});
  return *mid;
}

void sort_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor x = in[0].contiguous_data();
  int64_t dim = wrap_dim(a.i("dim"), x.ndim(), "sort");
  bool stable = a.b("stable");
  LUCID_DISPATCH_ALL(x.dtype(), "sort", [&] {
    if (a.b("descending")) sort_rows<scalar_t, true>(x, out[0], out[1], dim, stable);
    else sort_rows<scalar_t, false>(x, out[0], out[1], dim, stable);
  });
}

void topk_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor x = in[0].contiguous_data();
  int64_t dim = wrap_dim(a.i("dim"), x.ndim(), "topk"), k = a.i("k");
  bool sorted = a.b("sorted");
  LUCID_DISPATCH_NUMERIC(x.dtype(), "topk", [&] {
    if (a.b("largest")) topk_rows<scalar_t, true>(x, out[0], out[1], dim, k, sorted);
    else topk_rows<scalar_t, false>(x, out[0], out[1], dim, k, sorted);
  });
}

void median_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor x = in[0].contiguous_data();
  LUCID_DISPATCH_NUMERIC(x.dtype(), "median", [&] {
    using C = compute_t<scalar_t>;
    scalar_t* o = out[0].data<scalar_t>();
    const scalar_t* p = x.data<scalar_t>();
    int64_t n = x.numel();
    if (n == 0) {  // PyTorch fills NaN (an integer dtype gets NaN's conversion: the lowest value)
      if constexpr (std::is_floating_point_v<C>) *o = static_cast<scalar_t>(std::numeric_limits<C>::quiet_NaN());
      else *o = std::numeric_limits<scalar_t>::lowest();
      return;
    }
    std::vector<Item<C>> buf(n);
    for (int64_t k = 0; k < n; ++k) buf[k] = {static_cast<C>(p[k]), k};
    *o = static_cast<scalar_t>(row_median(buf, a.b("ignore_nan")).v);
  });
}

void median_dim_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor x = in[0].contiguous_data();
  int64_t dim = wrap_dim(a.i("dim"), x.ndim(), "median");
  bool ignore_nan = a.b("ignore_nan");
  DimRows g = dim_rows(x.shape(), dim);
  LUCID_DISPATCH_NUMERIC(x.dtype(), "median", [&] {
    using C = compute_t<scalar_t>;
    scalar_t* v = out[0].data<scalar_t>();
    int64_t* ip = out[1].data<int64_t>();
    for_rows<scalar_t>(x.data<scalar_t>(), g, 1, [&](std::vector<Item<C>>& buf, int64_t bo) {
      Item<C> m = row_median(buf, ignore_nan);
      v[bo] = static_cast<scalar_t>(m.v);
      ip[bo] = m.i;
    });
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Sort, CPU, sort_kernel);
LUCID_REGISTER_KERNEL(TopK, CPU, topk_kernel);
LUCID_REGISTER_KERNEL(Median, CPU, median_kernel);
LUCID_REGISTER_KERNEL(MedianDim, CPU, median_dim_kernel);

}  // namespace lucid::cpu
