// stable_sort_segments for uint64_t keys (segmented_sort.h; one CUB instantiation per file).
#include "lucid/backends/cuda/kernels/segmented_sort.cuh"

namespace lucid::cuda {

void stable_sort_segments(const uint64_t* keys_in, uint64_t* keys_out, const int64_t* idx_in, int64_t* idx_out,
                          int64_t total, int64_t segments, const int64_t* offsets, const Device& dev, const char* name) {
  stable_sort_segments_of(keys_in, keys_out, idx_in, idx_out, total, segments, offsets, dev, name);
}

}  // namespace lucid::cuda
