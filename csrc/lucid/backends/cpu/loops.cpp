// StridedIter (the coalescing strided iteration of the CPU's elementwise kernels) and
// copy_into, the converting strided copy behind Copy (cast, clone, copy_).
#include "lucid/backends/cpu/loops.h"

#include <cstring>
#include <type_traits>

#include "lucid/backends/cpu/float16_convert.h"

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

namespace {

// Dense copies and the float <-> 16-bit casts (the vector widen/narrow of float16_convert.h, bit
// for bit core/half.h's conversions) of two contiguous tensors of one shape, split over the
// threads: a model's input cast under autocast (32x3x224x224 float32 to bfloat16) took 4.9 ms
// one element at a time. False for other dtype pairs and layouts.
bool dense_copy(const Tensor& dst, const Tensor& src) {
  if (dst.shape() != src.shape() || !dst.is_contiguous() || !src.is_contiguous()) return false;
  const DType dt = dst.dtype(), st = src.dtype();
  const int64_t n = dst.numel();
  char* d = static_cast<char*>(dst.data_ptr());
  const char* s = static_cast<const char*>(src.data_ptr());
  auto run = [&](auto out_tag, auto in_tag) {
    using O = decltype(out_tag);
    using I = decltype(in_tag);
    parallel_for(0, n, 1 << 16, [&](int64_t i0, int64_t i1) {
      O* o = reinterpret_cast<O*>(d) + i0;
      const I* in = reinterpret_cast<const I*>(s) + i0;
      if constexpr (std::is_same_v<O, I>) std::memcpy(o, in, sizeof(O) * (i1 - i0));
      else if constexpr (std::is_same_v<O, float>) widen(in, o, i1 - i0);
      else narrow(in, o, i1 - i0);
    });
    return true;
  };
  if (dt == st) {
    // Bytes, whatever the dtype: a char run of n * itemsize.
    const int64_t isz = static_cast<int64_t>(itemsize(dt));
    parallel_for(0, n * isz, 1 << 18, [&](int64_t i0, int64_t i1) { std::memcpy(d + i0, s + i0, i1 - i0); });
    return true;
  }
  if (dt == DType::BFloat16 && st == DType::Float32) return run(BFloat16{}, float{});
  if (dt == DType::Float32 && st == DType::BFloat16) return run(float{}, BFloat16{});
  if (dt == DType::Float16 && st == DType::Float32) return run(Half{}, float{});
  if (dt == DType::Float32 && st == DType::Float16) return run(float{}, Half{});
  return false;
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  DType dt = dst.dtype(), st = src.dtype();
  if (dense_copy(dst, src)) return;
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
