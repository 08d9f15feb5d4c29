// The CPU-only build's definition of lucid/backends/cuda/libraries.h: no CUDA backend, so no
// CUDA libraries. CMake builds either this file or backends/cuda/, never both.
#include "lucid/backends/cuda/libraries.h"

namespace lucid::cuda {

const std::vector<Library>& libraries() {
  static const std::vector<Library> none;
  return none;
}

}  // namespace lucid::cuda
