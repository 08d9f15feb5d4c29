// LAPACK glue of the CPU backend: the kernels of the decomposition ops (lucid.linalg) on
// OpenBLAS's LAPACK (the OpenMP build, so it shares libgomp with oneDNN and our kernels).
// Each function takes inputs of shape [batch..., rows, cols] with any strides (equal batch
// shapes; the ops' infer checks them), copies each matrix into a column-major scratch buffer,
// calls the Fortran routine and writes the contiguous outputs dispatch allocated. float32 and
// float64 only. Failures (a singular matrix, a matrix that is not positive-definite) raise
// LinAlgError with torch's wording; `op` is the API name used in the message.
#pragma once
#include <string>

#include "lucid/core/tensor.h"

namespace lucid::cpu {

// X = A^-1 B (getrf + getrs); A [*, n, n], B [*, n, k].
void lapack_solve(const Tensor& A, const Tensor& B, const Tensor& X);
// X = A^-1 B for triangular A (trtrs); only the `upper` (or lower) triangle of A is read.
void lapack_solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool unitriangular, const Tensor& X);
void lapack_inv(const Tensor& A, const Tensor& out);                                  // getrf + getri
void lapack_det(const Tensor& A, const Tensor& det);                                  // getrf
void lapack_slogdet(const Tensor& A, const Tensor& sign, const Tensor& logabsdet);    // getrf
void lapack_cholesky(const Tensor& A, bool upper, const Tensor& L);                   // potrf
// mode "reduced" | "complete" | "r" (Q is then left unwritten); geqrf + orgqr.
void lapack_qr(const Tensor& A, const std::string& mode, const Tensor& Q, const Tensor& R);
// gesdd; with compute_uv false U and Vh are left unwritten.
void lapack_svd(const Tensor& A, bool full_matrices, bool compute_uv, const Tensor& U, const Tensor& S,
                const Tensor& Vh);
// syevd: ascending eigenvalues; with compute_v false V is left unwritten.
void lapack_eigh(const Tensor& A, bool upper, bool compute_v, const Tensor& L, const Tensor& V);
// Least squares min ||A X - B|| (gels, or gelsd for the rank-revealing drivers); X [*, n, k],
// rank [*] (int64) and S [*, min(m, n)] are written when their numel is non-zero.
void lapack_lstsq(const Tensor& A, const Tensor& B, double rcond, const std::string& driver, const Tensor& X,
                  const Tensor& rank, const Tensor& S);

}  // namespace lucid::cpu
