// What the shared pass pipeline asks of a backend: its own rewrites (fusion into its libraries'
// fused ops, e.g. oneDNN post-ops on the CPU) and whether its fused-elementwise runtime can run a
// node inside a FusedElementwise group. Each backend registers one description for its device
// type from backends/<device>/compile/ (LUCID_REGISTER_BACKEND_PASSES); the pipeline picks the
// description of the graph's device (ir::graph_device), so the passes in compile/passes/ hold no
// knowledge of any one backend. A device with no registered description gets the shared passes
// only: no backend rewrites, and no elementwise groups.
#pragma once
#include <optional>
#include <vector>

#include "lucid/compile/ir/graph.h"

namespace lucid::ir {

struct NamedPass {
  const char* name;  // for LUCID_DUMP_IR and LUCID_COMPILE_DISABLE
  Graph (*fn)(const Graph&);
};

struct BackendPasses {
  DeviceType device = DeviceType::CPU;
  const char* name = "";  // the backend, for messages ("cpu")
  // Run in order after BatchNorm folding and before the second dead-code elimination (they may
  // leave the nodes they absorbed unused), each verified like any pass.
  std::vector<NamedPass> rewrites;
  // The dtype the backend's fused-elementwise runtime would compute node `op` (with `attrs`) in,
  // given stand-ins of its inputs (ew_stand_in, or the constants themselves) and its recorded
  // output dtype; nullopt when it can't run the node in a group. Null: the backend groups nothing.
  std::optional<DType> (*fused_elementwise_dtype)(OpId op, const TensorList& inputs, const Attrs& attrs,
                                                  DType out) = nullptr;
  // Whether the backend's executor keeps the values of state_computed_nodes across calls and
  // recomputes them only when a bound tensor they read has changed (MemoryPlan::kCached).
  bool caches_state_values = false;
};

// The description registered for a device type, or one with no rewrites and no grouping.
const BackendPasses& backend_passes(DeviceType device);

struct BackendPassesRegistrar {
  explicit BackendPassesRegistrar(BackendPasses passes);  // aborts when the device already has one
};
// LUCID_REGISTER_BACKEND_PASSES(CPU, "cpu", {{"epilogue", absorb_epilogues}}, ew_block_dtype)
#define LUCID_REGISTER_BACKEND_PASSES(device, name, ...)                                                       \
  static ::lucid::ir::BackendPassesRegistrar lucid_backend_passes_##device(                                   \
      ::lucid::ir::BackendPasses{::lucid::DeviceType::device, name, __VA_ARGS__})

}  // namespace lucid::ir

namespace lucid {
// A stand-in tensor for fused_elementwise_dtype: value v's dtype, its rank (dims of size 1), value
// zero; `wrapped` marks a traced Python scalar (it promotes like one).
Tensor ew_stand_in(const ir::Value& v, bool wrapped);
// The stand-in of a group input that may be a traced constant: a wrapped Python number of v's
// dtype and shape stands for itself (its value decides pow's check and whether a 16-bit mul reads
// it at float precision, elementwise_compute_dtype), anything else for ew_stand_in(v, wrapped-ness).
Tensor ew_stand_in(const ir::Value& v, const Tensor& constant);
}  // namespace lucid
