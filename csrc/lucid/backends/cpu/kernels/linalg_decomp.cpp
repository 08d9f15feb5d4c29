// CPU kernels of lucid.linalg's decompositions and solvers (records in ops/linalg_decomp.cpp):
// each runs its LAPACK routine of backends/cpu/lapack (batched; strided input copied per matrix
// into column-major scratch; failures raise LinAlgError with torch's wording).
#include "lucid/backends/cpu/lapack.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

void linalg_solve_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  lapack_solve(in[0], in[1], out[0]);
}

void linalg_solve_triangular_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  lapack_solve_triangular(in[0], in[1], a.b("upper"), a.b("unitriangular"), out[0]);
}

void linalg_inv_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  lapack_inv(in[0], out[0]);
}

void linalg_det_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  lapack_det(in[0], out[0]);
}

void linalg_slogdet_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  lapack_slogdet(in[0], out[0], out[1]);
}

void linalg_cholesky_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  lapack_cholesky(in[0], a.b("upper"), out[0]);
}

void linalg_qr_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  lapack_qr(in[0], a.s("mode"), out[0], out[1]);
}

void linalg_svd_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  lapack_svd(in[0], a.b("full_matrices"), a.b("compute_uv"), out[0], out[1], out[2]);
}

void linalg_eigh_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  lapack_eigh(in[0], a.b("upper"), a.b("compute_v"), out[0], out[1]);
}

void linalg_lstsq_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  lapack_lstsq(in[0], in[1], a.f("rcond"), a.s("driver"), out[0], out[1], out[2]);
}

}  // namespace

LUCID_REGISTER_KERNEL(LinalgSolve, CPU, linalg_solve_kernel);
LUCID_REGISTER_KERNEL(LinalgSolveTriangular, CPU, linalg_solve_triangular_kernel);
LUCID_REGISTER_KERNEL(LinalgInv, CPU, linalg_inv_kernel);
LUCID_REGISTER_KERNEL(LinalgDet, CPU, linalg_det_kernel);
LUCID_REGISTER_KERNEL(LinalgSlogdet, CPU, linalg_slogdet_kernel);
LUCID_REGISTER_KERNEL(LinalgCholesky, CPU, linalg_cholesky_kernel);
LUCID_REGISTER_KERNEL(LinalgQr, CPU, linalg_qr_kernel);
LUCID_REGISTER_KERNEL(LinalgSvd, CPU, linalg_svd_kernel);
LUCID_REGISTER_KERNEL(LinalgEigh, CPU, linalg_eigh_kernel);
LUCID_REGISTER_KERNEL(LinalgLstsq, CPU, linalg_lstsq_kernel);

}  // namespace lucid::cpu
