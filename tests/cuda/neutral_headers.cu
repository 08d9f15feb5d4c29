// Compile check for the device-neutral headers (scripts/check_cuda_headers.sh, run by
// tests/python/test_cuda_headers.py): every scalar functor of ops/scalar_functors.h is
// instantiated in a __global__ kernel for the dtypes its op supports on CPU (float, double, the
// integer types, bool), so nvcc's device side must accept every `apply`. Compiled with -c only:
// nothing here runs, and no GPU is needed.
#include <cstdint>

#include "lucid/ops/scalar_functors.h"

namespace sm = lucid::sm;

template <class... T> struct Types {};
using Floating = Types<float, double>;
using Numeric = Types<float, double, int64_t, int32_t, int8_t, uint8_t>;
using All = Types<float, double, int64_t, int32_t, int8_t, uint8_t, bool>;
using Integral = Types<int64_t, int32_t, int8_t, uint8_t, bool>;

template <class F, class C> __global__ void unary_kernel(F f, C* o, const C* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) o[i] = f.template apply<C>(a[i]);
}
template <class F, class C> __global__ void binary_kernel(F f, C* o, const C* a, const C* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) o[i] = f.template apply<C>(a[i], b[i]);
}
template <class F, class C> __global__ void ternary_kernel(F f, C* o, const C* a, const C* b, const C* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) o[i] = f.template apply<C>(a[i], b[i], c[i]);
}

// Referencing a kernel template's address instantiates it (host stub and device code).
template <class F, class... C> void unary(Types<C...>) { (static_cast<void>(&unary_kernel<F, C>), ...); }
template <class F, class... C> void binary(Types<C...>) { (static_cast<void>(&binary_kernel<F, C>), ...); }
template <class F, class... C> void ternary(Types<C...>) { (static_cast<void>(&ternary_kernel<F, C>), ...); }

void instantiate_all() {
  // core arithmetic
  binary<sm::Add>(All{});
  binary<sm::Mul>(All{});
  unary<sm::Neg>(Numeric{});
  binary<sm::Sub>(Numeric{});
  binary<sm::Div>(Floating{});
  // unary math
  unary<sm::Abs>(Numeric{});
  unary<sm::Exp>(Floating{});
  unary<sm::Log>(Floating{});
  unary<sm::Log2>(Floating{});
  unary<sm::Log10>(Floating{});
  unary<sm::Log1p>(Floating{});
  unary<sm::Expm1>(Floating{});
  unary<sm::Sqrt>(Floating{});
  unary<sm::Rsqrt>(Floating{});
  unary<sm::Reciprocal>(Floating{});
  unary<sm::Square>(Numeric{});
  unary<sm::Sin>(Floating{});
  unary<sm::Cos>(Floating{});
  unary<sm::Tanh>(Floating{});
  unary<sm::Sigmoid>(Floating{});
  unary<sm::Erf>(Floating{});
  unary<sm::Relu>(Numeric{});
  unary<sm::Relu6>(Numeric{});
  unary<sm::Silu>(Floating{});
  unary<sm::Hardswish>(Floating{});
  unary<sm::Hardsigmoid>(Floating{});
  unary<sm::Sign>(All{});
  unary<sm::Floor>(Numeric{});
  unary<sm::Ceil>(Numeric{});
  unary<sm::Trunc>(Numeric{});
  unary<sm::Round>(Numeric{});
  unary<sm::IsNan>(All{});
  unary<sm::IsInf>(All{});
  unary<sm::LogicalNot>(Types<bool>{});
  unary<sm::BitwiseNot>(Integral{});
  // binary math, comparisons, logical and bitwise
  binary<sm::Pow>(Numeric{});
  binary<sm::Maximum>(All{});
  binary<sm::Minimum>(All{});
  binary<sm::FloorDivide>(Numeric{});
  binary<sm::Remainder>(Numeric{});
  binary<sm::Eq>(All{});
  binary<sm::Ne>(All{});
  binary<sm::Lt>(All{});
  binary<sm::Le>(All{});
  binary<sm::Gt>(All{});
  binary<sm::Ge>(All{});
  binary<sm::LogicalAnd>(Types<bool>{});
  binary<sm::LogicalOr>(Types<bool>{});
  binary<sm::LogicalXor>(Types<bool>{});
  binary<sm::BitwiseAnd>(Integral{});
  binary<sm::BitwiseOr>(Integral{});
  binary<sm::BitwiseXor>(Integral{});
  binary<sm::Atan2>(Floating{});
  // ternary
  ternary<sm::Where>(All{});
  ternary<sm::Lerp>(Floating{});
  // functors with parameters
  unary<sm::LeakyRelu>(Floating{});
  unary<sm::Elu>(Floating{});
  unary<sm::Softplus>(Floating{});
  unary<sm::Hardtanh>(Numeric{});
  unary<sm::Gelu>(Floating{});
  unary<sm::Clamp>(Numeric{});
  binary<sm::MaskedFill>(All{});
  ternary<sm::Addcmul>(Numeric{});
  ternary<sm::Addcdiv>(Floating{});
  // fused activation backwards
  binary<sm::ReluBackward>(Floating{});
  binary<sm::SigmoidBackward>(Floating{});
  binary<sm::TanhBackward>(Floating{});
  binary<sm::SiluBackward>(Floating{});
  binary<sm::GeluBackward>(Floating{});
  // more activations
  unary<sm::Selu>(Floating{});
  unary<sm::Mish>(Floating{});
  unary<sm::Softsign>(Floating{});
  unary<sm::LogSigmoid>(Floating{});
  unary<sm::Tanhshrink>(Floating{});
  unary<sm::Celu>(Floating{});
  unary<sm::Softshrink>(Floating{});
  unary<sm::Hardshrink>(Floating{});
  unary<sm::Threshold>(Numeric{});
  // more unary math, the gamma family
  unary<sm::Tan>(Floating{});
  unary<sm::Asin>(Floating{});
  unary<sm::Acos>(Floating{});
  unary<sm::Atan>(Floating{});
  unary<sm::Sinh>(Floating{});
  unary<sm::Cosh>(Floating{});
  unary<sm::Asinh>(Floating{});
  unary<sm::Acosh>(Floating{});
  unary<sm::Atanh>(Floating{});
  unary<sm::Erfc>(Floating{});
  unary<sm::Erfinv>(Floating{});
  unary<sm::Lgamma>(Floating{});
  unary<sm::Digamma>(Floating{});
  unary<sm::Polygamma>(Floating{});
}
