// CPU kernels and fused-elementwise blocks of the table's plain binary and ternary ops (add,
// comparisons, where, lerp...), expanded from their functors (see elementwise.h), and the ops of
// these with their own kernel: where, and integer floor_divide / remainder.
#include "lucid/backends/cpu/kernels/elementwise.h"

namespace lucid::cpu {

#define LUCID_EW(Op, F, Arity, Rule, Domain) LUCID_EW_CPU_ROW(Op, Arity >= 2)
#define LUCID_EW_ATTR(Op, F, Arity, Rule, Domain)
#include "lucid/ops/list/elementwise_functors.def"

// Integer division by zero raises, as PyTorch on CPU ("ZeroDivisionError"), before anything is
// written: the divisor is scanned first. (The compiler's fused elementwise blocks have no error
// path, so ew_group leaves integer floor_divide and remainder out of them.)
template <OpId Id>
static void zero_checked_division(const TensorList& in, const TensorList& out, const Attrs& a) {
  if (is_integral(out[0].dtype())) {
    Tensor b = in[1].contiguous_data();
    bool zero = false;
    LUCID_DISPATCH_ALL(b.dtype(), op_def(Id).api_name, [&] {
      const scalar_t* p = b.data<scalar_t>();
      for (int64_t i = 0, n = b.numel(); i < n && !zero; ++i) zero = p[i] == scalar_t(0);
    });
    LUCID_CHECK(!zero, Error, op_def(Id).api_name, ": ZeroDivisionError (integer division by zero)");
  }
  elementwise_kernel<Id>(in, out, a);
}

LUCID_REGISTER_KERNEL(FloorDivide, CPU, zero_checked_division<OpId::FloorDivide>);
LUCID_REGISTER_KERNEL(Remainder, CPU, zero_checked_division<OpId::Remainder>);

// where: the condition is read as bool (no cast pass); input/other are cast to the result dtype
// when needed. The fused-elementwise interpreter uses the generic ternary block.
static void where_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& o = out[0];
  DType t = o.dtype();
  auto as_t = [t](const Tensor& x) {
    if (x.dtype() == t) return x;
    Tensor u = Tensor::empty(x.shape(), t);
    copy_into(u, x);
    return u;
  };
  Tensor a = as_t(in[1]), b = as_t(in[2]);
  const Tensor& cond = in[0];
  StridedIter it({&o, &cond, &a, &b});
  LUCID_DISPATCH_ALL(t, "where", [&] {
    it.for_each([](char** p, const int64_t* s, int64_t n) {
      using T = scalar_t;
      const int64_t sz = sizeof(T);
      T* op = reinterpret_cast<T*>(p[0]);
      const uint8_t* cp = reinterpret_cast<const uint8_t*>(p[1]);  // bool bytes; uint8 vectorises
      const T* ap = reinterpret_cast<const T*>(p[2]);
      const T* bp = reinterpret_cast<const T*>(p[3]);
      // Both values are loaded before the select, so the loops if-convert and vectorise.
      if (s[0] == sz && s[1] == 1) {
        if (s[2] == sz && s[3] == sz) {
          for (int64_t i = 0; i < n; ++i) { T a = ap[i], b = bp[i]; op[i] = cp[i] != 0 ? a : b; }
          return;
        }
        if (s[2] == sz && s[3] == 0) {
          const T b = bp[0];
          for (int64_t i = 0; i < n; ++i) { T a = ap[i]; op[i] = cp[i] != 0 ? a : b; }
          return;
        }
        if (s[2] == 0 && s[3] == sz) {
          const T a = ap[0];
          for (int64_t i = 0; i < n; ++i) { T b = bp[i]; op[i] = cp[i] != 0 ? a : b; }
          return;
        }
      }
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const bool*>(p[1] + i * s[1])
                                                     ? *reinterpret_cast<const T*>(p[2] + i * s[2])
                                                     : *reinterpret_cast<const T*>(p[3] + i * s[3]);
    });
  });
}

LUCID_REGISTER_KERNEL(Where, CPU, where_kernel);

}  // namespace lucid::cpu
