// Shared pieces of the CUDA attention kernels (attention.cu: the GEMM path and the registered
// kernels; attention_flash.cu: the flash kernels): the mask operands (bool: True keeps; float:
// added to the scores; a dropout keep-mask multiplies P by keep / (1 - p)), the masked score of
// one (row, s), and the flash kernels' entry points, which return false for what they do not
// cover (float64, head dims past 128) so the caller takes the GEMM path.
#pragma once
#include "lucid/backends/cuda/kernels/nn_device.cuh"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

// A mask operand: kind 0 none, 1 bool (keep?), 2 values of the input's dtype.
template <class D>
struct MaskView {
  int kind = 0;
  const bool* b = nullptr;
  const D* f = nullptr;
};

// The view of mask m (undefined: none), with its contiguous storage (a float mask in dtype dt) in keep.
template <class D>
MaskView<D> mask_view(const Tensor& m, DType dt, Tensor& keep) {
  MaskView<D> v;
  if (!m.defined()) return v;
  if (m.dtype() == DType::Bool) {
    keep = m.contiguous_data();
    v.kind = 1;
    v.b = keep.data<bool>();
  } else {
    keep = contig_as(m, dt);
    v.kind = 2;
    v.f = keep.data<D>();
  }
  return v;
}

// The multiplier 1 / (1 - p) of kept elements (0 for p = 1), or 1 without dropout.
template <class C>
inline C dropout_scale(int drop_kind, double p) {
  return (drop_kind && p < 1.0) ? static_cast<C>(1.0 / (1.0 - p)) : C(drop_kind ? 0 : 1);
}

#ifdef __CUDACC__
// Dropout multiplier of flat index i: keep / (1 - p), or 1 without dropout.
template <class D>
__device__ __forceinline__ compute_t<D> drop_mult(const MaskView<D>& drop, int64_t i, compute_t<D> dscale) {
  using C = compute_t<D>;
  if (drop.kind == 1) return drop.b[i] ? dscale : C(0);
  if (drop.kind == 2) return to_compute(drop.f[i]) * dscale;
  return C(1);
}

// The score v of (row, s) after the masks (row = b * L + l, S keys): -inf at or past the causal
// limit lim (l + 1, or S) or where a bool mask is False, plus the float mask's value.
template <class D>
__device__ __forceinline__ compute_t<D> masked_score(compute_t<D> v, int64_t row, int64_t s, int64_t S, int64_t lim,
                                                     const MaskView<D>& mask) {
  if (s >= lim || (mask.kind == 1 && !mask.b[row * S + s])) return -INFINITY;
  if (mask.kind == 2) v += to_compute(mask.f[row * S + s]);
  return v;
}
#endif

// Flash kernels of ScaledDotProductAttention (inputs (q, k, v, mask, dropout_mask) -> (out, lse))
// and SdpaBackward (inputs (g, q, k, v, mask, dropout_mask, out, lse) -> (dq, dk, dv, dscores)),
// for float32/float16/bfloat16 with head dims E, Ev <= 128; false (nothing launched) otherwise.
bool sdpa_flash_forward(const TensorList& in, const TensorList& out, const Attrs& a);
bool sdpa_flash_backward(const TensorList& in, const TensorList& out, const Attrs& a);

}  // namespace lucid::cuda
