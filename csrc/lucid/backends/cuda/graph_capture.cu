// The thread's capture context (graph_capture.h) and the per-replay word writer.
#include <cuda_runtime_api.h>

#include <algorithm>

#include "lucid/backends/cuda/graph_capture.h"
#include "lucid/backends/cuda/stream.h"

namespace lucid::cuda {

namespace {
thread_local GraphPool* t_pool = nullptr;
thread_local GraphPhilox t_philox;
thread_local GraphScalars* t_scalars = nullptr;

struct ReplayArgs {
  uint64_t* dst_words;
  int words, copies;
  GraphCopy copy[kGraphCopies];
  uint64_t word[kGraphWords];
};
static_assert(sizeof(ReplayArgs) < 4096, "kernel arguments");

constexpr int kThreads = 256;

// Block 0 writes the words; every thread strides over each copy, 16 bytes at a time where the
// copy's addresses and size allow it, else byte by byte.
__global__ void __launch_bounds__(kThreads) replay_copy_kernel(const ReplayArgs a) {
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  if (blockIdx.x == 0)
    for (int i = threadIdx.x; i < a.words; i += blockDim.x) a.dst_words[i] = a.word[i];
  for (int k = 0; k < a.copies; ++k) {
    const GraphCopy& c = a.copy[k];
    if (((reinterpret_cast<uintptr_t>(c.dst) | reinterpret_cast<uintptr_t>(c.src) | c.bytes) & 15) == 0) {
      const uint4* src = static_cast<const uint4*>(c.src);
      uint4* dst = static_cast<uint4*>(c.dst);
      for (size_t i = tid; i < c.bytes / 16; i += stride) dst[i] = src[i];
    } else {
      const char* src = static_cast<const char*>(c.src);
      char* dst = static_cast<char*>(c.dst);
      for (size_t i = tid; i < c.bytes; i += stride) dst[i] = src[i];
    }
  }
}
}  // namespace

GraphPool* active_graph_pool() { return t_pool; }

GraphPoolScope::GraphPoolScope(GraphPool* pool) : prev_(t_pool) { t_pool = pool; }
GraphPoolScope::~GraphPoolScope() { t_pool = prev_; }

const GraphPhilox& graph_philox() { return t_philox; }

GraphPhiloxScope::GraphPhiloxScope(GraphPhilox p) : prev_(t_philox) { t_philox = p; }
GraphPhiloxScope::~GraphPhiloxScope() { t_philox = prev_; }

GraphScalars* active_graph_scalars() { return t_scalars; }

GraphScalarsScope::GraphScalarsScope(GraphScalars* s) : prev_(t_scalars) { t_scalars = s; }
GraphScalarsScope::~GraphScalarsScope() { t_scalars = prev_; }

void copy_for_replay(const std::vector<GraphCopy>& copies, uint64_t* dst_words, const uint64_t* words, size_t n, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  size_t next = 0, at = 0;  // the next copy, the next word
  while (next < copies.size() || at < n) {
    ReplayArgs a;
    a.dst_words = dst_words + at;
    a.words = static_cast<int>(std::min<size_t>(kGraphWords, n - at));
    std::copy(words + at, words + at + a.words, a.word);
    at += static_cast<size_t>(a.words);
    a.copies = 0;
    size_t bytes = 0;
    for (; next < copies.size(); ++next) {
      const GraphCopy& c = copies[next];
      if (c.bytes == 0) continue;
      if (c.bytes > kGraphCopyBytes) {  // a large one: the copy engine's path
        check_cuda(cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDeviceToDevice, s), "lucid.compile: cudaMemcpyAsync (replay)");
        continue;
      }
      if (a.copies == kGraphCopies || bytes + c.bytes > kGraphCopyBytes) break;
      a.copy[a.copies++] = c;
      bytes += c.bytes;
    }
    if (a.words == 0 && a.copies == 0) continue;
    const size_t units = std::max<size_t>(bytes / 16, 1);
    const unsigned blocks = static_cast<unsigned>(std::min<size_t>((units + kThreads - 1) / kThreads, 1024));
    replay_copy_kernel<<<blocks, kThreads, 0, s>>>(a);
    check_launch("lucid.compile: the per-call words and copies of a CUDA graph replay");
  }
}

}  // namespace lucid::cuda
