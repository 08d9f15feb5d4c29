// CPU kernel of Dropout (op record in ops/nn_softmax.cpp): y = x * mask / (1 - p) over a
// strided iteration, the keep-mask (bool or x's dtype) drawn by the caller; p = 1 gives zeros.
#include "lucid/backends/cpu/loops.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

void dropout_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  double p = a.f("p");
  const Tensor &x = in[0], &m = in[1], &o = out[0];
  LUCID_DISPATCH_FLOATING(x.dtype(), "dropout", [&] {
    using C = compute_t<scalar_t>;
    const C scale = p >= 1.0 ? C(0) : static_cast<C>(1.0 / (1.0 - p));
    cpu::StridedIter it({&o, &x, &m});
    bool bool_mask = m.dtype() == DType::Bool;
    it.for_each([&](char** ptr, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        C xv = static_cast<C>(*reinterpret_cast<const scalar_t*>(ptr[1] + i * s[1]));
        C mv = bool_mask ? C(*reinterpret_cast<const bool*>(ptr[2] + i * s[2]))
                         : static_cast<C>(*reinterpret_cast<const scalar_t*>(ptr[2] + i * s[2]));
        *reinterpret_cast<scalar_t*>(ptr[0] + i * s[0]) = static_cast<scalar_t>(xv * mv * scale);
      }
    });
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Dropout, CPU, dropout_kernel);

}  // namespace lucid::cpu
