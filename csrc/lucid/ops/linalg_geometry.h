// Geometry of the linalg family's ops, shared by their records (infer, VJPs) and the backends'
// kernels, so that every backend computes the layout the record validated: the broadcast shape
// of torch.matmul, the sliding-window layout of im2col / col2im, and ConvTranspose's attributes
// read as the convolution it transposes. Shapes and attributes only, no data.
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
