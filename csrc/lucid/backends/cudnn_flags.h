// The switches of lucid.backends.cudnn (python/lucid/backends/cudnn.py), as torch.backends.cudnn's:
// allow_tf32 (float32 convolutions may use TF32 tensor cores; True by default, as in PyTorch),
// benchmark (time every cuDNN engine that supports a new convolution geometry and keep the
// fastest, instead of taking the heuristic's first choice) and deterministic (only engines whose
// results do not depend on scheduling). deterministic_algorithms mirrors
// lucid.use_deterministic_algorithms, which asks the same of cuDNN, as torch's does.
//
// Device-neutral storage compiled into every build (a CPU-only build keeps and reports the values,
// as torch's CPU build has torch.backends.cudnn); the CUDA backend reads them when it builds a
// convolution plan (backends/cuda/cudnn_conv_graph.cpp), and the values are part of the plan
// cache's key, so flipping a flag takes effect at the next call.
#pragma once
#include <atomic>

namespace lucid {

struct CudnnFlags {
  std::atomic<bool> allow_tf32{true};
  std::atomic<bool> benchmark{false};
  std::atomic<bool> deterministic{false};
  std::atomic<bool> deterministic_algorithms{false};
};

// The process-wide flags.
CudnnFlags& cudnn_flags();

}  // namespace lucid
