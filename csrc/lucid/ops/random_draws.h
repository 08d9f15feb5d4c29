// How the random ops turn Philox draws (core/philox.h) into values, device-neutral: every
// backend's kernel for a random op uses these, so the same (seed, offset) gives the same numbers
// on every device. An op's draws start at its `offset` attribute (a multiple of 4, see
// Generator::reserve); element (unit) u of an op taking k draws per unit reads draws
// offset + u*k .. offset + u*k + k - 1:
//   Uniform: k = uniform_draws<T>(), value low + (high - low) * unit_uniform<T>;
//   RandInt: k = randint_draws(low, high), value low + randint_offset(draws, k, high - low);
//   Bernoulli: k = 1, value unit_uniform<float> < p;
//   RandPerm: k = 2, element i is ranked by the 64-bit key (d0 << 32 | d1);
//   Multinomial: k = 2, one unit_uniform<double> per (row, sample or category);
//   Normal (Box-Muller): pair j (elements 2j, 2j+1) is one unit of k = 4 draws for float64
//     (u1 = 1 - unit_uniform<double>(d0, d1), u2 = unit_uniform<double>(d2, d3)) and k = 2 for
//     the other float types (u1 = 1 - 24-bit uniform of d0, u2 = 24-bit uniform of d1, in
//     float); z = sqrt(-2 log u1) * (cos, sin)(2 pi u2). In float, log(u1) and sincospi(2 u2)
//     are evaluated in double and rounded to float: for each of the 2^24 possible u1 and u2 the
//     exact value lies at least 21 double ulps from a float rounding midpoint (checked
//     exhaustively), so any double log/sincospi within that error (SLEEF's, CUDA's) gives the
//     same float, and the float result is the same on every backend; sqrt and the products
//     are single float operations. Float64 uses each backend's double functions (a last-ulp
//     difference is possible there).
// Values are placed with affine_draw (an explicit fused multiply-add), so no backend's compiler
// can contract or not contract `low + span * u` differently.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "lucid/core/host_device.h"

namespace lucid {

struct Half;
struct BFloat16;

// Uniform in [0, 1) with as many random bits as the type's mantissa holds, so 16-bit floats
// never round up to 1: 53 bits of two draws for double, 11 (Half), 8 (BFloat16) or 24 (float)
// bits of one draw.
template <class T>
LUCID_HOST_DEVICE inline double unit_uniform(const uint32_t* d) {
  if constexpr (std::is_same_v<T, double>) {
    uint64_t v = (static_cast<uint64_t>(d[0]) << 32 | d[1]) >> 11;
    return static_cast<double>(v) * 0x1.0p-53;
  } else if constexpr (std::is_same_v<T, Half>) {
    return static_cast<double>(d[0] >> 21) * 0x1.0p-11;
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return static_cast<double>(d[0] >> 24) * 0x1.0p-8;
  } else {
    return static_cast<double>(d[0] >> 8) * 0x1.0p-24;
  }
}

// base + scale * v with one rounding: Uniform's low + (high - low) * u and Normal's mean + std * z.
LUCID_HOST_DEVICE inline double affine_draw(double base, double scale, double v) { return std::fma(scale, v, base); }

// Draws per element of Uniform.
template <class T>
LUCID_HOST_DEVICE constexpr int uniform_draws() { return std::is_same_v<T, double> ? 2 : 1; }

// Draws per element of RandInt: one while the range fits 32 bits, else two.
LUCID_HOST_DEVICE inline int randint_draws(int64_t low, int64_t high) {
  return static_cast<uint64_t>(high) - static_cast<uint64_t>(low) <= (uint64_t{1} << 32) ? 1 : 2;
}

// RandInt's offset from `low` in [0, range): 32-bit draws by multiply-shift (Lemire) instead of a
// division; 64-bit (k = 2) by modulo.
LUCID_HOST_DEVICE inline uint64_t randint_offset(const uint32_t* d, int k, uint64_t range) {
  return k == 1 ? (static_cast<uint64_t>(d[0]) * range) >> 32 : (static_cast<uint64_t>(d[0]) << 32 | d[1]) % range;
}

}  // namespace lucid
