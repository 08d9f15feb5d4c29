// Compile check for the pointwise losses' device-neutral math (ops/pointwise_loss_math.h), run by
// scripts/check_cuda_headers.sh: the CUDA kernel of the pointwise losses and the CPU kernel share
// these functions, so every one is called from a __global__ kernel here, for every loss kind.
// Compiled with -c only: nothing runs, no GPU is needed.
#include <cstdint>

#include "lucid/ops/pointwise_loss_math.h"

using namespace lucid::nnutil;

__global__ void pointwise_loss_kernel(double* o, const double* x, const double* t, int64_t kind, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double gx, gt;
  elem_grad(kind, x[i], t[i], 0.5, 2.0, 1.0, gx, gt);
  o[i] = elem_loss(kind, x[i], t[i], 0.5, 2.0, 1.0) + gx + gt + elem_grad2(kind, x[i], t[i], 1.0);
}
