// CPU kernels of the table's ops whose functor has parameters (clamp, leaky_relu, gelu,
// addcmul...), expanded from their functors (see elementwise.h), and masked_fill's own kernel.
#include "lucid/backends/cpu/kernels/elementwise.h"

namespace lucid::cpu {

#define LUCID_EW(Op, F, Arity, Rule, Domain)
#define LUCID_EW_ATTR(Op, F, Arity, Rule, Domain) LUCID_EW_CPU_ROW(Op, true)
#include "lucid/ops/list/elementwise_functors.def"

// masked_fill: reads the bool mask as it is (the generic kernel would cast it to x's dtype).
static void masked_fill_kernel(const TensorList& in, const TensorList& out, const Attrs& attrs) {
  const Tensor &o = out[0], &x = in[0], &mask = in[1];
  const double value = attrs.f("value");
  StridedIter it({&o, &x, &mask});
  LUCID_DISPATCH_ALL(o.dtype(), "masked_fill", [&] {
    using T = scalar_t;
    const T v = static_cast<T>(static_cast<compute_t<T>>(value));
    it.for_each([v0 = v](char** p, const int64_t* s, int64_t n) {
      const T v = v0;  // a local: stores to the output can't change it
      if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == 1) {
        T* op = reinterpret_cast<T*>(p[0]);
        const T* xp = reinterpret_cast<const T*>(p[1]);
        const uint8_t* mp = reinterpret_cast<const uint8_t*>(p[2]);  // bool bytes; uint8 vectorises
        for (int64_t i = 0; i < n; ++i) { T a = xp[i]; op[i] = mp[i] != 0 ? v : a; }
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) =
            *reinterpret_cast<const bool*>(p[2] + i * s[2]) ? v : *reinterpret_cast<const T*>(p[1] + i * s[1]);
    });
  });
}

LUCID_REGISTER_KERNEL(MaskedFill, CPU, masked_fill_kernel);

}  // namespace lucid::cpu
