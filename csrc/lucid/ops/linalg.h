// C++ API of the linalg family (named like the Python API): matrix products, convolutions and
// pooling. VJPs of this and other families call these; the Python bindings are thin wrappers.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include "lucid/dispatch/dispatch.h"

namespace lucid {

// ---- matrix products (linalg_ops.cpp) ----
Tensor matmul(const Tensor& a, const Tensor& b);  // torch.matmul: 1-D/2-D/batched, batch broadcast
Tensor mm(const Tensor& a, const Tensor& b);      // 2-D only
Tensor bmm(const Tensor& a, const Tensor& b);     // 3-D only, equal batch
Tensor mv(const Tensor& a, const Tensor& v);
Tensor dot(const Tensor& a, const Tensor& b);
Tensor mT(const Tensor& t);  // transpose of the last two dims (a view)
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, double beta = 1.0, double alpha = 1.0);
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias = Tensor());
// act(x @ w^T + bias) + residual (or act(x @ w^T + bias + residual) when residual_first): the
// fused GEMM epilogue the compiler emits. Not differentiable (fusion runs after autodiff).
Tensor linear_fused(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual,
                    const std::string& activation, bool residual_first = false);

// ---- convolutions (conv_ops.cpp); tensors are batched [N, C, spatial...] ----
struct ConvOptions {
  IntList stride, padding_l, padding_r, dilation;  // one entry per spatial dim
  int64_t groups = 1;
  Attrs attrs() const;
  static ConvOptions from(const Attrs& a);
};
Tensor convolution(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvOptions& o);
// post(conv(x, w) + bias) with activation and residual (see linear_fused); not differentiable.
Tensor conv_fused(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual, const ConvOptions& o,
                  const std::string& activation, bool residual_first = false);
Tensor conv_backward_input(const Tensor& grad_out, const Tensor& w, const Shape& input_shape, const ConvOptions& o);
Tensor conv_backward_weight(const Tensor& grad_out, const Tensor& x, const Shape& weight_shape, const ConvOptions& o);
// torch.nn.functional.conv{1,2}d; padding_mode "" uses `padding`, else "same" or "valid".
// Accepts unbatched [C, spatial...] input like PyTorch.
Tensor conv_nd(int nspatial, const Tensor& x, const Tensor& w, const Tensor& bias, IntList stride, IntList padding,
               const std::string& padding_mode, IntList dilation, int64_t groups);
Tensor conv_transpose_nd(int nspatial, const Tensor& x, const Tensor& w, const Tensor& bias, IntList stride,
                         IntList padding, IntList output_padding, int64_t groups, IntList dilation);

// ---- unfold / fold (conv_fold.cpp): torch.nn.functional.unfold / fold ----
Tensor unfold(const Tensor& x, IntList kernel_size, IntList dilation, IntList padding, IntList stride);
Tensor fold(const Tensor& x, IntList output_size, IntList kernel_size, IntList dilation, IntList padding, IntList stride);

// ---- pooling (pool_ops.cpp); 2-D, input [N, C, H, W] or [C, H, W] ----
// Returns {values, indices}; indices index the flattened H*W plane (as in PyTorch).
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntList kernel, IntList stride, IntList padding,
                                                  IntList dilation, bool ceil_mode);
Tensor avg_pool2d(const Tensor& x, IntList kernel, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad, int64_t divisor_override);
Tensor adaptive_avg_pool2d(const Tensor& x, IntList output_size);  // entries <= 0 keep the input size
std::pair<Tensor, Tensor> adaptive_max_pool2d(const Tensor& x, IntList output_size);  // {values, indices}

// ---- decompositions and solvers (linalg_decomp.cpp; CPU kernels on LAPACK, backends/cpu) ----
// torch.linalg semantics: batches over leading dims (broadcast between A and B), float32/float64.
Tensor linalg_solve(const Tensor& A, const Tensor& B, bool left = true);  // B: [*, n, k] or vector [*, n]
Tensor linalg_solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left = true,
                               bool unitriangular = false);
Tensor linalg_inv(const Tensor& A);
Tensor linalg_det(const Tensor& A);
std::pair<Tensor, Tensor> linalg_slogdet(const Tensor& A);                // {sign, logabsdet}
Tensor linalg_cholesky(const Tensor& A, bool upper = false);
std::pair<Tensor, Tensor> linalg_qr(const Tensor& A, const std::string& mode = "reduced");  // {Q, R}
std::tuple<Tensor, Tensor, Tensor> linalg_svd(const Tensor& A, bool full_matrices = true);  // {U, S, Vh}
Tensor linalg_svdvals(const Tensor& A);
std::pair<Tensor, Tensor> linalg_eigh(const Tensor& A, const std::string& uplo = "L");      // {L, V}
Tensor linalg_eigvalsh(const Tensor& A, const std::string& uplo = "L");
// Singular values <= max(atol, rtol * largest) dropped; torch's defaults for unset tolerances.
Tensor linalg_pinv(const Tensor& A, std::optional<double> atol, std::optional<double> rtol);
// {solution, rank, singular_values}; rcond defaults to eps(dtype) * max(m, n).
std::tuple<Tensor, Tensor, Tensor> linalg_lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond,
                                                 const std::string& driver);

}  // namespace lucid
