// What a CUDA graph capture on this thread provides to the code it runs: the memory pool that
// keeps its allocations (GraphPool), the device state its random ops read (GraphPhilox) and the
// device copies of the host scalars that change per call (GraphScalars).
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
// call's numbers, the ones eager draws for the same seed.
//
// GraphScalars: a kernel takes a host scalar (a CPU 0-d tensor: a learning rate, an optimizer's
// step count or a bias correction computed from it) by value, which a graph would replay
// unchanged. While a GraphScalarsScope is active, a kernel asks device_value for each host scalar
// it would pass by value: null means the value is fixed (a constant of the program, or a scalar
// the kernel made from its attributes) and is passed by value as before; an address means the
// value changes per call, and the kernel reads it from that device address instead, where each
// replay finds the call's value (compile/executor.cpp writes it before the launch). The
// elementwise launcher (KernelInput::at) and the generated fused kernels (a host-pointer mask)
// read such addresses. A kernel that can't take a per-call value (one checking it on the host)
// raises, which ends the capture with that reason.
//
// copy_for_replay: the launch before a replay that writes its per-call words (the Philox state
// and the host scalars' values) and copies the call's inputs into the graph's buffers, and the one
// after it that copies outputs out: a kernel taking the words and the buffers' addresses as
// arguments, so the host's bytes are copied at the launch and may be overwritten at once (a pinned
// staging buffer and a copy would need an event per replay), and a handful of small copies cost
// one launch instead of one cudaMemcpyAsync each. No CUDA header here.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "lucid/core/tensor.h"

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

// On `stream` (a cudaStream_t): words[0, n) written into device memory dst_words, and each copy
// (device to device, bytes) done. One kernel launch while there are at most kGraphWords words and
// kGraphCopies copies of at most kGraphCopyBytes in all (the arguments stay under 4 KB); beyond
// that, the rest go through cudaMemcpyAsync and further launches (graph_capture.cu).
struct GraphCopy {
  void* dst;
  const void* src;
  size_t bytes;
};
constexpr int kGraphWords = 320, kGraphCopies = 24;
constexpr size_t kGraphCopyBytes = size_t{1} << 22;
void copy_for_replay(const std::vector<GraphCopy>& copies, uint64_t* dst_words, const uint64_t* words, size_t n, void* stream);

class GraphPhiloxScope {
 public:
  explicit GraphPhiloxScope(GraphPhilox p);
  ~GraphPhiloxScope();
  GraphPhiloxScope(const GraphPhiloxScope&) = delete;
  GraphPhiloxScope& operator=(const GraphPhiloxScope&) = delete;

 private:
  GraphPhilox prev_;
};

class GraphScalars {
 public:
  virtual ~GraphScalars() = default;
  // Where a replay finds host scalar t's value converted to dtype c (host_scalar.h's bits), or
  // null when t's value is fixed for the graph (pass it by value).
  virtual const void* device_value(const Tensor& t, DType c) = 0;
};
// This thread's (null outside a capture of a program with per-call host scalars).
GraphScalars* active_graph_scalars();

class GraphScalarsScope {
 public:
  explicit GraphScalarsScope(GraphScalars* s);
  ~GraphScalarsScope();
  GraphScalarsScope(const GraphScalarsScope&) = delete;
  GraphScalarsScope& operator=(const GraphScalarsScope&) = delete;

 private:
  GraphScalars* prev_;
};

}  // namespace lucid::cuda
