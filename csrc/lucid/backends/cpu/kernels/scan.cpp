// CPU kernels of the scans (records in ops/reduce_ops.cpp and ops/reduce_cumprod.cpp): Cumsum,
// Cumprod and CumprodBackward, Cumprod's fused O(n)-per-row gradient, exact with zeros (the
// formula is in reduce_cumprod.cpp's header). Rows of one dim are scanned in parallel above a
// grain; sums and products accumulate in double (int64 for integers), as the reductions do.
#include "lucid/backends/cpu/reduce_loops.h"

namespace lucid::cpu {

namespace {

// ---- Cumsum ---------------------------------------------------------------------------------------
template <class T>
void cumsum_rows(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool reverse) {
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

void cumsum_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
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
}

// ---- Cumprod ---------------------------------------------------------------------------------------
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

void cumprod_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  Tensor x = as_dtype(in[0], o.dtype()).contiguous_data();
  if (x.numel() == 0) return;
  DimRows g = dim_rows(x.shape(), wrap_dim(a.i("dim"), x.ndim(), "cumprod"));
  LUCID_DISPATCH_NUMERIC(o.dtype(), "cumprod", [&] { cumprod_rows<scalar_t>(x.data<scalar_t>(), o.data<scalar_t>(), g); });
}

void cumprod_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor g = in[0].contiguous_data(), x = in[1].contiguous_data(), y = in[2].contiguous_data();
  if (g.numel() == 0) return;
  DimRows r = dim_rows(g.shape(), wrap_dim(a.i("dim"), g.ndim(), "cumprod_backward"));
  LUCID_DISPATCH_FLOATING(g.dtype(), "cumprod_backward", [&] {
    cumprod_backward_rows<scalar_t>(g.data<scalar_t>(), x.data<scalar_t>(), y.data<scalar_t>(), out[0].data<scalar_t>(), r);
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Cumsum, CPU, cumsum_kernel);
LUCID_REGISTER_KERNEL(Cumprod, CPU, cumprod_kernel);
LUCID_REGISTER_KERNEL(CumprodBackward, CPU, cumprod_backward_kernel);

}  // namespace lucid::cpu
