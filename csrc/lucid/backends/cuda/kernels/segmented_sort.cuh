// The one definition of stable_sort_segments (segmented_sort.h) for a key type K, included by
// segmented_sort_u32.cu and segmented_sort_u64.cu, each instantiating it once.
#pragma once
#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>

#include "lucid/backends/cuda/kernels/segmented_sort.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/core/tensor.h"

namespace lucid::cuda {

template <class K>
void stable_sort_segments_of(const K* keys_in, K* keys_out, const int64_t* idx_in, int64_t* idx_out, int64_t total,
                             int64_t segments, const int64_t* offsets, const Device& dev, const char* name) {
  cudaStream_t stream = current_stream(dev);
  size_t bytes = 0;
  check_cuda(cub::DeviceSegmentedSort::StableSortPairs(nullptr, bytes, keys_in, keys_out, idx_in, idx_out, total, segments,
                                                       offsets, offsets + 1, stream),
             name);
  Tensor temp = Tensor::empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))}, DType::UInt8, dev);
  check_cuda(cub::DeviceSegmentedSort::StableSortPairs(temp.data_ptr(), bytes, keys_in, keys_out, idx_in, idx_out, total,
                                                       segments, offsets, offsets + 1, stream),
             name);
}

}  // namespace lucid::cuda
