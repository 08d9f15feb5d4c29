// Executor: the per-backend half of a compiled signature, which runs a Program on one device.
// Each backend registers a factory for its device type from backends/<device>/compile/
// (LUCID_REGISTER_EXECUTOR); Executable picks the one of its program's device. The executor
// owns everything device-specific: kernel pointers, memory (the arena and its frames), how fused
// groups run (the CPU's block interpreter) and whether calls replay a device graph (CUDA). run()
// is called with feeds already checked against the program (Program::check_feeds), must be
// thread-safe, and needs no Python. The device-neutral body most executors share is
// frame_executor.h's.
#pragma once
#include <memory>
#include <string>

#include "lucid/compile/runtime/program.h"

namespace lucid::rt {

// An executor that runs FusedElementwise groups as generated device kernels (the CUDA backend's
// NVRTC kernels): how many groups became one kernel each, how many run op by op and why (the
// first such group's reason), and where the kernels' code came from ("nvrtc", "disk": the
// persistent compile cache, "memory": the process's; "" when there are none).
struct FusedKernelStats {
  int kernels = 0;
  int per_op = 0;
  std::string fallback;
  std::string code;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual TensorList run(const TensorList& inputs, const TensorList& states) const = 0;
  virtual size_t pooled_frames() const = 0;  // memory the executor holds between calls, as frames
  virtual void trim() const = 0;             // frees it (and any state cache); a later run makes it again
  // How many times the state cache (Instruction::cached) was computed: tests check that it is
  // computed again exactly when a bound tensor it reads changed. 0 for an executor without one.
  virtual uint64_t state_cache_fills() const { return 0; }
  // An executor that replays calls as a device graph (CUDA graphs): how many calls were replays,
  // and why it runs without one (a recorded reason; empty while it replays or has not tried yet).
  // 0 and "" for an executor without graphs.
  virtual uint64_t graph_replays() const { return 0; }
  virtual std::string graph_fallback() const { return ""; }
  // Zero and empty for an executor without generated kernels (the CPU's block interpreter).
  virtual FusedKernelStats fused_kernels() const { return {}; }
};

// Builds the executor of one program; the program outlives it (the executor holds it).
using ExecutorFactory = std::unique_ptr<Executor> (*)(std::shared_ptr<const Program> program);

// The factory registered for a device type, or null when no backend registered one.
ExecutorFactory executor_factory(DeviceType device);

struct ExecutorRegistrar {
  ExecutorRegistrar(DeviceType device, ExecutorFactory factory);  // aborts on a second registration
};
// LUCID_REGISTER_EXECUTOR(CPU, make_cpu_executor), in backends/<device>/compile/.
#define LUCID_REGISTER_EXECUTOR(device, factory) \
  static ::lucid::rt::ExecutorRegistrar lucid_executor_##device(::lucid::DeviceType::device, factory)

}  // namespace lucid::rt
