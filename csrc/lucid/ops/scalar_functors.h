// Scalar functors: the math of every elementwise op, written once, device-neutral. The functor
// table (ops/list/elementwise_functors.def) names each op's functor; the CPU's eager kernels and
// fused-elementwise blocks (backends/cpu/elementwise_loops.h) instantiate them from it, and a
// CUDA kernel can too: every `apply` is LUCID_HOST_DEVICE and the header uses only what nvcc's
// device side accepts (<cmath> overloads CUDA provides, numeric_limits from libcu++ under nvcc;
// no intrinsics, Sleef, strings or Attrs). scripts/check_cuda_headers.sh has nvcc expand the
// table over these functors for sm_90.
//
// C is the compute type: float for 16-bit floats, the stored type otherwise. Loading and storing
// Half/BFloat16 (core/half.h, x86 F16C) happens in the loops around `apply`, never in it.
// Functors with parameters (leaky_relu's slope, clamp's bounds...) are plain structs whose
// `apply` is a const member; ops/functor_attrs.h builds them from an op's Attrs. The CPU's
// Sleef/AVX2 float32 row paths for some functors are in backends/cpu/scalar_vec.h.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#ifdef __CUDACC__
#include <cuda/std/limits>
#else
#include <limits>
#endif

#include "lucid/core/host_device.h"

namespace lucid::sm {

// std::numeric_limits' members are host-only constexpr functions to nvcc; libcu++'s are
// host-device and give the same values.
#ifdef __CUDACC__
template <class C> using limits = ::cuda::std::numeric_limits<C>;
#else
template <class C> using limits = std::numeric_limits<C>;
#endif

template <class C> constexpr bool is_fp_v = std::is_floating_point_v<C>;

// ---- core arithmetic (core_ops*.cpp) ----
struct Add { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { if constexpr (std::is_same_v<C, bool>) return a || b; else return a + b; } };
struct Mul { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { if constexpr (std::is_same_v<C, bool>) return a && b; else return a * b; } };
struct Neg { template <class C> LUCID_HOST_DEVICE static C apply(C a) { if constexpr (std::is_same_v<C, bool>) return a; else return static_cast<C>(-a); } };
struct Sub { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { if constexpr (std::is_same_v<C, bool>) return a != b; else return a - b; } };
struct Div { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { return a / b; } };

// ---- unary math (elementwise_unary.cpp) ----
struct Abs {
  template <class C> LUCID_HOST_DEVICE static C apply(C a) {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return a;
    else if constexpr (is_fp_v<C>) return std::fabs(a);
    else return static_cast<C>(a < 0 ? -a : a);
  }
};
struct Exp { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::exp(a); } };
struct Log { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::log(a); } };
struct Log2 { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::log2(a); } };
struct Log10 { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::log10(a); } };
struct Log1p { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::log1p(a); } };
struct Expm1 { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::expm1(a); } };
struct Sqrt { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::sqrt(a); } };
struct Rsqrt { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return C(1) / std::sqrt(a); } };
struct Reciprocal { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return C(1) / a; } };
struct Square { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return static_cast<C>(a * a); } };
struct Sin { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::sin(a); } };
struct Cos { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::cos(a); } };
struct Tanh { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::tanh(a); } };
struct Sigmoid { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return C(1) / (C(1) + std::exp(-a)); } };
struct Erf { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::erf(a); } };
struct Relu {
  // NaN stays NaN (as clamp_min(x, 0) in PyTorch).
  template <class C> LUCID_HOST_DEVICE static C apply(C a) { if constexpr (std::is_unsigned_v<C>) return a; else return a < C(0) ? C(0) : a; }
};
// Selects without arithmetic in a branch, so loops if-convert and vectorise; NaN falls through
// both comparisons and stays NaN.
struct Relu6 {
  template <class C> LUCID_HOST_DEVICE static C apply(C a) {
    C r = a < C(0) ? C(0) : a;
    return r > C(6) ? C(6) : r;
  }
};
struct Silu { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return a / (C(1) + std::exp(-a)); } };
struct Hardswish {
  template <class C> LUCID_HOST_DEVICE static C apply(C a) {
    C r = a + C(3);
    r = r < C(0) ? C(0) : (r > C(6) ? C(6) : r);
    return a * r / C(6);
  }
};
struct Hardsigmoid {
  template <class C> LUCID_HOST_DEVICE static C apply(C a) {
    C r = a + C(3);
    r = r < C(0) ? C(0) : (r > C(6) ? C(6) : r);
    return r / C(6);
  }
};
struct Sign {
  template <class C> LUCID_HOST_DEVICE static C apply(C a) {
    if constexpr (std::is_same_v<C, bool>) return a;
    else if constexpr (std::is_unsigned_v<C>) return static_cast<C>(a > 0);
    else return static_cast<C>((C(0) < a) - (a < C(0)));
  }
};
struct Floor { template <class C> LUCID_HOST_DEVICE static C apply(C a) { if constexpr (is_fp_v<C>) return std::floor(a); else return a; } };
struct Ceil { template <class C> LUCID_HOST_DEVICE static C apply(C a) { if constexpr (is_fp_v<C>) return std::ceil(a); else return a; } };
struct Trunc { template <class C> LUCID_HOST_DEVICE static C apply(C a) { if constexpr (is_fp_v<C>) return std::trunc(a); else return a; } };
// Round half to even, as torch.round.
struct Round { template <class C> LUCID_HOST_DEVICE static C apply(C a) { if constexpr (is_fp_v<C>) return std::nearbyint(a); else return a; } };
struct IsNan { template <class C> LUCID_HOST_DEVICE static C apply(C a) { if constexpr (is_fp_v<C>) return static_cast<C>(a != a); else return C(0); } };
struct IsInf { template <class C> LUCID_HOST_DEVICE static C apply(C a) { if constexpr (is_fp_v<C>) return static_cast<C>(std::isinf(a)); else return C(0); } };
struct LogicalNot { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return !a; } };
struct BitwiseNot { template <class C> LUCID_HOST_DEVICE static C apply(C a) { if constexpr (std::is_same_v<C, bool>) return !a; else return static_cast<C>(~a); } };

// ---- binary math ----
struct Pow {
  template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) {
    if constexpr (is_fp_v<C>) {
      // The exponents PyTorch special-cases (same results as its sqrt/square/reciprocal paths).
      if (b == C(2)) return a * a;
      if (b == C(0.5)) return std::sqrt(a);
      if (b == C(3)) return a * a * a;
      if (b == C(-1)) return C(1) / a;
      if (b == C(-0.5)) return C(1) / std::sqrt(a);
      if (b == C(-2)) return C(1) / (a * a);
      return std::pow(a, b);
    } else if constexpr (std::is_same_v<C, bool>) {
      return a || !b;
    } else {
      if constexpr (std::is_signed_v<C>) {
        if (b < 0) return a == 1 ? C(1) : (a == -1 ? (b % 2 == 0 ? C(1) : C(-1)) : C(0));
      }
      C r = 1, base = a;
      for (auto e = b; e > 0; e >>= 1) {
        if (e & 1) r = static_cast<C>(r * base);
        base = static_cast<C>(base * base);
      }
      return r;
    }
  }
};
struct Maximum {
  template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) {
    if constexpr (is_fp_v<C>) { if (a != a) return a; if (b != b) return b; }
    return a > b ? a : b;
  }
};
struct Minimum {
  template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) {
    if constexpr (is_fp_v<C>) { if (a != a) return a; if (b != b) return b; }
    return a < b ? a : b;
  }
};
// Python's floor division and modulo (the result takes the divisor's sign). Integer division by
// zero gives 0 rather than trapping.
struct FloorDivide {
  template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) {
    if constexpr (is_fp_v<C>) {
      if (b == C(0)) return a / b;
      C m = std::fmod(a, b);
      C d = (a - m) / b;
      if (m != C(0) && ((b < C(0)) != (m < C(0)))) d -= C(1);
      if (d == C(0)) return std::copysign(C(0), a / b);
      C f = std::floor(d);
      if (d - f > C(0.5)) f += C(1);
      return f;
    } else if constexpr (std::is_same_v<C, bool>) {
      return a;
    } else {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return static_cast<C>(-a);
        C q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        return q;
      } else {
        return a / b;
      }
    }
  }
};
struct Remainder {
  template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) {
    if constexpr (is_fp_v<C>) {
      C m = std::fmod(a, b);
      if (m != C(0) && ((b < C(0)) != (m < C(0)))) m += b;
      return m;
    } else if constexpr (std::is_same_v<C, bool>) {
      return false;
    } else {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return C(0);
        C m = a % b;
        if (m != 0 && ((b < 0) != (m < 0))) m += b;
        return m;
      } else {
        return a % b;
      }
    }
  }
};
struct Eq { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { return static_cast<C>(a == b); } };
struct Ne { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { return static_cast<C>(a != b); } };
struct Lt { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { return static_cast<C>(a < b); } };
struct Le { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { return static_cast<C>(a <= b); } };
struct Gt { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { return static_cast<C>(a > b); } };
struct Ge { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { return static_cast<C>(a >= b); } };
struct LogicalAnd { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { return a && b; } };
struct LogicalOr { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { return a || b; } };
struct LogicalXor { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { return static_cast<bool>(a) != static_cast<bool>(b); } };
struct BitwiseAnd { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { if constexpr (std::is_same_v<C, bool>) return a && b; else return static_cast<C>(a & b); } };
struct BitwiseOr { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { if constexpr (std::is_same_v<C, bool>) return a || b; else return static_cast<C>(a | b); } };
struct BitwiseXor { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { if constexpr (std::is_same_v<C, bool>) return a != b; else return static_cast<C>(a ^ b); } };

// ---- ternary math ----
struct Where { template <class C> LUCID_HOST_DEVICE static C apply(C c, C a, C b) { return c ? a : b; } };
// torch.lerp: start + weight * (end - start), computed from the nearer end for accuracy.
struct Lerp {
  template <class C> LUCID_HOST_DEVICE static C apply(C s, C e, C w) {
    C d = e - s;
    return std::fabs(w) < C(0.5) ? s + w * d : e - d * (C(1) - w);
  }
};

// ---- functors with parameters (attrs) ----
struct LeakyRelu {
  double slope = 0.01;
  // x * (x > 0 ? 1 : slope), PyTorch's x > 0 ? x : x * slope: the select is between constants
  // only, so the loop vectorises (GCC won't if-convert a select whose arm does arithmetic). NaN
  // stays NaN and -0.0 stays -0.0 (a sum max(x, 0) + slope * min(x, 0) made it +0.0).
  template <class C> LUCID_HOST_DEVICE C apply(C x) const { return x * (x > C(0) ? C(1) : static_cast<C>(slope)); }
};
struct Elu {
  double alpha = 1.0;
  template <class C> LUCID_HOST_DEVICE C apply(C x) const { return x > C(0) ? x : static_cast<C>(alpha) * std::expm1(x); }
};
struct Softplus {
  double beta = 1.0, threshold = 20.0;
  template <class C> LUCID_HOST_DEVICE C apply(C x) const {
    C bx = x * static_cast<C>(beta);
    return bx > static_cast<C>(threshold) ? x : std::log1p(std::exp(bx)) / static_cast<C>(beta);
  }
};
struct Hardtanh {
  double lo = -1.0, hi = 1.0;
  template <class C> LUCID_HOST_DEVICE C apply(C x) const {
    C l = static_cast<C>(lo), h = static_cast<C>(hi);
    C r = x < l ? l : x;
    return r > h ? h : r;
  }
};
struct Gelu {
  bool tanh_approx = false;
  template <class C> LUCID_HOST_DEVICE C apply(C x) const {
    if (tanh_approx) {
      const C k = static_cast<C>(0.7978845608028654), c = static_cast<C>(0.044715);
      return C(0.5) * x * (C(1) + std::tanh(k * (x + c * x * x * x)));
    }
    return C(0.5) * x * (C(1) + std::erf(x * static_cast<C>(0.7071067811865476)));
  }
};
// clamp with scalar bounds (either may be absent). NaN stays NaN; min > max gives max.
struct Clamp {
  bool has_lo = false, has_hi = false;
  double lo = 0, hi = 0;
  template <class C> LUCID_HOST_DEVICE C apply(C x) const {
    // Absent bounds are the type's extremes; branch-free selects (NaN falls through).
    C l = has_lo ? static_cast<C>(lo) : limits<C>::lowest();
    C h = has_hi ? static_cast<C>(hi) : limits<C>::max();
    if constexpr (is_fp_v<C>) {
      if (!has_lo) l = -limits<C>::infinity();
      if (!has_hi) h = limits<C>::infinity();
    }
    C r = x < l ? l : x;
    return r > h ? h : r;
  }
};
struct MaskedFill {
  double value = 0;
  template <class C> LUCID_HOST_DEVICE C apply(C x, C mask) const { return mask ? static_cast<C>(value) : x; }
};
struct Addcmul {
  double value = 1;
  template <class C> LUCID_HOST_DEVICE C apply(C x, C a, C b) const {
    if constexpr (std::is_same_v<C, bool>) return x || (a && b);
    else return static_cast<C>(x + static_cast<C>(value) * a * b);
  }
};
struct Addcdiv {
  double value = 1;
  template <class C> LUCID_HOST_DEVICE C apply(C x, C a, C b) const { return x + static_cast<C>(value) * a / b; }
};

// ---- fused activation backwards: (grad, saved) -> grad_input, one pass ----
// Used by the activations' VJPs when no higher-order graph is being built (see
// elementwise_activation_backward.cpp); with create_graph the VJPs use differentiable op compositions.
// relu: 0 where result <= 0, else grad (PyTorch's threshold_backward: a NaN result passes grad).
struct ReluBackward { template <class C> LUCID_HOST_DEVICE static C apply(C g, C y) { return y <= C(0) ? C(0) : g; } };
struct SigmoidBackward { template <class C> LUCID_HOST_DEVICE static C apply(C g, C y) { return g * y * (C(1) - y); } };
struct TanhBackward { template <class C> LUCID_HOST_DEVICE static C apply(C g, C y) { return g * (C(1) - y * y); } };
struct SiluBackward {
  template <class C> LUCID_HOST_DEVICE static C apply(C g, C x) {
    C s = C(1) / (C(1) + std::exp(-x));
    return g * s * (C(1) + x * (C(1) - s));
  }
};
struct GeluBackward {
  bool tanh_approx = false;
  template <class C> LUCID_HOST_DEVICE C apply(C g, C x) const {
    if (tanh_approx) {
      const C kb = static_cast<C>(0.7978845608028654), kk = static_cast<C>(0.044715);
      C x2 = x * x;
      C t = std::tanh(kb * (x + kk * x2 * x));
      C left = C(0.5) * (C(1) + t);
      C right = (C(1) - t * t) * kb * (C(1) + C(3) * kk * x2);
      return g * (left + C(0.5) * x * right);
    }
    C cdf = C(0.5) * (C(1) + std::erf(x * static_cast<C>(0.7071067811865476)));
    C pdf = std::exp(C(-0.5) * x * x) * static_cast<C>(0.3989422804014327);
    return g * (cdf + x * pdf);
  }
};

// ---- more activations (elementwise_activation_*.cpp) ----
struct Selu {
  template <class C> LUCID_HOST_DEVICE static C apply(C x) {
    const C alpha = static_cast<C>(1.6732632423543772848170429916717), scale = static_cast<C>(1.0507009873554804934193349852946);
    return x > C(0) ? scale * x : scale * alpha * std::expm1(x);
  }
};
struct Mish { template <class C> LUCID_HOST_DEVICE static C apply(C x) { return x * std::tanh(std::log1p(std::exp(x))); } };
struct Softsign { template <class C> LUCID_HOST_DEVICE static C apply(C x) { return x / (C(1) + std::fabs(x)); } };
// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), stable for large |x|.
struct LogSigmoid { template <class C> LUCID_HOST_DEVICE static C apply(C x) { return (x < C(0) ? x : C(0)) - std::log1p(std::exp(-std::fabs(x))); } };
struct Tanhshrink { template <class C> LUCID_HOST_DEVICE static C apply(C x) { return x - std::tanh(x); } };
struct Celu {
  double alpha = 1.0;
  template <class C> LUCID_HOST_DEVICE C apply(C x) const {
    C al = static_cast<C>(alpha);
    return x > C(0) ? x : al * std::expm1(x / al);
  }
};
struct Softshrink {
  double lambd = 0.5;
  // As PyTorch: the middle is x * 0, so NaN stays NaN and -0.3 gives -0.0.
  template <class C> LUCID_HOST_DEVICE C apply(C x) const {
    C l = static_cast<C>(lambd);
    C up = x - l, dn = x + l;
    C r = x > l ? up : x * C(0);
    return x < -l ? dn : r;
  }
};
struct Hardshrink {
  double lambd = 0.5;
  // 0 inside [-lambd, lambd], else x (NaN stays NaN, as in PyTorch).
  template <class C> LUCID_HOST_DEVICE C apply(C x) const {
    C l = static_cast<C>(lambd);
    return (x >= -l && x <= l) ? C(0) : x;
  }
};
struct Threshold {
  double threshold = 0, value = 0;
  // x <= threshold ? value : x, as PyTorch (NaN stays NaN).
  template <class C> LUCID_HOST_DEVICE C apply(C x) const { return x <= static_cast<C>(threshold) ? static_cast<C>(value) : x; }
};

// ---- more unary math (elementwise_math.cpp) ----
struct Tan { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::tan(a); } };
struct Asin { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::asin(a); } };
struct Acos { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::acos(a); } };
struct Atan { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::atan(a); } };
struct Sinh { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::sinh(a); } };
struct Cosh { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::cosh(a); } };
struct Asinh { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::asinh(a); } };
struct Acosh { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::acosh(a); } };
struct Atanh { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::atanh(a); } };
struct Erfc { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return std::erfc(a); } };
// Inverse error function: Giles' single-precision approximation ("Approximating the erfinv
// function", GPU Gems 2012), then two Newton steps on erf (quadratic convergence: full double
// precision). Out of [-1, 1] NaN; +-1 gives +-inf, as PyTorch.
struct Erfinv {
  template <class C> LUCID_HOST_DEVICE static C apply(C a) {
    double x = static_cast<double>(a);
    if (!(x >= -1.0 && x <= 1.0)) return static_cast<C>(limits<double>::quiet_NaN());
    if (x == 1.0 || x == -1.0) return static_cast<C>(x * limits<double>::infinity());
    double w = -std::log((1.0 - x) * (1.0 + x)), p;
    if (w < 5.0) {
      w -= 2.5;
      p = 2.81022636e-08;
      for (double k : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                       -0.00417768164, 0.246640727, 1.50140941})
        p = k + p * w;
    } else {
      w = std::sqrt(w) - 3.0;
      p = -0.000200214257;
      for (double k : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                       0.00943887047, 1.00167406, 2.83297682})
        p = k + p * w;
    }
    double y = p * x;
    for (int i = 0; i < 2; ++i) y -= (std::erf(y) - x) / (1.1283791670955126 * std::exp(-y * y));
    return static_cast<C>(y);
  }
};
struct Atan2 { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { return std::atan2(a, b); } };

// ---- the gamma family (elementwise_math.cpp), computed in double ----
struct Lgamma { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return static_cast<C>(std::lgamma(static_cast<double>(a))); } };
// digamma: the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 6, then the asymptotic series;
// reflection for x < 0; -inf at 0 and NaN at the negative integers (the poles), as PyTorch.
LUCID_HOST_DEVICE inline double digamma_d(double x) {
  if (x == 0) return -limits<double>::infinity();
  if (x < 0) {
    if (x == std::floor(x)) return limits<double>::quiet_NaN();
    const double pi = 3.14159265358979323846;
    return digamma_d(1.0 - x) - pi / std::tan(pi * x);
  }
  double r = 0;
  for (; x < 6; x += 1) r -= 1 / x;
  double f = 1 / (x * x);
  double t = f * (-1 / 12.0 + f * (1 / 120.0 + f * (-1 / 252.0 + f * (1 / 240.0 + f * (-1 / 132.0)))));
  return r + std::log(x) - 0.5 / x + t;
}
// Hurwitz zeta(s, q) for s > 1 by Euler-Maclaurin summation (Cephes' zeta, which PyTorch uses too).
LUCID_HOST_DEVICE inline double hurwitz_zeta(double s, double q) {
  static const double A[] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
                             7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
                             -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18};
  if (s == 1) return limits<double>::infinity();
  if (s < 1) return limits<double>::quiet_NaN();
  if (q <= 0) {
    if (q == std::floor(q)) return limits<double>::infinity();
    if (s != std::floor(s)) return limits<double>::quiet_NaN();
  }
  double sum = std::pow(q, -s), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {
    ++i;
    a += 1;
    b = std::pow(a, -s);
    sum += b;
    if (std::fabs(b / sum) < 1e-17) return sum;
  }
  double w = a, k = 0, fac = 1;
  sum += b * w / (s - 1) - 0.5 * b;
  for (double c : A) {
    fac *= s + k;
    b /= w;
    double t = fac * b / c;
    sum += t;
    if (std::fabs(t / sum) < 1e-17) break;
    k += 1;
    fac *= s + k;
    b /= w;
    k += 1;
  }
  return sum;
}
struct Digamma { template <class C> LUCID_HOST_DEVICE static C apply(C a) { return static_cast<C>(digamma_d(static_cast<double>(a))); } };
// polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1; digamma for n = 0.
struct Polygamma {
  int64_t n = 0;
  template <class C> LUCID_HOST_DEVICE C apply(C a) const {
    double x = static_cast<double>(a);
    if (n == 0) return static_cast<C>(digamma_d(x));
    double sign = (n % 2) ? 1.0 : -1.0;
    return static_cast<C>(sign * std::exp(std::lgamma(n + 1.0)) * hurwitz_zeta(n + 1.0, x));
  }
};

// ---- reductions' elementwise helpers (reduce_ops.cpp) ----
// exp(a - b): logsumexp's VJP.
struct ExpSub { template <class C> LUCID_HOST_DEVICE static C apply(C a, C b) { return static_cast<C>(std::exp(a - b)); } };

}  // namespace lucid::sm
