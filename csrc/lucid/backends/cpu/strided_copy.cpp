// Definitions of the strided copy, accumulation and fill of strided_copy.h.
#include "lucid/backends/cpu/strided_copy.h"

#include <cstring>

namespace lucid::cpu {

void strided_copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.dtype() != src.dtype()) return copy_into(dst, src);
  StridedIter it({&dst, &src});
  by_itemsize(dst.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    it.for_each([](char** p, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(U) && s[1] == sizeof(U)) {
        std::memcpy(p[0], p[1], n * sizeof(U));
      } else if (s[1] == 0) {
        U v = *reinterpret_cast<const U*>(p[1]);
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<U*>(p[0] + i * s[0]) = v;
      } else {
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<U*>(p[0] + i * s[0]) = *reinterpret_cast<const U*>(p[1] + i * s[1]);
      }
    });
  });
}

void add_into(const Tensor& dst, const Tensor& src) {
  StridedIter it({&dst, &src});
  LUCID_DISPATCH_ALL(dst.dtype(), "add_into", [&] {
    using C = compute_t<scalar_t>;
    it.for_each([](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        scalar_t* o = reinterpret_cast<scalar_t*>(p[0] + i * s[0]);
        const scalar_t* a = reinterpret_cast<const scalar_t*>(p[1] + i * s[1]);
        if constexpr (std::is_same_v<scalar_t, bool>) *o = *o || *a;
        else *o = static_cast<scalar_t>(static_cast<C>(*o) + static_cast<C>(*a));
      }
    });
  });
}

void fill(const Tensor& dst, double value) {
  LUCID_DISPATCH_ALL(dst.dtype(), "fill", [&] {
    scalar_t sv = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(value));
    StridedIter it({&dst});
    it.for_each([sv](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<scalar_t*>(p[0] + i * s[0]) = sv;
    });
  });
}

}  // namespace lucid::cpu
