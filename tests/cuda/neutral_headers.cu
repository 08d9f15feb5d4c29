// Compile check for the device-neutral elementwise layer (scripts/check_cuda_headers.sh, run by
// tests/python/test_cuda_headers.py): nvcc expands the functor table
// (ops/list/elementwise_functors.def) over the scalar functors of ops/scalar_functors.h, as a CUDA
// backend will, into one __global__ kernel per row and compute dtype (float, double, the integer
// types and bool, as the row's rule and domain give them; bool output for the comparison and
// logical rules). So the table and every functor's `apply` must be nvcc-clean on the device side.
// Compiled with -c only: nothing here runs, and no GPU is needed.
#include <cstdint>
#include <type_traits>

#include "lucid/ops/scalar_functors.h"

namespace sm = lucid::sm;

template <class... T> struct Types {};
// The table's Domain column (EwDomain) as compute types (16-bit floats compute in float).
namespace domain {
using Floating = Types<float, double>;
using Numeric = Types<float, double, int64_t, int32_t, int8_t, uint8_t>;
using All = Types<float, double, int64_t, int32_t, int8_t, uint8_t, bool>;
using Integral = Types<int64_t, int32_t, int8_t, uint8_t, bool>;
}  // namespace domain
// The table's Rule column (EwDType): BoolInputs computes in bool; Bool and BoolInputs write bool.
namespace rule {
struct Same;
struct Float;
struct Bool;
struct BoolInputs;
}  // namespace rule
template <class Rule, class Domain> struct ComputeTypes { using type = Domain; };
template <class Domain> struct ComputeTypes<rule::BoolInputs, Domain> { using type = Types<bool>; };
template <class Rule>
constexpr bool kBoolOut = std::is_same_v<Rule, rule::Bool> || std::is_same_v<Rule, rule::BoolInputs>;

template <class F, class O, class C> __global__ void unary_kernel(F f, O* o, const C* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) o[i] = static_cast<O>(f.template apply<C>(a[i]));
}
template <class F, class O, class C> __global__ void binary_kernel(F f, O* o, const C* a, const C* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) o[i] = static_cast<O>(f.template apply<C>(a[i], b[i]));
}
template <class F, class O, class C>
__global__ void ternary_kernel(F f, O* o, const C* a, const C* b, const C* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) o[i] = static_cast<O>(f.template apply<C>(a[i], b[i], c[i]));
}

// Referencing a kernel template's address instantiates it (host stub and device code).
template <class F, int Arity, class Rule, class... C>
void instantiate(Types<C...>) {
  auto one = [](auto tag) {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<kBoolOut<Rule>, bool, T>;
    if constexpr (Arity == 1) static_cast<void>(&unary_kernel<F, O, T>);
    else if constexpr (Arity == 2) static_cast<void>(&binary_kernel<F, O, T>);
    else static_cast<void>(&ternary_kernel<F, O, T>);
  };
  (one(std::type_identity<C>{}), ...);
}

void instantiate_table() {
#define LUCID_EW(Op, F, Arity, Rule, Domain) \
  instantiate<lucid::F, Arity, rule::Rule>(typename ComputeTypes<rule::Rule, domain::Domain>::type{});
#define LUCID_EW_ATTR(Op, F, Arity, Rule, Domain) LUCID_EW(Op, F, Arity, Rule, Domain)
#include "lucid/ops/list/elementwise_functors.def"
}
