// Scalar functors: the math of every elementwise op, written once. Eager kernels, the compiled
// fused-elementwise interpreter and (later) generated code all instantiate these. C is the
// compute type: float for 16-bit floats, the stored type otherwise.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace lucid::sm {

struct Add { template <class C> static C apply(C a, C b) { if constexpr (std::is_same_v<C, bool>) return a || b; else return a + b; } };
struct Mul { template <class C> static C apply(C a, C b) { if constexpr (std::is_same_v<C, bool>) return a && b; else return a * b; } };
struct Neg { template <class C> static C apply(C a) { if constexpr (std::is_same_v<C, bool>) return a; else return static_cast<C>(-a); } };

}  // namespace lucid::sm

namespace lucid::sm {
struct Sub { template <class C> static C apply(C a, C b) { if constexpr (std::is_same_v<C, bool>) return a != b; else return a - b; } };
struct Div { template <class C> static C apply(C a, C b) { return a / b; } };
}  // namespace lucid::sm
