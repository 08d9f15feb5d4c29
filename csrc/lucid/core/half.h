// 16-bit float storage types. Arithmetic is done in float: kernels load, compute in float and
// store back, as PyTorch does on CPU. Conversions round to nearest even.
#pragma once
#include <cstdint>
#include <cstring>
#include <immintrin.h>

namespace lucid {

struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT))) {}
  operator float() const { return _cvtsh_ss(bits); }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it quiet
      bits = static_cast<uint16_t>((u >> 16) | 0x40);
      return;
    }
    uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    bits = static_cast<uint16_t>((u + rounding) >> 16);
  }
  operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

}  // namespace lucid
