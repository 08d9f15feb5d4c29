// Compile check for the device-neutral Philox stream (core/philox.h) and the random ops' rules
// for turning draws into values (ops/random_draws.h), run by scripts/check_cuda_headers.sh: a
// device kernel must give the CPU's numbers for the same (seed, offset), so every function is
// called from a __global__ kernel here. Compiled with -c only: nothing runs, no GPU is needed.
#include <cstdint>

#include "lucid/core/philox.h"
#include "lucid/ops/random_draws.h"

using namespace lucid;

__global__ void draws_kernel(double* o, uint64_t seed, uint64_t offset, int64_t low, int64_t high, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  PhiloxBlock b = philox4x32_10(PhiloxBlock{{1u, 2u, 3u, 4u}}, 5u, 6u);
  uint32_t d[4] = {philox_draw(seed, offset + 4 * i), philox_draw(seed, offset + 4 * i + 1), b[2], b.w[3]};
  PhiloxBlock c = philox4x32_10(offset / 4 + i, seed);
  int k = randint_draws(low, high);
  uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  o[i] = unit_uniform<double>(d) + unit_uniform<float>(d) + unit_uniform<Half>(d) + unit_uniform<BFloat16>(c.w) +
         uniform_draws<float>() + uniform_draws<double>() + static_cast<double>(randint_offset(d, k, range)) +
         affine_draw(1.0, 2.0, o[i]);
}
