// GraphPool: the memory a captured CUDA graph's kernels use, held for the graph's lifetime.
//
// A kernel's temporaries (cuBLASLt and cuDNN workspaces, reduction partials, CUB's scratch) and a
// compiled program's per-call values are allocated and freed while the graph is captured; a
// graph replays the captured addresses, so none of those blocks may go back to the caching
// allocator while the graph lives (PyTorch gives a capture a private memory pool for the same
// reason). While a GraphPoolScope is active on a thread, the caching allocator (cuda_allocator.cu)
// hands every block this thread allocates to the scope's pool as well, which keeps it until the
// pool is destroyed: blocks freed during the capture are never reused, inside or outside it.
// Destroy the pool only after the graph's last replay has finished (the owner synchronises).
//
// Only the native caching allocator does this: with LUCID_CUDA_ALLOCATOR=cudaMallocAsync an
// allocation during capture would become a graph allocation node, so the CUDA executor does not
// capture graphs under that allocator. No CUDA header here.
#pragma once
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

}  // namespace lucid::cuda
