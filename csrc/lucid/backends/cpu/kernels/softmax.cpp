// CPU kernels of Softmax and LogSoftmax (op records in ops/nn_softmax.cpp): fused, numerically
// stable rows over an [outer, dim, inner] view (max-subtract, one SLEEF exp pass, sum, scale);
// contiguous rows when inner == 1, else vectorised over the inner dim. 16-bit inputs compute in a
// float buffer.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "lucid/backends/cpu/nn_vec.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

void split_dim(const Shape& s, int64_t dim, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = 1;
  inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s[i];
  n = s.empty() ? 1 : s[dim];
  for (int64_t i = dim + 1; i < static_cast<int64_t>(s.size()); ++i) inner *= s[i];
}

template <class T, bool Log>
void softmax_rows(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using C = compute_t<T>;
  constexpr bool kSame = std::is_same_v<T, C>;
  int64_t work = std::max<int64_t>(1, n * inner);
  parallel_for(0, outer, std::max<int64_t>(1, kParallelGrain / work), [&](int64_t b, int64_t e) {
    if (inner == 1) {
      // Contiguous rows: max, exp (SLEEF, 8 lanes), sum, scale.
      std::vector<C> buf(n);
      for (int64_t o = b; o < e; ++o) {
        const T* xo = x + o * n;
        T* yo = y + o * n;
        C* t = kSame ? reinterpret_cast<C*>(yo) : buf.data();
        for (int64_t d = 0; d < n; ++d) t[d] = static_cast<C>(xo[d]);
        C mx = nnvec::vmax(t, n);
        if (std::isinf(mx) && mx < 0) mx = 0;  // all -inf: exp gives 0s, sum 0 -> nan like PyTorch
        nnvec::vexp_sub(t, n, mx);
        C sm = static_cast<C>(nnvec::vsum(t, n));
        if constexpr (Log) {  // (x - max) - log(sum), torch's order: exact when |x| is huge
          C lg = std::log(sm);
          for (int64_t d = 0; d < n; ++d) yo[d] = static_cast<T>((static_cast<C>(xo[d]) - mx) - lg);
        } else {
          C inv = C(1) / sm;
          for (int64_t d = 0; d < n; ++d) yo[d] = static_cast<T>(t[d] * inv);
        }
      }
      return;
    }
    // Strided classes: vectorise over the inner dim.
    std::vector<C> mx(inner), sm(inner), buf(inner);
    for (int64_t o = b; o < e; ++o) {
      const T* xo = x + o * n * inner;
      T* yo = y + o * n * inner;
      std::fill(mx.begin(), mx.end(), -std::numeric_limits<C>::infinity());
      std::fill(sm.begin(), sm.end(), C(0));
      for (int64_t d = 0; d < n; ++d)
        for (int64_t i = 0; i < inner; ++i) {
          C v = static_cast<C>(xo[d * inner + i]);
          mx[i] = (v > mx[i] || std::isnan(v)) ? v : mx[i];
        }
      for (int64_t i = 0; i < inner; ++i)
        if (std::isinf(mx[i]) && mx[i] < 0) mx[i] = 0;
      for (int64_t d = 0; d < n; ++d) {
        C* t = kSame && !Log ? reinterpret_cast<C*>(yo + d * inner) : buf.data();
        for (int64_t i = 0; i < inner; ++i) t[i] = static_cast<C>(xo[d * inner + i]) - mx[i];
        nnvec::vexp_sub(t, inner, C(0));
        for (int64_t i = 0; i < inner; ++i) sm[i] += t[i];
      }
      if constexpr (Log) {
        for (int64_t i = 0; i < inner; ++i) sm[i] = std::log(sm[i]);
        for (int64_t d = 0; d < n; ++d)
          for (int64_t i = 0; i < inner; ++i)
            yo[d * inner + i] = static_cast<T>((static_cast<C>(xo[d * inner + i]) - mx[i]) - sm[i]);
      } else {
        for (int64_t i = 0; i < inner; ++i) sm[i] = C(1) / sm[i];
        for (int64_t d = 0; d < n; ++d) {
          if constexpr (kSame) {
            C* t = reinterpret_cast<C*>(yo + d * inner);
            for (int64_t i = 0; i < inner; ++i) t[i] *= sm[i];
          } else {
            for (int64_t i = 0; i < inner; ++i) buf[i] = static_cast<C>(xo[d * inner + i]) - mx[i];
            nnvec::vexp_sub(buf.data(), inner, C(0));
            for (int64_t i = 0; i < inner; ++i) yo[d * inner + i] = static_cast<T>(buf[i] * sm[i]);
          }
        }
      }
    }
  });
}

template <bool Log>
void softmax_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor x = in[0].contiguous_data();
  int64_t dim = x.ndim() == 0 ? 0 : wrap_dim(a.i("dim"), x.ndim(), Log ? "log_softmax" : "softmax");
  int64_t outer, n, inner;
  split_dim(x.shape(), dim, outer, n, inner);
  if (x.numel() == 0) return;
  LUCID_DISPATCH_FLOATING(x.dtype(), Log ? "log_softmax" : "softmax", [&] {
    softmax_rows<scalar_t, Log>(x.data<scalar_t>(), out[0].data<scalar_t>(), outer, n, inner);
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Softmax, CPU, softmax_kernel<false>);
LUCID_REGISTER_KERNEL(LogSoftmax, CPU, softmax_kernel<true>);

}  // namespace lucid::cpu
