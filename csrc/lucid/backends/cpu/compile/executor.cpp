// The CPU backend's executor (compile/runtime/executor.h): compile/runtime/frame_executor.h's
// device-neutral body (frames per concurrent call over a statically planned arena, static views,
// fresh outputs, assigns into bound state and writes straight into targets, random ops' seed and
// offset, the state cache, LUCID_COMPILE_PROFILE) with the CPU kernels, plus what only the CPU
// has: FusedElementwise groups run on the block interpreter (fused_ew.h), each group's
// FusedProgram built once per executor.
#include "lucid/backends/cpu/compile/fused_ew.h"
#include "lucid/compile/runtime/frame_executor.h"

namespace lucid::cpu {

namespace {

std::shared_ptr<const void> build_fused(const void*, const ir::Graph& g, const ir::Node& n) {
  return std::make_shared<const FusedProgram>(*n.body, wrapped_inputs(g, n));
}

void run_fused_group(const void* prepared, const TensorList& inputs, const TensorList& outputs) {
  run_fused(*static_cast<const FusedProgram*>(prepared), inputs, outputs);
}

class CpuExecutor final : public rt::FrameExecutor {
 public:
  explicit CpuExecutor(std::shared_ptr<const rt::Program> program)
      : FrameExecutor(std::move(program), {build_fused, run_fused_group}) {}
};

std::unique_ptr<rt::Executor> make_cpu_executor(std::shared_ptr<const rt::Program> program) {
  return std::make_unique<CpuExecutor>(std::move(program));
}

}  // namespace

LUCID_REGISTER_EXECUTOR(CPU, make_cpu_executor);

}  // namespace lucid::cpu
