// CUB's version as nvcc sees it (CUB_VERSION). Compiled by nvcc with the full <cub/cub.cuh>, so a
// CCCL that nvcc cannot compile for this build's architectures and C++ standard, or an include
// path that misses it, fails the build here rather than in the first kernel that uses CUB.
#include <cub/cub.cuh>

namespace lucid::cuda {

int cub_version() { return CUB_VERSION; }

}  // namespace lucid::cuda
