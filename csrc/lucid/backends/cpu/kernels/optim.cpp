// CPU kernels of the fused optimizer steps (records in ops/optim_ops.cpp): FusedAdam and FusedSgd,
// one pass over each tensor of the lists with optim_update.h's per-element math. Compiled
// without floating-point contraction (CMakeLists.txt), as the CUDA kernels, so both backends give
// the same bits.
#include "lucid/core/parallel.h"
#include "lucid/ops/optim.h"

namespace lucid::cpu {

namespace {

// Round trip of a compute value through the stored type T (identity for float and double).
template <class T> struct RoundTo {
  compute_t<T> operator()(compute_t<T> v) const {
    if constexpr (std::is_same_v<T, compute_t<T>>) return v;
    else return static_cast<compute_t<T>>(T(v));
  }
};

template <class T> void adam(const TensorList& in, const AdamCoeffs& k) {
  using C = compute_t<T>;
  const size_t n = in.size() / (k.amsgrad ? 5 : 4);
  for (size_t i = 0; i < n; ++i) {
    T* p = in[i].data<T>();
    const T* g = in[n + i].data<T>();
    T* m = in[2 * n + i].data<T>();
    T* v = in[3 * n + i].data<T>();
    T* vmax = k.amsgrad ? in[4 * n + i].data<T>() : nullptr;
    parallel_for(0, in[i].numel(), kParallelGrain, [&](int64_t b, int64_t e) {
      RoundTo<T> round;
      for (int64_t j = b; j < e; ++j) {
        C pc = static_cast<C>(p[j]), mc = static_cast<C>(m[j]), vc = static_cast<C>(v[j]);
        C vm = vmax ? static_cast<C>(vmax[j]) : C(0);
        adam_update<C>(pc, static_cast<C>(g[j]), mc, vc, vm, k, round);
        p[j] = static_cast<T>(pc), m[j] = static_cast<T>(mc), v[j] = static_cast<T>(vc);
        if (vmax) vmax[j] = static_cast<T>(vm);
      }
    });
  }
}

template <class T> void sgd(const TensorList& in, const SgdCoeffs& k) {
  using C = compute_t<T>;
  const bool momentum = k.momentum != 0;
  const size_t n = in.size() / (momentum ? 3 : 2);
  for (size_t i = 0; i < n; ++i) {
    T* p = in[i].data<T>();
    const T* g = in[n + i].data<T>();
    T* buf = momentum ? in[2 * n + i].data<T>() : nullptr;
    parallel_for(0, in[i].numel(), kParallelGrain, [&](int64_t b, int64_t e) {
      RoundTo<T> round;
      for (int64_t j = b; j < e; ++j) {
        C pc = static_cast<C>(p[j]), bc = buf ? static_cast<C>(buf[j]) : C(0);
        sgd_update<C>(pc, static_cast<C>(g[j]), bc, k, round);
        p[j] = static_cast<T>(pc);
        if (buf) buf[j] = static_cast<T>(bc);
      }
    });
  }
}

template <template <class> class Fn, class K> void by_dtype(DType dt, const TensorList& in, const K& k) {
  switch (dt) {
    case DType::Float32: Fn<float>::run(in, k); return;
    case DType::Float64: Fn<double>::run(in, k); return;
    case DType::Float16: Fn<Half>::run(in, k); return;
    case DType::BFloat16: Fn<BFloat16>::run(in, k); return;
    default: throw TypeError(str("fused optimizer step: dtype ", dtype_name(dt), " is not supported"));
  }
}
template <class T> struct AdamFn { static void run(const TensorList& in, const AdamCoeffs& k) { adam<T>(in, k); } };
template <class T> struct SgdFn { static void run(const TensorList& in, const SgdCoeffs& k) { sgd<T>(in, k); } };

void fused_adam_kernel(const TensorList& in, const TensorList&, const Attrs& a) {
  if (!in.empty()) by_dtype<AdamFn>(in[0].dtype(), in, adam_coeffs(a));
}
void fused_sgd_kernel(const TensorList& in, const TensorList&, const Attrs& a) {
  if (!in.empty()) by_dtype<SgdFn>(in[0].dtype(), in, sgd_coeffs(a));
}

}  // namespace

LUCID_REGISTER_KERNEL(FusedAdam, CPU, fused_adam_kernel);
LUCID_REGISTER_KERNEL(FusedSgd, CPU, fused_sgd_kernel);

}  // namespace lucid::cpu
