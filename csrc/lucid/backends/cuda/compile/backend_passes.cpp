// The CUDA backend's description for the shared pass pipeline (compile/passes/backend_passes.h).
// No rewrites of its own yet (cuBLASLt/cuDNN epilogue absorption is a later step) and no
// elementwise grouping rule: the CUDA executor runs every elementwise op as its own eager kernel;
// fused groups will be generated CUDA C compiled by NVRTC (issue 14, later steps), and grouping
// is registered here when that runtime exists. The executor keeps the state cache
// (MemoryPlan::kCached), as the CPU's does (compile/runtime/frame_executor.h).
#include "lucid/compile/passes/backend_passes.h"

namespace lucid::cuda {

LUCID_REGISTER_BACKEND_PASSES(CUDA, "cuda", {}, nullptr, true);

}  // namespace lucid::cuda
