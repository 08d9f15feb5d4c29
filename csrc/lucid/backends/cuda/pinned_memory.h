// Pinned (page-locked) host memory: Tensor.pin_memory(), is_pinned(), and the factories'
// pin_memory=True. A copy between a pinned buffer and the GPU can run asynchronously
// (cudaMemcpyAsync returns at once and the copy overlaps other work); from pageable memory the
// runtime stages it and the host waits.
//
// The buffers come from cudaHostAlloc, cached by size class (powers of two, at least 512 bytes) as
// torch's CachingHostAllocator does, since cudaHostAlloc and cudaFreeHost are slow and
// synchronise. A freed buffer may still be read or written by an asynchronous copy: the copy
// kernel calls record_host_use(ptr, stream) after queueing a copy from or to pinned memory, and a
// freed buffer is reused only once every stream so recorded has passed that point (an event per
// use).
//
// One interface, two definitions (as device_info.h): pinned_memory.cu in a CUDA build,
// ../no_cuda/pinned_memory.cpp in a CPU-only one (pin_memory raises "no CUDA backend"; is_pinned
// is false). No CUDA header here.
#pragma once
#include "lucid/backends/cuda/stream_objects.h"
#include "lucid/core/tensor.h"

namespace lucid::cuda {

// A copy of CPU tensor t in pinned memory (contiguous, same shape and dtype, no autograd history);
// t itself when its bytes are pinned already. RuntimeError without a CUDA device (pinning needs
// the driver), TypeError for a tensor not on the CPU.
Tensor pin_memory(const Tensor& t);

// True when host address p lies in pinned memory: a buffer of pin_memory, or page-locked memory
// of another library (cudaHostAlloc / cudaHostRegister, e.g. torch's pinned tensors, asked with
// cudaPointerGetAttributes). False without a CUDA device. Cheap for lucid's own buffers.
bool is_pinned(const void* p);

// After queueing an asynchronous copy from or to pinned address p on stream s: p's buffer is not
// reused after it is freed until s has passed this point. Nothing for an address that is not a
// buffer of pin_memory.
void record_host_use(const void* p, const StreamRef& s);

}  // namespace lucid::cuda
