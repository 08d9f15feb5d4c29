// The CUDA backend's description for the shared pass pipeline (compile/passes/backend_passes.h):
// no rewrites of its own yet (cuBLASLt/cuDNN epilogue absorption is a later step), and its
// elementwise grouping rule, cuda_fused_dtype (fused_source.h): a node joins a FusedElementwise
// group when it is a row of the functor table that a generated kernel can compute in its eager
// CUDA kernel's dtype. The shared pass ew_group forms the groups; the CUDA executor runs each as
// one NVRTC-compiled kernel (fused_kernels.h). The executor keeps the state cache
// (MemoryPlan::kCached), as the CPU's does (compile/runtime/frame_executor.h).
#include "lucid/backends/cuda/compile/fused_source.h"
#include "lucid/compile/passes/backend_passes.h"

namespace lucid::cuda {

LUCID_REGISTER_BACKEND_PASSES(CUDA, "cuda", {}, cuda_fused_dtype, true);

}  // namespace lucid::cuda
