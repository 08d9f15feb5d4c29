// The CUDA kernels of the linear-algebra decompositions (Cholesky, QR, SVD, eigh, solve, inverse,
// determinants, least squares; records in ops/linalg_decomp.cpp) run the CPU backend's LAPACK
// kernels on a host copy of the inputs and copy the results back: two transfers and one wait for
// the device per call. The numbers are the CPU's exactly (the same LAPACK calls), and errors are
// the CPU kernel's (LinAlgError with torch's wording). Not fast: a cuSOLVER backend (batched
// getrf/potrf/gesvdj/syevd) is the later replacement, and needs the cuSOLVER library, which the
// backend does not link yet.
#include "lucid/ops/core.h"

namespace lucid::cuda {
namespace {

template <OpId Id>
void on_host(const TensorList& in, const TensorList& out, const Attrs& a) {
  KernelFn cpu = op_def(Id).kernel(DeviceType::CPU);
  LUCID_CHECK(cpu, NotImplementedError, op_def(Id).api_name, ": no CPU kernel to run on the host");
  TensorList hin, hout;
  for (const Tensor& t : in) hin.push_back(t.defined() ? host_copy(t) : t);
  for (const Tensor& t : out) hout.push_back(Tensor::empty(t.shape(), t.dtype()));
  cpu(hin, hout, a);
  for (size_t k = 0; k < out.size(); ++k) copy_values(out[k], hout[k]);
}

}  // namespace

LUCID_REGISTER_KERNEL(LinalgCholesky, CUDA, on_host<OpId::LinalgCholesky>);
LUCID_REGISTER_KERNEL(LinalgDet, CUDA, on_host<OpId::LinalgDet>);
LUCID_REGISTER_KERNEL(LinalgEigh, CUDA, on_host<OpId::LinalgEigh>);
LUCID_REGISTER_KERNEL(LinalgInv, CUDA, on_host<OpId::LinalgInv>);
LUCID_REGISTER_KERNEL(LinalgLstsq, CUDA, on_host<OpId::LinalgLstsq>);
LUCID_REGISTER_KERNEL(LinalgQr, CUDA, on_host<OpId::LinalgQr>);
LUCID_REGISTER_KERNEL(LinalgSlogdet, CUDA, on_host<OpId::LinalgSlogdet>);
LUCID_REGISTER_KERNEL(LinalgSolve, CUDA, on_host<OpId::LinalgSolve>);
LUCID_REGISTER_KERNEL(LinalgSolveTriangular, CUDA, on_host<OpId::LinalgSolveTriangular>);
LUCID_REGISTER_KERNEL(LinalgSvd, CUDA, on_host<OpId::LinalgSvd>);

}  // namespace lucid::cuda
