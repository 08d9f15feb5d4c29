// What a CUDA graph capture on this thread provides to the code it runs: the memory pool that
// keeps its allocations (GraphPool) and the device state its random ops read (GraphPhilox).
//
// GraphPool: a kernel's temporaries (cuBLASLt and cuDNN workspaces, reduction partials, CUB's
// scratch) and a compiled program's per-call values are allocated and freed while the graph is
// captured; a graph replays the captured addresses, so none of those blocks may go back to the
// caching allocator while the graph lives (PyTorch gives a capture a private memory pool for the
// same reason). While a GraphPoolScope is active on a thread, the caching allocator
// (cuda_allocator.cu) hands every block this thread allocates to the scope's pool as well, which
// keeps it until the pool is destroyed: blocks freed during the capture are never reused, inside
// or outside it. Destroy the pool only after the graph's last replay has finished (the owner
// synchronises). Only the native caching allocator does this: with
// LUCID_CUDA_ALLOCATOR=cudaMallocAsync an allocation during capture would become a graph
// allocation node, so the CUDA executor does not capture graphs under that allocator.
//
// GraphPhilox: a random op's Philox seed and offset are kernel arguments, which a graph would
// replay unchanged. While a GraphPhiloxScope is active, the random kernels (kernels/random.cu)
// read them at run time from `state`, a device buffer {seed, the call's base offset} that the
// executor rewrites before each replay, adding the op's own offset within the call (its
// attribute offset minus `base`, the base of the captured call). Each replay then draws its own
// call's numbers, the ones eager draws for the same seed. No CUDA header here.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace lucid::cuda {

class GraphPool {
 public:
  void keep(const std::shared_ptr<void>& owner) {
    std::lock_guard<std::mutex> lk(mu_);
    kept_.push_back(owner);
  }
  size_t blocks() const {
    std::lock_guard<std::mutex> lk(mu_);
    return kept_.size();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<void>> kept_;
};

// The pool this thread's CUDA allocations go to (null outside a capture).
GraphPool* active_graph_pool();

class GraphPoolScope {
 public:
  explicit GraphPoolScope(GraphPool* pool);
  ~GraphPoolScope();
  GraphPoolScope(const GraphPoolScope&) = delete;
  GraphPoolScope& operator=(const GraphPoolScope&) = delete;

 private:
  GraphPool* prev_;
};

struct GraphPhilox {
  const uint64_t* state = nullptr;  // device memory: {seed, base offset in draws}; null outside a capture
  uint64_t base = 0;                // the captured call's base offset
};
// This thread's (a null state outside a capture).
const GraphPhilox& graph_philox();

// Writes {seed, base} into a GraphPhilox state on `stream` (a cudaStream_t), ahead of a replay:
// a one-thread kernel taking them as arguments (kernels/random.cu).
void write_graph_philox(uint64_t* state, uint64_t seed, uint64_t base, void* stream);

class GraphPhiloxScope {
 public:
  explicit GraphPhiloxScope(GraphPhilox p);
  ~GraphPhiloxScope();
  GraphPhiloxScope(const GraphPhiloxScope&) = delete;
  GraphPhiloxScope& operator=(const GraphPhiloxScope&) = delete;

 private:
  GraphPhilox prev_;
};

}  // namespace lucid::cuda
