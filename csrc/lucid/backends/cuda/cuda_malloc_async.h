// The cudaMallocAsync backend of the CUDA allocator, chosen with LUCID_CUDA_ALLOCATOR=cudaMallocAsync
// (cuda_allocator.cu reads it when it installs the allocator; the default is lucid's caching
// allocator). Internal to backends/cuda: it includes no CUDA header but answers the same counters and
// record_stream.
#pragma once
#include "lucid/backends/cuda/cuda_allocator.h"
#include "lucid/core/allocator.h"

namespace lucid::cuda {

Allocator& malloc_async_allocator();
AllocatorStats malloc_async_stats(int index);
void malloc_async_record_stream(const void* ptr, int index, uintptr_t stream);  // cuda_allocator.h's record_stream

}  // namespace lucid::cuda
