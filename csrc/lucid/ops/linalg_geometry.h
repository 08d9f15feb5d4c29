// Geometry of the linalg family's ops, shared by their records (infer, VJPs) and the backends'
// kernels, so that every backend computes the layout the record validated: the broadcast shape
// of torch.matmul, the sliding-window layout of im2col / col2im, and ConvTranspose's attributes
// read as the convolution it transposes, and the matrix views every backend's matmul kernels take
// of their operands. Shapes, strides and attributes only, no data.
#pragma once
#include <cstdint>

#include "lucid/ops/linalg.h"

namespace lucid {

// Geometry of a matmul: the broadcast batch shape, M, K, N and the torch output shape.
struct MatmulGeo {
  Shape batch, out;
  int64_t M = 1, K = 1, N = 1;
  Shape full() const {  // batch + [M, N]: the output with 1-D operands' unit dims kept
    Shape s = batch;
    s.push_back(M);
    s.push_back(N);
    return s;
  }
};
// Validates the operands' ranks and inner sizes (errors name `op`) and broadcasts the batches.
MatmulGeo matmul_geo(const Tensor& a, const Tensor& b, const char* op = "matmul");

// Views (metadata only, any device) of a matmul's operands as matrices: a as [..., M, K] and b as
// [..., K, N] (a 1-D operand gets a unit dim), the output as batch + [M, N] (MatmulGeo::full),
// and Linear's weight [N, K] as its transpose [K, N].
inline Tensor matmul_lhs_view(const Tensor& a) {
  if (a.ndim() >= 2) return a;
  return Tensor::make_view(a, {1, a.shape()[0]}, {a.shape()[0] * a.strides()[0], a.strides()[0]}, a.offset());
}
inline Tensor matmul_rhs_view(const Tensor& b) {
  if (b.ndim() >= 2) return b;
  return Tensor::make_view(b, {b.shape()[0], 1}, {b.strides()[0], 1}, b.offset());
}
inline Tensor matmul_out_view(const Tensor& out, const Shape& full) {
  return Tensor::make_view(out, full, contiguous_strides(full), out.offset());
}
inline Tensor linear_weight_view(const Tensor& w) {
  return Tensor::make_view(w, {w.shape()[1], w.shape()[0]}, {w.strides()[1], w.strides()[0]}, w.offset());
}

// Sliding windows of im2col / col2im over a C x H x W image (OH x OW window positions).
struct FoldGeo {
  int64_t C, H, W, KH, KW, OH, OW, sh, sw, dh, dw, ph, pw;
};
// From attributes kernel_size, dilation, padding, stride (validated; errors name `op`).
FoldGeo fold_geo(const char* op, int64_t C, int64_t H, int64_t W, const Attrs& a);

// ConvTranspose's attributes (stride, padding, dilation, groups) as the options of the
// convolution whose adjoint it is (symmetric padding).
ConvOptions transpose_as_conv(const Attrs& a);

}  // namespace lucid
