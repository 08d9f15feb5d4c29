#include "lucid/backends/cpu/loops.h"

#include <cstring>

namespace lucid::cpu {

StridedIter::StridedIter(const Tensor* const* ops, int n) : nops(n) {
  LUCID_CHECK(n <= kMaxOperands, Error, "StridedIter: too many operands");
  const Shape& out_shape = ops[0]->shape();
  for (int k = 0; k < n; ++k) base[k] = static_cast<char*>(ops[k]->data_ptr());
  // Nothing to visit: the strides of an empty tensor may not fit in bytes (zeros(0, 2**62)).
  if (ops[0]->numel() == 0) {
    numel = 0;
    return;
  }
  int nd = static_cast<int>(out_shape.size());
  // Per-dim strides in bytes with broadcasting.
  std::vector<std::array<int64_t, kMaxOperands>> st(nd);
  for (int k = 0; k < n; ++k) {
    const Tensor& t = *ops[k];
    base[k] = static_cast<char*>(t.data_ptr());
    int64_t isz = static_cast<int64_t>(itemsize(t.dtype()));
    int off = nd - static_cast<int>(t.ndim());
    for (int d = 0; d < nd; ++d) {
      int td = d - off;
      st[d][k] = (td < 0 || t.shape()[td] == 1) ? 0 : t.strides()[td] * isz;
    }
  }
  // Drop size-1 dims, then coalesce dims that are contiguous for every operand.
  for (int d = 0; d < nd; ++d) {
    if (out_shape[d] == 1) continue;
    if (!shape.empty()) {
      auto& prev = strides.back();
      bool can = true;
      for (int k = 0; k < n; ++k)
        if (prev[k] != st[d][k] * out_shape[d]) { can = false; break; }
      if (can) {
        shape.back() *= out_shape[d];
        prev = st[d];
        continue;
      }
    }
    shape.push_back(out_shape[d]);
    strides.push_back(st[d]);
  }
  ndim = static_cast<int>(shape.size());
  numel = numel_of(out_shape);
}

void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  DType dt = dst.dtype(), st = src.dtype();
  StridedIter it({&dst, &src});
  if (dt == st) {
    int64_t isz = static_cast<int64_t>(itemsize(dt));
    it.for_each([&](char** p, const int64_t* s, int64_t n) {
      if (s[0] == isz && s[1] == isz) {
        std::memcpy(p[0], p[1], n * isz);
      } else {
        for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], p[1] + i * s[1], isz);
      }
    });
    return;
  }
  LUCID_DISPATCH_ALL(dt, "copy", [&] {
    using out_t = scalar_t;
    LUCID_DISPATCH_ALL(st, "copy", [&] {
      using in_t = scalar_t;
      it.for_each([&](char** p, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          in_t v = *reinterpret_cast<in_t*>(p[1] + i * s[1]);
          if constexpr (std::is_same_v<out_t, bool>) {
            *reinterpret_cast<bool*>(p[0] + i * s[0]) = static_cast<float>(v) != 0.f || static_cast<double>(v) != 0.0;
          } else if constexpr (std::is_same_v<in_t, Half> || std::is_same_v<in_t, BFloat16>) {
            *reinterpret_cast<out_t*>(p[0] + i * s[0]) = static_cast<out_t>(static_cast<float>(v));
          } else {
            *reinterpret_cast<out_t*>(p[0] + i * s[0]) = static_cast<out_t>(v);
          }
        }
      });
    });
  });
}

}  // namespace lucid::cpu
