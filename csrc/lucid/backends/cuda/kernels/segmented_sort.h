// Stable sort of (key, index) pairs within segments, the CUB call behind the sort family's CUDA
// kernels (sort.cu): cub::DeviceSegmentedSort::StableSortPairs on the current stream of `dev`,
// its temporary storage from the device allocator. Keys are unsigned integers (sort.cu maps every
// dtype to an order-preserving uint32 or uint64 key), so only these two instantiations exist,
// each compiled in a file of its own (segmented_sort_u32.cu, segmented_sort_u64.cu) because CUB's
// segmented sort is the slowest thing in the backend to compile.
#pragma once
#include <cstdint>

#include "lucid/core/device.h"

namespace lucid::cuda {

// Segment s is [offsets[s], offsets[s + 1]) of the `total` pairs; `segments` segments.
void stable_sort_segments(const uint32_t* keys_in, uint32_t* keys_out, const int64_t* idx_in, int64_t* idx_out,
                          int64_t total, int64_t segments, const int64_t* offsets, const Device& dev, const char* name);
void stable_sort_segments(const uint64_t* keys_in, uint64_t* keys_out, const int64_t* idx_in, int64_t* idx_out,
                          int64_t total, int64_t segments, const int64_t* offsets, const Device& dev, const char* name);

}  // namespace lucid::cuda
